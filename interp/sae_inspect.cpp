// Browsing an SAE's latents (see sae_inspect.hpp): the latents of a text, one latent's summary,
// its logit effects, the latents of a prompt.

#include "interp/sae_inspect.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "autograd/tape.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

void check_sae(const Decoder& model, const SparseAutoencoder& sae) {
  if (sae.d_model() != model.config().d_model)
    throw std::invalid_argument("sae_inspect: the SAE reads d_model " +
                                std::to_string(sae.d_model()) + ", the model has " +
                                std::to_string(model.config().d_model));
}

void check_latent(const SparseAutoencoder& sae, std::size_t latent) {
  if (latent >= sae.n_latents())
    throw std::invalid_argument("latent " + std::to_string(latent) +
                                " is out of range: the SAE has latents 0 to " +
                                std::to_string(sae.n_latents() - 1));
}

/// The non-zero latents of each row of z (R, F), at most k per row, padded with (0, 0) pairs.
void append_sparse(const Array& z, std::size_t k, SparseCodes& codes) {
  const std::size_t rows = z.shape()[0], F = z.shape()[1];
  for (std::size_t r = 0; r < rows; ++r) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < F && kept < k; ++i) {
      if (z(r, i) <= 0) continue;
      codes.latents.push_back(static_cast<std::uint32_t>(i));
      codes.values.push_back(static_cast<float>(z(r, i)));
      ++kept;
    }
    for (; kept < k; ++kept) {
      codes.latents.push_back(0);
      codes.values.push_back(0.0f);
    }
  }
  codes.tokens += rows;
}

/// The SAE's latents z (B T, F) on windows `ids` (B, T).
Array latents_of(const Decoder& model, const SparseAutoencoder& sae, std::size_t point,
                 const Ids& ids) {
  NoGradGuard no_grad;
  return sae.encode(Tensor(residual_at(model, ids, point))).value();
}

}  // namespace

std::size_t residual_point_index(const Decoder& model, const std::string& point) {
  const std::vector<std::string> names = residual_points(model);
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == point) return i;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  throw std::invalid_argument("no residual point '" + point + "' in this model; the points are " +
                              list);
}

Array residual_at(const Decoder& model, const Ids& tokens, std::size_t point) {
  const std::string name = residual_points(model).at(point);
  const std::size_t d = model.config().d_model;
  Array stream;
  Tracer tracer;
  tracer.set_recording(false);
  tracer.add_hook(name, [&stream, d](const std::string&, Array& value) {
    stream = value;                         // (B, T, d)
    stream.reshape({value.size() / d, d});  // (B T, d)
  });
  run_with_hooks(model, tokens, tracer);
  return stream;
}

SparseCodes encode_text(const Decoder& model, const SparseAutoencoder& sae, std::size_t point,
                        const Tokens& text, std::size_t window, std::size_t batch) {
  check_sae(model, sae);
  if (text.empty()) throw std::invalid_argument("encode_text: the text has no tokens");
  if (window == 0 || window > model.config().context_length)
    throw std::invalid_argument("encode_text: the window must be in [1, context_length = " +
                                std::to_string(model.config().context_length) + "]");
  batch = std::max<std::size_t>(batch, 1);
  SparseCodes codes;
  codes.k = sae.k();
  codes.n_latents = sae.n_latents();
  const std::size_t full = text.size() / window;  // whole windows, then the rest
  for (std::size_t w0 = 0; w0 < full; w0 += batch) {
    const std::size_t B = std::min(batch, full - w0);
    Ids ids = Ids::from_shape({B, window});
    std::copy(text.begin() + static_cast<long>(w0 * window),
              text.begin() + static_cast<long>((w0 + B) * window), ids.data());
    append_sparse(latents_of(model, sae, point, ids), codes.k, codes);
  }
  if (full * window < text.size()) {
    const Tokens rest(text.begin() + static_cast<long>(full * window), text.end());
    append_sparse(latents_of(model, sae, point, as_batch(rest)), codes.k, codes);
  }
  return codes;
}

double LatentSummary::density() const {
  return tokens == 0 ? 0.0 : static_cast<double>(fired) / static_cast<double>(tokens);
}

LatentSummary summarize_latent(const SparseCodes& codes, std::size_t latent, std::size_t n_top,
                               std::size_t bins) {
  if (latent >= codes.n_latents)
    throw std::invalid_argument("latent " + std::to_string(latent) +
                                " is out of range: the SAE has latents 0 to " +
                                std::to_string(codes.n_latents - 1));
  if (bins == 0) throw std::invalid_argument("summarize_latent: bins must be at least 1");
  LatentSummary s;
  s.latent = latent;
  s.tokens = codes.tokens;
  std::vector<LatentHit> hits;  // every token where it fired, in text order
  for (std::size_t t = 0; t < codes.tokens; ++t)
    for (std::size_t j = t * codes.k; j < (t + 1) * codes.k; ++j)
      if (codes.latents[j] == latent && codes.values[j] > 0) hits.push_back({t, codes.values[j]});
  s.fired = hits.size();
  s.histogram.assign(bins, 0);
  if (hits.empty()) return s;
  double sum = 0;
  for (const LatentHit& h : hits) {
    sum += h.activation;
    s.max_activation = std::max(s.max_activation, h.activation);
  }
  s.mean_when_fired = sum / static_cast<double>(hits.size());
  for (const LatentHit& h : hits) {
    // bin b holds (b max/bins, (b+1) max/bins]: ceil(a bins / max) - 1
    const double x = std::ceil(h.activation / s.max_activation * static_cast<double>(bins));
    s.histogram[std::min(bins - 1, static_cast<std::size_t>(std::max(1.0, x)) - 1)] += 1;
  }
  std::stable_sort(hits.begin(), hits.end(), [](const LatentHit& a, const LatentHit& b) {
    return a.activation > b.activation;
  });
  hits.resize(std::min(n_top, hits.size()));
  s.top = std::move(hits);
  return s;
}

std::vector<std::size_t> firing_counts(const SparseCodes& codes) {
  std::vector<std::size_t> counts(codes.n_latents, 0);
  for (std::size_t j = 0; j < codes.latents.size(); ++j)
    if (codes.values[j] > 0) counts[codes.latents[j]] += 1;
  return counts;
}

std::vector<double> latent_direction(const SparseAutoencoder& sae, std::size_t latent) {
  check_latent(sae, latent);
  const Array& w = sae.W_dec.value();  // (F, d)
  std::vector<double> u(sae.d_model());
  double norm2 = 0;
  for (std::size_t i = 0; i < u.size(); ++i) {
    u[i] = static_cast<double>(w(latent, i));
    norm2 += u[i] * u[i];
  }
  if (norm2 == 0)
    throw std::invalid_argument("latent " + std::to_string(latent) +
                                " has a zero decoder row: it has no direction");
  for (double& v : u) v /= std::sqrt(norm2);
  return u;
}

LogitEffects latent_logit_effects(const Decoder& model, const SparseAutoencoder& sae,
                                  std::size_t latent, std::size_t n) {
  check_sae(model, sae);
  check_latent(sae, latent);
  const Array& w_dec = sae.W_dec.value();          // (F, d)
  const Array& gain = model.norm.weight.value();   // (d)
  const Array& W_U = model.output.weight.value();  // (V, d)
  const std::size_t V = W_U.shape()[0], d = W_U.shape()[1];
  // u = W_dec[latent] * g (d): the direction as the output matrix reads it.
  std::vector<double> u(d);
  for (std::size_t i = 0; i < d; ++i)
    u[i] = static_cast<double>(w_dec(latent, i)) * static_cast<double>(gain(i));
  LogitEffects e;
  e.effect.assign(V, 0.0);
  for (std::size_t v = 0; v < V; ++v)
    for (std::size_t i = 0; i < d; ++i) e.effect[v] += static_cast<double>(W_U(v, i)) * u[i];
  std::vector<std::size_t> order(V);
  for (std::size_t v = 0; v < V; ++v) order[v] = v;
  std::stable_sort(order.begin(), order.end(),
                   [&e](std::size_t a, std::size_t b) { return e.effect[a] > e.effect[b]; });
  n = std::min(n, V);
  for (std::size_t j = 0; j < n; ++j) {
    e.promoted.push_back({static_cast<std::int32_t>(order[j]), e.effect[order[j]]});
    const std::size_t low = order[V - 1 - j];
    e.suppressed.push_back({static_cast<std::int32_t>(low), e.effect[low]});
  }
  return e;
}

std::vector<std::vector<LatentActivation>> prompt_latents(const Decoder& model,
                                                          const SparseAutoencoder& sae,
                                                          std::size_t point, const Tokens& prompt,
                                                          std::size_t top) {
  check_sae(model, sae);
  if (prompt.size() > model.config().context_length)
    throw std::invalid_argument("prompt_latents: the prompt has " + std::to_string(prompt.size()) +
                                " tokens, the model's context " +
                                std::to_string(model.config().context_length));
  const Array z = latents_of(model, sae, point, as_batch(prompt));  // (T, F)
  std::vector<std::vector<LatentActivation>> out(prompt.size());
  for (std::size_t t = 0; t < prompt.size(); ++t) {
    for (std::size_t i = 0; i < sae.n_latents(); ++i)
      if (z(t, i) > 0) out[t].push_back({i, static_cast<double>(z(t, i))});
    std::stable_sort(out[t].begin(), out[t].end(),
                     [](const LatentActivation& a, const LatentActivation& b) {
                       return a.activation > b.activation;
                     });
    if (out[t].size() > top) out[t].resize(top);
  }
  return out;
}

HitContext hit_context(const Tokens& text, const LatentHit& hit, std::size_t window,
                       std::size_t before, std::size_t after,
                       const std::function<std::string(const Tokens&)>& decode) {
  const std::size_t p = hit.position;
  const std::size_t start = window > 0 ? p / window * window : 0;  // the hit's window
  const std::size_t end = window > 0 ? std::min(text.size(), start + window) : text.size();
  const std::size_t from = p - std::min(before, p - start);
  const std::size_t to = std::min(end, p + 1 + after);
  auto slice = [&text](std::size_t a, std::size_t b) {
    return Tokens(text.begin() + static_cast<long>(a), text.begin() + static_cast<long>(b));
  };
  return {decode(slice(from, p)), decode(slice(p, p + 1)), decode(slice(p + 1, to)),
          hit.activation};
}

}  // namespace GLASS_PRECISION
}  // namespace glass
