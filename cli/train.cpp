// `glass train`: learn next-character prediction from a UTF-8 text file (train/trainer.hpp).
// This file reads the flags into TrainOptions and runs the Trainer; what the command says around
// the run (the resume command, the errors and warnings in the words of its flags, the summary) is
// cli/train_words.hpp, what a resume takes back train/resume.hpp, the flags themselves
// cli/train_flags.hpp, the signal handling cli/stop_signals.hpp, the loss page cli/loss_page.hpp.
//
//   glass train [--data FILE] [--out DIR] [--iters N | --time DURATION] [--batch-size B]
//               [--context T] [--lr X] [--min-lr X] [--warmup N] [--decay-iters N]
//               [--weight-decay X] [--grad-clip X] [--eval-every N] [--eval-iters N] [--seed S] [--threads N] [--resume]
//               [--d-model N --n-layers N --n-heads N --n-kv-heads N --ffn-hidden N]
//   mpirun -np N glass train ...   data-parallel over N processes (train/distributed.hpp)

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/loss_page.hpp"
#include "cli/serve.hpp"
#include "cli/stop_signals.hpp"
#include "cli/threads.hpp"
#include "cli/train_flags.hpp"
#include "cli/train_words.hpp"
#include "train/distributed.hpp"
#include "train/errors.hpp"
#include "train/trainer.hpp"

#ifndef GLASS_SOURCE_DIR
#define GLASS_SOURCE_DIR ""
#endif

namespace glass::cli {

namespace {

namespace fs = std::filesystem;

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

/// The bundled corpus: $GLASS_DATA (a file, or a directory holding domcasmurro.txt), else
/// data/corpora/ next to the executable or one level up (build/glass -> data/corpora), else the
/// source tree this program was compiled from. A GLASS_DATA that names no such file is an
/// error (CommandError), not a silent fall-back to the bundled corpus.
std::string default_corpus() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("GLASS_DATA"); env != nullptr && *env != '\0') {
    const fs::path p(env);
    const fs::path file = fs::is_directory(p) ? p / kDefaultCorpus : p;
    if (!fs::is_regular_file(file)) {
      throw glass::cli::CommandError("GLASS_DATA is set to '" + p.string() + "', but " +
                                     file.string() +
                                     " is not a file; unset GLASS_DATA or pass --data FILE");
    }
    return file.string();
  }
  const fs::path exe_dir = executable_dir();
  if (!exe_dir.empty()) {
    candidates.push_back(exe_dir / "data" / "corpora" / kDefaultCorpus);
    candidates.push_back(exe_dir.parent_path() / "data" / "corpora" / kDefaultCorpus);
  }
  if (std::string(GLASS_SOURCE_DIR).size() > 0)
    candidates.push_back(fs::path(GLASS_SOURCE_DIR) / "data" / "corpora" / kDefaultCorpus);
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(c)) return c.string();
  std::string tried;
  for (const fs::path& c : candidates) tried += "\n  " + c.string();
  throw glass::cli::CommandError(
      "no --data given and the bundled corpus was not found; looked at:" + tried +
      "\nPass --data FILE, or set GLASS_DATA to the corpus file or its directory.");
}

/// The options of this command line: the flags as given, the defaults the command chooses (the
/// bundled corpus, runs/<corpus name>) and which recipe flags and model sizes were given
/// (--resume keeps the recorded values of the others, train/resume.hpp, and the checkpoint's
/// model).
void fill_options(TrainFlags& flags, CLI::App* cmd) {
  glass::TrainOptions& o = flags.options;
  const bool default_data = o.data_path.empty();
  if (default_data) o.data_path = default_corpus();
  if (o.out_dir.empty()) o.out_dir = (fs::path("runs") / fs::path(o.data_path).stem()).string();
  o.tokenizer_given = cmd->count("--tokenizer") > 0;
  o.data_defaulted = default_data;
  mark_recipe_given(o, cmd);
  // A time budget asks for the best model in that time: the speedrun recipe, unless the
  // command names the optimizer (--resume, refused with --time, keeps the recorded one). Measured
  // on one process: under mpirun each process would orthogonalise every matrix, and an
  // --overfit-batch check keeps the plain recipe it checks.
  if (o.time_budget_s > 0 && !o.resume && !o.overfit_batch && o.comm.size() == 1)
    glass::use_speedrun_recipe(o, cmd->count("--zero-init-out") > 0);
  // On --resume the model's sizes are the checkpoint's: one given with another value is warned
  // of (make_trainer).
  glass::ModelGiven& model = o.model_given;
  model.d_model = cmd->count("--d-model") > 0;
  model.n_layers = cmd->count("--n-layers") > 0;
  model.n_heads = cmd->count("--n-heads") > 0;
  model.n_kv_heads = cmd->count("--n-kv-heads") > 0;
  model.ffn_hidden = cmd->count("--ffn-hidden") > 0;
  model.vocab_cap = cmd->count("--vocab-cap") > 0;
  model.qk_norm = cmd->count("--qk-norm") > 0;
  model.mlp = cmd->count("--mlp") > 0;
  model.logit_softcap = cmd->count("--logit-softcap") > 0;
}

void run_train(TrainFlags& flags, CLI::App* cmd, FillOptions fill) {
  glass::TrainOptions& o = flags.options;
  fill(flags, cmd);
  glass::cli::apply_threads(flags.threads);
  g_stop = 0;
  g_serving_only = 0;
  o.stop_flag = &g_stop;
  g_saved_step = -1;
  o.saved_step = &g_saved_step;
  // An --overfit-batch check is not resumable (train/resume.hpp): it is run again instead.
  set_stop_messages(
      o.comm.is_root(),
      o.overfit_batch
          ? fmt::format(", stays current in {}; an --overfit-batch check is not resumed: run it "
                        "again to check the loop\n",
                        o.out_dir)
          : fmt::format(", stays current in {}; continue it with:\n  {}\n", o.out_dir,
                        resume_command(cmd, o)),
      "No checkpoint of this run had been saved yet (the first save follows the evaluation at step "
      "0), so there is nothing to resume: run the same command again to start over\n");
  o.on_run_end = write_loss_page;  // DIR/loss.html
  glass::TrainResult result;
  // With --serve the trainer outlives the server (declared first, destroyed last): its destructor
  // resets the BLAS thread count, which must not happen while the server computes.
  std::unique_ptr<glass::Trainer> trainer;
  std::unique_ptr<glass::Server> server;
  {
    trainer = make_trainer(o);
    if (flags.serve && o.comm.is_root()) {
      glass::ServeOptions serve;
      serve.checkpoint = o.out_dir;
      serve.port = flags.port;
      serve.data_path = o.data_path;
      server = glass::cli::start_server(serve, std::cout);
    }
    install_stop_handlers();
    try {
      result = trainer->run();
    } catch (const glass::NonFiniteError& e) {
      restore_default_signals();
      // The options as the Trainer ran them (on --resume, the recorded recipe).
      throw glass::cli::CommandError(
          non_finite_message(e.what(), cmd, trainer->options(), g_saved_step.load()));
    }
    if (server) {
      // The handler stays: a signal that came during the last evaluation or save (after the
      // loop's last look at g_stop) is in g_stop and stops the serving below at once; one that
      // comes later stops it too. Swapping handlers here would lose the first or kill the program.
      g_serving_only = 1;
    } else {
      restore_default_signals();
    }
  }
  if (!server) trainer.reset();   // releases the run directory's lock now
  if (!o.comm.is_root()) return;  // with mpirun, rank 0 reports for all
  report_run(result, o, cmd, server.get());
}

}  // namespace

// run_train in every process of `mpirun -np N glass train` (train/distributed.hpp), or in this
// one. An error in one process must end them all, or the others would wait for it forever.
void run_train_on_all_ranks(TrainFlags& flags, CLI::App* cmd, FillOptions fill) {
  const glass::Communicator comm = glass::Communicator::world();
  flags.options.comm = comm;
  if (comm.size() == 1) return run_train(flags, cmd, fill);
  try {
    run_train(flags, cmd, fill);
  } catch (const CLI::RuntimeError&) {
    throw;  // stopped by a signal after a save: every process returns
  } catch (const std::exception& e) {
    if (!comm.is_root()) std::this_thread::sleep_for(std::chrono::seconds(1));
    std::cout.flush();
    std::fprintf(
        stderr, "error%s: %s\n",
        comm.is_root() ? "" : fmt::format(" (process {} of {})", comm.rank(), comm.size()).c_str(),
        e.what());
    comm.abort(1);
  }
}

void add_train_command(CLI::App& app) {
  auto flags = std::make_shared<TrainFlags>();
  glass::TrainOptions& o = flags->options;
  CLI::App* cmd = app.add_subcommand(
      "train",
      "Train the decoder to predict the next token of a UTF-8 text file (a character, or a BPE "
      "subword with --tokenizer bpe).\n"
      "With no arguments: the bundled Portuguese corpus (Dom Casmurro), the default model, and\n"
      "nanoGPT's shakespeare_char recipe; the checkpoint goes to runs/<corpus name>.");
  add_data_flags(cmd, o);
  add_schedule_flags(cmd, o);
  cmd->get_option("--time")->description(
      "train for about this long (90s, 5m, 1.5m, 1h): the steps that fit are chosen after a "
      "short timed trial and recorded, instead of --iters; unless --optimizer is given, with the "
      "speedrun recipe (--optimizer muon --zero-init-out)");
  add_evaluation_flags(cmd, o);
  add_run_flags(cmd, *flags);
  add_model_flags(cmd, o);
  add_recipe_option_flags(cmd, o);
  cmd->footer(
      "Examples:\n"
      "  glass train                                        the bundled corpus, default recipe\n"
      "  glass train --data input.txt --out runs/mine --iters 3000 -t 2\n"
      "  glass train --data input.txt --out runs/mine --iters 5000 --resume   continue it to step 5000\n"
      "  glass train --data input.txt --out /tmp/check --overfit-batch --iters 200 --lr 3e-3\n"
      "Is the loss normal? It starts near ln V (V = the vocabulary: the text's distinct characters "
      "+ the unknown id 0, or the BPE --vocab-size) and falls; see docs/en/cli.md (Is my loss "
      "normal?).");
  cmd->callback([flags, cmd] { run_train_on_all_ranks(*flags, cmd, fill_options); });
}

}  // namespace glass::cli
