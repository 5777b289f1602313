// The HTTP server of `glass serve` and its JSON API. See server.hpp.

#include "serve/server.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <cstring>

#include <fmt/format.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "data/text.hpp"
#include "inspect/inspect.hpp"
#include "inspect/render_html.hpp"
#include "inspect/loss_plot.hpp"
#include "inspect/web_page.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/json_no_duplicates.hpp"
#include "checkpoint/run_dir.hpp"
#include "serve/bounded_http.hpp"
#include "sample/sampler.hpp"

namespace glass {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// A request the client can fix: answered 400 with the message.
struct BadRequest : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// No model yet (a run directory before its first save): answered 503.
struct NoModel : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// The client went away during a streamed answer.
struct ClientGone {};

constexpr const char* kJson = "application/json; charset=utf-8";
/// Characters of the default probe prompt, at most.
constexpr std::size_t kProbeChars = 32;
/// Next tokens listed per position by /api/inspect, at most.
constexpr long long kMaxTopK = 50;

void send_json(httplib::Response& res, const json& j, int status = 200) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), kJson);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, json{{"error", message}}, status);
}

/// `v` rounded to 4 decimals: enough for a picture, and a quarter of the JSON of full floats.
double rounded(double v) { return std::round(v * 1e4) / 1e4; }

/// The request body as a JSON object whose keys are all in `allowed` (a typo such as "temp"
/// must not be ignored silently).
json parse_body(const httplib::Request& req, const std::set<std::string>& allowed) {
  if (req.body.empty()) return json::object();
  json j;
  try {
    j = parse_json_no_duplicate_keys(req.body);
  } catch (const DuplicateKeyError& e) {  // which of the two would count is not the client's to guess
    throw BadRequest(std::string("the request body is ambiguous: ") + e.what());
  } catch (const json::exception&) {
    throw BadRequest("the request body is not valid JSON (UTF-8)");
  }
  if (!j.is_object()) throw BadRequest("the request body must be a JSON object, e.g. {\"prompt\": \"Capitu\"}");
  for (const auto& [key, value] : j.items()) {
    if (allowed.count(key) != 0) continue;
    std::string names;
    for (const std::string& a : allowed) names += (names.empty() ? "" : ", ") + a;
    throw BadRequest("unknown parameter '" + key + "'; the parameters are: " + names);
  }
  return j;
}

std::string string_field(const json& j, const char* name, const std::string& fallback) {
  if (!j.contains(name)) return fallback;
  if (!j[name].is_string()) throw BadRequest(fmt::format("'{}' must be a string", name));
  return j[name].get<std::string>();
}

bool bool_field(const json& j, const char* name, bool fallback) {
  if (!j.contains(name)) return fallback;
  if (!j[name].is_boolean()) throw BadRequest(fmt::format("'{}' must be true or false", name));
  return j[name].get<bool>();
}

/// A number in [lo, hi] (lo excluded when `lo_open`).
double number_field(const json& j, const char* name, double fallback, double lo, double hi, bool lo_open) {
  if (!j.contains(name)) return fallback;
  const json& v = j[name];
  const double x = v.is_number() ? v.get<double>() : std::nan("");
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
    throw BadRequest(fmt::format("'{}' must be a number in {}{}, {}] (got {})", name, lo_open ? "(" : "[",
                                 lo, hi, v.dump()));
  return x;
}

/// An integer in [lo, hi].
std::uint64_t integer_field(const json& j, const char* name, std::uint64_t fallback, std::uint64_t lo,
                            std::uint64_t hi) {
  if (!j.contains(name)) return fallback;
  const json& v = j[name];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi)
    throw BadRequest(fmt::format("'{}' must be an integer from {} to {} (got {})", name, lo, hi, v.dump()));
  return v.get<std::uint64_t>();
}

/// A query parameter that must be an integer >= -1 (a step or an index); `fallback` if absent.
long long query_integer(const httplib::Request& req, const char* name, long long fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string s = req.get_param_value(name);
  long long v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < -1)
    throw BadRequest(fmt::format("'{}' must be an integer >= -1 (got '{}')", name, s));
  return v;
}

/// `text` with every `from` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::u32string decode_prompt(const std::string& utf8) {
  try {
    return utf8_to_u32(utf8);
  } catch (const Utf8Error& e) {
    throw BadRequest(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
}

/// A 400 naming the prompt's characters outside the vocabulary, unless there are none; the fix
/// is named in the API's words (the JSON field allow_unknown, not the command line's flag).
void refuse_unknown(const std::u32string& prompt, const Tokenizer& tokenizer) {
  std::set<char32_t> unknown;
  for (char32_t c : prompt)
    if (!tokenizer.contains(c)) unknown.insert(c);
  if (unknown.empty()) return;
  std::string names;
  for (char32_t c : unknown) names += (names.empty() ? "" : ", ") + describe_char(c);
  throw BadRequest(fmt::format("the prompt has {} character(s) the model never saw in training: {} "
                               "(send \"allow_unknown\": true to map them to the unknown id 0)",
                               unknown.size(), names));
}

/// A 400 when an inspected prompt is longer than the model's context (`window`): inspection
/// shows one window, position by position, as glass inspect does.
void refuse_past_context(const std::u32string& prompt, std::size_t window) {
  if (prompt.size() > window)
    throw BadRequest(fmt::format("the prompt has {} characters; {}. Inspection shows one window: "
                                 "send at most {} characters", prompt.size(), context_sentence(window), window));
}

/// The step a weights file records ("step" of its metadata, a decimal string) as a JSON integer,
/// or null when it records none.
json step_json(const std::string& weights_step) {
  long long step = 0;
  const char* end = weights_step.data() + weights_step.size();
  const auto [ptr, ec] = std::from_chars(weights_step.data(), end, step);
  if (weights_step.empty() || ec != std::errc() || ptr != end) return nullptr;
  return step;
}

json config_json(const ModelConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"d_model", c.d_model},   {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},       {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim()},
          {"ffn_hidden", c.ffn_hidden}, {"context_length", c.context_length}};
}

/// attn.softmax of every layer: [layer][head][query i][key j], rounded.
json attention_json(const Inspection& ins) {
  json layers = json::array();
  for (std::size_t l = 0; l < ins.config.n_layers; ++l) {
    const Array& a = ins.get("layers." + std::to_string(l) + ".attn.softmax");  // (H, n, n)
    const std::size_t heads = a.shape()[0], n = a.shape()[1], m = a.shape()[2];
    json per_head = json::array();
    for (std::size_t h = 0; h < heads; ++h) {
      json rows = json::array();
      for (std::size_t i = 0; i < n; ++i) {
        json row = json::array();
        for (std::size_t k = 0; k < m; ++k) row.push_back(rounded(a.data()[(h * n + i) * m + k]));
        rows.push_back(std::move(row));
      }
      per_head.push_back(std::move(rows));
    }
    layers.push_back(std::move(per_head));
  }
  return layers;
}

json chars_json(const std::u32string& text) {
  json chars = json::array();
  for (char32_t c : text) chars.push_back(char_to_utf8(c));
  return chars;
}

/// The answer of /api/inspect.
json inspect_json(const Inspection& ins, std::size_t k, std::size_t unknown) {
  json j;
  j["prompt"] = u32_to_utf8(ins.prompt);
  j["chars"] = chars_json(ins.prompt);
  j["tokens"] = ins.tokens;
  j["unknown"] = unknown;
  j["attention"] = attention_json(ins);
  const std::size_t n = ins.n(), V = ins.config.vocab_size;
  json logits = json::array(), top = json::array();
  for (std::size_t i = 0; i < n; ++i) {
    json row = json::array();
    for (std::size_t v = 0; v < V; ++v) row.push_back(rounded(ins.logits.data()[i * V + v]));
    logits.push_back(std::move(row));
    json best = json::array();
    for (const TopToken& t : top_k(ins, i, k))
      best.push_back({{"id", t.id}, {"char", t.id == 0 ? std::string() : char_to_utf8(t.character)},
                      {"p", rounded(t.prob)}});
    top.push_back(std::move(best));
  }
  j["logits"] = std::move(logits);
  j["top"] = std::move(top);
  json snaps = json::array();
  auto add = [&](const std::string& name, const Array& a) {
    const Summary s = summarize(a);
    snaps.push_back({{"name", name}, {"shape", std::vector<std::size_t>(a.shape().begin(), a.shape().end())},
                     {"min", s.min}, {"max", s.max}, {"mean", s.mean}});
  };
  for (const auto& [name, a] : ins.snapshots) add(name, a);
  add("logits", ins.logits);
  add("probs", ins.probs);
  j["snapshots"] = std::move(snaps);
  return j;
}

/// The rows of `table` as objects {column: value}; NaN becomes null. Only rows whose "step" is
/// greater than `since` (all when the table has no step column).
json rows_json(const CsvTable& table, long long since) {
  json rows = json::array();
  const int step = table.column("step");
  for (const auto& r : table.rows) {
    if (step >= 0 && !(r[static_cast<std::size_t>(step)] > static_cast<double>(since))) continue;
    json row = json::object();
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (std::isfinite(r[c])) row[table.columns[c]] = r[c];
      else row[table.columns[c]] = nullptr;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The first `count` characters of `head` (UTF-8; a character cut at its end is left out).
std::string probe_from_text(const std::string& head, std::size_t count) {
  std::u32string text;
  for (std::size_t cut = head.size(); cut + 4 > head.size() && cut > 0; --cut) {  // a cut character
    try {
      text = utf8_to_u32(head.substr(0, cut));
      break;
    } catch (const Utf8Error&) {
    }
  }
  return u32_to_utf8(text.substr(0, count));
}

/// The probe prompt: --probe (when it holds a character of valid UTF-8), else the start of the
/// training text (the given file, or the one named in config.json when it is found from the
/// current directory), else the vocabulary's first characters.
std::string choose_probe(const ServeOptions& o, const LoadedModel& m, const std::string& files_dir) {
  const std::size_t context = m.config.context_length;
  if (!o.probe.empty()) {
    const std::string probe = probe_from_text(o.probe, context);  // the user's, whole
    if (!probe.empty()) return probe;
  }
  std::string data = o.data_path;
  if (data.empty()) {
    try {
      data = training_data(files_dir);
    } catch (const std::exception&) {
    }
  }
  std::error_code ec;
  if (!data.empty() && fs::is_regular_file(data, ec)) {
    std::ifstream in(data, std::ios::binary);
    std::string head(256, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<std::size_t>(in.gcount()));
    const std::string probe = probe_from_text(head, std::min(kProbeChars, context));
    if (!probe.empty()) return probe;
  }
  std::u32string letters;
  for (char32_t c : m.tokenizer.chars())
    if (letters.size() < std::min(kProbeChars, context)) letters += c;
  return u32_to_utf8(letters);
}

/// The sampling window of a save: its training context, else the model's context length.
std::size_t window_of(const std::string& files_dir, const ModelConfig& config) {
  std::size_t window = 0;
  try {
    window = training_context(files_dir);
  } catch (const std::exception&) {
  }
  return window == 0 || window > config.context_length ? config.context_length : window;
}

/// The id generation starts from when the prompt is empty: a newline (start of a paragraph),
/// as `glass sample` does.
std::int32_t start_id(const Tokenizer& tokenizer) {
  return tokenizer.contains(U'\n') ? tokenizer.id_of(U'\n') : 1;
}

/// The reason phrase of an HTTP status the server answers with.
std::string status_phrase(int status) {
  switch (status) {
    case 400: return "bad request";
    case 404: return "not found";
    case 405: return "method not allowed";
    case 413: return "the request body is too large";
    case 414: return "the request line is too long";
    case 421: return "this server does not answer for that Host";
    default: return fmt::format("HTTP status {}", status);
  }
}

}  // namespace

bool is_loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

/// One save seen by the server: its answer in /api/evals, as JSON text.
struct Server::Evaluation {
  std::size_t index;  // the how-manieth save the server evaluated (0 = the first)
  std::string json;
};

Server::Server(ServeOptions options) : options_(std::move(options)),
      step_log_((fs::path(options_.checkpoint) / "steps.csv").string()) {
  std::error_code ec;
  if (!fs::is_directory(options_.checkpoint, ec))
    throw ServeError("checkpoint directory '" + options_.checkpoint +
                     "' does not exist (train one with: glass train --out DIR)");
  if (options_.port < 0 || options_.port > 65535)
    throw ServeError(fmt::format("port {} is out of range (1 to 65535, or 0 for any free port)", options_.port));
  std::string error;
  if (!load_if_new(checkpoint_files_dir(options_.checkpoint), &error) && holds_checkpoint(options_.checkpoint))
    throw CheckpointError(error);
}

Server::~Server() { stop(); }

namespace {

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string Server::refusal(const std::string& host, const std::string& method, const std::string& content_type,
                            const std::string& origin, int& status) const {
  // The Host header: a DNS-rebinding page sends its own name there, whatever address it reached.
  std::vector<std::string> names = {"127.0.0.1", "localhost", "[::1]"};
  auto add = [&](const std::string& name) {
    if (name.empty()) return;
    names.push_back(name.find(':') != std::string::npos && name.front() != '[' ? "[" + name + "]" : name);
  };
  add(options_.host);
  for (const std::string& name : options_.allowed_hosts) add(name);
  const std::string given = lower_case(host);
  bool known = false;
  std::string list;
  for (const std::string& name : names) {
    const std::string with_port = lower_case(name) + ":" + std::to_string(port_);
    known = known || given == with_port || (port_ == 80 && given == lower_case(name));
    if (list.find(name + ":") == std::string::npos) list += (list.empty() ? "" : ", ") + name + ":" + std::to_string(port_);
  }
  if (!known) {
    status = 421;
    return fmt::format(
        "this server answers requests addressed to {} only, not to Host '{}' (a page of another site "
        "reaching it by DNS rebinding sends its own name); to use another name, start it with "
        "--allow-host NAME",
        list, host);
  }
  if (method != "POST") return "";
  // A POST computes: only this server's own page (same origin) or a program (no Origin) may ask.
  if (!origin.empty() && lower_case(origin) != "http://" + given) {
    status = 403;
    return fmt::format("a POST is accepted from this server's own page (Origin http://{}) or from a "
                       "program that sends no Origin, not from Origin '{}'",
                       host, origin);
  }
  const std::string media = lower_case(content_type.substr(0, content_type.find(';')));
  const std::size_t a = media.find_first_not_of(" \t"), b = media.find_last_not_of(" \t");
  if (a == std::string::npos || media.substr(a, b - a + 1) != "application/json") {
    status = 415;
    return fmt::format("a POST body is JSON sent with Content-Type: application/json (got '{}')", content_type);
  }
  return "";
}

std::shared_ptr<const LoadedModel> Server::model(std::size_t* window) const {
  std::lock_guard lock(state_mutex_);
  if (!model_) throw NoModel(status_.empty() ? "no model loaded yet" : status_);
  if (window != nullptr) *window = window_;
  return model_;
}

std::string Server::status() const {
  std::lock_guard lock(state_mutex_);
  return status_;
}

std::string Server::url() const {
  const bool v6 = options_.host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}/", v6 ? "[" : "", options_.host, v6 ? "]" : "", port_);
}

bool Server::load_if_new(const std::string& files_dir, std::string* error) {
  {
    std::lock_guard lock(state_mutex_);
    if (model_ && files_dir == served_dir_) return true;
  }
  auto loaded = std::make_shared<LoadedModel>();
  std::string probe;
  json e;
  std::size_t window = 0;
  try {
    *loaded = load_checkpoint(files_dir);
    window = window_of(files_dir, loaded->config);
    {
      std::lock_guard lock(state_mutex_);
      probe = probe_.empty() ? choose_probe(options_, *loaded, files_dir) : probe_;
    }
    // The evaluation of this save: the probe's attention and a sample, as the trainer prints.
    // Its forward passes wait for the requests' (one at a time, under compute_mutex_ alone).
    const std::u32string probe_text = utf8_to_u32(probe).substr(0, window);
    Inspection ins;
    std::vector<std::int32_t> ids;
    {
      std::lock_guard compute(compute_mutex_);
      ins = inspect(*loaded, probe_text, /*allow_unknown=*/true);
      SamplingOptions sampling;
      std::mt19937_64 rng(1337);
      ids = generate(*loaded->model, {start_id(loaded->tokenizer)}, options_.eval_sample_tokens, window,
                     sampling, rng);
    }
    long step = -1;
    if (!loaded->weights_step.empty()) step = std::strtol(loaded->weights_step.c_str(), nullptr, 10);
    e["step"] = step;
    e["save"] = fs::path(files_dir).filename().string();
    e["train_loss"] = nullptr;
    e["val_loss"] = nullptr;
    for (const LossPoint& p : read_loss_log((fs::path(files_dir) / "log.csv").string())) {
      if (static_cast<long>(p.step) != step) continue;
      if (std::isfinite(p.train_loss)) e["train_loss"] = p.train_loss;
      if (std::isfinite(p.val_loss)) e["val_loss"] = p.val_loss;
    }
    e["sample"] = loaded->tokenizer.decode_utf8(ids);
    e["attention"] = attention_json(ins);
  } catch (const std::exception& ex) {
    if (error != nullptr) *error = ex.what();
    const bool saved = holds_checkpoint(options_.checkpoint);
    std::string warning;
    {
      std::lock_guard lock(state_mutex_);
      if (!model_) {
        status_ = saved ? std::string("cannot load the checkpoint: ") + ex.what()
                        : "no save yet in '" + options_.checkpoint + "': waiting for the trainer's first save";
      } else if (files_dir == failed_dir_ && !failure_reported_) {
        // The same save failed at two looks in a row: not a save replaced while it was read,
        // but a broken one. Said once, on the status and to the warning stream.
        status_ = fmt::format("the newest save, {}, cannot be loaded ({}); still serving the previous one, {}",
                              files_dir, ex.what(), fs::path(served_dir_).filename().string());
        warning = status_;
        failure_reported_ = true;
      }
      if (files_dir != failed_dir_) failure_reported_ = false;
      failed_dir_ = files_dir;
    }
    if (!warning.empty()) {
      if (options_.warn)
        options_.warn(warning);
      else
        std::cerr << "warning: " + warning + "\n" << std::flush;
    }
    return false;
  }
  std::lock_guard lock(state_mutex_);
  probe_ = probe;
  const std::size_t index = evaluations_seen_++;
  e["index"] = index;
  evaluations_.push_back(std::make_shared<const Evaluation>(
      Evaluation{index, e.dump(-1, ' ', false, json::error_handler_t::replace)}));
  // Keep the first save's evaluation and the newest max_evaluations.
  if (evaluations_.size() > options_.max_evaluations + 1) evaluations_.erase(evaluations_.begin() + 1);
  model_ = std::move(loaded);
  window_ = window;
  served_dir_ = files_dir;
  status_.clear();
  failed_dir_.clear();
  failure_reported_ = false;
  return true;
}

void Server::watch_loop() {
  const auto poll = std::chrono::milliseconds(static_cast<long>(options_.poll_seconds * 1000));
  while (!stopping_) {
    try {
      load_if_new(checkpoint_files_dir(options_.checkpoint));
    } catch (const std::exception&) {  // a save switched while we looked: try again next time
    }
    std::unique_lock lock(stop_mutex_);
    stop_cv_.wait_for(lock, poll, [this] { return stopping_.load(); });
  }
}

void Server::add_routes() {
  httplib::Server& s = *http_;
  // Every handler answers; errors the client can fix are 400 with a message, never a crash.
  auto guarded = [](auto handler) {
    return [handler](const httplib::Request& req, httplib::Response& res) {
      try {
        handler(req, res);
      } catch (const BadRequest& e) {
        send_error(res, 400, e.what());
      } catch (const InspectError& e) {
        send_error(res, 400, e.what());
      } catch (const std::invalid_argument& e) {
        send_error(res, 400, e.what());
      } catch (const NoModel& e) {
        send_error(res, 503, e.what());
      } catch (const std::bad_alloc&) {
        send_error(res, 500, "out of memory");
      } catch (const std::exception& e) {
        send_error(res, 500, e.what());
      }
    };
  };

  // Before any route: the Host, Origin and Content-Type rules (refusal()).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    int status = 0;
    const std::string why = refusal(req.get_header_value("Host"), req.method, req.get_header_value("Content-Type"),
                                    req.get_header_value("Origin"), status);
    if (why.empty()) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, status, why);
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/", guarded([](const httplib::Request&, httplib::Response& res) {
    res.set_content(live_page(), "text/html; charset=utf-8");
  }));

  s.Get("/inspector", guarded([this](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("prompt")) throw BadRequest("give the prompt: /inspector?prompt=TEXT");
    const std::u32string prompt = decode_prompt(req.get_param_value("prompt"));
    std::size_t window = 0;
    const auto m = model(&window);
    refuse_past_context(prompt, window);
    Inspection ins;
    try {
      std::lock_guard lock(compute_mutex_);
      ins = inspect(*m, prompt);
    } catch (const InspectError& e) {  // no flag here: the page takes the prompt as it is
      throw BadRequest(replace_all(e.what(), "\n(--allow-unknown maps them to the unknown id 0)", ""));
    }
    HtmlOptions html;
    html.checkpoint = options_.checkpoint;
    html.title = "GlassLLM inspector: \"" + u32_to_utf8(prompt.substr(0, 60)) + "\"";
    try {
      html.loss = read_loss_log((fs::path(checkpoint_files_dir(options_.checkpoint)) / "log.csv").string());
    } catch (const std::exception&) {
    }
    res.set_content(inspection_html(ins, html), "text/html; charset=utf-8");
  }));

  s.Get("/api/info", guarded([this](const httplib::Request&, httplib::Response& res) {
    json j;
    j["checkpoint"] = options_.checkpoint;
    std::lock_guard lock(state_mutex_);
    j["loaded"] = model_ != nullptr;
    j["status"] = status_;
    j["probe"] = probe_;
    j["evaluations"] = evaluations_seen_;  // as /api/log: the index the next evaluation will have
    j["max_body_bytes"] = options_.max_body_bytes;
    j["max_sample_tokens"] = options_.max_sample_tokens;
    if (model_) {
      j["step"] = step_json(model_->weights_step);  // an integer (null: not recorded)
      j["run_id"] = model_->run_id;
      j["save"] = fs::path(served_dir_).filename().string();
      j["config"] = config_json(model_->config);
      j["window"] = window_;
      j["max_prompt_chars"] = window_;  // inspection; a sample keeps a longer prompt's last window_
      j["context_note"] = context_sentence(window_);
      json vocab = json::array({""});  // id 0: the unknown token
      for (char32_t c : model_->tokenizer.chars()) vocab.push_back(char_to_utf8(c));
      j["vocab"] = std::move(vocab);
    }
    send_json(res, j);
  }));

  s.Post("/api/inspect", guarded([this](const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req, {"prompt", "top_k", "allow_unknown"});
    if (!body.contains("prompt")) throw BadRequest("give the prompt: {\"prompt\": \"TEXT\"}");
    const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
    const auto k = static_cast<std::size_t>(integer_field(body, "top_k", 5, 1, kMaxTopK));
    const bool allow_unknown = bool_field(body, "allow_unknown", false);
    std::size_t window = 0;
    const auto m = model(&window);
    refuse_past_context(prompt, window);
    if (!allow_unknown) refuse_unknown(prompt, m->tokenizer);
    std::size_t unknown = 0;
    Inspection ins;
    try {
      std::lock_guard lock(compute_mutex_);
      ins = inspect(*m, prompt, allow_unknown, &unknown);
    } catch (const InspectError& e) {  // its advice names the command line's flag; this is JSON
      throw BadRequest(replace_all(e.what(), "--allow-unknown", "\"allow_unknown\": true"));
    }
    send_json(res, inspect_json(ins, k, unknown));
  }));

  s.Post("/api/sample", guarded([this](const httplib::Request& req, httplib::Response& res) {
    const json body = parse_body(req, {"prompt", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
                                       "repeat_last_n", "seed", "n", "allow_unknown"});
    const std::u32string prompt = decode_prompt(string_field(body, "prompt", ""));
    std::size_t window = 0;
    const auto m = model(&window);
    SamplingOptions sampling;
    sampling.temperature = number_field(body, "temperature", sampling.temperature, 0, 100, false);
    sampling.top_k = static_cast<std::size_t>(integer_field(body, "top_k", 0, 0, m->config.vocab_size));
    sampling.top_p = number_field(body, "top_p", 1.0, 0, 1, /*lo_open=*/true);
    sampling.min_p = number_field(body, "min_p", 0.0, 0, 1, false);
    sampling.repeat_penalty = number_field(body, "repeat_penalty", 1.0, 0, 100, /*lo_open=*/true);
    sampling.repeat_last_n = static_cast<std::size_t>(integer_field(body, "repeat_last_n", 64, 0, 1'000'000));
    validate(sampling);
    const std::uint64_t seed = integer_field(body, "seed", 1337, 0, UINT64_MAX);
    const auto n = static_cast<std::size_t>(integer_field(body, "n", 200, 1, options_.max_sample_tokens));
    // A prompt longer than the context is cropped to its last `window` characters, as glass
    // sample does (the body limit bounds it).
    if (!bool_field(body, "allow_unknown", false)) refuse_unknown(prompt, m->tokenizer);
    std::vector<std::int32_t> ids = m->tokenizer.encode(prompt, /*map_unknown=*/true);
    if (ids.empty()) ids = {start_id(m->tokenizer)};
    if (ids.size() > window) ids.erase(ids.begin(), ids.end() - static_cast<long>(window));
    // The characters go out as they are chosen (chunked transfer encoding).
    res.set_chunked_content_provider(
        "text/plain; charset=utf-8",
        [this, m, ids, n, window, sampling, seed](std::size_t, httplib::DataSink& sink) {
          std::lock_guard lock(compute_mutex_);
          std::mt19937_64 rng(seed);
          try {
            generate(*m->model, ids, n, window, sampling, rng, [&](std::int32_t id) {
              const std::string piece = m->tokenizer.decode_utf8({id});
              if (stopping_ || !sink.write(piece.data(), piece.size())) throw ClientGone{};
            });
          } catch (const ClientGone&) {
            return false;
          } catch (const std::exception& e) {  // after the first character the status is sent
            const std::string note = std::string("\n[error: ") + e.what() + "]";
            sink.write(note.data(), note.size());
          }
          sink.done();
          return true;
        });
  }));

  s.Get("/api/log", guarded([this](const httplib::Request& req, httplib::Response& res) {
    const long long since = query_integer(req, "since", -1);
    json j;
    CsvTable evals;
    try {
      evals = parse_csv_numbers(read_text(fs::path(checkpoint_files_dir(options_.checkpoint)) / "log.csv"));
    } catch (const std::exception&) {
    }
    std::lock_guard lock(state_mutex_);
    step_log_.refresh();
    const CsvTable& steps = step_log_.table();
    j["steps"] = rows_json(steps, since);
    // An integer, as `since` takes it: rows whose step is not one are left out (StepLog).
    long long last = -1;
    const int step_col = steps.column("step");
    if (step_col >= 0 && !steps.rows.empty())
      last = static_cast<long long>(steps.rows.back()[static_cast<std::size_t>(step_col)]);
    j["last_step"] = last;
    j["refused_rows"] = step_log_.refused();
    j["status"] = status_;
    j["evals"] = rows_json(evals, -1);
    j["evaluations"] = evaluations_seen_;  // the index the next evaluation will have
    j["step"] = model_ ? step_json(model_->weights_step) : json(nullptr);  // as /api/info
    send_json(res, j);
  }));

  s.Get("/api/evals", guarded([this](const httplib::Request& req, httplib::Response& res) {
    const long long since = std::max(0LL, query_integer(req, "since", 0));
    std::vector<std::shared_ptr<const Evaluation>> list;
    json head;
    {
      std::lock_guard lock(state_mutex_);
      head["probe"] = probe_;
      head["chars"] = chars_json(utf8_to_u32(probe_));
      head["count"] = evaluations_.size();      // kept: the first and the newest max_evaluations
      head["seen"] = evaluations_seen_;         // evaluated so far: the next index
      head["max_evaluations"] = options_.max_evaluations;
      for (const auto& e : evaluations_)
        if (e->index >= static_cast<std::size_t>(since)) list.push_back(e);
    }
    // {"probe": ..., "chars": [...], "count": N, "seen": S, "max_evaluations": K,
    // "evaluations": [...]}: each evaluation is kept as JSON text, so a poll costs no re-encoding.
    std::string text = head.dump(-1, ' ', false, json::error_handler_t::replace);
    text.pop_back();
    text += ",\"evaluations\":[";
    for (std::size_t i = 0; i < list.size(); ++i) text += (i ? "," : "") + list[i]->json;
    text += "]}";
    res.set_content(text, kJson);
  }));

  // Errors without a body of their own (404 unknown path, 413 body too large, 400 a malformed
  // request line) still answer {"error": ...}.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = status_phrase(res.status);
    if (res.status == 404) message = "no such page or endpoint: " + req.path + " (see GET /api/info)";
    send_error(res, res.status, message);
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, 500, "internal error");
  });
}

int Server::start() {
  // Requests are read whole, within a deadline and size limits, by one reception thread before
  // one of 16 worker threads answers them (enough for a page's polling, a streamed sample and a
  // few scripts at once): a slow or oversized request never holds a worker (bounded_http.hpp).
  RequestLimits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.deadline_seconds = options_.request_seconds;
  limits.max_reading = options_.max_reading;
  limits.workers = 16;
  http_ = std::make_unique<BoundedHttpServer>(limits);
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(5, 0);
  http_->set_write_timeout(5, 0);
  http_->set_default_headers({{"X-Content-Type-Options", "nosniff"}, {"Cache-Control", "no-store"}});
  // SO_REUSEADDR (a restarted server may bind at once) but not httplib's default SO_REUSEPORT,
  // with which a second server on the same port would silently share its connections.
  http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  add_routes();
  const std::string& host = options_.host;
  errno = 0;
  if (options_.port == 0) {
    port_ = http_->bind_to_any_port(host);
  } else {
    port_ = http_->bind_to_port(host, options_.port) ? options_.port : -1;
  }
  if (port_ <= 0) {
    const int err = errno;
    http_.reset();
    throw ServeError(fmt::format(
        "cannot listen on {}:{}{}{}: the port is in use by another program, or the address is not "
        "one of this machine's; choose another with --port (or --host)",
        host, options_.port, err != 0 ? " (" : "", err != 0 ? std::string(std::strerror(err)) + ")" : ""));
  }
  listen_thread_ = std::thread([this] { http_->listen_after_bind(); });
  // stop() only reaches a server that is already listening: wait until it is (a moment).
  for (int i = 0; i < 5000 && !http_->is_running(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  watch_thread_ = std::thread([this] { watch_loop(); });
  return port_;
}

void Server::stop() {
  {
    std::lock_guard lock(stop_mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (http_) http_->stop();
  if (listen_thread_.joinable()) listen_thread_.join();
  if (http_) http_->shutdown();
  if (watch_thread_.joinable()) watch_thread_.join();
}

}  // namespace glass
