#pragma once
// Generating text from a trained decoder: repetition penalty, temperature, top-k, top-p
// (nucleus), min-p, seeded.

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "nn/decoder.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

/// What generation computes once the text is longer than the window (the last `window` tokens
/// a prediction may see). Both are the same while the text fits in the window.
enum class WindowMode {
  /// Rolling KV cache (the default): the oldest cached position is dropped
  /// (KVCache::drop_oldest) and the new token, rotated by RoPE at its own absolute position,
  /// attends to the keys and values the cache holds for the last `window` positions, as they
  /// were computed when each of them was new. That is sliding-window attention of width
  /// `window` over the whole text (Beltagy et al. 2020; Mistral 7B, Jiang et al. 2023): each
  /// layer sees `window` positions back, and through the layers a position's keys still carry
  /// some of the text before the window. One position per new token: as fast as inside the
  /// window.
  rolling,
  /// The model applied afresh to the last `window` tokens for every new token (positions
  /// 0 .. window-1, nothing before the window), as it saw windows in training. The KV cache is
  /// rebuilt from them for each new token: `window` positions per token.
  exact,
};

/// "rolling" or "exact".
const char* to_string(WindowMode mode);
/// The WindowMode named "rolling" or "exact"; std::invalid_argument for any other name.
WindowMode parse_window_mode(const std::string& name);

/// The one sentence every command uses to state the model's context (`window` tokens: the
/// training context recorded in config.json, else the model's context_length) and what happens
/// past it, e.g. "the model's context is 64 characters (the windows it trained on); past them,
/// generation rolls its window on: each new character sees the 64 before it". `unit` names the
/// tokens in the plural: "characters" (a character model) or "tokens" (a BPE model).
std::string context_sentence(std::size_t window, const std::string& unit = "characters");

/// How the next character is chosen from the logits. The steps, in this order (next_token_probs):
/// repetition penalty on the raw logits, temperature, top-k, softmax, top-p, min-p. llama.cpp's
/// default chain applies the temperature last (penalties, top-k, top-p, min-p, temperature);
/// here top-p and min-p see the probabilities after the temperature, as in Hugging Face
/// transformers. At temperature 1 both orders give the same distribution.
struct SamplingOptions {
  double temperature = 0.8;  ///< logits are divided by it; 0 = greedy (argmax), must be >= 0
  std::size_t top_k = 0;  ///< keep the k largest logits (ties at the k-th value all kept); 0 = off;
                          ///< values above the vocabulary size are clamped
  double top_p = 1.0;     ///< nucleus: keep the most probable tokens whose cumulative probability
                          ///< first reaches top_p (Holtzman et al. 2020); 1 = off; in (0, 1]
  double repeat_penalty = 1.0;     ///< llama.cpp's --repeat-penalty (Keskar et al. 2019, CTRL, with
                                   ///< its fix for negative logits): 1 = off; must be > 0
  std::size_t repeat_last_n = 64;  ///< the penalty looks at the last n tokens of the text; 0 = off
  double min_p = 0.0;        ///< keep tokens with probability >= min_p * the largest probability
                             ///< (Nguyen et al. 2024); 0 = off; in [0, 1]
  bool use_kv_cache = true;  ///< false recomputes the whole window for every new token (exact)
  WindowMode window_mode = WindowMode::rolling;  ///< past the window, with the KV cache
};

/// Throws std::invalid_argument when temperature < 0 (or not finite), top_p is not in (0, 1],
/// repeat_penalty is not a finite number > 0 or min_p is not in [0, 1].
void validate(const SamplingOptions& options);

/// Top-k filter in place on one row of logits: every logit strictly below the k-th largest value
/// becomes -inf (so ties with the k-th value are kept). k = 0 or k >= size: no change.
void top_k_filter(std::vector<double>& logits, std::size_t k);

/// Top-p filter in place on one row of probabilities (summing to 1): sorts by probability
/// (descending, ties by smaller id first), keeps the shortest prefix whose cumulative sum reaches
/// p (at least one token), zeroes the rest and renormalises. p >= 1: no change.
void top_p_filter(std::vector<double>& probs, double p);

/// Repetition penalty in place on one row of logits, as llama.cpp defines it: each distinct id
/// among `recent` (the last repeat_last_n tokens of the text) has its logit divided by `penalty`
/// when it is positive and multiplied by it when it is <= 0, once however often it occurs.
/// penalty 1: no change. Ids outside the row are ignored.
void repetition_penalty(std::vector<double>& logits, const std::vector<std::int32_t>& recent,
                        double penalty);

/// Min-p filter in place on one row of probabilities (summing to 1): zeroes every probability
/// below min_p times the largest and renormalises (the largest is always kept). min_p 0: no change.
void min_p_filter(std::vector<double>& probs, double min_p);

/// Softmax of one row (subtracting the max; -inf entries get probability 0).
std::vector<double> softmax_row(const std::vector<double>& logits);

/// The probabilities the sampler draws from for one row of logits: the repetition penalty over
/// the last options.repeat_last_n ids of `text` (the text so far, prompt included), logits /
/// temperature, top-k, softmax, top-p, min-p. With temperature 0 all mass is on the argmax of
/// the penalised logits (smallest id on ties). Throws std::runtime_error when a logit is NaN or
/// +inf (corrupt weights) or all are -inf.
std::vector<double> next_token_probs(const std::vector<double>& logits,
                                     const SamplingOptions& options,
                                     const std::vector<std::int32_t>& text = {});

/// The probabilities generate() draws the token after `text` from, given the model's logits
/// for it: next_token_probs with the unknown id 0 excluded (its logit set to -inf first; it
/// stands for characters absent from the training text). The live page of `glass serve` shows
/// these (POST /api/next). Throws as next_token_probs.
std::vector<double> generation_probs(std::vector<double> logits, const SamplingOptions& options,
                                     const std::vector<std::int32_t>& text);

/// A uniform number in [0, 1) from 53 random bits of `rng` (the same on every platform).
double uniform01(std::mt19937_64& rng);

/// Draws an id from `probs` (need not be normalised) with one uniform01(rng); with temperature
/// 0 callers pass a one-hot vector and no randomness matters.
std::int32_t draw(const std::vector<double>& probs, std::mt19937_64& rng);

/// The logits of the token after a text that grows at its end, one call per new token, with
/// the KV cache as `options` says (use_kv_cache, window_mode). Every prediction sees at most the
/// last `window` tokens (window <= the model's context length; the training context is the
/// natural choice). The first call's text is cropped to its last `window` tokens.
///
/// Inside the window, each call runs the model over the new tokens only (with the cache) or
/// over the whole text (without). Past it, WindowMode::rolling drops the oldest cached position
/// for each new token, WindowMode::exact recomputes the last `window` tokens (see WindowMode);
/// without the cache every call recomputes them, which is the exact mode.
class NextTokenLogits {
 public:
  /// Throws std::invalid_argument when window is 0 or above the model's context length. The
  /// model must outlive this object. `tracer` (optional, outliving this object too) is passed
  /// to every forward pass, so that its hooks run on each new position: steering adds a
  /// direction to the residual stream there (interp/steering.hpp). A tracer sends the attention
  /// through its reference path (nn/tracer.hpp); give it set_recording(false) so that no
  /// snapshot is copied.
  NextTokenLogits(const Decoder& model, std::size_t window, const SamplingOptions& options,
                  Tracer* tracer = nullptr);
  /// Logits (vocab_size) of the token after text.back(). `text` is the whole text so far: the
  /// previous call's text with at least one token appended (std::invalid_argument when it is
  /// not longer). Runs under NoGradGuard.
  std::vector<double> operator()(const std::vector<std::int32_t>& text);
  /// How many token positions the model has computed so far, over all calls: with the KV cache
  /// inside the window, each token of the text once.
  std::size_t tokens_read() const { return tokens_read_; }

 private:
  Tensor forward(const Ids& ids, KVCache* cache);  // the model on `ids`, counted

  const Decoder& model_;
  std::size_t window_;
  bool use_kv_cache_;
  WindowMode window_mode_;
  Tracer* tracer_;  // hooks of every forward pass, or null
  KVCache cache_;
  std::size_t cache_start_ = 0;  // index in the text of the token in the cache's slot 0
  std::size_t seen_ = 0;         // length of the previous call's text
  std::size_t tokens_read_ = 0;  // positions computed by the model
};

/// Autoregressive generation. `prompt` must hold at least one id; a prompt longer than `window`
/// is cropped to its last `window` ids. Each new token is drawn from NextTokenLogits (see it and
/// WindowMode for what the KV cache and the window mode compute). Without the KV cache and with
/// it in the exact mode the logits are the same to rounding, so temperature 0 prints the same
/// text (tested); the rolling mode gives those logits too while the text fits in the window.
///
/// The unknown token (id 0) is never generated: it stands for characters absent from the
/// training text, so its logit is set to -inf before sampling.
///
/// `on_token` (optional) is called with each new id as soon as it is chosen (for streaming).
/// `tracer` (optional) runs its hooks in every forward pass (NextTokenLogits).
/// Returns only the new ids (n_tokens of them).
std::vector<std::int32_t> generate(const Decoder& model, std::vector<std::int32_t> prompt,
                                   std::size_t n_tokens, std::size_t window,
                                   const SamplingOptions& options, std::mt19937_64& rng,
                                   const std::function<void(std::int32_t)>& on_token = {},
                                   Tracer* tracer = nullptr);

}  // namespace GLASS_PRECISION
}  // namespace glass
