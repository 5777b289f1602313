// Reading the requests of `glass serve`: body fields, query parameters, prompts, sampling
// settings, and the error answers. See requests.hpp.

#include "serve/requests.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "data/json_no_duplicates.hpp"
#include "data/text.hpp"
#include "inspect/inspect.hpp"

namespace glass::serve_api {

void send_json(httplib::Response& res, const json& j, int status) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), kJson);
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, json{{"error", message}}, status);
}

/// The reason phrase of an HTTP status the server answers with.
std::string status_phrase(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "not found";
    case 405:
      return "method not allowed";
    case 413:
      return "the request body is too large";
    case 414:
      return "the request line is too long";
    case 421:
      return "this server does not answer for that Host";
    default:
      return fmt::format("HTTP status {}", status);
  }
}

/// The request body as a JSON object whose keys are all in `allowed` (a typo such as "temp"
/// must not be ignored silently).
json parse_body(const httplib::Request& req, const std::set<std::string>& allowed) {
  if (req.body.empty()) return json::object();
  json j;
  try {
    j = parse_json_no_duplicate_keys(req.body);
  } catch (
      const DuplicateKeyError& e) {  // which of the two would count is not the client's to guess
    throw BadRequest(std::string("the request body is ambiguous: ") + e.what());
  } catch (const JsonTooDeepError& e) {
    throw BadRequest(std::string("the request body is ") + e.what());
  } catch (const json::exception&) {
    throw BadRequest("the request body is not valid JSON (UTF-8)");
  }
  if (!j.is_object())
    throw BadRequest("the request body must be a JSON object, e.g. {\"prompt\": \"Capitu\"}");
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
double number_field(const json& j, const char* name, double fallback, double lo, double hi,
                    bool lo_open) {
  if (!j.contains(name)) return fallback;
  const json& v = j[name];
  const double x = v.is_number() ? v.get<double>() : std::nan("");
  if (!std::isfinite(x) || x < lo || x > hi || (lo_open && x == lo))
    throw BadRequest(fmt::format("'{}' must be a number in {}{}, {}] (got {})", name,
                                 lo_open ? "(" : "[", lo, hi, v.dump()));
  return x;
}

/// An integer in [lo, hi].
std::uint64_t integer_field(const json& j, const char* name, std::uint64_t fallback,
                            std::uint64_t lo, std::uint64_t hi) {
  if (!j.contains(name)) return fallback;
  const json& v = j[name];
  if (!v.is_number_unsigned() || v.get<std::uint64_t>() < lo || v.get<std::uint64_t>() > hi)
    throw BadRequest(
        fmt::format("'{}' must be an integer from {} to {} (got {})", name, lo, hi, v.dump()));
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

std::u32string decode_prompt(const std::string& utf8) {
  try {
    return utf8_to_u32(utf8);
  } catch (const Utf8Error& e) {
    throw BadRequest(std::string("the prompt is not valid UTF-8: ") + e.what());
  }
}

SamplingOptions sampling_fields(const json& body, std::size_t vocab_size) {
  SamplingOptions sampling;
  sampling.temperature = number_field(body, "temperature", sampling.temperature, 0, 100, false);
  sampling.top_k = static_cast<std::size_t>(integer_field(body, "top_k", 0, 0, vocab_size));
  sampling.top_p = number_field(body, "top_p", 1.0, 0, 1, /*lo_open=*/true);
  sampling.min_p = number_field(body, "min_p", 0.0, 0, 1, false);
  sampling.repeat_penalty = number_field(body, "repeat_penalty", 1.0, 0, 100, /*lo_open=*/true);
  sampling.repeat_last_n =
      static_cast<std::size_t>(integer_field(body, "repeat_last_n", 64, 0, 1'000'000));
  validate(sampling);  // std::invalid_argument: answered 400 as well
  return sampling;
}

void refuse_past_context(const std::u32string& prompt, const Checkpoint& model) {
  try {
    model.check_fits_window(prompt);
  } catch (const PromptTooLongError& e) {
    throw BadRequest(fmt::format(
        "the prompt has {} {}; {}. Inspection shows one window: send at most {} {}", e.length(),
        e.unit(), context_sentence(e.window(), e.unit()), e.window(), e.unit()));
  }
}

UnknownPolicy unknown_policy(const json& body) {
  return bool_field(body, "allow_unknown", false) ? UnknownPolicy::kMapToUnknownId
                                                  : UnknownPolicy::kRefuse;
}

std::vector<std::int32_t> prompt_ids(const std::u32string& prompt, const Checkpoint& model,
                                     UnknownPolicy policy) {
  std::vector<std::int32_t> ids = model.encode_prompt(prompt, policy);
  if (ids.empty()) ids = {model.tokenizer().start_id()};  // the start of a paragraph
  const std::size_t window = model.window();
  if (ids.size() > window) ids.erase(ids.begin(), ids.end() - static_cast<long>(window));
  return ids;
}

std::vector<std::int32_t> token_ids_field(const json& body, std::size_t vocab_size,
                                          std::size_t window) {
  const json& list = body.at("tokens");
  if (!list.is_array() || list.empty() || list.size() > window)
    throw BadRequest(fmt::format(
        "'tokens' must be a list of 1 to {} token ids (the context), as /api/inspect answers them",
        window));
  std::vector<std::int32_t> ids;
  for (const json& v : list) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() >= vocab_size)
      throw BadRequest(fmt::format("'tokens' must hold token ids from 0 to {} (got {})",
                                   vocab_size - 1, v.dump()));
    ids.push_back(static_cast<std::int32_t>(v.get<std::uint64_t>()));
  }
  return ids;
}

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace glass::serve_api
