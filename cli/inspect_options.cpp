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
                  "the corrupted prompt of --patch (as many tokens as --prompt)")
      ->group("Interpretability");
  cmd->add_flag("--history", opt.history,
                "the head scores recorded at every save of the run directory, as tables over the "
                "steps next to the validation loss")
      ->group("Interpretability");
}

}  // namespace glass::cli
