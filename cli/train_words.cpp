// What `glass train` says around a run. See cli/train_words.hpp.

#include "cli/train_words.hpp"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "checkpoint/run_dir.hpp"
#include "cli/commands.hpp"
#include "cli/shell.hpp"
#include "cli/stop_signals.hpp"
#include "cli/train_errors.hpp"
#include "serve/server.hpp"

namespace glass::cli {

namespace fs = std::filesystem;

namespace {

/// `glass train --data FILE --out DIR` (a chat fine-tune: `glass finetune --chat FILE --out DIR`,
/// its base recorded in the save) (under mpirun with the same number of processes; any other
/// number works too) and the flags given now, as given (re-quoted), but --help, --data, --chat,
/// --from, --out and those of `left_out`.
std::string train_command(const CLI::App* cmd, const glass::TrainOptions& o,
                          const std::vector<std::string>& left_out) {
  std::string line =
      (o.comm.size() > 1 ? fmt::format("mpirun -np {} ", o.comm.size()) : std::string()) +
      program_name() + (o.chat.enabled ? " finetune --chat " : " train --data ") +
      shell_quote(o.data_path) + " --out " + shell_quote(o.out_dir);
  for (const CLI::Option* opt : cmd->get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || name == "--help" || name == "--data" || name == "--chat" ||
        name == "--from" || name == "--out" ||
        std::find(left_out.begin(), left_out.end(), name) != left_out.end())
      continue;
    line += " " + name;
    if (opt->get_expected_min() == 0) {  // a flag: its name alone, or =false when turned off
      if (!opt->as<bool>()) line += "=false";
    } else {
      for (const std::string& value : opt->results()) line += " " + shell_quote(value);
    }
  }
  return line;
}

}  // namespace

std::string resume_command(const CLI::App* cmd, const glass::TrainOptions& o) {
  return train_command(cmd, o,
                       {"--overwrite", "--resume", "--time", "--d-model", "--n-layers", "--n-heads",
                        "--n-kv-heads", "--ffn-hidden", "--vocab-cap", "--tokenizer",
                        "--vocab-size", "--qk-norm", "--mlp", "--logit-softcap"}) +
         " --resume";
}

std::string non_finite_message(const std::string& what, const CLI::App* cmd,
                               const glass::TrainOptions& o, long saved) {
  std::string kept =
      saved >= 0
          ? fmt::format(
                "the last good checkpoint, of step {}, is kept in {} (sample, eval and "
                "export can use it). --resume would repeat the same steps from there (it "
                "keeps the recipe) and meet the same numbers again",
                saved, o.out_dir)
          : std::string(
                "it stopped before its first save, so no checkpoint of this run was written");
  const bool holds_run = glass::holds_checkpoint(o.out_dir);
  if (saved < 0 && holds_run)
    kept += fmt::format(" ({} still holds the run it held before)", o.out_dir);
  std::string next = fmt::format("Train again with a smaller --lr (this run: {:g})", o.lr);
  if (o.grad_clip == 0) next += " and with --grad-clip 1 (this run: 0, no clipping)";
  if (o.resume)
    next += ": a new run with this run's flags (--overwrite replaces it, or give another --out)";
  else
    next += ", e.g.:\n  " + train_command(cmd, o, {"--overwrite", "--lr", "--grad-clip"}) +
            fmt::format(" --lr {:g}", o.lr / 2) + (o.grad_clip == 0 ? " --grad-clip 1" : "") +
            (o.grad_clip > 0 && cmd->count("--grad-clip") > 0
                 ? fmt::format(" --grad-clip {:g}", o.grad_clip)
                 : "") +
            (holds_run ? " --overwrite" : "");
  return fmt::format("{}. Training stopped: {}. {}", what, kept, next);
}

std::unique_ptr<glass::Trainer> make_trainer(const glass::TrainOptions& o) {
  try {
    auto trainer = std::make_unique<glass::Trainer>(o, std::cout);
    if (o.comm.is_root())  // under mpirun, rank 0 speaks for all
      for (const std::string& field : trainer->ignored_model_fields())
        std::cerr << "warning: " << flag_of(field)
                  << " is ignored with --resume (the checkpoint's model is used)\n";
    return trainer;
  } catch (const std::exception& e) {
    if (std::optional<std::string> message = in_flag_words(e))
      throw glass::cli::CommandError(*message);
    throw;
  }
}

void report_run(const glass::TrainResult& result, const glass::TrainOptions& o, CLI::App* cmd,
                glass::Server* server) {
  std::cout << fmt::format(
      "\ncheckpoint: {} (model.safetensors = step {}, best.safetensors = best val loss {:.4f}, "
      "config.json, log.csv, loss.html)\n",
      (fs::path(o.out_dir) / "").string(), result.step, result.best_val);  // one trailing '/'
  if (result.interrupted) {
    if (o.overfit_batch)
      std::cout << "an --overfit-batch check is not resumed: run it again to check the loop\n";
    else
      std::cout << "resume with: " << resume_command(cmd, o) << "\n";
    throw CLI::RuntimeError(
        128 + result.stop_signal);  // 130 after Ctrl-C, 143 after SIGTERM (on any rank)
  }
  if (o.time_budget_s > 0 && !o.resume) {  // the step count and cadence --time chose
    // ... and the speedrun recipe it filled in (glass::use_speedrun_recipe), which the same
    // command without --time would not train with.
    std::string recipe;
    if (o.speedrun_recipe) {
      recipe = " --optimizer muon";
      if (o.zero_init_out && cmd->count("--zero-init-out") == 0) recipe += " --zero-init-out";
    }
    // An --eval-every given stays in the command as it is (given twice it would be refused).
    std::cout << fmt::format(
        "repeat this run: the same command with --iters {}{}{} instead of --time\n", result.iters,
        o.eval_every_given ? "" : fmt::format(" --eval-every {}", result.eval_every), recipe);
  }
  std::cout << fmt::format(
      "sample from it: {} sample --checkpoint {}{} --tokens 300\n", program_name(),
      shell_quote(o.out_dir),
      fs::path(o.data_path).filename() == kDefaultCorpus ? " --prompt \"Capitu \"" : "");
  if (server) {  // the page stays up after training, until Ctrl-C
    if (g_stop == 0)
      std::cout
          << "training done; still serving " << o.out_dir << " at " << server->url()
          << " until Ctrl-C"
          << std::endl;  // flushed: the summary above too, also when the output is a file or pipe
    while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server->stop();
    std::cout << "\nstopped serving (" << (g_stop == SIGTERM ? "SIGTERM" : "Ctrl-C") << ")"
              << std::endl;
    restore_default_signals();
  }
}

}  // namespace glass::cli
