// `glass train`: learn next-character prediction from a UTF-8 text file (train/trainer.hpp).
// This file reads the flags into TrainOptions and runs the Trainer, and puts the Trainer's errors
// (train/errors.hpp: fields and values) in the words of its flags; what a resume takes back is
// train/resume.hpp, the flags themselves cli/train_flags.hpp, the signal handling
// cli/stop_signals.hpp, the loss page cli/loss_page.hpp.
//
//   glass train [--data FILE] [--out DIR] [--iters N | --time DURATION] [--batch-size B]
//               [--context T] [--lr X] [--min-lr X] [--warmup N] [--decay-iters N]
//               [--weight-decay X] [--grad-clip X] [--eval-every N] [--eval-iters N] [--seed S] [--threads N] [--resume]
//               [--d-model N --n-layers N --n-heads N --n-kv-heads N --ffn-hidden N]
//   mpirun -np N glass train ...   data-parallel over N processes (train/distributed.hpp)

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "autograd/threads.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "cli/commands.hpp"
#include "cli/loss_page.hpp"
#include "cli/serve.hpp"
#include "cli/shell.hpp"
#include "cli/stop_signals.hpp"
#include "cli/threads.hpp"
#include "cli/train_errors.hpp"
#include "cli/train_flags.hpp"
#include "train/distributed.hpp"
#include "train/errors.hpp"
#include "train/resume.hpp"
#include "train/trainer.hpp"

#ifndef GLASS_SOURCE_DIR
#define GLASS_SOURCE_DIR ""
#endif

namespace glass::cli {

namespace {

namespace fs = std::filesystem;
constexpr const char* kDefaultCorpus = "domcasmurro.txt";

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

/// `glass train --data FILE --out DIR` (under mpirun with the same number of processes; any
/// other number works too) and the flags given now, as given (re-quoted), but --help, --data,
/// --out and those of `left_out`.
std::string train_command(const CLI::App* cmd, const glass::TrainOptions& o,
                          const std::vector<std::string>& left_out) {
  std::string line =
      (o.comm.size() > 1 ? fmt::format("mpirun -np {} ", o.comm.size()) : std::string()) +
      program_name() + " train --data " + shell_quote(o.data_path) + " --out " +
      shell_quote(o.out_dir);
  for (const CLI::Option* opt : cmd->get_options()) {
    const std::string name = opt->get_name();
    if (opt->count() == 0 || name == "--help" || name == "--data" || name == "--out" ||
        std::find(left_out.begin(), left_out.end(), name) != left_out.end())
      continue;
    line += " " + name;
    if (opt->get_type_size() != 0)
      for (const std::string& value : opt->results()) line += " " + shell_quote(value);
  }
  return line;
}

/// The command that continues this run: the flags given now without --overwrite, --time (the
/// resumed run trains to the step count it recorded) and the model's shape (it comes from the
/// checkpoint on --resume), and --resume added.
std::string resume_command(const CLI::App* cmd, const glass::TrainOptions& o) {
  return train_command(
             cmd, o,
             {"--overwrite", "--resume", "--time", "--d-model", "--n-layers", "--n-heads",
              "--n-kv-heads", "--ffn-hidden", "--vocab-cap", "--tokenizer", "--vocab-size"}) +
         " --resume";
}

/// The error of a run stopped by a non-finite loss or gradient norm (`what`, from the Trainer),
/// saying what was kept in --out (`saved`: the step of the last complete save, -1 for none) and
/// how to go on. Not --resume: it keeps the recipe and repeats the same steps exactly, so it
/// would meet the same numbers; a new run with a smaller --lr does not.
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

/// The Trainer of these options; its errors in the words of the flags (in_flag_words).
std::unique_ptr<glass::Trainer> make_trainer(const glass::TrainOptions& o) {
  try {
    return std::make_unique<glass::Trainer>(o, std::cout);
  } catch (const std::exception& e) {
    if (std::optional<std::string> message = in_flag_words(e))
      throw glass::cli::CommandError(*message);
    throw;
  }
}

/// The options of this command line: the flags as given, the defaults the command chooses (the
/// bundled corpus, runs/<corpus name>) and which recipe flags were given (--resume keeps the
/// recorded values of the others, train/resume.hpp).
void fill_options(TrainFlags& flags, CLI::App* cmd) {
  glass::TrainOptions& o = flags.options;
  const bool default_data = o.data_path.empty();
  if (default_data) o.data_path = default_corpus();
  if (o.out_dir.empty()) o.out_dir = (fs::path("runs") / fs::path(o.data_path).stem()).string();
  o.ops_given = cmd->count("--ops") > 0;  // also counts the old name, --attention
  o.tokenizer_given = cmd->count("--tokenizer") > 0;
  o.data_defaulted = default_data;
  if (cmd->count("--time") > 0 && cmd->count("--iters") > 0)
    throw glass::cli::CommandError(
        "--time chooses the number of steps (those that fit in the time given), --iters gives "
        "it: use one of them");
  o.iters_from_save = cmd->count("--iters") == 0;  // --resume: the recorded step count
  // On --resume a recipe flag left out takes the recorded value (train/resume.hpp).
  glass::RecipeGiven& given = o.recipe_given;
  given.lr = cmd->count("--lr") > 0;
  given.min_lr = cmd->count("--min-lr") > 0;
  given.warmup = cmd->count("--warmup") > 0;
  given.decay_iters = cmd->count("--decay-iters") > 0;
  given.batch_size = cmd->count("--batch-size") > 0;
  given.grad_clip = cmd->count("--grad-clip") > 0;
  given.context = cmd->count("--context") > 0;
  given.optimizer = cmd->count("--optimizer") > 0;
  given.muon_lr = cmd->count("--muon-lr") > 0;
  if (!o.resume || !o.comm.is_root()) return;  // under mpirun, rank 0 speaks for all
  // A model size given on --resume is ignored: said only when it differs from the save's.
  using M = glass::ModelConfig;
  const std::optional<M> recorded = glass::Resume(o.out_dir).recorded_model();
  for (const auto& [flag, field] : {std::pair{"--d-model", &M::d_model},
                                    {"--n-layers", &M::n_layers},
                                    {"--n-heads", &M::n_heads},
                                    {"--n-kv-heads", &M::n_kv_heads},
                                    {"--ffn-hidden", &M::ffn_hidden},
                                    {"--vocab-cap", &M::vocab_cap}})
    if (cmd->count(flag) > 0 && (!recorded || (*recorded).*field != o.model.*field))
      std::cerr << "warning: " << flag
                << " is ignored with --resume (the checkpoint's model is used)\n";
}

/// After the run (rank 0): where the checkpoint is and what to do next; with --serve, the page
/// stays up until Ctrl-C. Throws CLI::RuntimeError (exit 128 + signal) after a stop.
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

void run_train(TrainFlags& flags, CLI::App* cmd) {
  glass::TrainOptions& o = flags.options;
  glass::cli::apply_threads(flags.threads);
  fill_options(flags, cmd);
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

/// run_train in every process of `mpirun -np N glass train` (train/distributed.hpp), or in this
/// one. An error in one process must end them all, or the others would wait for it forever:
/// rank 0 reports it and aborts the job (MPI_Abort); another rank gives rank 0 a second to do
/// that first (most errors happen in every process alike), then reports its own and aborts.
void run_train_on_all_ranks(TrainFlags& flags, CLI::App* cmd) {
  const glass::Communicator comm = glass::Communicator::world();
  flags.options.comm = comm;
  if (comm.size() == 1) return run_train(flags, cmd);
  try {
    run_train(flags, cmd);
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

}  // namespace

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
  add_evaluation_flags(cmd, o);
  add_run_flags(cmd, *flags);
  add_model_flags(cmd, o);
  cmd->footer(
      "Examples:\n"
      "  glass train                                        the bundled corpus, default recipe\n"
      "  glass train --data input.txt --out runs/mine --iters 3000 -t 2\n"
      "  glass train --data input.txt --out runs/mine --iters 5000 --resume   continue it to step 5000\n"
      "  glass train --data input.txt --out /tmp/check --overfit-batch --iters 200 --lr 3e-3\n"
      "Is the loss normal? It starts near ln V (V = the vocabulary: the text's distinct characters "
      "+ the unknown id 0, or the BPE --vocab-size) and falls; see docs/en/cli.md (Is my loss "
      "normal?).");
  cmd->callback([flags, cmd] { run_train_on_all_ranks(*flags, cmd); });
}

}  // namespace glass::cli
