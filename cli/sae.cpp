// `glass sae`: sparse autoencoders on a checkpoint's residual stream.
//
//   glass sae train -m DIR [--point layers.1.out] [--latents 1024] [--k 16] [--steps N] [--ops P]
//                   [--data FILE] [--out FILE] [-t N]
//   glass sae eval -m DIR --sae FILE [--point P] [--data FILE] [--census N] [-t N]
//   glass sae inspect -m DIR --sae FILE (--latent N | --prompt TEXT) [--json]  (sae_inspect.cpp)

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/sae_files.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "data/text.hpp"
#include "train/sae_census.hpp"
#include "train/sae_file.hpp"
#include "train/sae_trainer.hpp"

namespace glass::cli {

namespace fs = std::filesystem;

/// The text the checkpoint was trained on: config.json's training.data, looked for as given and
/// in data/corpora next to the program (or one level up). CommandError when it is not found.
std::string training_text(const glass::Checkpoint& loaded) {
  const std::string name = glass::training_data(loaded.files_dir());
  if (name.empty())
    throw CommandError("the checkpoint does not record its training text; pass --data FILE");
  std::error_code ec;
  const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  for (const fs::path& c : {fs::path(name), exe_dir / "data" / "corpora" / name,
                            exe_dir.parent_path() / "data" / "corpora" / name})
    if (fs::is_regular_file(c, ec)) return c.string();
  throw CommandError(fmt::format(
      "the checkpoint was trained on '{}', which was not found here or in data/corpora; pass "
      "--data FILE",
      name));
}

/// The SAE file, verified against its manifest and the model (SaeFileError -> CommandError).
glass::LoadedSae load_sae_or_explain(const std::string& path, const glass::Checkpoint& loaded,
                                     const std::string& point) {
  try {
    return glass::load_sae(path, loaded, point);
  } catch (const glass::SaeFileError& e) {
    throw CommandError(fmt::format("--sae: {}", e.what()));
  }
}

}  // namespace glass::cli

namespace {

namespace fs = std::filesystem;
using glass::cli::CommandError;
using glass::cli::load_sae_or_explain;
using glass::cli::training_text;

struct SaeTrainFlags {
  std::string checkpoint;
  std::string data;  // "": the text config.json records
  std::string out;   // "": DIR/sae-<point>.safetensors
  glass::SaeTrainOptions options;
  int threads = 0;
};

/// What the SAE's manifest records of its training: the options and the figures.
nlohmann::json training_record(const SaeTrainFlags& f, const std::string& data,
                               const glass::SaeTrainResult& r) {
  const glass::SaeTrainOptions& o = f.options;
  const glass::SaeMetrics& m = r.metrics;
  return {{"data", fs::path(data).filename().string()},
          {"steps", o.steps},
          {"batch_tokens", o.batch_tokens},
          {"buffer_tokens", o.buffer_tokens},
          {"reuse", o.reuse},
          {"ops", glass::to_string(o.ops)},
          {"lr", o.lr},
          {"aux_coef", o.aux_coef},
          {"dead_after_tokens", o.dead_after},
          {"seed", o.seed},
          {"tokens_seen", r.tokens_seen},
          {"seconds", r.seconds},
          {"validation",
           {{"tokens", m.tokens},
            {"fvu", m.fvu},
            {"l0", m.l0},
            {"dead", m.dead},
            {"silent", m.silent},
            {"clean_loss", m.clean_loss},
            {"spliced_loss", m.spliced_loss}}}};
}

void run_sae_train(SaeTrainFlags& f) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint);
  glass::cli::apply_threads(f.threads);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  glass::SaeTrainOptions& o = f.options;
  try {
    glass::sae_point_index(loaded.model(), o.point);
  } catch (const std::invalid_argument& e) {
    throw CommandError(fmt::format("--point: {}", e.what()));
  }
  if (o.k >= o.n_latents)
    throw CommandError(fmt::format("--k {} must be less than --latents {}", o.k, o.n_latents));
  const std::string data = f.data.empty() ? training_text(loaded) : f.data;
  const std::string out =
      f.out.empty() ? (fs::path(f.checkpoint) / ("sae-" + o.point + ".safetensors")).string()
                    : f.out;
  glass::ensure_writable_directory(fs::absolute(out).parent_path().string());
  glass::SplitIds split = loaded.tokenizer().encode_split(glass::load_text(data),
                                                          glass::UnknownPolicy::kMapToUnknownId);
  const auto ids = std::make_shared<const glass::TokenIds>(std::move(split.ids));
  std::cout << fmt::format(
      "sae: {} latents, k {}, at {} (d_model {}), {} steps of {} activations from {} ({} train / "
      "{} validation {})\n",
      o.n_latents, o.k, o.point, loaded.config().d_model, o.steps, o.batch_tokens, data,
      split.n_train, ids->size() - split.n_train, loaded.unit());
  const glass::SaeTrainResult r = glass::train_sae(loaded, ids, split.n_train, o, std::cout);
  const glass::SaeMetrics& m = r.metrics;
  std::cout << fmt::format(
      "validation ({} {}): FVU {:.4f} | L0 {:.2f} | dead {} of {} ({:.1f} %, no activation in "
      "the last {} training {}) | never active on validation {}\n"
      "loss: clean {:.4f}, spliced {:.4f} (+{:.4f} nats per {}) | trained in {:.0f} s\n",
      m.tokens, loaded.unit(), m.fvu, m.l0, m.dead, o.n_latents, 100.0 * m.dead / o.n_latents,
      o.dead_after, loaded.unit(), m.silent, m.clean_loss, m.spliced_loss,
      m.spliced_loss - m.clean_loss, loaded.unit(false), r.seconds);
  glass::save_sae(out, *r.sae, o.point, loaded, training_record(f, data, r));
  std::cout << "wrote " << out << " and " << glass::sae_manifest_path(out) << "\n";
}

void add_sae_train(CLI::App* sae) {
  auto f = std::make_shared<SaeTrainFlags>();
  CLI::App* cmd = sae->add_subcommand(
      "train", "Train a TopK sparse autoencoder on the residual stream at one point.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("--point", f->options.point, "residual-stream point: embeddings or layers.L.out")
      ->capture_default_str();
  cmd->add_option("--latents", f->options.n_latents, "number of latents (dictionary size)")
      ->check(glass::cli::integer_in(2, 1 << 20, "an integer from 2 to 1048576"))
      ->capture_default_str();
  cmd->add_option("--k", f->options.k, "latents kept per token (TopK), less than --latents")
      ->check(glass::cli::kPositiveInteger)
      ->capture_default_str();
  cmd->add_option("--steps", f->options.steps, "AdamW steps")
      ->check(glass::cli::integer_in(1, 10'000'000, "an integer from 1 to 10000000"))
      ->capture_default_str();
  cmd->add_option("--batch", f->options.batch_tokens, "activations per step")
      ->check(glass::cli::integer_in(1, 1 << 20, "an integer from 1 to 1048576"))
      ->capture_default_str();
  cmd->add_option("--reuse", f->options.reuse,
                  "read each buffered activation about 2 x N times before refilling it")
      ->check(glass::cli::integer_in(1, 1000, "an integer from 1 to 1000"))
      ->capture_default_str();
  cmd->add_option("--lr", f->options.lr, "learning rate")
      ->check(glass::cli::kPositiveNumber)
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--ops", [f](const std::string& name) { f->options.ops = glass::parse_ops_path(name); },
         "which code computes a step: fast (a decoder multiplying only the active latents) or "
         "reference (the SAE's ops as written; slower, the same numbers to rounding)")
      ->transform(CLI::IsMember({"fast", "reference"}, CLI::ignore_case))
      ->default_str("fast");
  cmd->add_option("--seed", f->options.seed, "seed of the initial weights and the windows")
      ->capture_default_str();
  cmd->add_option("--data", f->data, "text to train on (default: the one the model trained on)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", f->out, "SAE file (default DIR/sae-POINT.safetensors; + .json)");
  glass::cli::add_threads_option(cmd, f->threads);
  cmd->footer(
      "Example:\n"
      "  glass sae train -m runs/domcasmurro --point layers.1.out --latents 1024 --k 16\n"
      "Prints FVU (fraction of variance unexplained), L0 (latents active per token), dead\n"
      "latents and the validation loss with the reconstruction spliced in at the point.");
  cmd->callback([f] {
    f->options.buffer_tokens = std::max(f->options.buffer_tokens, 2 * f->options.batch_tokens);
    run_sae_train(*f);
  });
}

struct SaeEvalFlags {
  std::string checkpoint;
  std::string sae;
  std::string point;  // "": any; else the point the SAE must read
  std::string data;
  std::size_t census = 0;  // 0: no census; else the number of most frequent latents to read
  int threads = 0;
};

/// The text of ids[pos - 24 .. pos] with the current token in brackets, newlines shown as '⏎'.
std::string marked_context(const glass::Checkpoint& loaded, const glass::TokenIds& ids,
                           std::size_t pos) {
  const std::size_t from = pos >= 24 ? pos - 24 : 0;
  std::string text = loaded.tokenizer().decode_generated(ids.to_vector(from, pos)) + "[" +
                     loaded.tokenizer().decode_generated(ids.to_vector(pos, pos + 1)) + "]";
  for (std::size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i))
    text.replace(i, 1, "⏎");
  return text;
}

/// `glass sae eval --census N`: the share of the N most frequent latents whose top 10 contexts
/// hold more than one distinct current token, and the first 10 such latents with 5 contexts each.
void print_census(const glass::Checkpoint& loaded, const glass::LoadedSae& sae,
                  const glass::TokenIds& ids, std::size_t begin, std::size_t n) {
  const glass::SaeCensus c =
      glass::sae_census(loaded, *sae.sae, sae.point, ids, begin, ids.size(), n, 10);
  std::cout << fmt::format(
      "census: {} of the {} most frequent latents ({:.0f} %) have top-10 contexts on more than "
      "one current {}\n",
      c.multi, c.latents.size(), 100.0 * c.multi / std::max<std::size_t>(c.latents.size(), 1),
      loaded.unit(false));
  std::size_t shown = 0;
  for (const glass::LatentContexts& l : c.latents) {
    if (l.distinct_current < 2 || shown++ == 10) continue;
    std::cout << fmt::format("latent {} (fires on {} of {}, {} distinct current):\n", l.latent,
                             l.fires, c.tokens, l.distinct_current);
    for (std::size_t i = 0; i < std::min<std::size_t>(5, l.top.size()); ++i)
      std::cout << fmt::format("  {:6.2f}  {}\n", l.top_activations[i],
                               marked_context(loaded, ids, l.top[i]));
  }
}

void run_sae_eval(const SaeEvalFlags& f) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint);
  glass::cli::apply_threads(f.threads);
  const glass::LoadedSae sae = load_sae_or_explain(f.sae, loaded, f.point);
  const std::string data = f.data.empty() ? training_text(loaded) : f.data;
  const glass::SplitIds split = loaded.tokenizer().encode_split(
      glass::load_text(data), glass::UnknownPolicy::kMapToUnknownId);
  const glass::SaeMetrics m =
      glass::evaluate_sae(loaded, *sae.sae, sae.point, split.ids, split.n_train, split.ids.size());
  std::cout << fmt::format(
      "{} at {} ({} latents, k {}), validation of {} ({} {}): FVU {:.4f} | L0 {:.2f} | never "
      "active {}\nloss: clean {:.4f}, spliced {:.4f} (+{:.4f} nats per {})\n",
      f.sae, sae.point, sae.sae->n_latents(), sae.sae->k(), data, m.tokens, loaded.unit(), m.fvu,
      m.l0, m.silent, m.clean_loss, m.spliced_loss, m.spliced_loss - m.clean_loss,
      loaded.unit(false));
  if (f.census > 0) print_census(loaded, sae, split.ids, split.n_train, f.census);
}

void add_sae_eval(CLI::App* sae) {
  auto f = std::make_shared<SaeEvalFlags>();
  CLI::App* cmd = sae->add_subcommand(
      "eval", "Measure a trained SAE on the validation split: FVU, L0, spliced loss.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("--sae", f->sae, "SAE file written by glass sae train")->required();
  cmd->add_option("--point", f->point, "refuse an SAE of another point");
  cmd->add_option("--census", f->census,
                  "also read the N most frequent latents: how many fire on more than one "
                  "character in their top 10 contexts, and some of those contexts")
      ->check(glass::cli::integer_in(1, 1 << 20, "an integer from 1 to 1048576"));
  cmd->add_option("--data", f->data, "text (default: the one the model trained on)")
      ->check(CLI::ExistingFile);
  glass::cli::add_threads_option(cmd, f->threads);
  cmd->callback([f] { run_sae_eval(*f); });
}

}  // namespace

namespace glass::cli {

void add_sae_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("sae", "Sparse autoencoders: train one, browse its latents.");
  cmd->require_subcommand(1);
  add_sae_train(cmd);
  add_sae_eval(cmd);
  add_sae_inspect(cmd);
}

}  // namespace glass::cli
