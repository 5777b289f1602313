// The feature browser's JSON (see sae_features.hpp).

#include "inspect/sae_features.hpp"

#include "data/text.hpp"

namespace glass {

SaeFeatures::SaeFeatures(const Checkpoint& loaded, const SparseAutoencoder& sae,
                         const std::string& point, Tokens text)
    : loaded_(loaded),
      sae_(sae),
      point_(point),
      point_index_(residual_point_index(loaded.model(), point)),
      text_(std::move(text)),
      codes_(encode_text(loaded.model(), sae, point_index_, text_, loaded.window())) {}

std::string SaeFeatures::text_of(const Tokens& ids) const {
  return loaded_.tokenizer().decode_generated(ids);
}

nlohmann::json SaeFeatures::latent(std::size_t latent, const LatentView& view) const {
  const LatentSummary s = summarize_latent(codes_, latent, view.contexts, view.bins);
  nlohmann::json contexts = nlohmann::json::array();
  for (const LatentHit& hit : s.top) {
    const HitContext c = hit_context(text_, hit, loaded_.window(), view.before, view.after,
                                     [this](const Tokens& ids) { return text_of(ids); });
    contexts.push_back({{"before", c.before},
                        {"token", c.token},
                        {"after", c.after},
                        {"activation", c.activation},
                        {"position", hit.position}});
  }
  const LogitEffects e = latent_logit_effects(loaded_.model(), sae_, latent, view.logits);
  auto tokens = [this](const std::vector<TokenScore>& scores) {
    nlohmann::json out = nlohmann::json::array();
    for (const TokenScore& t : scores)
      out.push_back({{"token", text_of({t.token})}, {"id", t.token}, {"effect", t.score}});
    return out;
  };
  return {{"latent", latent},
          {"n_latents", sae_.n_latents()},
          {"point", point_},
          {"tokens", s.tokens},
          {"fired", s.fired},
          {"density", s.density()},
          {"max_activation", s.max_activation},
          {"mean_activation", s.mean_when_fired},
          {"contexts", contexts},
          {"histogram", {{"bins", s.histogram}, {"max", s.max_activation}}},
          {"promoted", tokens(e.promoted)},
          {"suppressed", tokens(e.suppressed)}};
}

nlohmann::json SaeFeatures::prompt(const std::string& prompt, std::size_t top) const {
  const std::u32string text = utf8_to_u32(prompt);
  const Tokens ids = loaded_.encode_prompt(text, UnknownPolicy::kMapToUnknownId);
  if (ids.empty()) throw std::invalid_argument("the prompt is empty");
  loaded_.check_fits_window(ids.size());
  const auto per_position = prompt_latents(loaded_.model(), sae_, point_index_, ids, top);
  nlohmann::json positions = nlohmann::json::array();
  for (std::size_t t = 0; t < ids.size(); ++t) {
    nlohmann::json latents = nlohmann::json::array();
    for (const LatentActivation& a : per_position[t])
      latents.push_back({{"latent", a.latent}, {"activation", a.activation}});
    positions.push_back({{"token", text_of({ids[t]})}, {"latents", latents}});
  }
  return {{"point", point_}, {"positions", positions}};
}

nlohmann::json SaeFeatures::overview() const {
  return {{"n_latents", sae_.n_latents()},
          {"k", sae_.k()},
          {"point", point_},
          {"tokens", codes_.tokens},
          {"fired", firing_counts(codes_)}};
}

}  // namespace glass
