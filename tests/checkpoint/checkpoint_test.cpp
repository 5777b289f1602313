// Checkpoint directories (checkpoint/checkpoint.hpp): round trip bit for bit, Meta LLaMA tensor
// names and shapes, and clear errors for corrupt or missing files.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "autograd/tape.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/safetensors.hpp"

#include "fixtures.hpp"
#include "test_util.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

/// (1, n) token ids cycling through the vocabulary.
Ids some_tokens(std::size_t vocab, std::size_t n) {
  Ids ids = Ids::from_shape({1, n});
  for (std::size_t i = 0; i < n; ++i) ids(0, i) = static_cast<std::int32_t>((7 * i + 3) % vocab);
  return ids;
}

}  // namespace

TEST(Checkpoint, RoundTripGivesIdenticalLogits) {
  const fs::path dir = glass_test::temp_dir("glass-checkpoint-roundtrip");
  const Tokenizer tokenizer = Tokenizer::from_text(U"o gato comeu o rato e a menina viu tudo");
  Decoder model(glass_test::small_config(tokenizer.vocab_size()), 42);
  save_model((dir / "ckpt").string(), model, tokenizer, "model.safetensors",
             R"({"training": {"context": 16}})");
  const Checkpoint loaded = load_checkpoint((dir / "ckpt").string());
  ASSERT_NE(loaded.tokenizer().chars(), nullptr);
  EXPECT_EQ(loaded.tokenizer().chars()->chars(), tokenizer.chars());
  EXPECT_EQ(loaded.config().d_model, 16u);
  EXPECT_EQ(training_context((dir / "ckpt").string()), 16u);

  NoGradGuard no_grad;
  const Ids tokens = some_tokens(tokenizer.vocab_size(), 12);
  const Array a = model.forward(tokens).value();
  const Array b = loaded.model().forward(tokens).value();
  ASSERT_EQ(shape_of(a), shape_of(b));
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a.data()[i], b.data()[i]) << i;  // bit for bit
}

// One window policy for every reader: the recorded training context, else context_length.
TEST(Checkpoint, TheWindowIsTheTrainingContextElseTheContextLength) {
  const fs::path dir = glass_test::temp_dir("glass-checkpoint-window");
  const Tokenizer tokenizer = Tokenizer::from_text(U"abcdefghij");
  Decoder model(glass_test::small_config(tokenizer.vocab_size(), 32), 1);
  save_model((dir / "trained").string(), model, tokenizer, "model.safetensors",
             R"({"training": {"context": 12}})");
  save_model((dir / "plain").string(), model, tokenizer);
  EXPECT_EQ(load_checkpoint((dir / "trained").string()).window(), 12u);
  EXPECT_EQ(load_checkpoint((dir / "plain").string()).window(), 32u);
  // A save that records a window larger than the model's positions is refused at loading.
  save_model((dir / "bad").string(), model, tokenizer, "model.safetensors",
             R"({"training": {"context": 33}})");
  EXPECT_THROW(load_checkpoint((dir / "bad").string()), CheckpointError);
  // In memory: the same policy.
  const ModelConfig c = glass_test::small_config(tokenizer.vocab_size(), 32);
  EXPECT_EQ(Checkpoint(c, TextTokenizer(tokenizer), std::make_unique<Decoder>(c, 1)).window(), 32u);
  EXPECT_EQ(Checkpoint(c, TextTokenizer(tokenizer), std::make_unique<Decoder>(c, 1), 8).window(),
            8u);
  EXPECT_THROW(Checkpoint(c, TextTokenizer(tokenizer), std::make_unique<Decoder>(c, 1), 33),
               std::invalid_argument);
  // The readers that show one window refuse a longer prompt, by this one check; an unknown
  // character counts as one id here (refusing it is the caller's own check).
  const Checkpoint eight(c, TextTokenizer(tokenizer), std::make_unique<Decoder>(c, 1), 8);
  EXPECT_NO_THROW(eight.check_fits_window(U"abcdefgz"));
  try {
    eight.check_fits_window(U"abcdefghi");
    FAIL() << "a prompt of 9 characters fitted a window of 8";
  } catch (const PromptTooLongError& e) {
    EXPECT_EQ(e.length(), 9u);
    EXPECT_EQ(e.window(), 8u);
    EXPECT_EQ(e.unit(), "characters");
    EXPECT_STREQ(e.what(), "the prompt has 9 characters; the window is 8 characters");
  }
  EXPECT_THROW(eight.check_fits_window(std::size_t{9}), PromptTooLongError);
}

// The checkpoint answers with its own tokenizer: a character model's words and refusals, a BPE
// model's tokens (byte fallback, never an unknown character).
TEST(Checkpoint, PromptsAndUnitsFollowTheSavedTokenizer) {
  const fs::path dir = glass_test::temp_dir("glass-checkpoint-tokenizer");
  const Tokenizer chars = Tokenizer::from_text(U"ab ab b");
  Decoder char_model(glass_test::small_config(chars.vocab_size()), 1);
  save_model((dir / "char").string(), char_model, chars);
  const BpeTokenizer bpe = BpeTokenizer::train(U"ab ab b", 265);
  Decoder bpe_model(glass_test::small_config(bpe.vocab_size()), 1);
  save_model((dir / "bpe").string(), bpe_model, bpe);

  const Checkpoint c = load_checkpoint((dir / "char").string());
  EXPECT_STREQ(c.unit(), "characters");
  EXPECT_STREQ(c.unit(false), "character");
  EXPECT_THROW(c.encode_prompt(U"abc", UnknownPolicy::kRefuse), UnknownCharacterError);
  std::size_t unknown = 0;
  EXPECT_EQ(c.encode_prompt(U"abc", UnknownPolicy::kMapToUnknownId, &unknown).size(), 3u);
  EXPECT_EQ(unknown, 1u);

  const Checkpoint b = load_checkpoint((dir / "bpe").string());
  EXPECT_STREQ(b.unit(), "tokens");
  EXPECT_EQ(b.tokenizer().kind(), TokenizerKind::kBpe);
  EXPECT_EQ(b.encode_prompt(U"abc", UnknownPolicy::kRefuse, &unknown), bpe.encode(U"abc"));
  EXPECT_EQ(unknown, 0u);
}

TEST(Checkpoint, TensorNamesAndShapesFollowMetaLlama) {
  const fs::path dir = glass_test::temp_dir("glass-checkpoint-names");
  const Tokenizer tokenizer = Tokenizer::from_text(U"abcdefghij");  // vocab 11
  ModelConfig c;  // the default model: d_model 128, 2 kv heads of dim 32, ffn 344
  c.vocab_size = tokenizer.vocab_size();
  c.n_layers = 1;
  Decoder model(c, 1);
  save_model(dir.string(), model, tokenizer);
  const SafetensorsContents file = load_safetensors((dir / "model.safetensors").string());
  auto shape = [&](const std::string& name) {
    const NamedTensor* t = file.find(name);
    EXPECT_NE(t, nullptr) << name;
    return t ? t->shape : std::vector<std::size_t>{};
  };
  using S = std::vector<std::size_t>;
  EXPECT_EQ(shape("tok_embeddings.weight"), (S{11, 128}));
  EXPECT_EQ(shape("layers.0.attention_norm.weight"), (S{128}));
  EXPECT_EQ(shape("layers.0.attention.wq.weight"), (S{128, 128}));
  EXPECT_EQ(shape("layers.0.attention.wk.weight"), (S{64, 128}));
  EXPECT_EQ(shape("layers.0.attention.wv.weight"), (S{64, 128}));
  EXPECT_EQ(shape("layers.0.attention.wo.weight"), (S{128, 128}));
  EXPECT_EQ(shape("layers.0.ffn_norm.weight"), (S{128}));
  EXPECT_EQ(shape("layers.0.feed_forward.w1.weight"), (S{344, 128}));
  EXPECT_EQ(shape("layers.0.feed_forward.w2.weight"), (S{128, 344}));
  EXPECT_EQ(shape("layers.0.feed_forward.w3.weight"), (S{344, 128}));
  EXPECT_EQ(shape("norm.weight"), (S{128}));
  EXPECT_EQ(shape("output.weight"), (S{11, 128}));
  EXPECT_EQ(file.tensors.size(), 12u);
}

TEST(Checkpoint, CorruptOrMissingFilesAreClearErrors) {
  const fs::path dir = glass_test::temp_dir("glass-checkpoint-corrupt");
  const Tokenizer tokenizer = Tokenizer::from_text(U"hello world");
  Decoder model(glass_test::small_config(tokenizer.vocab_size()), 3);
  EXPECT_THROW(load_checkpoint((dir / "nope").string()), CheckpointError);

  save_model((dir / "a").string(), model, tokenizer);
  const std::string weights = read_file((dir / "a/model.safetensors").string());
  write_file_atomic((dir / "a/model.safetensors").string(), weights.substr(0, weights.size() / 2));
  try {
    load_checkpoint((dir / "a").string());
    FAIL() << "a truncated safetensors file loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("model.safetensors"), std::string::npos) << e.what();
  }

  save_model((dir / "b").string(), model, tokenizer);
  write_file_atomic((dir / "b/config.json").string(), "{\"model\": ");
  EXPECT_THROW(load_checkpoint((dir / "b").string()), CheckpointError);

  // Weights of a model with d_model 16 under a config that says 32: wrong shapes.
  save_model((dir / "c").string(), model, tokenizer);
  ModelConfig wider = glass_test::small_config(tokenizer.vocab_size());
  wider.d_model = 32;
  Decoder other(wider, 3);
  save_model((dir / "d").string(), other, tokenizer);
  fs::copy_file((dir / "d/config.json").string(), (dir / "c/config.json").string(),
                fs::copy_options::overwrite_existing);
  try {
    load_checkpoint((dir / "c").string());
    FAIL() << "wrong shapes loaded";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("shape"), std::string::npos) << e.what();
  }
}
