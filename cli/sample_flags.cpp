// The sampler's flags. See cli/sample_flags.hpp.

#include "cli/sample_flags.hpp"

#include <cmath>

#include "cli/validators.hpp"

namespace glass::cli {

void add_sampler_flags(CLI::App* cmd, glass::SamplingOptions& sampling) {
  cmd->add_option("--temperature,--temp", sampling.temperature,
                  "divide the logits by this; 0 = greedy (always the most likely token)")
      ->check(glass::cli::number_in(0.0, HUGE_VAL, false, "a number >= 0 (0 = greedy)"))
      ->capture_default_str();
  cmd->add_option("--top-k,--top_k", sampling.top_k, "keep only the K most likely tokens (0 = off)")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  cmd->add_option("--top-p,--top_p", sampling.top_p,
                  "keep the most likely tokens whose probabilities add up to P (1 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, true, "a number in (0, 1]"))
      ->capture_default_str();
  cmd->add_option("--min-p", sampling.min_p,
                  "keep the tokens at least P times as likely as the most likely one (0 = off)")
      ->check(glass::cli::number_in(0.0, 1.0, false, "a number in [0, 1]"))
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", sampling.repeat_penalty,
                  "divide the positive logits (multiply the negative ones) of the tokens among "
                  "the last --repeat-last-n by this, as llama.cpp does (1 = off)")
      ->check(glass::cli::kPositiveNumber)
      ->capture_default_str();
  cmd->add_option("--repeat-last-n", sampling.repeat_last_n,
                  "how many of the last tokens (prompt included) the repetition penalty looks at")
      ->check(glass::cli::integer_in(0, 1'000'000, "an integer from 0 to 1000000"))
      ->capture_default_str();
}

}  // namespace glass::cli
