// The sampler's hook point (NextTokenLogits and generate with a tracer): every forward pass of
// generation runs the tracer's hooks, at every new position, with the KV cache and without.
// A hook that adds zero changes no token; one that adds a vector at the embeddings gives the
// tokens of the model whose embedding rows are all moved by it.

#include <random>

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "sample/sampler.hpp"

namespace {

using namespace glass;

/// A hook adding `v` (d) to every row of the residual stream at `point`.
void add_vector(Tracer& tracer, const std::string& point, std::vector<Scalar> v) {
  tracer.set_recording(false);
  tracer.add_hook(point, [v](const std::string&, Array& x) {
    for (std::size_t j = 0; j < x.size(); ++j) x.data()[j] += v[j % v.size()];
  });
}

std::vector<std::int32_t> sample(const Decoder& model, Tracer* tracer, bool cache) {
  SamplingOptions o;
  o.temperature = 1.0;
  o.use_kv_cache = cache;
  std::mt19937_64 rng(42);
  return generate(model, {1, 2, 3}, 40, 8, o, rng, {}, tracer);  // past the window of 8
}

TEST(GenerationHook, AddingZeroChangesNoToken) {
  Decoder model(glass_test::small_config(12), 3);
  model.set_ops_path(OpsPath::reference);  // the path a tracer takes
  for (bool cache : {true, false}) {
    Tracer zero;
    add_vector(zero, "layers.0.out", std::vector<Scalar>(model.config().d_model, 0));
    EXPECT_EQ(sample(model, &zero, cache), sample(model, nullptr, cache)) << cache;
  }
}

TEST(GenerationHook, ASteerAtTheEmbeddingsIsTheModelWithMovedEmbeddings) {
  Decoder model(glass_test::small_config(12), 3);
  model.set_ops_path(OpsPath::reference);
  const std::size_t d = model.config().d_model;
  std::vector<Scalar> v(d);
  for (std::size_t i = 0; i < d; ++i) v[i] = static_cast<Scalar>(0.3 * ((i % 3) - 1.0));
  for (bool cache : {true, false}) {
    Tracer steer;
    add_vector(steer, "embeddings", v);
    const std::vector<std::int32_t> steered = sample(model, &steer, cache);
    Decoder moved(glass_test::small_config(12), 3);
    moved.set_ops_path(OpsPath::reference);
    Array& E = moved.tok_embeddings.weight.value();
    for (std::size_t r = 0; r < E.shape()[0]; ++r)
      for (std::size_t i = 0; i < d; ++i) E(r, i) += v[i];
    EXPECT_EQ(steered, sample(moved, nullptr, cache)) << cache;
    EXPECT_NE(steered, sample(model, nullptr, cache)) << cache;
  }
}

TEST(GenerationHook, TheLogitsOfASteeredTextAreThoseOfTheMovedModel) {
  Decoder model(glass_test::small_config(12), 3);
  model.set_ops_path(OpsPath::reference);
  const std::size_t d = model.config().d_model;
  std::vector<Scalar> v(d, static_cast<Scalar>(0.25));
  Tracer steer;
  add_vector(steer, "embeddings", v);
  Decoder moved(glass_test::small_config(12), 3);
  moved.set_ops_path(OpsPath::reference);
  Array& E = moved.tok_embeddings.weight.value();
  for (std::size_t j = 0; j < E.size(); ++j) E.data()[j] += v[j % d];
  SamplingOptions o;
  NextTokenLogits steered(model, 8, o, &steer), plain(moved, 8, o);
  std::vector<std::int32_t> text = {1, 2};
  for (int n = 0; n < 12; ++n) {  // into the window's roll
    EXPECT_EQ(steered(text), plain(text)) << n;
    text.push_back(static_cast<std::int32_t>(1 + n % 10));
  }
}

}  // namespace
