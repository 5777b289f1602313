// `glass export`: a checkpoint as files that other engines run (train/io/export_gguf.hpp,
// train/io/export_llama2c.hpp).
//
//   glass export --checkpoint DIR --format gguf    --out model.gguf [--best]
//   glass export --checkpoint DIR --format llama2c --out DIR2       [--best]

#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "train/io/checkpoint.hpp"
#include "train/cli/commands.hpp"
#include "train/io/export_gguf.hpp"
#include "train/io/export_llama2c.hpp"

namespace {

namespace fs = std::filesystem;
using glass::cli::CommandError;

struct ExportFlags {
  std::string checkpoint;
  std::string format;
  std::string out;
  bool best = false;
};

void run_export(const ExportFlags& f) {
  if (f.format != "gguf" && f.format != "llama2c")
    throw CommandError(fmt::format("unknown export format '{}'; the formats are: gguf (llama.cpp), "
                                   "llama2c (llama2.c's run.c)", f.format));
  if (f.format == "gguf" && fs::is_directory(f.out))
    throw CommandError(fmt::format("--out '{}' is a directory; the gguf format writes one file, "
                                   "e.g. --out {}/model.gguf", f.out, f.out));
  const glass::LoadedModel loaded = glass::load_checkpoint(f.checkpoint, f.best);
  if (!loaded.warning.empty()) std::cerr << "warning: " << loaded.warning << "\n";

  glass::ExportInfo info;
  info.name = fs::canonical(f.checkpoint).filename().string();  // the directory exists: it loaded
  info.step = loaded.weights_step;
  info.data = glass::training_data(loaded.files_dir);  // "": not recorded
  info.context = glass::training_context(loaded.files_dir);  // 0: not recorded
  if (info.context == 0) info.context = loaded.config.context_length;

  if (f.format == "gguf") {
    glass::export_gguf(loaded, info, f.out);
    std::cout << fmt::format("wrote {} (GGUF, llama architecture, context {}); run it with "
                             "llama.cpp, e.g. llama-completion -m {} -p \"Capitu \" --temp 0\n", f.out, info.context, f.out);
  } else {
    glass::export_llama2c(loaded, info, f.out);
    const fs::path dir(f.out);
    std::cout << fmt::format("wrote {} and {} (llama2.c, seq_len {}); run them with llama2.c's run: "
                             "./run {} -z {} -t 0\n", (dir / "model.bin").string(),
                             (dir / "tokenizer.bin").string(), info.context,
                             (dir / "model.bin").string(), (dir / "tokenizer.bin").string());
  }
}

void add_export_command(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export", "Write a checkpoint in the format of llama.cpp (GGUF) or llama2.c (model.bin + tokenizer.bin).");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")->required();
  cmd->add_option("--format", f->format, "gguf (one file for llama.cpp) or llama2c (a directory for llama2.c's run)")
      ->required();
  cmd->add_option("--out", f->out, "gguf: the file to write (e.g. model.gguf); llama2c: the directory "
                                   "that gets model.bin and tokenizer.bin")->required();
  cmd->add_flag("--best", f->best, "export best.safetensors (best validation loss) instead of the latest weights");
  cmd->footer(
      "Examples:\n"
      "  glass export -m runs/domcasmurro --format gguf --out domcasmurro.gguf\n"
      "  glass export -m runs/domcasmurro --format llama2c --out l2c --best");
  cmd->callback([f] { run_export(*f); });
}

glass::cli::CommandRegistration registration(45, &add_export_command);

}  // namespace
