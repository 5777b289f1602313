#include "interp/ablation.hpp"

#include <cmath>
#include <map>
#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

HeadMeans head_means(const Decoder& model, const Ids& reference) {
  const auto& c = model.config();
  const std::size_t H = c.n_heads, hd = c.head_dim();
  HeadMeans means(c.n_layers, Array(xt::zeros<Scalar>({H, hd})));
  // Sum in double: the reference batch may hold many positions.
  std::vector<std::vector<double>> sums(c.n_layers, std::vector<double>(H * hd, 0.0));
  std::size_t count = 0;
  Tracer tracer;
  tracer.set_recording(false);
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    tracer.add_hook(
        attention_point(L, "mix"), [&sums, &count, L, H, hd](const std::string&, Array& mix) {
          const std::size_t B = mix.shape()[0], n = mix.shape()[2];  // (B, n_heads, n, head_dim)
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h)
              for (std::size_t t = 0; t < n; ++t)
                for (std::size_t i = 0; i < hd; ++i) sums[L][h * hd + i] += mix(b, h, t, i);
          if (L == 0) count = B * n;
        });
  }
  run_with_hooks(model, reference, tracer);
  for (std::size_t L = 0; L < c.n_layers; ++L)
    for (std::size_t j = 0; j < H * hd; ++j)
      means[L].data()[j] = static_cast<Scalar>(sums[L][j] / static_cast<double>(count));
  return means;
}

void add_ablation_hooks(Tracer& tracer, const Decoder& model, const std::vector<HeadRef>& heads,
                        AblationMode mode, const HeadMeans* means) {
  const auto& c = model.config();
  const std::size_t hd = c.head_dim();
  if (mode == AblationMode::mean) {
    if (!means) throw std::invalid_argument("add_ablation_hooks: mean ablation needs head_means");
    if (means->size() != c.n_layers)
      throw std::invalid_argument("add_ablation_hooks: head_means has the wrong number of layers");
    for (const Array& m : *means)
      if (shape_of(m) != Shape{c.n_heads, hd})
        throw std::invalid_argument("add_ablation_hooks: head_means has shape " +
                                    shape_str(shape_of(m)) + ", expected (n_heads, head_dim)");
  }
  std::map<std::size_t, std::vector<std::size_t>> by_layer;
  for (const HeadRef& head : heads) {
    check_head(model, head);
    by_layer[head.layer].push_back(head.head);
  }
  for (const auto& entry : by_layer) {
    // Named copies, not a structured binding: a lambda may not capture one before C++20.
    const std::size_t layer = entry.first;
    const std::vector<std::size_t> hs = entry.second;
    const Array* layer_means = mode == AblationMode::mean ? &(*means)[layer] : nullptr;
    tracer.add_hook(
        attention_point(layer, "mix"), [hs, layer_means, hd](const std::string&, Array& mix) {
          const std::size_t B = mix.shape()[0], n = mix.shape()[2];  // (B, n_heads, n, head_dim)
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h : hs)
              for (std::size_t t = 0; t < n; ++t)
                for (std::size_t i = 0; i < hd; ++i)
                  mix(b, h, t, i) = layer_means ? (*layer_means)(h, i) : Scalar(0);
        });
  }
}

Array ablated_logits(const Decoder& model, const Ids& tokens, const std::vector<HeadRef>& heads,
                     AblationMode mode, const HeadMeans* means) {
  Tracer tracer;
  tracer.set_recording(false);
  add_ablation_hooks(tracer, model, heads, mode, means);
  return run_with_hooks(model, tokens, tracer);
}

double ablated_loss(const Decoder& model, const Ids& inputs, const Ids& targets,
                    const std::vector<HeadRef>& heads, AblationMode mode, const HeadMeans* means) {
  if (shape_of(inputs) != shape_of(targets)) {
    throw std::invalid_argument("ablated_loss: inputs " + shape_str(shape_of(inputs)) +
                                " and targets " + shape_str(shape_of(targets)) +
                                " differ in shape");
  }
  const Array logits = ablated_logits(model, inputs, heads, mode, means);
  NoGradGuard no_grad;
  return static_cast<double>(cross_entropy(Tensor(logits), targets).value()());
}

AblationTable ablation_table(const Decoder& model, const Ids& inputs, const Ids& targets,
                             AblationMode mode, const HeadMeans* means, HeadShare share) {
  if (share.part >= share.parts)
    throw std::invalid_argument("ablation_table: part " + std::to_string(share.part) + " of " +
                                std::to_string(share.parts) + " parts");
  const auto& c = model.config();
  AblationTable table;
  table.base_loss = ablated_loss(model, inputs, targets, {}, mode, means);
  table.delta_loss = xt::zeros<Scalar>({c.n_layers, c.n_heads});
  for (std::size_t L = 0; L < c.n_layers; ++L)
    for (std::size_t h = 0; h < c.n_heads; ++h)
      if ((L * c.n_heads + h) % share.parts == share.part)
        table.delta_loss(L, h) = static_cast<Scalar>(
            ablated_loss(model, inputs, targets, {{L, h}}, mode, means) - table.base_loss);
  return table;
}

NextTokenShift next_token_shift(const Decoder& model, const Tokens& prompt,
                                const std::vector<HeadRef>& heads, AblationMode mode,
                                const HeadMeans* means) {
  const Ids batch = as_batch(prompt);
  const std::size_t T = prompt.size(), V = model.config().vocab_size;
  auto last_probs = [&](const Array& logits) {
    NoGradGuard no_grad;
    Array row = Array::from_shape({V});
    std::copy(logits.data() + (T - 1) * V, logits.data() + T * V, row.data());
    return Array(softmax(Tensor(row)).value());
  };
  NextTokenShift shift;
  shift.before = last_probs(ablated_logits(model, batch, {}, mode, means));
  shift.after = last_probs(ablated_logits(model, batch, heads, mode, means));
  double kl = 0;
  for (std::size_t v = 0; v < V; ++v) {
    const double p = shift.before(v), q = shift.after(v);
    if (p > 0) kl += p * std::log(p / q);
  }
  shift.kl_divergence = kl;
  return shift;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
