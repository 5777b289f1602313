// `glass sae inspect`: browse an SAE's latents (inspect/sae_features.hpp).
//
//   glass sae inspect -m DIR --sae FILE --latent N [--contexts 10] [--data FILE] [--point P] [--json]
//   glass sae inspect -m DIR --sae FILE --prompt TEXT [--top 5] [--json]
//
// A latent: its top-activating contexts in the validation split of the text the model trained
// on (the activating token marked [[x]]), its activation histogram and the tokens its decoder
// direction promotes and suppresses. A prompt: the latents that fire at each position.

#include <algorithm>
#include <iostream>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/sae_files.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "data/text.hpp"
#include "data/visible_text.hpp"
#include "inspect/sae_features.hpp"

namespace {

using glass::cli::CommandError;
using nlohmann::json;

struct SaeInspectFlags {
  std::string checkpoint;
  std::string sae;
  std::string data;
  std::string point;      // "": any; else the point the SAE must read
  long long latent = -1;  // -1: not given
  std::string prompt;
  bool prompt_given = false;
  std::size_t contexts = 10;
  std::size_t top = 5;
  bool json = false;
  int threads = 0;
};

/// A piece of model text on one terminal line: control characters and newlines visible.
std::string shown(const std::string& text) {
  std::string out;
  for (char c : text) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return glass::escape_controls(out);
}

void print_latent(const json& j, const char* unit) {
  std::cout << fmt::format(
      "latent {} of {} at {}: fires on {} of {} validation {} ({:.2f} %); max {:.3f}, mean {:.3f} "
      "when it fires\n",
      j["latent"].get<std::size_t>(), j["n_latents"].get<std::size_t>(),
      j["point"].get<std::string>(), j["fired"].get<std::size_t>(), j["tokens"].get<std::size_t>(),
      unit, 100.0 * j["density"].get<double>(), j["max_activation"].get<double>(),
      j["mean_activation"].get<double>());
  std::cout << "\ntop contexts (the activating token in [[ ]]):\n";
  for (const json& c : j["contexts"])
    std::cout << fmt::format("  {:8.3f}  {}[[{}]]{}\n", c["activation"].get<double>(),
                             shown(c["before"]), shown(c["token"]), shown(c["after"]));
  if (j["contexts"].empty()) std::cout << "  (it never fires on this text)\n";
  const std::vector<std::size_t> bins = j["histogram"]["bins"];
  const double max = j["histogram"]["max"];
  const std::size_t most = bins.empty() ? 0 : *std::max_element(bins.begin(), bins.end());
  if (most > 0) {
    std::cout << fmt::format("\nactivation histogram (when it fires; {} bins up to {:.3f}):\n",
                             bins.size(), max);
    for (std::size_t b = 0; b < bins.size(); ++b) {
      const std::size_t bar = (bins[b] * 40 + most - 1) / most;
      std::string bars;
      for (std::size_t i = 0; i < bar; ++i) bars += "█";
      std::cout << fmt::format("  {:7.3f} - {:7.3f} {:>7}  {}\n", max * b / bins.size(),
                               max * (b + 1) / bins.size(), bins[b], bars);
    }
  }
  auto tokens = [](const json& list) {
    std::string out;
    for (const json& t : list)
      out += fmt::format("  '{}' {:+.3f}", shown(t["token"]), t["effect"].get<double>());
    return out;
  };
  std::cout << "\nlogit effects of its decoder direction (W_dec through the final RMSNorm's gain "
               "and the output matrix):\n  promotes: "
            << tokens(j["promoted"]) << "\n  suppresses: " << tokens(j["suppressed"]) << "\n";
}

void print_prompt(const json& j) {
  std::cout << fmt::format("latents at {} (strongest first, activation in parentheses):\n",
                           j["point"].get<std::string>());
  std::size_t t = 0;
  for (const json& p : j["positions"]) {
    std::string latents;
    for (const json& l : p["latents"])
      latents += fmt::format("  {} ({:.3f})", l["latent"].get<std::size_t>(),
                             l["activation"].get<double>());
    std::cout << fmt::format("  {:4}  '{}'{}\n", t++, shown(p["token"]),
                             latents.empty() ? "  (none)" : latents);
  }
}

void run_sae_inspect(const SaeInspectFlags& f) {
  if ((f.latent >= 0) == f.prompt_given)
    throw CommandError(
        "give one of --latent N (a latent's page) or --prompt TEXT (the latents "
        "of a prompt)");
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint);
  glass::cli::apply_threads(f.threads);
  loaded.model().set_ops_path(glass::OpsPath::reference);
  const glass::LoadedSae sae = glass::cli::load_sae_or_explain(f.sae, loaded, f.point);
  if (f.latent >= 0 && static_cast<std::size_t>(f.latent) >= sae.sae->n_latents())
    throw CommandError(fmt::format("--latent {} is out of range: the SAE has latents 0 to {}",
                                   f.latent, sae.sae->n_latents() - 1));
  glass::Tokens text;
  if (!f.prompt_given) {
    const std::string data = f.data.empty() ? glass::cli::training_text(loaded) : f.data;
    const glass::SplitIds split = loaded.tokenizer().encode_split(
        glass::load_text(data), glass::UnknownPolicy::kMapToUnknownId);
    text = split.ids.to_vector(split.n_train, split.ids.size());
    if (text.empty()) throw CommandError(fmt::format("{} has no validation split", data));
  } else {
    text = {loaded.tokenizer().start_id()};  // the prompt's view reads no text
  }
  const glass::SaeFeatures features(loaded, *sae.sae, sae.point, std::move(text));
  json j;
  try {
    if (f.prompt_given) {
      j = features.prompt(f.prompt, f.top);
    } else {
      glass::LatentView view;
      view.contexts = f.contexts;
      j = features.latent(static_cast<std::size_t>(f.latent), view);
    }
  } catch (const glass::PromptTooLongError& e) {
    throw CommandError(fmt::format("--prompt: {}", e.what()));
  } catch (const glass::Utf8Error& e) {
    throw CommandError(fmt::format("--prompt is not valid UTF-8: {}", e.what()));
  }
  if (f.json)
    std::cout << j.dump(2) << "\n";
  else if (f.prompt_given)
    print_prompt(j);
  else
    print_latent(j, loaded.unit());
}

}  // namespace

namespace glass::cli {

void add_sae_inspect(CLI::App* sae) {
  auto f = std::make_shared<SaeInspectFlags>();
  CLI::App* cmd = sae->add_subcommand(
      "inspect",
      "Browse an SAE's latents: a latent's contexts, histogram and logit effects, or "
      "the latents of a prompt.");
  cmd->add_option("-m,--checkpoint", f->checkpoint, "checkpoint directory written by glass train")
      ->required();
  cmd->add_option("--sae", f->sae, "SAE file written by glass sae train")->required();
  cmd->add_option("--point", f->point, "refuse an SAE of another point");
  cmd->add_option("--latent", f->latent, "the latent to show (0 .. latents-1)")
      ->check(kNonNegativeInteger);
  CLI::Option* prompt = cmd->add_option("--prompt", f->prompt, "show the latents of this text");
  cmd->add_option("--contexts", f->contexts, "top-activating contexts to show")
      ->check(integer_in(1, 1000, "an integer from 1 to 1000"))
      ->capture_default_str();
  cmd->add_option("--top", f->top, "latents shown per position of --prompt")
      ->check(integer_in(1, 1000, "an integer from 1 to 1000"))
      ->capture_default_str();
  cmd->add_option("--data", f->data,
                  "text whose validation split gives the contexts (default: "
                  "the one the model trained on)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", f->json, "print JSON instead of text");
  add_threads_option(cmd, f->threads);
  cmd->footer(
      "Examples:\n"
      "  glass sae inspect -m runs/domcasmurro --sae runs/domcasmurro/sae-layers.1.out.safetensors "
      "--latent 7\n"
      "  glass sae inspect -m runs/domcasmurro --sae ... --prompt 'Capitu olhou'\n"
      "Promoted tokens: the latent's decoder row through the final RMSNorm's gain and the output\n"
      "matrix (W_dec g W_U, TransformerLens's and Neuronpedia's logit weights), direct path only.");
  cmd->callback([f, prompt] {
    f->prompt_given = prompt->count() > 0;
    run_sae_inspect(*f);
  });
}

}  // namespace glass::cli
