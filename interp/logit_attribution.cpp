#include "interp/logit_attribution.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "interp/logit_lens.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

double LogitAttribution::total() const {
  double sum = embeddings;
  for (Scalar v : heads) sum += static_cast<double>(v);
  for (Scalar v : mlps) sum += static_cast<double>(v);
  return sum;
}

double rms_scale(const Array& x, double eps) {
  double sum_sq = 0;
  for (Scalar v : x) sum_sq += static_cast<double>(v) * static_cast<double>(v);
  return 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
}

Array direct_effects(const Array& parts, const Array& unembed, const Array& gain, double scale) {
  const std::size_t d = unembed.size();
  if (parts.dimension() != 2 || parts.shape()[1] != d || gain.size() != d)
    throw std::invalid_argument("direct_effects: parts " + shape_str(shape_of(parts)) +
                                ", unembed " + shape_str(shape_of(unembed)) + " and gain " +
                                shape_str(shape_of(gain)) + " do not fit (P, d), (d), (d)");
  // u = unembed * gain * scale (d): the direction a part is read along, in double.
  std::vector<double> u(d);
  for (std::size_t i = 0; i < d; ++i)
    u[i] = static_cast<double>(unembed.data()[i]) * static_cast<double>(gain.data()[i]) * scale;
  Array effects = Array::from_shape({parts.shape()[0]});
  for (std::size_t p = 0; p < parts.shape()[0]; ++p) {
    double dot = 0;
    for (std::size_t i = 0; i < d; ++i) dot += static_cast<double>(parts(p, i)) * u[i];
    effects(p) = static_cast<Scalar>(dot);
  }
  return effects;
}

namespace {

void check_token(std::int32_t id, std::size_t V, const char* what) {
  if (id < 0 || static_cast<std::size_t>(id) >= V)
    throw std::invalid_argument(std::string("logit_attribution: the ") + what + " token id " +
                                std::to_string(id) + " is outside the vocabulary [0, " +
                                std::to_string(V) + ")");
}

// Row t of a (T, d) snapshot as (1, d).
Array row(const Array& stream, std::size_t t) {
  const std::size_t d = stream.shape()[1];
  Array one = Array::from_shape({1, d});
  std::copy(stream.data() + t * d, stream.data() + (t + 1) * d, one.data());
  return one;
}

// Head h's output at position t through its slice of W_O: (1, d) with
// out_i = sum_j mix[h, t, j] W_O[i, h * head_dim + j]; mix (H, T, head_dim), W_O (d, H head_dim).
Array head_output(const Array& mix, const Array& wo, std::size_t h, std::size_t t) {
  const std::size_t T = mix.shape()[1], hd = mix.shape()[2], d = wo.shape()[0];
  const Scalar* m = mix.data() + (h * T + t) * hd;
  Array out = Array::from_shape({1, d});
  for (std::size_t i = 0; i < d; ++i) {
    double sum = 0;
    for (std::size_t j = 0; j < hd; ++j)
      sum += static_cast<double>(m[j]) * static_cast<double>(wo(i, h * hd + j));
    out(0, i) = static_cast<Scalar>(sum);
  }
  return out;
}

}  // namespace

LogitAttribution logit_attribution(const Decoder& model, const Tokens& tokens,
                                   std::optional<std::size_t> position,
                                   std::optional<std::int32_t> target,
                                   std::optional<std::int32_t> other) {
  const auto& c = model.config();
  const Ids batch = as_batch(tokens);
  const std::size_t T = tokens.size(), V = c.vocab_size, d = c.d_model;
  const std::size_t t = position.value_or(T - 1);
  if (t >= T)
    throw std::invalid_argument("logit_attribution: position " + std::to_string(t) +
                                " is outside the prompt's " + std::to_string(T) + " positions");
  if (target) check_token(*target, V, "target");
  if (other) check_token(*other, V, "other");

  // One forward pass: snapshots of the embeddings, each head's output before W_O and the final
  // stream; the MLP outputs (hook points without a snapshot) copied by hooks, (T, d) each.
  Tracer tracer;
  std::vector<Array> mlp_out(c.n_layers);
  for (std::size_t L = 0; L < c.n_layers; ++L)
    tracer.add_hook("layers." + std::to_string(L) + ".feed_forward.out",
                    [&mlp_out, L, T, d](const std::string&, Array& value) {
                      mlp_out[L] = Array::from_shape({T, d});
                      std::copy(value.data(), value.data() + T * d, mlp_out[L].data());
                    });
  const Array logits = run_with_hooks(model, batch, tracer);  // (1, T, V)
  const Scalar* logit_row = logits.data() + t * V;

  LogitAttribution a;
  a.position = t;
  a.target = target.value_or(static_cast<std::int32_t>(top_k_indices(logit_row, V, 1)[0]));
  a.other = other;
  // With soft-capping (logit = cap * tanh(z / cap)) the stream is linear in z, not in the logit:
  // the parts split z, recovered as cap * atanh(logit / cap).
  const double cap = c.logit_softcap;
  auto before_cap = [cap](Scalar logit) {
    const double l = static_cast<double>(logit);
    return cap > 0 ? cap * std::atanh(l / cap) : l;
  };
  a.capped = cap > 0;
  a.logit = before_cap(logit_row[a.target]) - (other ? before_cap(logit_row[*other]) : 0.0);

  // The direction u = (W_U[target] - W_U[other]) * g * r read off the final stream x at t.
  const Array& W_U = model.output.weight.value();  // (V, d)
  Array unembed = Array::from_shape({d});
  for (std::size_t i = 0; i < d; ++i)
    unembed(i) = W_U(a.target, i) - (other ? W_U(*other, i) : Scalar(0));
  const Array final_stream = row(tracer.get(residual_points(model).back()), t);
  a.scale = rms_scale(final_stream, model.norm.eps);
  const Array& gain = model.norm.weight.value();

  a.embeddings = direct_effects(row(tracer.get("embeddings"), t), unembed, gain, a.scale)(0);
  a.heads = Array::from_shape({c.n_layers, c.n_heads});
  a.mlps = Array::from_shape({c.n_layers});
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    const Array& mix = tracer.get(attention_point(L, "mix"));  // (H, T, head_dim)
    const Array& wo = model.layers[L]->attention.wo.weight.value();
    for (std::size_t h = 0; h < c.n_heads; ++h)
      a.heads(L, h) = direct_effects(head_output(mix, wo, h, t), unembed, gain, a.scale)(0);
    a.mlps(L) = direct_effects(row(mlp_out[L], t), unembed, gain, a.scale)(0);
  }
  return a;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
