#pragma once
// The probe's attention over a run: at every save glass train runs the model on a fixed probe
// prompt (the training text's first non-blank characters) and keeps what every head attends to,
// with a sample, in the save's probe_history.json, carried from save to save. So a run whose
// older saves were pruned still shows how its attention changed (`glass serve -m RUN`, `glass
// inspect --history`); `glass serve` evaluates the saves it sees with the same function.
//
//   {"format": "glass-probe-history-1", "run_id": "3f9c...", "probe": "Dom Casmurro",
//    "tokens": [12, 40, ...], "token_texts": ["D", "o", ...], "n_layers": 4, "n_heads": 4,
//    "records": [{"step": 0, "train_loss": 4.17, "val_loss": 4.18, "sample": "...",
//                 "attention": [[[[1000], [612, 388], ...n rows...] ...n_heads] ...n_layers]}]}
//
// attention[L][h][i] is row i of head h's softmax in layer L: its causal part, the i + 1
// weights on keys 0..i, in thousandths (integers 0..1000; a picture needs no more, and the file
// stays small). Records are in step order, one per save, at most kMaxProbeRecords of them.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/tensor.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text_tokenizer.hpp"
#include "nn/config.hpp"
#include "nn/decoder.hpp"

namespace glass {

/// The format name of probe_history.json (the file name: kProbeHistoryFile, run_dir.hpp).
inline constexpr const char* kProbeHistoryFormat = "glass-probe-history-1";
/// Characters of the default probe prompt, at most.
inline constexpr std::size_t kProbeChars = 32;
/// Tokens of the sample taken at each save (seed kProbeSampleSeed, from the start id).
inline constexpr std::size_t kProbeSampleTokens = 120;
inline constexpr std::uint64_t kProbeSampleSeed = 1337;
/// The most records a history keeps: past it, every other record but the first and the last is
/// dropped (the run stays covered from start to end, more thinly).
inline constexpr std::size_t kMaxProbeRecords = 200;
/// The most bytes of records a writer keeps (fewer records for a large model: at least two).
inline constexpr std::size_t kProbeHistoryBudgetBytes = 16 * 1024 * 1024;

/// The default probe prompt of a run: the first min(kProbeChars, window) characters of `text`
/// from its first character that is not whitespace (first_nonblank_chars): a text that starts
/// with blank lines (a licence, a Gutenberg header, a centred title) would draw a grid of spaces.
/// "" when `text` is blank. The one rule of glass train and glass serve.
std::u32string default_probe(const std::u32string& text, std::size_t window);

/// The first `skip` ids of `ids` whose text is whitespace alone: where the interpretability
/// record's probe text (the validation split) starts, by the same rule as default_probe.
std::size_t blank_prefix_tokens(const TextTokenizer& tokenizer,
                                const std::vector<std::int32_t>& ids);

/// The probe's tokens as the model reads them, shared by every record of a run.
struct ProbeTokens {
  std::string probe;                     ///< the prompt (UTF-8), cut to fit the window
  std::vector<std::int32_t> tokens;      ///< (n) its ids
  std::vector<std::string> token_texts;  ///< (n) each id's text (the prompt's character for id 0)
};

/// One save's look at the probe.
struct ProbeRecord {
  long step = 0;
  double train_loss = NAN, val_loss = NAN;  ///< the evaluation's losses (NaN: none at that save)
  std::string sample;  ///< kProbeSampleTokens tokens sampled from the start id (UTF-8)
  /// (n_layers, n_heads, n, n) softmax weights in thousandths (0..1000), 0 above the diagonal.
  std::vector<std::vector<std::vector<std::vector<int>>>> attention;
};

/// A run's history: the probe and its records in step order.
struct ProbeHistory {
  std::string run_id;
  ProbeTokens probe;
  std::size_t n_layers = 0, n_heads = 0;
  std::vector<ProbeRecord> records;
};

/// `probe` encoded for a model reading windows of `window` tokens: characters outside a character
/// model's vocabulary become the unknown id 0; a probe longer than the window loses characters at
/// its end until it fits. std::invalid_argument when it is empty.
ProbeTokens probe_tokens(const TextTokenizer& tokenizer, const std::u32string& probe,
                         std::size_t window);

/// The look of `model` at the probe at `step`: every head's attention on probe.tokens and a
/// sample of `sample_tokens` tokens (seed kProbeSampleSeed, from the start id; no generator of
/// the caller is touched). The forward passes run under `compute` when given.
ProbeRecord look_at_probe(const Decoder& model, const TextTokenizer& tokenizer,
                          const ProbeTokens& probe, std::size_t window, long step,
                          std::size_t sample_tokens = kProbeSampleTokens,
                          std::mutex* compute = nullptr);

/// Adds `record` to `history` after the records of earlier steps (a later one is dropped: a
/// resume continues from its save), then thins the records to at most
/// min(kMaxProbeRecords, kProbeHistoryBudgetBytes / the record's bytes) (at least 2).
void append_probe_record(ProbeHistory& history, ProbeRecord record);

/// probe_history.json's text (the format above).
std::string probe_history_json(const ProbeHistory& history);

/// What a reader knows of the save a history was read from, to check it against.
struct ProbeHistoryCheck {
  std::string run_id;   ///< the save's run (save_run_id): another run's history is refused
  long save_step = -1;  ///< the save's step: no record may come after it (< 0: not checked)
  ModelConfig config;   ///< n_layers, n_heads, context_length and vocab_size must fit
};

/// Reads probe_history.json's text and checks it against `check`. Throws std::invalid_argument
/// naming what is wrong: not JSON (or nested too deep, a key twice), another format or run, a
/// shape the model cannot have, a weight outside 0..1000, steps out of order or after the save,
/// more than kMaxProbeRecords records.
ProbeHistory parse_probe_history(const std::string& text, const ProbeHistoryCheck& check);

/// The history of the save `dir` (its probe_history.json, read within its size limit and
/// verified against the save's manifest, of the save's own run: save_run_id), checked against
/// `config`; nullopt when the save has none. Throws CheckpointError naming the file when it is
/// there but cannot be trusted.
std::optional<ProbeHistory> read_probe_history(const std::string& dir, const ModelConfig& config);

/// The recorded pattern of head `head` in layer `layer` as weights (n, n): thousandths / 1000.
Array recorded_pattern(const ProbeRecord& record, std::size_t layer, std::size_t head);

/// How each head of a record attends, from its recorded pattern (interp/head_scores.hpp):
/// previous_token_score and first_position_share, (n_layers, n_heads) each; NaN when the probe
/// has a single token.
struct ProbeHeadShares {
  Array previous_token, first_position;
};
ProbeHeadShares probe_head_shares(const ProbeRecord& record);

/// One record as `glass serve` answers it in /api/evals: {"step", "train_loss", "val_loss"
/// (null when none), "sample", "tokens", "token_texts", "attention": [layer][head][i][j] as
/// weights (thousandths / 1000, 0 above the diagonal)}.
nlohmann::json probe_record_json(const ProbeTokens& probe, const ProbeRecord& record);

}  // namespace glass
