#pragma once
// The interpretability record of a save: the head scores and the per-head ablation Δloss of one
// fixed probe, measured on the model of that save, so that a run's saves say when a head formed
// (glass train writes it as interp.json in every save; glass inspect --history reads them).
//
//   {"format": "glass-interp-1", "step": 2000,
//    "probe": {"source": "validation", "tokens": 256, "period": 32, "seed": 1234},
//    "probe_loss": 1.62, "n_layers": 4, "n_heads": 4,
//    "previous_token": [[...n_heads...], ...n_layers rows], "induction": [[...]],
//    "first_position": [[...]], "ablation_delta_loss": [[...]], "seconds": 0.012}
//
// previous_token and first_position are measured on the probe text (the first `tokens` tokens
// of the validation split, cut into windows of the training context), induction on `period`
// random tokens repeated twice (drawn from `seed`), ablation_delta_loss is the zero-ablation
// Δloss of each head on the probe text (nats per token), probe_loss the unablated loss there.

#include <cstdint>
#include <string>
#include <vector>

#include "interp/ablation.hpp"
#include "interp/run.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// The format name of interp.json.
inline constexpr const char* kInterpRecordFormat = "glass-interp-1";
/// The format of interp_history.json, every record of the run up to a save in step order
/// (the file names: kInterpFile, kInterpHistoryFile in checkpoint/run_dir.hpp):
///   {"format": "glass-interp-history-1", "run_id": "3f9c...", "records": [{interp.json}, ...]}
inline constexpr const char* kInterpHistoryFormat = "glass-interp-history-1";

/// What the probe is: fixed for a run, so that its saves compare.
struct ProbeSpec {
  std::string source = "validation";  ///< the split the probe text comes from
  std::size_t tokens = 256;           ///< probe text tokens (windows x window length)
  std::size_t period = 32;            ///< the repeated random sequence of the induction score
  std::uint64_t seed = 1234;          ///< its generator's seed (std::mt19937_64)
};

/// The probe itself, built once per run by make_probe.
struct InterpProbe {
  ProbeSpec spec;                      ///< as measured: tokens and period after fitting the model
  Ids inputs;                          ///< (W, T) windows of the probe text
  Ids targets;                         ///< (W, T) the next token of each input
  std::vector<std::int32_t> repeated;  ///< (2 period) repeated_random_tokens(period, V, seed)
};

/// The probe of a run: windows of T = min(window, context_length, spec.tokens) tokens taken in
/// order from the start of `text` (the validation split's ids; each window's targets are the
/// next tokens, so W windows use W * T + 1 tokens of text), as many as fit in spec.tokens and in
/// the text (at least one, shortened when the text is shorter than a window); the period is
/// reduced to T / 2 when it does not fit in a window. Needs no random numbers but the induction
/// sequence's own generator. std::invalid_argument when `text` has fewer than 3 tokens or an id
/// outside [0, vocab_size).
InterpProbe make_probe(const std::vector<std::int32_t>& text, std::size_t window,
                       const ModelConfig& config, const ProbeSpec& spec = {});

/// The three scores of every head on windows of text: previous_token and first_position (the
/// definitions of head_scores.hpp) averaged over the W windows of `windows` (W, T), T >= 2.
/// Both (n_layers, n_heads). One forward pass.
struct TextHeadScores {
  Array previous_token;
  Array first_position;
};
TextHeadScores text_head_scores(const Decoder& model, const Ids& windows);

/// One save's record (the fields of interp.json; arrays (n_layers, n_heads)).
struct InterpRecord {
  long step = 0;
  ProbeSpec probe;
  double probe_loss = 0;  ///< nats per token on the probe text, no head ablated
  std::size_t n_layers = 0, n_heads = 0;
  Array previous_token, induction, first_position, ablation_delta_loss;
  double seconds = 0;  ///< wall time the measurement took
};

/// Measures the record of `model` at `step` on `probe`: text_head_scores of the probe text,
/// head_scores of the repeated sequence (induction), ablation_table (zero) of the probe text,
/// of the heads of `share` only (every head by default; interp/ablation.hpp). Under mpirun
/// each rank measures its share and the ranks sum their ablation_delta_loss: every rank holds
/// the same weights (the same all-reduced update), so the sum is one process's table, bit for
/// bit. n_layers * n_heads / parts + 3 forward passes on the reference path, no gradient, no
/// random number. std::invalid_argument when a value is not finite or share.part >= share.parts.
InterpRecord record_interp(const Decoder& model, const InterpProbe& probe, long step,
                           HeadShare share = {});

/// The record as the JSON text of interp.json (format above, kInterpRecordFormat).
std::string interp_record_json(const InterpRecord& record);

/// Reads interp.json's text. std::invalid_argument naming what is wrong: not JSON, another
/// format, a missing or mistyped field, a table that is not (n_layers, n_heads), a non-finite
/// or negative count.
InterpRecord parse_interp_record(const std::string& text);

}  // namespace GLASS_PRECISION
}  // namespace glass
