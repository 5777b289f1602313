#include "interp/run.hpp"

#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

Ids as_batch(const Tokens& tokens) {
  if (tokens.empty()) throw std::invalid_argument("interp: the prompt has no tokens");
  Ids ids = Ids::from_shape({1, tokens.size()});
  for (std::size_t t = 0; t < tokens.size(); ++t) ids(0, t) = tokens[t];
  return ids;
}

Array run_with_hooks(const Decoder& model, const Ids& tokens, Tracer& tracer) {
  NoGradGuard no_grad;
  return model.forward(tokens, nullptr, &tracer).value();
}

std::vector<std::string> residual_points(const Decoder& model) {
  std::vector<std::string> names = {"embeddings"};
  for (std::size_t L = 0; L < model.layers.size(); ++L)
    names.push_back("layers." + std::to_string(L) + ".out");
  return names;
}

std::string attention_point(std::size_t layer, const std::string& step) {
  return "layers." + std::to_string(layer) + ".attn." + step;
}

void check_head(const Decoder& model, const HeadRef& head) {
  const auto& c = model.config();
  if (head.layer >= c.n_layers || head.head >= c.n_heads) {
    throw std::invalid_argument("interp: no head (layer " + std::to_string(head.layer) + ", head " +
                                std::to_string(head.head) + ") in a model with " +
                                std::to_string(c.n_layers) + " layers of " +
                                std::to_string(c.n_heads) + " heads");
  }
}

}  // namespace GLASS_PRECISION
}  // namespace glass
