// The interpretability lab of the `glass serve` API (interp/ on the reference path):
//   POST /api/lens    the logit lens of a prompt (interp/logit_lens.hpp)
//   POST /api/ablate  the next-token distribution with and without some heads (interp/ablation.hpp)
//   GET  /api/interp  the head scores recorded at each save (SAVE/interp.json, serve/interp_lab.hpp)
// Requests are read and checked like the others (requests.hpp); forward passes run under the
// compute lock, one at a time. See server.hpp.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "interp/interp.hpp"
#include "serve/interp_lab.hpp"
#include "serve/payloads.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

namespace {

/// Next tokens listed per cell of the lens and per distribution of an ablation, at most.
constexpr std::uint64_t kMaxLabTopK = 20;
/// Windows of the training text the mean of each head's output is taken over (mean ablation).
constexpr std::size_t kMeanWindows = 4;

/// The prompt of a lab request: present, not empty, at most the model's window of tokens, each
/// character in the vocabulary unless allow_unknown (UnknownCharacterError: a 400). Returns it
/// as token ids (unknown characters as id 0).
std::vector<std::int32_t> lab_prompt(const json& body, const Checkpoint& m, std::u32string& chars) {
  if (!body.contains("prompt")) throw BadRequest("give the prompt: {\"prompt\": \"TEXT\"}");
  chars = decode_prompt(string_field(body, "prompt", ""));
  if (chars.empty()) throw BadRequest("'prompt' is empty: give at least one character");
  refuse_past_context(chars, m);
  return prompt_ids(chars, m, unknown_policy(body));
}

/// The label of token `id` as the API writes it ("" for a character model's unknown id 0).
std::string token_text(const Checkpoint& m, std::int32_t id) {
  return m.tokenizer().has_text(id) ? m.tokenizer().token_text(id) : std::string();
}

/// The text of each token of `ids` (token_text): the labels of the positions.
json texts_json(const Checkpoint& m, const std::vector<std::int32_t>& ids) {
  json texts = json::array();
  for (std::int32_t id : ids) texts.push_back(token_text(m, id));
  return texts;
}

/// The `k` most probable ids of `probs` (vocab_size) as [{"id", "char", "p"}], most probable
/// first (ties: the lower id).
json top_json(const Checkpoint& m, const Array& probs, std::size_t k) {
  json list = json::array();
  for (std::size_t id : top_k_indices(probs.data(), probs.size(), k))
    list.push_back({{"id", id},
                    {"char", token_text(m, static_cast<std::int32_t>(id))},
                    {"p", static_cast<double>(probs.data()[id])}});
  return list;
}

/// The "heads" field: [[layer, head], ...], each head of the model at most once.
std::vector<HeadRef> heads_field(const json& body, const ModelConfig& config) {
  if (!body.contains("heads")) return {};
  const json& heads = body["heads"];
  const std::size_t most = config.n_layers * config.n_heads;
  if (!heads.is_array())
    throw BadRequest("'heads' must be an array of [layer, head] pairs, e.g. [[0, 1], [1, 3]]");
  if (heads.size() > most)
    throw BadRequest(fmt::format("'heads' lists {} heads; the model has {} ({} layers of {} heads)",
                                 heads.size(), most, config.n_layers, config.n_heads));
  std::vector<HeadRef> out;
  std::set<std::pair<std::size_t, std::size_t>> seen;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const json& h = heads[i];
    if (!h.is_array() || h.size() != 2 || !h[0].is_number_unsigned() || !h[1].is_number_unsigned())
      throw BadRequest(
          fmt::format("'heads[{}]' must be a pair [layer, head] of integers >= 0 "
                      "(got {})",
                      i, h.dump()));
    const auto layer = h[0].get<std::uint64_t>(), head = h[1].get<std::uint64_t>();
    if (layer >= config.n_layers)
      throw BadRequest(fmt::format("'heads[{}]' names layer {}; the layers are 0 to {}", i, layer,
                                   config.n_layers - 1));
    if (head >= config.n_heads)
      throw BadRequest(fmt::format("'heads[{}]' names head {}; the heads of a layer are 0 to {}", i,
                                   head, config.n_heads - 1));
    if (!seen.insert({layer, head}).second)
      throw BadRequest(fmt::format("'heads[{}]' repeats [{}, {}]", i, layer, head));
    out.push_back({static_cast<std::size_t>(layer), static_cast<std::size_t>(head)});
  }
  return out;
}

/// The token ids mean ablation averages each head's output over: the first kMeanWindows
/// windows of `window` tokens of the training text (the given --data file, else the one
/// config.json names, when it is found), read bounded; `source` says which. Without a training
/// text: the prompt itself.
std::vector<std::int32_t> mean_reference(const std::string& data_option, const Checkpoint& m,
                                         std::size_t window,
                                         const std::vector<std::int32_t>& prompt,
                                         std::string& source) {
  std::string data = data_option;
  if (data.empty()) {
    try {
      data = training_data(m.files_dir());
    } catch (const std::exception&) {}
  }
  std::error_code ec;
  if (!data.empty() && fs::is_regular_file(data, ec)) {
    std::ifstream in(data, std::ios::binary);
    std::string head(kMeanWindows * window * 4, '\0');  // UTF-8: at most 4 bytes a character
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    std::u32string text;
    for (std::size_t cut = head.size(); cut + 4 > head.size() && cut > 0; --cut) {
      try {  // a character cut at the end is left out
        text = utf8_to_u32(head.substr(0, cut));
        break;
      } catch (const Utf8Error&) {}
    }
    // A character model reads one token a character; a BPE model's tokens are fewer.
    std::vector<std::int32_t> ids = m.encode_prompt(text, UnknownPolicy::kMapToUnknownId);
    const std::size_t full = std::min(ids.size() / window, kMeanWindows) * window;
    if (full > 0) {
      ids.resize(full);
      source = fmt::format("the first {} {} of the training text {}", full, m.unit(),
                           fs::path(data).filename().string());
      return ids;
    }
  }
  source = "the prompt (no training text found; give it with --data)";
  return prompt;
}

}  // namespace

void Server::answer_lens(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "top_k", "allow_unknown"});
  const auto m = model();
  const std::size_t V = m->config().vocab_size;
  const auto k = static_cast<std::size_t>(
      integer_field(body, "top_k", 5, 1, std::min<std::uint64_t>(kMaxLabTopK, V)));
  std::u32string chars;
  const std::vector<std::int32_t> ids = lab_prompt(body, *m, chars);
  LogitLens lens;
  {
    std::lock_guard lock(compute_mutex_);
    lens = logit_lens(m->model(), ids, k);
  }
  const std::size_t S = lens.points.size(), T = ids.size();
  json top = json::array(), next = json::array();
  for (std::size_t s = 0; s < S; ++s) {
    json top_row = json::array(), next_row = json::array();
    for (std::size_t t = 0; t < T; ++t) {
      json cell = json::array();
      for (std::size_t j = 0; j < k; ++j) {
        const std::int32_t id = lens.top_ids(s, t, j);
        cell.push_back({{"id", id},
                        {"char", token_text(*m, id)},
                        {"p", static_cast<double>(lens.top_probs(s, t, j))}});
      }
      top_row.push_back(std::move(cell));
      next_row.push_back(t + 1 < T ? json(static_cast<double>(lens.next_prob(s, t))) : json());
    }
    top.push_back(std::move(top_row));
    next.push_back(std::move(next_row));
  }
  json j;
  j["prompt"] = u32_to_utf8(chars);
  j["chars"] = chars_json(chars);
  j["tokens"] = ids;
  j["texts"] = texts_json(*m, ids);
  j["points"] = lens.points;
  j["top"] = std::move(top);
  j["next_prob"] = std::move(next);
  send_json(res, j);
}

void Server::answer_ablate(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"prompt", "heads", "mode", "top_k", "allow_unknown"});
  const auto m = model();
  const std::size_t window = m->window();
  const std::size_t V = m->config().vocab_size;
  const auto k = static_cast<std::size_t>(
      integer_field(body, "top_k", 10, 1, std::min<std::uint64_t>(kMaxLabTopK, V)));
  const std::string mode_name = string_field(body, "mode", "zero");
  if (mode_name != "zero" && mode_name != "mean")
    throw BadRequest(fmt::format("'mode' must be \"zero\" or \"mean\" (got \"{}\")", mode_name));
  const AblationMode mode = mode_name == "zero" ? AblationMode::zero : AblationMode::mean;
  const std::vector<HeadRef> heads = heads_field(body, m->config());
  std::u32string chars;
  const std::vector<std::int32_t> ids = lab_prompt(body, *m, chars);
  // The means are needed only to ablate a head (no head: both distributions are the model's).
  const bool means_needed = mode == AblationMode::mean && !heads.empty();
  std::string source;
  const std::vector<std::int32_t> reference =
      means_needed ? mean_reference(options_.data_path, *m, window, ids, source)
                   : std::vector<std::int32_t>();
  NextTokenShift shift;
  {
    std::lock_guard lock(compute_mutex_);
    HeadMeans means;
    if (means_needed) {
      // (rows, cols): whole windows of the training text, or the prompt as one row.
      const std::size_t cols = std::min(window, reference.size()), rows = reference.size() / cols;
      Ids batch = Ids::from_shape({rows, cols});
      std::copy(reference.begin(), reference.begin() + static_cast<long>(rows * cols),
                batch.data());
      means = head_means(m->model(), batch);
    }
    shift = next_token_shift(m->model(), ids, heads, means_needed ? mode : AblationMode::zero,
                             means_needed ? &means : nullptr);
  }
  json j;
  j["prompt"] = u32_to_utf8(chars);
  j["chars"] = chars_json(chars);
  j["tokens"] = ids;
  j["texts"] = texts_json(*m, ids);
  json listed = json::array();
  for (const HeadRef& h : heads) listed.push_back({h.layer, h.head});
  j["heads"] = std::move(listed);
  j["mode"] = mode_name;
  if (means_needed) j["mean_over"] = source;
  j["normal"] = top_json(*m, shift.before, k);
  j["ablated"] = top_json(*m, shift.after, k);
  j["probs_normal"] = std::vector<double>(shift.before.begin(), shift.before.end());
  j["probs_ablated"] = std::vector<double>(shift.after.begin(), shift.after.end());
  j["kl_divergence"] = shift.kl_divergence;
  send_json(res, j);
}

void Server::answer_interp(const httplib::Request&, httplib::Response& res) {
  interp_history_.look(options_.checkpoint);  // the saves that arrived since the last look
  json j = interp_history_.to_json();
  std::lock_guard lock(state_mutex_);
  if (model_) {
    j["n_layers"] = model_->config().n_layers;
    j["n_heads"] = model_->config().n_heads;
  }
  send_json(res, j);
}

}  // namespace glass
