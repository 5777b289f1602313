// The flags of the interpretability lab of `glass inspect` (cli/inspect_options.hpp).

#include "cli/inspect_options.hpp"

namespace glass::cli {

void add_lab_options(CLI::App* cmd, InspectOptions& opt) {
  cmd->add_flag("--lens", opt.lens,
                "logit lens: for each layer and position, the top --top-k next tokens read off the "
                "residual stream and the probability of the true next token")
      ->group("Interpretability");
  cmd->add_option(
         "--ablate", opt.ablate,
         "knock out heads LAYER.HEAD[,LAYER.HEAD...] (e.g. 0.1,2.3) and show the next-token "
         "distribution after --prompt with and without them")
      // An empty list (`--ablate ''`, a shell variable left unset) knocks nothing out: refused,
      // not read as the flag left out.
      ->check(
          [](const std::string& heads) {
            return heads.empty() ? std::string(
                                       "needs at least one head: give "
                                       "LAYER.HEAD[,LAYER.HEAD...], e.g. 0.1,2.3")
                                 : std::string();
          },
          "HEADS")
      ->group("Interpretability");
  cmd->add_option("--ablation", opt.ablation,
                  "how --ablate knocks a head out: zero (its output before W_O set to 0) or mean "
                  "(set to its mean over the training text config.json names, when it is found, "
                  "else over the prompt's positions)")
      ->transform(CLI::IsMember({"zero", "mean"}, CLI::ignore_case))
      ->capture_default_str()
      ->group("Interpretability");
  cmd->add_flag("--head-scores", opt.head_scores,
                "layers x heads table: previous-token, induction and first-position scores and the "
                "ablation loss change; on --prompt, or without it the save's validation probe "
                "(interp.json)")
      ->group("Interpretability");
  cmd->add_flag("--patch", opt.patch,
                "activation patching: copy the residual stream of --prompt into the run of "
                "--corrupted at each (layer, position); the fraction of the logit difference "
                "between their next tokens it recovers")
      ->group("Interpretability");
  cmd->add_option("--corrupted", opt.corrupted,
                  "the corrupted prompt of --patch and --attribution (as many tokens as --prompt)")
      ->group("Interpretability");
  cmd->add_flag("--dla", opt.dla,
                "direct logit attribution: the logit of --target at --position split into the "
                "direct effects of the embeddings, each head and each MLP (through the final "
                "RMSNorm, its scale frozen)")
      ->group("Interpretability");
  cmd->add_option("--target", opt.target,
                  "the token whose logit --dla splits (its text, one token; default: the most "
                  "probable next token)")
      ->group("Interpretability");
  cmd->add_option("--position", opt.position,
                  "the position --dla reads (0 .. tokens-1; default: the last)")
      ->group("Interpretability");
  cmd->add_flag("--attribution", opt.attribution,
                "attribution patching: the gradient estimate of patching each head and MLP of "
                "--corrupted with --prompt's activations, next to exact patching, with their "
                "rank correlation")
      ->group("Interpretability");
  cmd->add_option("--metric", opt.metric,
                  "what --attribution measures at the last position: logit-diff (the prompt's "
                  "next token's logit minus the corrupted prompt's) or log-prob (of the "
                  "prompt's next token)")
      ->transform(CLI::IsMember({"logit-diff", "log-prob"}, CLI::ignore_case))
      ->capture_default_str()
      ->group("Interpretability");
  cmd->add_flag("--history", opt.history,
                "the head scores recorded at every save of the run directory, as tables over the "
                "steps next to the validation loss")
      ->group("Interpretability");
}

}  // namespace glass::cli
