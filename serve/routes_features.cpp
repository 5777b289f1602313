// The features page of `glass serve`: a sparse autoencoder's latents, browsed
// (inspect/sae_features.hpp, the library `glass sae inspect` calls too):
//   GET /features                       the page (web/features.html)
//   GET /api/features                   the SAE served: its file, point, sizes, and how often
//                                       each latent fires over the validation text
//   GET /api/features/latent?latent=N   latent N: top contexts, histogram, logit effects
//   GET /api/features/prompt?prompt=T   the latents at each position of T (&top=K, 1 .. 20)
// The SAE is the first sae-*.safetensors (sorted by name) in the served directory or in the
// save's own directory, verified like `glass sae` verifies it (its manifest, the model's
// weights); the contexts come from the validation split of the training text (--data, or the
// file config.json names), at most kMaxFeatureTokens tokens of it. The browser is built on the
// first request for each save, under the compute lock. No SAE answers 404 saying how to train
// one. See server.hpp.

#include <algorithm>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "inspect/sae_features.hpp"
#include "inspect/web_page.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"
#include "train/sae_file.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

/// Validation tokens the contexts are read from, at most (a bound on the memory and the time
/// of the first request: k pairs a token).
constexpr std::size_t kMaxFeatureTokens = 50'000;

/// The SAE of one save and its browser.
struct FeatureCache {
  std::shared_ptr<const Checkpoint> model;  // the save it was built for
  std::string path;                         // the SAE file
  LoadedSae sae;
  std::unique_ptr<SaeFeatures> features;
  std::string text_source;  // where the contexts come from, in words
};

namespace {

/// The first sae-*.safetensors in `dirs`, by name; "" when none.
std::string find_sae(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) {
    std::error_code ec;
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("sae-", 0) == 0 && entry.path().extension() == ".safetensors")
        found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    if (!found.empty()) return found.front();
  }
  return "";
}

/// The validation split of the training text (`data_path`, else the file config.json names),
/// at most kMaxFeatureTokens tokens; the start token alone when there is none.
Tokens validation_text(const std::string& data_path, const Checkpoint& m, std::string& source) {
  std::string data = data_path;
  if (data.empty()) {
    try {
      data = training_data(m.files_dir());
    } catch (const std::exception&) {}
  }
  std::error_code ec;
  if (!data.empty() && fs::is_regular_file(data, ec)) {
    const SplitIds split =
        m.tokenizer().encode_split(load_text(data), UnknownPolicy::kMapToUnknownId);
    const std::size_t end = std::min(split.ids.size(), split.n_train + kMaxFeatureTokens);
    if (end > split.n_train) {
      source = fmt::format("{} validation {} of {}", end - split.n_train, m.unit(),
                           fs::path(data).filename().string());
      return split.ids.to_vector(split.n_train, end);
    }
  }
  source = "no training text found (pass --data): no contexts";
  return {m.tokenizer().start_id()};
}

}  // namespace

const SaeFeatures* Server::features_or_404(httplib::Response& res) {
  const auto m = model();
  if (features_ && features_->model == m) return features_->features.get();
  const std::string path = find_sae({options_.checkpoint, m->files_dir()});
  if (path.empty()) {
    send_error(res, 404,
               fmt::format("no SAE beside {}: train one with glass sae train -m {} (it writes "
                           "sae-POINT.safetensors there)",
                           options_.checkpoint, options_.checkpoint));
    return nullptr;
  }
  auto cache = std::make_shared<FeatureCache>();
  cache->model = m;
  cache->path = path;
  try {
    cache->sae = load_sae(path, *m);
  } catch (const SaeFileError& e) {
    send_error(res, 404, e.what());
    return nullptr;
  }
  const Tokens text = validation_text(options_.data_path, *m, cache->text_source);
  cache->features = std::make_unique<SaeFeatures>(*m, *cache->sae.sae, cache->sae.point, text);
  features_ = std::move(cache);
  return features_->features.get();
}

void Server::answer_features_page(const httplib::Request&, httplib::Response& res) {
  res.set_content(features_page(), "text/html; charset=utf-8");
}

void Server::answer_features(const httplib::Request&, httplib::Response& res) {
  auto lock = hold_compute();
  const SaeFeatures* f = features_or_404(res);
  if (!f) return;
  json j = f->overview();
  j["sae"] = fs::path(features_->path).filename().string();
  j["text"] = features_->text_source;
  j["unit"] = features_->model->unit();
  send_json(res, j);
}

void Server::answer_feature_latent(const httplib::Request& req, httplib::Response& res) {
  const long long latent = query_integer(req, "latent", -1);
  if (latent < 0) throw BadRequest("give the latent: /api/features/latent?latent=N");
  auto lock = hold_compute();
  const SaeFeatures* f = features_or_404(res);
  if (!f) return;
  if (static_cast<std::size_t>(latent) >= f->n_latents())
    throw BadRequest(fmt::format("latent {} is out of range: the SAE has latents 0 to {}", latent,
                                 f->n_latents() - 1));
  send_json(res, f->latent(static_cast<std::size_t>(latent)));
}

void Server::answer_feature_prompt(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("prompt")) throw BadRequest("give the prompt: /api/features/prompt?prompt=T");
  const std::u32string prompt = decode_prompt(req.get_param_value("prompt"));
  if (prompt.empty()) throw BadRequest("'prompt' is empty: give at least one character");
  const long long top = query_integer(req, "top", 5);
  if (top < 1 || top > 20) throw BadRequest("'top' must be from 1 to 20");
  auto lock = hold_compute();
  const SaeFeatures* f = features_or_404(res);
  if (!f) return;
  refuse_past_context(prompt, *features_->model);
  send_json(res, f->prompt(u32_to_utf8(prompt), static_cast<std::size_t>(top)));
}

}  // namespace glass
