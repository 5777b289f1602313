// Steering with an SAE's latents (interp/steering.hpp): the vector is the scaled unit decoder
// rows; a steer at the embeddings gives exactly the logits of the model whose embedding rows
// are all moved by the vector; a steer at the last block's output gives exactly the final norm
// and output matrix applied to the moved stream; scale 0 changes no bit.

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "autograd/tape.hpp"
#include "interp/steering.hpp"
#include "interp_util.hpp"

namespace {

using namespace glass;

TEST(Steering, TheVectorIsTheScaledUnitDecoderRows) {
  Rng rng(3);
  SparseAutoencoder sae(4, 6, 2, rng);
  sae.W_dec.value().fill(0);
  sae.W_dec.value()(1, 0) = 3, sae.W_dec.value()(1, 1) = 4;  // |row| = 5
  sae.W_dec.value()(4, 3) = -2;
  const std::vector<double> v = steering_vector(sae, {{1, 10.0}, {4, 0.5}});
  EXPECT_DOUBLE_EQ(v[0], 6.0);
  EXPECT_DOUBLE_EQ(v[1], 8.0);
  EXPECT_DOUBLE_EQ(v[2], 0.0);
  EXPECT_DOUBLE_EQ(v[3], -0.5);
  EXPECT_THROW(steering_vector(sae, {{6, 1.0}}), std::invalid_argument);  // out of range
  EXPECT_THROW(steering_vector(sae, {{0, 1.0}}), std::invalid_argument);  // zero row
  EXPECT_THROW(steering_vector(sae, {{1, std::numeric_limits<double>::infinity()}}),
               std::invalid_argument);
  EXPECT_THROW(steering_vector(sae, {{1, std::nan("")}}), std::invalid_argument);
}

std::vector<double> some_vector(double scale) {
  std::vector<double> v(16);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(1.0 + 0.7 * i);
  return v;
}

TEST(Steering, AtTheEmbeddingsItIsTheModelWithEveryEmbeddingRowMoved) {
  auto model = interp_test::twin_model();
  const Ids tokens = glass_test::twin_tokens();  // (2, 7)
  const std::vector<double> v = some_vector(0.8);
  Tracer tracer;
  tracer.set_recording(false);
  add_steering_hook(tracer, "embeddings", v);
  const Array steered = run_with_hooks(*model, tokens, tracer);
  Array& E = model->tok_embeddings.weight.value();  // (V, d): every row + v, as the hook adds it
  for (std::size_t r = 0; r < E.shape()[0]; ++r)
    for (std::size_t i = 0; i < 16; ++i) E(r, i) += static_cast<Scalar>(v[i]);
  Tracer plain;  // the same path (a tracer: the attention's reference path), no hook
  const Array moved = run_with_hooks(*model, tokens, plain);
  ASSERT_EQ(steered.shape(), moved.shape());
  for (std::size_t j = 0; j < steered.size(); ++j) EXPECT_EQ(steered.data()[j], moved.data()[j]);
}

TEST(Steering, AtTheLastBlockTheLogitsAreTheFinalNormAndOutputOfTheMovedStream) {
  const auto model = interp_test::twin_model();
  const Ids tokens = glass_test::twin_tokens();
  const std::vector<double> v = some_vector(-1.5);
  Tracer record;
  const Array clean = run_with_hooks(*model, tokens, record);
  Array stream = Array(record.get("layers.1.out"));  // (T, d) of batch element 0
  for (std::size_t t = 0; t < stream.shape()[0]; ++t)
    for (std::size_t i = 0; i < 16; ++i) stream(t, i) += static_cast<Scalar>(v[i]);
  NoGradGuard no_grad;
  const Array expected = model->logits_of(Tensor(stream)).value();  // (T, V)
  Tracer tracer;
  tracer.set_recording(false);
  add_steering_hook(tracer, "layers.1.out", v);
  const Array steered = run_with_hooks(*model, tokens, tracer);  // (2, T, V)
  bool changed = false;
  for (std::size_t j = 0; j < expected.size(); ++j) {
    EXPECT_EQ(steered.data()[j], expected.data()[j]) << j;
    changed = changed || steered.data()[j] != clean.data()[j];
  }
  EXPECT_TRUE(changed);
}

TEST(Steering, ScaleZeroChangesNoBit) {
  const auto model = interp_test::twin_model();
  Rng rng(5);
  const SparseAutoencoder sae(16, 8, 2, rng);
  Tracer plain, steered;
  add_steering_hook(steered, "layers.0.out", steering_vector(sae, {{3, 0.0}, {5, 0.0}}));
  const Array a = run_with_hooks(*model, glass_test::twin_tokens(), plain);
  const Array b = run_with_hooks(*model, glass_test::twin_tokens(), steered);
  for (std::size_t j = 0; j < a.size(); ++j) EXPECT_EQ(a.data()[j], b.data()[j]);
}

}  // namespace
