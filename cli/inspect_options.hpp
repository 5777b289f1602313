#pragma once
// The options of `glass inspect` (cli/inspect.cpp) and the flags of its interpretability lab.

#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// What `glass inspect` reads from its flags: the checkpoint and the prompt, the layer, head and
/// snapshot shown, the documents written, and the interpretability lab's requests (interp/).
struct InspectOptions {
  std::string checkpoint;
  std::string prompt;
  long long layer = 0;
  long long head = 0;
  std::string snapshot;
  long long top_k = 5;
  std::string json_path;
  std::string html_path;
  bool best = false;
  bool allow_unknown = false;
  int threads = 0;
  // The interpretability lab (interp/).
  bool lens = false;
  std::string ablate;             // "L.H[,L.H...]"
  std::string ablation = "zero";  // zero | mean
  bool head_scores = false;
  bool patch = false;
  std::string corrupted;
  bool history = false;
  bool dla = false;
  std::string target;       // one token's text ("" = the most probable next token)
  long long position = -1;  // -1 = the last position
  bool attribution = false;
  std::string metric = "logit-diff";  // logit-diff | log-prob
  bool prompt_given = false;
  bool any_interp() const {
    return lens || !ablate.empty() || ablation != "zero" || head_scores || patch ||
           !corrupted.empty() || history || dla || !target.empty() || position != -1 ||
           attribution || metric != "logit-diff";
  }
};

/// Adds the options of the interpretability lab to `cmd` (group "Interpretability"): --lens,
/// --ablate and --ablation, --head-scores, --patch and --corrupted, --history, --dla with
/// --target and --position, --attribution with --metric; stored in `opt`.
void add_lab_options(CLI::App* cmd, InspectOptions& opt);

}  // namespace glass::cli
