// `glass inspect`: look inside a trained model on one prompt (the inspect/ library does the work).
//
//   glass inspect --checkpoint DIR --prompt TEXT [--layer L] [--head H] [--snapshot NAME]
//                 [--top-k K] [--json FILE|-] [--html FILE|-]    (- = standard output)
//   glass inspect --checkpoint DIR [--prompt TEXT] [--lens] [--ablate L.H,... [--ablation
//                 zero|mean]] [--head-scores] [--patch --corrupted TEXT] [--history]
//                 [--dla [--target TOKEN] [--position N]]
//                 [--attribution --corrupted TEXT [--metric logit-diff|log-prob]]
//                 (the interpretability lab, interp/; views in inspect/interp_report.hpp)
//
// The options and the lab's flags are cli/inspect_options.hpp.

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "data/text.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "cli/commands.hpp"
#include "cli/inspect_options.hpp"
#include "sample/sampler.hpp"
#include "cli/threads.hpp"
#include "inspect/inspect.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/lab.hpp"
#include "inspect/render_html.hpp"
#include "inspect/render_json.hpp"
#include "inspect/render_terminal.hpp"
#include "inspect/loss_plot.hpp"
#include "inspect/text_cells.hpp"

namespace {

using glass::cli::InspectOptions;

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

/// Refuses "-" for both documents (standard output holds one document alone) and output paths
/// that cannot be written (check_output_path).
void check_outputs(const InspectOptions& opt) {
  if (opt.json_path == "-" && opt.html_path == "-")
    throw glass::cli::CommandError(
        "--json - and --html - both ask for standard output: send one of them to a file");
  if (!opt.json_path.empty() && opt.json_path != "-") check_output_path(opt.json_path, "--json");
  if (!opt.html_path.empty() && opt.html_path != "-") check_output_path(opt.html_path, "--html");
}

/// The checkpoint of --checkpoint (--best: its best weights) on the reference path, whose hook
/// points the snapshots and the lab read; its warning printed; --threads applied.
glass::Checkpoint load_for_inspect(const InspectOptions& opt) {
  using glass::cli::CommandError;
  if (!std::filesystem::is_directory(opt.checkpoint))
    throw CommandError("checkpoint directory '" + opt.checkpoint +
                       "' does not exist (train one with: glass train --out DIR)");
  try {
    glass::Checkpoint loaded = glass::load_checkpoint(opt.checkpoint, opt.best);
    loaded.model().set_ops_path(glass::OpsPath::reference);
    if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
    glass::cli::apply_threads(opt.threads);
    return loaded;
  } catch (const glass::CheckpointError& e) {
    throw CommandError("cannot load checkpoint '" + opt.checkpoint + "': " + e.what());
  }
}

/// The command's words for a prompt with characters outside the vocabulary: the facts, and the
/// flag that maps them.
glass::cli::CommandError unknown_characters(const std::string& what) {
  return glass::cli::CommandError(what + "\n(--allow-unknown maps them to the unknown id 0)");
}

/// --allow-unknown as the tokenizer's policy.
glass::UnknownPolicy unknown_policy(const InspectOptions& opt) {
  return opt.allow_unknown ? glass::UnknownPolicy::kMapToUnknownId : glass::UnknownPolicy::kRefuse;
}

/// The save's training log (log.csv, verified against the save's manifest) for the page's loss
/// curve; none (with a warning) when it cannot be read or was damaged: the page is still made.
std::vector<glass::LossPoint> page_loss(const glass::Checkpoint& loaded) {
  try {
    return glass::read_save_loss_log(loaded.files_dir());
  } catch (const std::exception& e) {
    std::cerr << "warning: no loss curve on the page: " << e.what() << "\n";
    return {};
  }
}

/// The inspector page's options: the head chosen, top-k, the prompt in the title, the loss curve.
glass::HtmlOptions page_options(const InspectOptions& opt, const glass::Checkpoint& loaded,
                                const std::u32string& prompt) {
  glass::HtmlOptions html;
  html.layer = static_cast<std::size_t>(opt.layer);
  html.head = static_cast<std::size_t>(opt.head);
  html.top_k = static_cast<std::size_t>(opt.top_k);
  html.checkpoint = opt.checkpoint;
  html.unit = loaded.unit(false);
  std::string shown;
  for (std::size_t i = 0; i < prompt.size() && i < 60; ++i) shown += glass::visible_char(prompt[i]);
  if (prompt.size() > 60) shown += "…";
  html.title = "GlassLLM inspector: \"" + shown + "\"";
  html.loss = page_loss(loaded);
  return html;
}

/// The flags of the lab that only make sense together, checked before anything is loaded.
void check_lab_flags(const InspectOptions& opt) {
  using glass::cli::CommandError;
  if (!opt.snapshot.empty())
    throw CommandError(
        "--snapshot shows one snapshot of the overview; it does not combine with --lens, "
        "--ablate, --head-scores, --patch, --history, --dla or --attribution (run them apart)");
  if (opt.patch && opt.corrupted.empty())
    throw CommandError(
        "--patch needs the corrupted prompt: --corrupted \"TEXT\" (as many tokens as --prompt)");
  if (opt.attribution && opt.corrupted.empty())
    throw CommandError(
        "--attribution needs the corrupted prompt: --corrupted \"TEXT\" (as many tokens as "
        "--prompt)");
  if (!opt.corrupted.empty() && !opt.patch && !opt.attribution)
    throw CommandError(
        "--corrupted is the second prompt of --patch and --attribution: add --patch or "
        "--attribution");
  if ((!opt.target.empty() || opt.position != -1) && !opt.dla)
    throw CommandError("--target and --position say what --dla splits: add --dla");
  if (opt.position < -1)
    throw CommandError(fmt::format("--position {} is out of range", opt.position));
  if (opt.metric != "logit-diff" && !opt.attribution)
    throw CommandError("--metric says what --attribution measures: add --attribution");
  if (opt.ablation != "zero" && opt.ablate.empty())
    throw CommandError("--ablation says how --ablate knocks heads out: add --ablate L.H");
  // Negative numbers do not reach the lab's request (it counts from 0); it checks the rest.
  if (opt.top_k < 1)
    throw CommandError(
        fmt::format("--top-k must be from 1 to {} (got {})", glass::kMaxLabTopK, opt.top_k));
  if (opt.layer < 0) throw CommandError(fmt::format("--layer {} is out of range", opt.layer));
  if (opt.head < 0) throw CommandError(fmt::format("--head {} is out of range", opt.head));
}

/// The lab's request from the flags (--ablate's heads read against the model's shape).
glass::LabRequest lab_request(const InspectOptions& opt, const glass::ModelConfig& config) {
  glass::LabRequest q;
  if (opt.prompt_given) q.prompt = opt.prompt;
  q.allow_unknown = opt.allow_unknown;
  q.top_k = static_cast<std::size_t>(opt.top_k);
  q.layer = static_cast<std::size_t>(opt.layer);
  q.head = static_cast<std::size_t>(opt.head);
  q.lens = opt.lens;
  if (!opt.ablate.empty()) {
    try {
      q.ablate = glass::parse_head_list(opt.ablate, config.n_layers, config.n_heads);
    } catch (const std::invalid_argument& e) {
      throw glass::cli::CommandError(std::string("--ablate: ") + e.what());
    }
  }
  q.ablation = opt.ablation == "mean" ? glass::AblationMode::mean : glass::AblationMode::zero;
  q.head_scores = opt.head_scores;
  q.weights_are_best = opt.best;
  if (opt.patch) q.patch = opt.corrupted;
  if (opt.history) q.history = opt.checkpoint;
  q.dla = opt.dla;
  if (!opt.target.empty()) q.target = opt.target;
  if (opt.position >= 0) q.position = static_cast<std::size_t>(opt.position);
  if (opt.attribution) q.attribution = opt.corrupted;
  q.metric = opt.metric == "log-prob" ? glass::PatchMetric::Kind::log_prob
                                      : glass::PatchMetric::Kind::logit_diff;
  return q;
}

/// The flag that sets each part of a lab request (LabField).
constexpr std::pair<glass::LabField, const char*> kLabFlags[] = {
    {glass::LabField::prompt, "--prompt"},
    {glass::LabField::corrupted, "--corrupted"},
    {glass::LabField::top_k, "--top-k"},
    {glass::LabField::layer, "--layer"},
    {glass::LabField::head, "--head"},
    {glass::LabField::heads, "--ablate"},
    {glass::LabField::head_scores, "--head-scores"},
    {glass::LabField::target, "--target"},
    {glass::LabField::position, "--position"},
};

/// A request the lab refused, in the command's words: the flag, the fact, what to do.
std::string lab_message(const glass::LabRequestError& e) {
  using F = glass::LabField;
  const char* flag = "--prompt";
  for (const auto& [field, name] : kLabFlags)
    if (field == e.field) flag = name;
  std::string hint;
  if (e.problem == glass::LabProblem::unknown_characters)
    hint = "\n(--allow-unknown maps them to the unknown id 0)";
  else if (e.field == F::head_scores || e.problem == glass::LabProblem::missing)
    hint = ": give --prompt TEXT";
  return fmt::format("{} {}{}", flag, e.what(), hint);
}

/// The lab's page: the report drawn by web/lab_views.js, under the inspector of the prompt when
/// there is one, with the save's loss curve.
std::string lab_page(const InspectOptions& opt, const glass::Checkpoint& loaded,
                     const nlohmann::ordered_json& report) {
  glass::HtmlOptions html;
  html.layer = static_cast<std::size_t>(opt.layer);
  html.head = static_cast<std::size_t>(opt.head);
  html.top_k = static_cast<std::size_t>(opt.top_k);
  html.checkpoint = opt.checkpoint;
  html.unit = loaded.unit(false);
  html.title = "GlassLLM interpretability: " + opt.checkpoint;
  html.loss = page_loss(loaded);
  if (!opt.prompt_given) return glass::lab_html(report, nullptr, html);
  try {
    const glass::Inspection inspection =
        glass::inspect(loaded, glass::utf8_to_u32(opt.prompt), unknown_policy(opt));
    return glass::lab_html(report, &inspection, html);
  } catch (const glass::InspectError& e) {
    throw glass::cli::CommandError(e.what());
  } catch (const glass::UnknownCharacterError& e) {
    throw unknown_characters(e.what());
  }
}

/// `glass inspect` with --lens, --ablate, --head-scores, --patch or --history: the
/// interpretability lab (inspect/lab.hpp) on the checkpoint, in tokens; the report on the
/// terminal, as JSON (--json) or as the lab's page (--html).
void run_interp(const InspectOptions& opt) {
  using glass::cli::CommandError;
  check_lab_flags(opt);
  check_outputs(opt);
  const glass::Checkpoint loaded = load_for_inspect(opt);
  glass::InterpReport report;
  try {
    glass::LabRequest q = lab_request(opt, loaded.config());
    if (q.ablation == glass::AblationMode::mean && q.ablate && !q.ablate->empty())
      q.mean_over = glass::mean_reference("", loaded, q.mean_over_source);  // as /api/ablate's
    report = glass::run_lab(loaded, q);
  } catch (const glass::LabRequestError& e) {
    throw CommandError(lab_message(e));
  } catch (const glass::CheckpointError& e) {
    throw CommandError(e.what());
  }
  report.checkpoint = opt.checkpoint;
  for (const std::string& w : report.warnings) std::cerr << "warning: " << w << "\n";
  const nlohmann::ordered_json doc = glass::interp_json(report);
  std::string wrote;
  if (!opt.json_path.empty() && opt.json_path != "-") {
    glass::write_file_atomic(opt.json_path, doc.dump(2) + "\n");
    wrote += "\nwrote " + opt.json_path + " (docs/en/cli.md, glass inspect: the JSON shape)\n";
  }
  if (!opt.html_path.empty()) {
    const std::string page = lab_page(opt, loaded, doc);
    if (opt.html_path == "-") {
      std::cout << page;
    } else {
      glass::write_file_atomic(opt.html_path, page);
      wrote += "\nwrote " + opt.html_path + " (one self-contained page: open it in a browser)\n";
    }
  }
  if (opt.json_path == "-") std::cout << doc.dump(2) << "\n";
  if (opt.json_path == "-" || opt.html_path == "-") {
    std::cerr << (wrote.empty() ? "" : wrote.substr(1));
    return;
  }
  std::cout << glass::interp_terminal(report, terminal_options().width) << wrote;
}

/// The prompt of --prompt as code points (CommandError when it is not UTF-8).
std::u32string prompt_text(const InspectOptions& opt) {
  try {
    return glass::utf8_to_u32(opt.prompt);
  } catch (const glass::Utf8Error& e) {
    throw glass::cli::CommandError(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
}

/// Refuses a --layer or --head the model does not have, and a prompt longer than its window.
void check_against_model(const InspectOptions& opt, const glass::Checkpoint& loaded,
                         const std::u32string& prompt) {
  using glass::cli::CommandError;
  const glass::ModelConfig& config = loaded.config();
  if (opt.layer < 0 || static_cast<std::size_t>(opt.layer) >= config.n_layers)
    throw CommandError(fmt::format("--layer {} is out of range: the model has {} layers (0..{})",
                                   opt.layer, config.n_layers, config.n_layers - 1));
  if (opt.head < 0 || static_cast<std::size_t>(opt.head) >= config.n_heads)
    throw CommandError(
        fmt::format("--head {} is out of range: the model has {} query heads (0..{})", opt.head,
                    config.n_heads, config.n_heads - 1));
  try {  // the context counts tokens: a character model's characters, a BPE model's subwords
    loaded.check_fits_window(prompt);
  } catch (const glass::PromptTooLongError& e) {
    throw CommandError(fmt::format(
        "the prompt has {} {}; {}. inspect shows one window, position by position: give "
        "at most {} {} (glass sample continues longer texts)",
        e.length(), e.unit(), glass::context_sentence(e.window(), e.unit()), e.window(), e.unit()));
  }
}

/// The inspection of the prompt (its unknown characters mapped with a warning under
/// --allow-unknown); --snapshot's name checked.
glass::Inspection inspect_prompt(const InspectOptions& opt, const glass::Checkpoint& loaded,
                                 const std::u32string& prompt) {
  try {
    std::size_t unknown = 0;
    glass::Inspection inspection = glass::inspect(loaded, prompt, unknown_policy(opt), &unknown);
    if (unknown > 0)
      std::cerr << "warning: " << unknown
                << " prompt character(s) outside the vocabulary mapped to the unknown id 0\n";
    if (!opt.snapshot.empty())
      glass::full_snapshot_name(inspection, static_cast<std::size_t>(opt.layer), opt.snapshot);
    return inspection;
  } catch (const glass::InspectError& e) {
    throw glass::cli::CommandError(e.what());
  } catch (const glass::UnknownCharacterError& e) {
    throw unknown_characters(e.what());
  }
}

/// The inspection as --json and --html ask (files first: a path that fails leaves nothing
/// printed; the paths were checked before), then the overview or one snapshot on the terminal
/// unless standard output holds one of the documents.
void show_inspection(const InspectOptions& opt, const glass::Checkpoint& loaded,
                     const std::u32string& prompt, const glass::Inspection& inspection) {
  const bool json_to_stdout = opt.json_path == "-", html_to_stdout = opt.html_path == "-";
  std::string wrote;
  if (!opt.json_path.empty() && !json_to_stdout) {
    glass::write_json(inspection, opt.json_path);
    wrote += "\nwrote " + opt.json_path +
             " (tokens, logits, probs and every snapshot; see docs/en/cli.md)\n";
  }
  if (!opt.html_path.empty()) {
    const glass::HtmlOptions html = page_options(opt, loaded, prompt);
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
  const auto layer = static_cast<std::size_t>(opt.layer);
  if (opt.snapshot.empty())
    std::cout << glass::render_overview(inspection, layer, static_cast<std::size_t>(opt.top_k),
                                        render);
  else
    std::cout << glass::render_snapshot(inspection, layer, static_cast<std::size_t>(opt.head),
                                        opt.snapshot, render);
  std::cout << wrote;
}

void run_inspect(const InspectOptions& opt) {
  using glass::cli::CommandError;
  if (opt.any_interp()) return run_interp(opt);
  if (!opt.prompt_given) throw CommandError("--prompt is required: the text to look inside");
  if (opt.top_k < 1)
    throw CommandError(fmt::format("--top-k must be at least 1 (got {})", opt.top_k));
  // "-" is standard output (as `glass sample --prompt -` reads standard input): then it holds
  // that document alone, so only one of the two can go there.
  check_outputs(opt);
  const std::u32string prompt = prompt_text(opt);
  const glass::Checkpoint loaded = load_for_inspect(opt);  // the snapshots: reference path
  check_against_model(opt, loaded, prompt);
  show_inspection(opt, loaded, prompt, inspect_prompt(opt, loaded, prompt));
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
                  "its subword tokens); needed except for --history and --head-scores alone");
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
  glass::cli::add_threads_option(cmd, opt->threads);
  add_lab_options(cmd, *opt);
  cmd->footer(
      "Examples:\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --layer 1\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --layer 1 --head 2 --snapshot attn.softmax\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt $'Bentinho\\ne Capitu' --html inspect.html\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu' --json - | python3 -m json.tool\n"
      "Interpretability (in tokens; each with --json FILE|- and --html FILE|-):\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu e Bentinho' --lens --top-k 3\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Capitu e Bentinho' --ablate 2.0,3.2 --ablation mean\n"
      "  glass inspect --checkpoint runs/domcasmurro --head-scores\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Disse Capitu' --patch --corrupted 'Disse Escoba'\n"
      "  glass inspect --checkpoint runs/domcasmurro --history --html history.html\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Disse Capitu' --dla --target ' '\n"
      "  glass inspect --checkpoint runs/domcasmurro --prompt 'Disse Capitu' --attribution --corrupted 'Disse Capita'\n"
      "Spaces and newlines are shown as \u2423 and \u23ce in the labels (a BPE model's tokens write\n"
      "a space as \u2581 and a byte as <0xNN>, as its vocabulary does); see docs/en/cli.md (Looking inside: glass inspect).");
  cmd->callback([opt, cmd] {
    opt->prompt_given = cmd->count("--prompt") > 0;
    run_inspect(*opt);
  });
}

}  // namespace glass::cli
