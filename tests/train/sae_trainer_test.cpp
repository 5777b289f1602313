// Training and measuring a sparse autoencoder (train/sae_trainer.hpp) on a tiny untrained model:
// the points it reads, the activations at a point against the tracer's, the splice exact for an
// SAE that reconstructs perfectly, training that lowers the FVU, the fast step against the
// reference one, the buffer's reuse, and the bad options refused.

#include <cmath>
#include <sstream>

#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include <gtest/gtest.h>

#include "autograd/tape.hpp"
#include "interp/run.hpp"
#include "nn/tracer.hpp"
#include "train/sae_trainer.hpp"

#include "fixtures.hpp"

namespace glass {
namespace {

const char32_t* kText =
    U"the cat sat on the mat and the dog sat on the log; the cat saw the dog and ran away.\n";

Checkpoint tiny_model() {
  const Tokenizer tokenizer = Tokenizer::from_text(kText);
  ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), 16);
  return Checkpoint(config, TextTokenizer(tokenizer), std::make_unique<Decoder>(config, 7));
}

std::shared_ptr<const TokenIds> text_ids(const Checkpoint& loaded, int repeats) {
  std::u32string text;
  for (int i = 0; i < repeats; ++i) text += kText;
  return std::make_shared<const TokenIds>(loaded.tokenizer().encode_compact(text));
}

TEST(SaeTrainer, PointsAreTheResidualStreamAndABadOneListsThem) {
  const Checkpoint loaded = tiny_model();
  const auto points = sae_points(loaded.model());
  ASSERT_EQ(points.size(), loaded.config().n_layers + 1);
  EXPECT_EQ(sae_point_index(loaded.model(), "layers.1.out"), 2u);
  try {
    sae_point_index(loaded.model(), "layers.9.out");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("embeddings, layers.0.out, layers.1.out"),
              std::string::npos)
        << e.what();
  }
}

TEST(SaeTrainer, ActivationsAreWhatTheHookPointSees) {
  const Checkpoint loaded = tiny_model();
  const Ids tokens = {{1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}};
  for (std::size_t p = 0; p < 3; ++p) {
    const std::string name = sae_points(loaded.model())[p];
    Tracer tracer;
    Array seen;
    tracer.add_hook(name, [&](const std::string&, Array& v) { seen = v; });
    run_with_hooks(loaded.model(), tokens, tracer);
    const Array a = activations_at(loaded.model(), tokens, p);
    ASSERT_EQ(a.shape(0), 10u);
    seen.reshape({10, loaded.config().d_model});
    EXPECT_LT(xt::amax(xt::abs(a - seen))(), 1e-5) << name;
  }
}

TEST(SaeTrainer, APerfectReconstructionSplicesInWithoutChangingTheLoss) {
  // Latents +e_j and -e_j (2 D of them) with k = D: the positive parts of x and of -x, which
  // decode to x exactly. FVU 0, the spliced loss the clean one; an SAE that outputs b_pre = 0
  // instead explains nothing (FVU >= 1) and changes the loss.
  const Checkpoint loaded = tiny_model();
  const std::size_t D = loaded.config().d_model;
  Rng rng(1);
  SparseAutoencoder sae(D, 2 * D, D, rng);
  Array w = xt::zeros<Scalar>({2 * D, D});
  for (std::size_t j = 0; j < D; ++j) {
    w(j, j) = 1;
    w(D + j, j) = -1;
  }
  sae.W_enc.value() = w;
  sae.W_dec.value() = w;
  const auto ids = text_ids(loaded, 3);
  const SaeMetrics m = evaluate_sae(loaded, sae, "layers.0.out", *ids, 0, ids->size());
  EXPECT_LT(m.fvu, 1e-10);
  EXPECT_NEAR(m.spliced_loss, m.clean_loss, 1e-5);
  EXPECT_EQ(m.tokens, ids->size() - 1);  // every window's inputs, once
  sae.W_dec.value().fill(0);
  const SaeMetrics zero = evaluate_sae(loaded, sae, "layers.0.out", *ids, 0, ids->size());
  EXPECT_GE(zero.fvu, 1.0);
  EXPECT_GT(std::abs(zero.spliced_loss - zero.clean_loss), 1e-3);
}

TEST(SaeTrainer, TrainingLowersTheFvu) {
  const Checkpoint loaded = tiny_model();
  const auto ids = text_ids(loaded, 20);
  SaeTrainOptions o;
  o.point = "layers.1.out";
  o.n_latents = 64;
  o.k = 4;
  o.batch_tokens = 128;
  o.buffer_tokens = 512;
  o.lr = 3e-3;
  o.log_every = 0;
  o.steps = 1;
  std::ostringstream log;
  const std::size_t n_train = ids->size() * 9 / 10;
  const double first = train_sae(loaded, ids, n_train, o, log).metrics.fvu;
  o.steps = 300;
  const SaeTrainResult r = train_sae(loaded, ids, n_train, o, log);
  EXPECT_LT(r.metrics.fvu, 0.5 * first) << first;
  EXPECT_LE(r.metrics.l0, 4.0);
  EXPECT_GT(r.metrics.l0, 1.0);
  EXPECT_EQ(r.tokens_seen, 300u * 128u);
}

TEST(SaeTrainer, FastAndReferenceStepsTrainTheSameSae) {
  // The fast step (topk_decode in the decoder and in AuxK) against the reference ops, with
  // latents going dead early so that AuxK runs too.
  const Checkpoint loaded = tiny_model();
  const auto ids = text_ids(loaded, 20);
  SaeTrainOptions o;
  o.point = "layers.0.out";
  o.n_latents = 64;
  o.k = 2;
  o.k_aux = 8;
  o.batch_tokens = 64;
  o.buffer_tokens = 256;
  o.lr = 3e-3;
  o.dead_after = 128;
  o.log_every = 0;
  o.steps = 25;
  std::ostringstream log;
  const std::size_t n_train = ids->size() * 9 / 10;
  o.ops = OpsPath::reference;
  const SaeTrainResult ref = train_sae(loaded, ids, n_train, o, log);
  o.ops = OpsPath::fast;
  const SaeTrainResult fast = train_sae(loaded, ids, n_train, o, log);
  EXPECT_GT(ref.metrics.dead, 0u);  // AuxK had dead latents to train
  EXPECT_EQ(fast.metrics.dead, ref.metrics.dead);
  EXPECT_NEAR(fast.metrics.fvu, ref.metrics.fvu, 1e-4);
  const Array& a = fast.sae->W_dec.value();
  const Array& b = ref.sae->W_dec.value();
  EXPECT_LT(xt::amax(xt::abs(a - b))(), 1e-4);
  EXPECT_LT(xt::amax(xt::abs(fast.sae->W_enc.value() - ref.sae->W_enc.value()))(), 1e-4);
}

TEST(SaeTrainer, ReuseReadsTheBufferAgainBeforeRefillingIt) {
  const Checkpoint loaded = tiny_model();
  const auto ids = text_ids(loaded, 20);
  SaeTrainOptions o;
  o.n_latents = 32;
  o.k = 4;
  o.batch_tokens = 64;
  o.buffer_tokens = 256;
  o.log_every = 0;
  o.steps = 12;  // the read half (two batches) is used up 6 times: refilled 6 times, or twice
  o.reuse = 1;
  std::ostringstream log;
  const std::size_t n_train = ids->size() * 9 / 10;
  const SaeTrainResult once = train_sae(loaded, ids, n_train, o, log);
  o.reuse = 3;
  const SaeTrainResult thrice = train_sae(loaded, ids, n_train, o, log);
  EXPECT_GT(xt::amax(xt::abs(once.sae->W_dec.value() - thrice.sae->W_dec.value()))(), 0);
  o.steps = 1;  // two batches (b_pre's and the step's) fill the read half: no refill yet
  const SaeTrainResult a = train_sae(loaded, ids, n_train, o, log);
  o.reuse = 1;
  const SaeTrainResult b = train_sae(loaded, ids, n_train, o, log);
  EXPECT_EQ(xt::amax(xt::abs(a.sae->W_dec.value() - b.sae->W_dec.value()))(), 0);
  o.reuse = 0;
  EXPECT_THROW(train_sae(loaded, ids, n_train, o, log), std::invalid_argument);
}

TEST(SaeTrainer, RefusesBadOptions) {
  const Checkpoint loaded = tiny_model();
  const auto ids = text_ids(loaded, 20);
  std::ostringstream log;
  SaeTrainOptions o;
  o.n_latents = 16;
  o.k = 16;
  EXPECT_THROW(train_sae(loaded, ids, 1000, o, log), std::invalid_argument);
  o.k = 4;
  o.point = "layers.7.out";
  EXPECT_THROW(train_sae(loaded, ids, 1000, o, log), std::invalid_argument);
}

}  // namespace
}  // namespace glass
