// The census of an SAE's latents (train/sae_census.hpp) on a tiny untrained model and a random
// SAE, against the same figures counted here by brute force over the windows.

#include <algorithm>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "train/sae_census.hpp"
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

TEST(SaeCensus, CountsFiresTopContextsAndDistinctCurrentTokens) {
  const Checkpoint loaded = tiny_model();
  std::u32string text;
  for (int i = 0; i < 3; ++i) text += kText;
  const TokenIds ids = loaded.tokenizer().encode_compact(text);
  Rng rng(3);
  const SparseAutoencoder sae(loaded.config().d_model, 24, 3, rng);
  const std::size_t begin = 10, end = ids.size() - 5, n_top = 4;
  const SaeCensus c = sae_census(loaded, sae, "layers.0.out", ids, begin, end, 8, n_top);

  // by brute force: every (position, latent, activation) over the same windows
  std::map<std::size_t, std::vector<std::pair<double, std::size_t>>> fired;  // latent -> (a, pos)
  const std::size_t T = loaded.window(), p = sae_point_index(loaded.model(), "layers.0.out");
  for (std::size_t s = begin; s < end; s += T) {
    const std::size_t n = std::min(T, end - s);
    Ids x = Ids::from_shape({1, n});
    for (std::size_t t = 0; t < n; ++t) x(0, t) = ids[s + t];
    const Array z = sae.encode(Tensor(activations_at(loaded.model(), x, p))).value();
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t j = 0; j < 24; ++j)
        if (z(t, j) > 0) fired[j].push_back({z(t, j), s + t});
  }
  EXPECT_EQ(c.tokens, end - begin);
  ASSERT_EQ(c.latents.size(), std::min<std::size_t>(8, fired.size()));
  std::size_t multi = 0;
  for (std::size_t i = 0; i < c.latents.size(); ++i) {
    const LatentContexts& l = c.latents[i];
    std::vector<std::pair<double, std::size_t>> all = fired[l.latent];
    EXPECT_EQ(l.fires, all.size()) << "latent " << l.latent;
    if (i > 0) EXPECT_LE(l.fires, c.latents[i - 1].fires);  // most frequent first
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    ASSERT_EQ(l.top.size(), std::min(n_top, all.size()));
    std::set<std::int32_t> current;
    for (std::size_t r = 0; r < l.top.size(); ++r) {
      EXPECT_EQ(l.top[r], all[r].second);
      EXPECT_FLOAT_EQ(l.top_activations[r], all[r].first);
      current.insert(ids[all[r].second]);
    }
    EXPECT_EQ(l.distinct_current, current.size());
    multi += current.size() > 1 ? 1 : 0;
  }
  // no latent outside the list fires more often than the last one listed
  for (const auto& [j, a] : fired)
    if (std::none_of(c.latents.begin(), c.latents.end(),
                     [j = j](const LatentContexts& l) { return l.latent == j; }))
      EXPECT_LE(a.size(), c.latents.back().fires);
  EXPECT_EQ(c.multi, multi);
}

TEST(SaeCensus, RefusesABadPointOrRange) {
  const Checkpoint loaded = tiny_model();
  const TokenIds ids = loaded.tokenizer().encode_compact(kText);
  Rng rng(3);
  const SparseAutoencoder sae(loaded.config().d_model, 8, 2, rng);
  EXPECT_THROW(sae_census(loaded, sae, "layers.9.out", ids, 0, 10), std::invalid_argument);
  EXPECT_THROW(sae_census(loaded, sae, "layers.0.out", ids, 10, 10), std::invalid_argument);
  EXPECT_THROW(sae_census(loaded, sae, "layers.0.out", ids, 0, 10, 5, 0), std::invalid_argument);
  const SparseAutoencoder other(loaded.config().d_model + 1, 8, 2, rng);
  EXPECT_THROW(sae_census(loaded, other, "layers.0.out", ids, 0, 10), std::invalid_argument);
}

}  // namespace
}  // namespace glass
