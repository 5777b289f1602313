#pragma once
// What `glass train` says around a run, in the words of its command line: the command that
// continues a stopped run, the error of a run stopped by a non-finite number, the warnings of the
// Trainer it makes, and the summary after the run. cli/train.cpp reads the flags and runs it.

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "train/options.hpp"
#include "train/trainer.hpp"

namespace glass {
class Server;
}

namespace glass::cli {

/// The file name of the bundled corpus (data/corpora/).
inline constexpr const char* kDefaultCorpus = "domcasmurro.txt";

/// The command that continues this run: `glass train --data FILE --out DIR` (under mpirun with
/// the same number of processes) and the flags given now, as given (re-quoted), without --help,
/// --overwrite, --time (the resumed run trains to the step count it recorded) and the model's
/// shape (it comes from the checkpoint on --resume), and --resume added.
std::string resume_command(const CLI::App* cmd, const glass::TrainOptions& o);

/// The error of a run stopped by a non-finite loss or gradient norm (`what`, from the Trainer),
/// saying what was kept in --out (`saved`: the step of the last complete save, -1 for none) and
/// how to go on. Not --resume: it keeps the recipe and repeats the same steps exactly, so it
/// would meet the same numbers; a new run with a smaller --lr does not.
std::string non_finite_message(const std::string& what, const CLI::App* cmd,
                               const glass::TrainOptions& o, long saved);

/// The Trainer of these options (its output to std::cout); its errors in the words of the flags
/// (in_flag_words, thrown as CommandError). On --resume, rank 0 warns on std::cerr of each model
/// size given with another value than the checkpoint's (Trainer::ignored_model_fields).
std::unique_ptr<glass::Trainer> make_trainer(const glass::TrainOptions& o);

/// After the run (rank 0): where the checkpoint is and what to do next; with `server` (--serve),
/// the page stays up until Ctrl-C. Throws CLI::RuntimeError (exit 128 + signal) after a stop.
void report_run(const glass::TrainResult& result, const glass::TrainOptions& o, CLI::App* cmd,
                glass::Server* server);

}  // namespace glass::cli
