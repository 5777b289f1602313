#include "interp/patching.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

// The last position's logit[answer] - logit[other] of logits (T, V) or (1, T, V).
double logit_diff(const Array& logits, std::int32_t answer, std::int32_t other) {
  const std::size_t V = logits.shape().back(), T = logits.size() / V;
  const Scalar* last = logits.data() + (T - 1) * V;
  return static_cast<double>(last[answer]) - static_cast<double>(last[other]);
}

// Validates the pair of prompts and the answers.
void check_inputs(const Decoder& model, const Tokens& clean, const Tokens& corrupted,
                  std::int32_t answer, std::int32_t other) {
  if (clean.empty() || clean.size() != corrupted.size()) {
    throw std::invalid_argument("activation patching: the clean (" + std::to_string(clean.size()) +
                                " tokens) and corrupted (" + std::to_string(corrupted.size()) +
                                " tokens) prompts must be non-empty and of the same length");
  }
  const auto V = static_cast<std::int32_t>(model.config().vocab_size);
  if (answer < 0 || answer >= V || other < 0 || other >= V) {
    throw std::invalid_argument("activation patching: answer " + std::to_string(answer) +
                                " and other " + std::to_string(other) +
                                " must be token ids in [0, " + std::to_string(V) + ")");
  }
}

// Runs the clean prompt (recording every snapshot into clean_run) and the corrupted one; the
// result holds their logit differences.
PatchingResult start(const Decoder& model, const Tokens& clean, const Tokens& corrupted,
                     std::int32_t answer, std::int32_t other, Tracer& clean_run) {
  check_inputs(model, clean, corrupted, answer, other);
  PatchingResult result;
  result.answer = answer;
  result.other = other;
  result.clean_diff = logit_diff(run_with_hooks(model, as_batch(clean), clean_run), answer, other);
  Tracer plain;
  plain.set_recording(false);
  result.corrupted_diff =
      logit_diff(run_with_hooks(model, as_batch(corrupted), plain), answer, other);
  return result;
}

void fill(PatchingResult& result, std::size_t r, std::size_t c, double patched) {
  result.patched_diff(r, c) = static_cast<Scalar>(patched);
  const double span = result.clean_diff - result.corrupted_diff;
  result.recovered(r, c) = span == 0
                               ? std::numeric_limits<Scalar>::quiet_NaN()
                               : static_cast<Scalar>((patched - result.corrupted_diff) / span);
}

}  // namespace

Array patched_logits(const Decoder& model, const Tokens& corrupted, const std::string& point,
                     const Array& clean_value, std::optional<std::size_t> position,
                     std::optional<std::size_t> head) {
  const bool heads_axis = point.size() >= 8 && point.compare(point.size() - 8, 8, "attn.mix") == 0;
  if (head && !heads_axis)
    throw std::invalid_argument(
        "patched_logits: a head can be chosen only at an attn.mix point, not \"" + point + "\"");
  Tracer tracer;
  tracer.set_recording(false);
  bool seen = false;
  tracer.add_hook(point, [&](const std::string&, Array& value) {
    seen = true;
    const Shape want(value.shape().begin() + 1, value.shape().end());
    if (value.shape()[0] != 1 || shape_of(clean_value) != want) {
      throw std::invalid_argument("patched_logits: the clean value at \"" + point +
                                  "\" has shape " + shape_str(shape_of(clean_value)) +
                                  ", the corrupted run's is " + shape_str(want) +
                                  " (batch removed)");
    }
    const std::size_t t_axis = heads_axis ? 1 : 0;  // the position axis, batch removed
    const std::size_t T = want[t_axis];
    if (position && *position >= T)
      throw std::invalid_argument("patched_logits: position " + std::to_string(*position) +
                                  " is outside the " + std::to_string(T) + " positions");
    if (head && *head >= want[0])
      throw std::invalid_argument("patched_logits: head " + std::to_string(*head) +
                                  " is outside the " + std::to_string(want[0]) + " heads");
    // Copy element by element where the index matches the chosen position and head.
    const std::size_t inner = heads_axis ? want[2] : want[1];  // head_dim or d_model
    const std::size_t groups = heads_axis ? want[0] : 1;       // heads
    for (std::size_t g = 0; g < groups; ++g) {
      if (head && g != *head) continue;
      for (std::size_t t = 0; t < T; ++t) {
        if (position && t != *position) continue;
        const std::size_t offset = (g * T + t) * inner;
        std::copy(clean_value.data() + offset, clean_value.data() + offset + inner,
                  value.data() + offset);
      }
    }
  });
  Array logits = run_with_hooks(model, as_batch(corrupted), tracer);
  if (!seen)
    throw std::invalid_argument("patched_logits: no hook point named \"" + point +
                                "\" in this model");
  const std::size_t T = logits.shape()[1], V = logits.shape()[2];
  logits.reshape({T, V});  // (1, T, V) -> (T, V)
  return logits;
}

PatchingResult patch_residual_stream(const Decoder& model, const Tokens& clean,
                                     const Tokens& corrupted, std::int32_t answer,
                                     std::int32_t other) {
  Tracer clean_run;
  PatchingResult result = start(model, clean, corrupted, answer, other, clean_run);
  result.rows = residual_points(model);
  const std::size_t T = clean.size();
  result.patched_diff = Array::from_shape({result.rows.size(), T});
  result.recovered = Array::from_shape({result.rows.size(), T});
  for (std::size_t r = 0; r < result.rows.size(); ++r)
    for (std::size_t t = 0; t < T; ++t)
      fill(result, r, t,
           logit_diff(
               patched_logits(model, corrupted, result.rows[r], clean_run.get(result.rows[r]), t),
               answer, other));
  return result;
}

PatchingResult patch_head_outputs(const Decoder& model, const Tokens& clean,
                                  const Tokens& corrupted, std::int32_t answer,
                                  std::int32_t other) {
  Tracer clean_run;
  PatchingResult result = start(model, clean, corrupted, answer, other, clean_run);
  const auto& c = model.config();
  result.patched_diff = Array::from_shape({c.n_layers, c.n_heads});
  result.recovered = Array::from_shape({c.n_layers, c.n_heads});
  for (std::size_t L = 0; L < c.n_layers; ++L) {
    result.rows.push_back("layers." + std::to_string(L));
    const std::string point = attention_point(L, "mix");
    for (std::size_t h = 0; h < c.n_heads; ++h)
      fill(
          result, L, h,
          logit_diff(patched_logits(model, corrupted, point, clean_run.get(point), std::nullopt, h),
                     answer, other));
  }
  return result;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
