// `glass inspect`: look inside a trained model on one prompt (the inspect/ library does the work).
//
//   glass inspect --checkpoint DIR --prompt TEXT [--layer L] [--head H] [--snapshot NAME]
//                 [--top-k K] [--json FILE|-] [--html FILE|-]    (- = standard output)

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "data/text.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "sample/sampler.hpp"
#include "cli/threads.hpp"
#include "inspect/inspect.hpp"
#include "inspect/render_html.hpp"
#include "inspect/render_json.hpp"
#include "inspect/render_terminal.hpp"
#include "inspect/text_cells.hpp"

namespace {

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
};

/// Refuses (CommandError) an output path that cannot be written: a directory, or a file whose
/// directory does not exist or is not writable. Checked before anything is printed or written.
void check_output_path(const std::string& path, const char* flag) {
  namespace fs = std::filesystem;
  using glass::cli::CommandError;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw CommandError(fmt::format(
        "cannot write file '{}' ({}): it is a directory; give a file name", path, flag));
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    throw CommandError(fmt::format("cannot write file '{}' ({}): the directory {} does not exist",
                                   path, flag, dir.string()));
  if (::access(dir.c_str(), W_OK) != 0)
    throw CommandError(fmt::format("cannot write file '{}' ({}): cannot write in {}: {}", path,
                                   flag, dir.string(), std::strerror(errno)));
}

/// Colour only for a real terminal, and never when NO_COLOR is set or TERM=dumb.
glass::RenderOptions terminal_options() {
  glass::RenderOptions options;
  const char* term = std::getenv("TERM");
  options.color = isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr &&
                  !(term && std::string(term) == "dumb");
  winsize size{};
  if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col >= 40)
    options.width = size.ws_col;
  return options;
}

void run_inspect(const InspectOptions& opt) {
  using glass::cli::CommandError;
  if (opt.top_k < 1)
    throw CommandError(fmt::format("--top-k must be at least 1 (got {})", opt.top_k));
  if (!std::filesystem::is_directory(opt.checkpoint))
    throw CommandError("checkpoint directory '" + opt.checkpoint +
                       "' does not exist (train one with: glass train --out DIR)");
  // "-" is standard output (as `glass sample --prompt -` reads standard input): then it holds
  // that document alone, so only one of the two can go there.
  const bool json_to_stdout = opt.json_path == "-", html_to_stdout = opt.html_path == "-";
  if (json_to_stdout && html_to_stdout)
    throw CommandError(
        "--json - and --html - both ask for standard output: send one of them to a file");
  if (!opt.json_path.empty() && !json_to_stdout) check_output_path(opt.json_path, "--json");
  if (!opt.html_path.empty() && !html_to_stdout) check_output_path(opt.html_path, "--html");
  std::u32string prompt;
  try {
    prompt = glass::utf8_to_u32(opt.prompt);
  } catch (const glass::Utf8Error& e) {
    throw CommandError(std::string("the prompt is not valid UTF-8: ") + e.what());
  }

  glass::LoadedModel loaded;
  try {
    loaded = glass::load_checkpoint(opt.checkpoint, opt.best);
    loaded.model->set_ops_path(
        glass::OpsPath::reference);  // the snapshots are the reference path's steps
  } catch (const glass::CheckpointError& e) {
    throw CommandError("cannot load checkpoint '" + opt.checkpoint + "': " + e.what());
  }
  if (!loaded.warning.empty()) std::cerr << "warning: " << loaded.warning << "\n";
  glass::cli::apply_threads(opt.threads, glass::cli::Work::forward,
                            static_cast<double>(loaded.model->num_parameters()));
  const glass::ModelConfig& config = loaded.model->config();
  if (opt.layer < 0 || static_cast<std::size_t>(opt.layer) >= config.n_layers)
    throw CommandError(fmt::format("--layer {} is out of range: the model has {} layers (0..{})",
                                   opt.layer, config.n_layers, config.n_layers - 1));
  if (opt.head < 0 || static_cast<std::size_t>(opt.head) >= config.n_heads)
    throw CommandError(
        fmt::format("--head {} is out of range: the model has {} query heads (0..{})", opt.head,
                    config.n_heads, config.n_heads - 1));
  const auto layer = static_cast<std::size_t>(opt.layer);
  const auto head = static_cast<std::size_t>(opt.head);
  std::size_t window = glass::training_context(loaded.files_dir);  // 0: not recorded
  if (window == 0 || window > config.context_length) window = config.context_length;
  // The context counts tokens: a character model's characters, a BPE model's subwords.
  const std::size_t length = glass::prompt_tokens(loaded, prompt).size();
  const char* unit = glass::token_unit(loaded);
  if (length > window)
    throw CommandError(fmt::format(
        "the prompt has {} {}; {}. inspect shows one window, position by position: give "
        "at most {} {} (glass sample continues longer texts)",
        length, unit, glass::context_sentence(window, unit), window, unit));

  glass::Inspection inspection;
  try {
    std::size_t unknown = 0;
    inspection = glass::inspect(loaded, prompt, opt.allow_unknown, &unknown);
    if (unknown > 0)
      std::cerr << "warning: " << unknown
                << " prompt character(s) outside the vocabulary mapped to the unknown id 0\n";
    if (!opt.snapshot.empty()) glass::full_snapshot_name(inspection, layer, opt.snapshot);
  } catch (const glass::InspectError& e) {
    throw CommandError(e.what());
  }

  // The files first: a path that fails leaves nothing printed (the paths were checked above).
  std::string wrote;
  if (!opt.json_path.empty() && !json_to_stdout) {
    glass::write_json(inspection, opt.json_path);
    wrote +=
        "\nwrote " + opt.json_path + " (tokens, logits, probs and every snapshot; see README)\n";
  }
  if (!opt.html_path.empty()) {
    glass::HtmlOptions html;
    html.layer = layer;
    html.head = head;
    html.top_k = static_cast<std::size_t>(opt.top_k);
    html.checkpoint = opt.checkpoint;
    std::string shown;
    for (std::size_t i = 0; i < prompt.size() && i < 60; ++i)
      shown += glass::visible_char(prompt[i]);
    if (prompt.size() > 60) shown += "…";
    html.title = "GlassLLM inspector: \"" + shown + "\"";
    try {
      html.loss =
          glass::read_loss_log((std::filesystem::path(loaded.files_dir) / "log.csv").string());
    } catch (const std::exception& e) {
      std::cerr << "warning: no loss curve on the page: " << e.what() << "\n";
    }
    if (html_to_stdout) {
      std::cout << glass::inspection_html(inspection, html);
    } else {
      glass::write_html(inspection, opt.html_path, html);
      wrote += "\nwrote " + opt.html_path + " (one self-contained page: open it in a browser)\n";
    }
  }
  if (json_to_stdout) std::cout << glass::inspection_json(inspection, -1) << "\n";  // as the file
  if (json_to_stdout || html_to_stdout) {  // standard output holds the document alone
    std::cerr << (wrote.empty() ? "" : wrote.substr(1));
    return;
  }

  const glass::RenderOptions render = terminal_options();
  if (opt.snapshot.empty())
    std::cout << glass::render_overview(inspection, layer, static_cast<std::size_t>(opt.top_k),
                                        render);
  else
    std::cout << glass::render_snapshot(inspection, layer, head, opt.snapshot, render);
  std::cout << wrote;
}

}  // namespace

namespace glass::cli {

void add_inspect_command(CLI::App& app) {
  auto opt = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Look inside a trained model on a prompt: every snapshot of a layer (Q, K, V, RoPE, scores,\n"
      "mask, attention weights, mix, output) with shapes and values, attention heatmaps and the\n"
      "next-token probabilities; optionally as JSON or as one self-contained HTML page.");
  cmd->add_option("-m,--checkpoint", opt->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("-p,--prompt", opt->prompt,
                  "the text to run through the model (one token per character; a BPE model: "
                  "its subword tokens)")
      ->required();
  cmd->add_option("--layer", opt->layer, "layer to show (0 .. n_layers-1)")->capture_default_str();
  cmd->add_option("--head", opt->head,
                  "query head to show (0 .. n_heads-1); K/V show the KV head it uses")
      ->capture_default_str();
  cmd->add_option(
      "--snapshot", opt->snapshot,
      "show one snapshot's values: attn.q, attn.k, attn.v, attn.rope_q, attn.rope_k, "
      "attn.scores, attn.mask, attn.softmax, attn.mix, attn.out, out, embeddings, logits, probs");
  cmd->add_option("--top-k", opt->top_k, "how many next-token probabilities to list")
      ->capture_default_str();
  cmd->add_option(
      "--json", opt->json_path,
      "also write everything (tokens, logits, probs, all snapshots) as JSON to this file; "
      "- prints it on standard output instead of the overview");
  cmd->add_option(
      "--html", opt->html_path,
      "also write one self-contained HTML page (heatmaps, top-k bars, loss curve) to this "
      "file; - prints it on standard output instead of the overview");
  cmd->add_flag("--best", opt->best,
                "use best.safetensors (best validation loss) instead of the latest weights");
  cmd->add_flag("--allow-unknown", opt->allow_unknown,
                "map prompt characters outside the vocabulary to the unknown id 0 (with a warning) "
                "instead of stopping");
  glass::cli::add_threads_option(cmd, opt->threads, glass::cli::Work::forward);
  cmd->footer(
      "Examples:\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --layer 1\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --layer 1 --head 2 --snapshot attn.softmax\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt $'Bentinho\\ne Capitu' --html inspect.html\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --json - | python3 -m json.tool\n"
      "Spaces and newlines are shown as \u2423 and \u23ce in the labels (a BPE model's tokens write\n"
      "a space as \u2581 and a byte as <0xNN>, as its vocabulary does); see README (glass inspect).");
  cmd->callback([opt] { run_inspect(*opt); });
}

}  // namespace glass::cli
