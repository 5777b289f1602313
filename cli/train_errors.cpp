// The Trainer's typed errors in the words of the command line. See cli/train_errors.hpp.

#include "cli/train_errors.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "nn/config.hpp"
#include "train/errors.hpp"
#include "train/time_budget.hpp"

namespace glass::cli {

std::string flag_of(const std::string& field) {
  if (field == "bpe_vocab_size") return "--vocab-size";
  if (field == "model.ops_path") return "--ops";
  std::string flag = field.rfind("model.", 0) == 0 ? field.substr(6) : field;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return "--" + flag;
}

namespace {

/// Two model sizes that do not fit together, named by their flags: "--d-model 32 is not
/// divisible by --n-heads 3 (...)".
std::string model_sizes_message(const glass::ModelConfigError& c) {
  const std::string a = fmt::format("{} {}", flag_of("model." + c.field()), c.value());
  const std::string b = fmt::format("{} {}", flag_of("model." + c.other_field()), c.other_value());
  switch (c.rule()) {
    case glass::SizeRule::heads_divide_d_model:
      return fmt::format(
          "{} is not divisible by {}: each query head takes d_model / n_heads coordinates", a, b);
    case glass::SizeRule::kv_heads_divide_heads:
      return fmt::format(
          "{} is not a multiple of {}: each key/value head serves n_heads / n_kv_heads query heads",
          a, b);
    case glass::SizeRule::even_head_dim:
      break;
  }
  return fmt::format(
      "{} / {} = {} coordinates per head (head_dim), an odd number: RoPE rotates pairs of "
      "coordinates, so choose sizes whose head_dim is even",
      a, b, c.value() / c.other_value());
}

/// A resume of a run already at its last step: which --iters to pass to train further.
std::string finished_run_message(const glass::FinishedRunError& f) {
  if (f.iters_given())
    return fmt::format(
        "--iters {} must be larger than the step of the checkpoint in {}, which is already at "
        "step {}",
        f.iters(), f.out_dir(), f.step());
  const std::string chosen = f.time_budget_s() > 0
                                 ? "chosen by --time " + glass::duration_text(f.time_budget_s())
                                 : std::string("recorded in its save");
  return fmt::format(
      "--iters was left out, and the run in {} is already at its last step {} ({}); pass --iters "
      "M with M > {} (e.g. --iters {}) to train further",
      f.out_dir(), f.step(), chosen, f.step(), 2 * f.step());
}

}  // namespace

std::optional<std::string> in_flag_words(const std::exception& e) {
  if (const auto* c = dynamic_cast<const glass::ModelConfigError*>(&e))
    return model_sizes_message(*c);
  if (const auto* o = dynamic_cast<const glass::OptionError*>(&e)) {
    // The library's "iters" is the CLI's --iters (a time budget is refused on resume).
    std::string reason = o->reason();
    const std::string iters_given = ", or to the iters given";
    if (o->field() == "time" && reason.size() >= iters_given.size() &&
        reason.compare(reason.size() - iters_given.size(), iters_given.size(), iters_given) == 0)
      reason.replace(reason.size() - iters_given.size(), iters_given.size(),
                     " (give --iters to train further)");
    std::string m = o->value().empty()
                        ? fmt::format("{} {}", flag_of(o->field()), reason)
                        : fmt::format("{} {} {}", flag_of(o->field()), o->value(), reason);
    if (!o->other_field().empty())
      m += fmt::format(": leave out {} or {}", flag_of(o->other_field()), flag_of(o->field()));
    return m;
  }
  if (const auto* r = dynamic_cast<const glass::RecipeMismatchError*>(&e)) {
    std::string differ;
    for (const glass::RecipeDifference& d : r->differences())
      differ += fmt::format("\n  {} {} (the run was trained with {} {})", flag_of(d.field), d.given,
                            flag_of(d.field), d.recorded);
    return fmt::format(
        "--resume continues the run in {} with its own recipe, but these flags ask for other "
        "values:{}\nLeave them out (the recorded values are used), or start a new run with --out "
        "DIR (or --overwrite).",
        r->out_dir(), differ);
  }
  if (const auto* d = dynamic_cast<const glass::DataMismatchError*>(&e))
    return fmt::format(
        "the run in {} was trained on a text named '{}', not on '{}'{}: pass --data with the "
        "path of '{}' to continue it, or start a new run with another --out (or --overwrite)",
        d->out_dir(), d->recorded(), d->given(),
        d->defaulted() ? " (the bundled corpus, used when --data is left out)" : "", d->recorded());
  if (const auto* f = dynamic_cast<const glass::FinishedRunError*>(&e))
    return finished_run_message(*f);
  if (const auto* b = dynamic_cast<const glass::OverfitBatchRunError*>(&e))
    return fmt::format(
        "the run in {} was an --overfit-batch run (one batch learnt by heart, a check of the "
        "training loop), not a run to continue with --resume: start a new run with another --out "
        "(or --overwrite)",
        b->out_dir());
  if (const auto* a = dynamic_cast<const glass::OptimizerMismatchError*>(&e))  // one has a flag
    return a->field() != "weight_decay"
               ? std::optional<std::string>()
               : fmt::format("{}: pass {} {:g}", e.what(), flag_of(a->field()), a->recorded());
  if (dynamic_cast<const glass::OutOfMemoryError*>(&e) != nullptr)
    return fmt::format(
        "{}. Use a smaller model (--d-model, --n-layers, --ffn-hidden) or a smaller --batch-size "
        "or --context.",
        e.what());
  if (const auto* n = dynamic_cast<const glass::NoSaveToResumeError*>(&e))
    return fmt::format("--resume: {}; run without --resume first", n->what());
  if (const auto* x = dynamic_cast<const glass::RunExistsError*>(&e))
    return fmt::format(
        "{}. To continue that run, add --resume; to start over and replace it, add --overwrite; "
        "or give a fresh directory with --out.",
        x->what());
  return std::nullopt;
}

}  // namespace glass::cli
