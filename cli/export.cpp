// `glass export`: a checkpoint as files that other engines run (export/export_gguf.hpp,
// export/export_llama2c.hpp).
//
//   glass export --checkpoint DIR --format gguf    --out model.gguf [--best] [--type f32|f16|q8_0|q4_0]
//   glass export --checkpoint DIR --format llama2c --out DIR2       [--best] [--type f32|int8]

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "data/text.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/suggest.hpp"
#include "cli/validators.hpp"
#include "export/export_gguf.hpp"
#include "export/export_llama2c.hpp"

#ifndef GLASS_SOURCE_DIR
#define GLASS_SOURCE_DIR ""
#endif

namespace {

namespace fs = std::filesystem;
using glass::cli::CommandError;

struct ExportFlags {
  std::string checkpoint;
  std::string format;
  std::string out;
  std::string type = "f32";  ///< the weights' number type; which ones: types_of_format
  bool best = false;
};

/// The weight types `format` writes, the first its default.
std::vector<std::string> types_of_format(const std::string& format) {
  if (format == "llama2c") return {"f32", "int8"};  // run.c; runq.c's int8 groups
  return glass::weight_type_names();                // gguf: ggml's f32, f16, q8_0, q4_0
}

/// Throws CommandError when `format` has no weight type `type`: the message names the ones it
/// has and, for a near miss, the one meant.
void check_type(const std::string& format, const std::string& type) {
  const std::vector<std::string> types = types_of_format(format);
  if (std::find(types.begin(), types.end(), type) != types.end()) return;
  const std::optional<std::string> near = glass::cli::nearest(type, types);
  std::string list;
  for (const std::string& t : types) list += (list.empty() ? "" : ", ") + t;
  throw CommandError(fmt::format("the {} format has no type '{}'{}; it writes: {}{}", format, type,
                                 near ? fmt::format(" (did you mean {}?)", *near) : "", list,
                                 format == "llama2c" ? " (int8: runq.c's groups of int8 weights "
                                                       "with a float32 scale each)"
                                                     : ""));
}

/// `text` quoted for a POSIX shell: 'text', with each ' written as '\''.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A prompt for the suggested command, taken from the model's own training text: the first two
/// words and a space of the first line with at least three words (a sentence rather than a
/// title), read from the first 64 KiB of the file config.json names (`data`, a file name),
/// looked for in the current directory, beside the checkpoint directory `checkpoint` and among
/// the bundled corpora; for a character model every character must be in the vocabulary (a BPE
/// model reads any text). When no file is found or it has no such line: the most frequent
/// character of the vocabulary that is not a space.
std::string prompt_from_training_text(const std::string& data, const std::string& checkpoint,
                                      const glass::Checkpoint& loaded) {
  const std::vector<char32_t>& chars = loaded.tokenizer().characters();
  const auto known = [&](char32_t c) { return loaded.tokenizer().knows(c); };
  std::error_code ec;
  fs::path found;
  if (!data.empty()) {
    const fs::path dir = fs::absolute(checkpoint, ec);
    for (const fs::path& candidate :
         {fs::path(data), dir.parent_path() / data, dir.parent_path().parent_path() / data,
          fs::path(GLASS_SOURCE_DIR) / "data" / "corpora" / data})
      if (found.empty() && fs::is_regular_file(candidate, ec)) found = candidate;
  }
  if (!found.empty()) {
    std::ifstream in(found, std::ios::binary);
    std::string head(64 * 1024, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    std::istringstream lines(head);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream words(line);
      std::string w1, w2, w3;
      if (!(words >> w1 >> w2 >> w3)) continue;
      const std::string prompt = w1 + " " + w2 + " ";
      try {
        bool ok = true;
        for (char32_t c : glass::utf8_to_u32(prompt)) ok = ok && known(c);
        if (ok) return prompt;
      } catch (const glass::Utf8Error&) {  // a character cut at the end of the 64 KiB
      }
    }
  }
  for (char32_t c : chars)
    if (c != U' ' && c != U'\n' && c != U'\u2581') return glass::char_to_utf8(c);
  return " ";
}

/// `glass export --format llama2c`: model.bin (f32 for run.c, int8 for runq.c) and
/// tokenizer.bin in f.out, then the command that runs them.
void write_llama2c(const ExportFlags& f, const glass::Checkpoint& loaded,
                   const glass::ExportInfo& info, const std::string& prompt) {
  const bool int8 = f.type == "int8";
  glass::export_llama2c(loaded, info, f.out,
                        int8 ? glass::Llama2cType::int8 : glass::Llama2cType::f32);
  const fs::path dir(f.out);
  std::string weights;  // int8: the group size and what a matrix weight costs
  if (int8) {
    const std::size_t gs =
        glass::llama2c_group_size(loaded.config().d_model, loaded.config().ffn_hidden);
    weights = fmt::format("int8 in groups of {}: {:g} bits per matrix weight; ", gs,
                          8.0 + 32.0 / static_cast<double>(gs));
  }
  std::cout << fmt::format(
      "wrote {} and {} (llama2.c, {}seq_len {} {}: the windows it trained on); run them "
      "with llama2.c's {}: ./{} {} -z {} -t 0 -i {}\n",
      (dir / "model.bin").string(), (dir / "tokenizer.bin").string(), weights, info.context,
      loaded.unit(), int8 ? "runq" : "run", int8 ? "runq" : "run", (dir / "model.bin").string(),
      (dir / "tokenizer.bin").string(), prompt);
}

/// For a chat model (its tokenizer has the chat tokens), one more line: how to chat with the
/// exported file, or (llama2.c) what run.c cannot do with it. Nothing for a base model.
void say_how_to_chat(const glass::Checkpoint& loaded, const std::string& format,
                     const std::string& out) {
  if (!loaded.tokenizer().has_chat_tokens()) return;
  if (format == "gguf")
    std::cout << fmt::format(
        "a chat model: the file carries its ChatML template and ends answers at <|im_end|>; "
        "chat with it in llama.cpp, e.g. llama-cli -m {} --temp 0\n",
        out);
  else
    std::cout << "note: a chat model: run.c's chat mode is Llama 2's [INST] format and its "
                 "encoder never makes <|im_start|> or <|im_end|> from text, so run.c only "
                 "continues text with it; chat with glass chat or llama.cpp (GGUF)\n";
}

void run_export(const ExportFlags& f) {
  if (f.format != "gguf" && f.format != "llama2c")
    throw CommandError(
        fmt::format("unknown export format '{}'; the formats are: gguf (llama.cpp), "
                    "llama2c (llama2.c's run.c)",
                    f.format));
  check_type(f.format, f.type);
  if (f.format == "gguf" && fs::is_directory(f.out))
    throw CommandError(
        fmt::format("--out '{}' is a directory; the gguf format writes one file, "
                    "e.g. --out {}/model.gguf",
                    f.out, f.out));
  const glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";

  glass::ExportInfo info;
  info.name = fs::canonical(f.checkpoint).filename().string();  // the directory exists: it loaded
  info.step = loaded.weights_step();
  info.data = glass::training_data(loaded.files_dir());  // "": not recorded
  info.context = loaded.window();

  const std::string prompt =
      shell_quote(prompt_from_training_text(info.data, f.checkpoint, loaded));
  const char* unit = loaded.unit();
  if (f.format == "gguf") {
    const glass::WeightType type = *glass::parse_weight_type(f.type);  // checked by check_type
    const glass::WeightCount count = glass::export_gguf(loaded, info, f.out, type);
    const std::string note = glass::gguf_note(loaded);
    if (!note.empty()) std::cout << "note: " << note << "\n";
    std::cout << fmt::format(
        "wrote {} (GGUF, llama architecture, {}, context {} {}: the windows it "
        "trained on); run it with llama.cpp, e.g. llama-completion -m {} -p {} -n 50 --temp 0\n",
        f.out, loaded.tokenizer().describe(), info.context, unit, f.out, prompt);
    if (type != glass::WeightType::f32)  // f32: 32 bits per weight, nothing to say
      std::cout << fmt::format(
          "weights: {} in {:.2f} MB of tensors, {:.2f} bits per weight ({}; norm gains stay f32, "
          "rows not a multiple of 32 long go to f16)\n",
          count.total(), static_cast<double>(count.bytes) / 1e6, count.bits_per_weight(),
          count.shares());
    say_how_to_chat(loaded, "gguf", f.out);
  } else {
    write_llama2c(f, loaded, info, prompt);
    say_how_to_chat(loaded, "llama2c", f.out);
  }
}

}  // namespace

namespace glass::cli {

void add_export_command(CLI::App& app) {
  auto f = std::make_shared<ExportFlags>();
  CLI::App* cmd = app.add_subcommand(
      "export",
      "Write a checkpoint in the format of llama.cpp (GGUF) or llama2.c (model.bin + tokenizer.bin).");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("--format", f->format,
                  "gguf (one file for llama.cpp) or llama2c (a directory for llama2.c's run)")
      ->transform(glass::cli::any_case({"gguf", "llama2c"}))
      ->required();
  cmd->add_option("--out", f->out,
                  "gguf: the file to write (e.g. model.gguf); llama2c: the directory "
                  "that gets model.bin and tokenizer.bin")
      ->required();
  cmd->add_option("--type", f->type,
                  "the weights' number type: f32 (both formats, the default); for gguf, f16, "
                  "q8_0 (8.5 bits per weight) or q4_0 (4.5), norm gains staying f32 and rows not "
                  "a multiple of 32 long going to f16; for llama2c, int8 (llama2.c's runq.c: "
                  "groups of int8 weights with a float32 scale each, the norms kept in f32)")
      ->transform(glass::cli::any_case({"f32", "f16", "q8_0", "q4_0", "int8"}));
  cmd->add_flag("--best", f->best,
                "export best.safetensors (best validation loss) instead of the latest weights");
  cmd->footer(
      "Examples:\n"
      "  glass export -m runs/domcasmurro --format gguf --out domcasmurro.gguf\n"
      "  glass export -m runs/domcasmurro --format gguf --type q8_0 --out domcasmurro-q8_0.gguf\n"
      "  glass export -m runs/domcasmurro --format llama2c --out l2c --best\n"
      "  glass export -m runs/domcasmurro --format llama2c --type int8 --out l2c-int8");
  cmd->callback([f] { run_export(*f); });
}

}  // namespace glass::cli
