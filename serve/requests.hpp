#pragma once
// Reading the requests of `glass serve` (inside serve/ only): the JSON body and its fields,
// query parameters, prompts and the sampling settings, each checked, with the errors a handler
// throws and the answers they become (400 with {"error": message}, 503, ...).

#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "data/tokenizer.hpp"
#include "sample/sampler.hpp"

namespace glass::serve_api {

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

/// The media type of every JSON answer.
inline constexpr const char* kJson = "application/json; charset=utf-8";

/// Answers `j` (invalid UTF-8 in its strings replaced) with `status`.
void send_json(httplib::Response& res, const json& j, int status = 200);
/// Answers {"error": message} with `status`.
void send_error(httplib::Response& res, int status, const std::string& message);
/// The reason phrase of an HTTP status the server answers with (400, 404, 405, 413, 414, 421).
std::string status_phrase(int status);

/// The request body as a JSON object whose keys are all in `allowed` (a typo such as "temp"
/// must not be ignored silently); {} for an empty body. Throws BadRequest.
json parse_body(const httplib::Request& req, const std::set<std::string>& allowed);
/// The string field `name`, or `fallback` when absent. Throws BadRequest for another type.
std::string string_field(const json& j, const char* name, const std::string& fallback);
/// The boolean field `name`, or `fallback` when absent. Throws BadRequest for another type.
bool bool_field(const json& j, const char* name, bool fallback);
/// The number field `name` in [lo, hi] (lo excluded when `lo_open`), or `fallback` when absent.
double number_field(const json& j, const char* name, double fallback, double lo, double hi,
                    bool lo_open);
/// The integer field `name` in [lo, hi], or `fallback` when absent.
std::uint64_t integer_field(const json& j, const char* name, std::uint64_t fallback,
                            std::uint64_t lo, std::uint64_t hi);
/// A query parameter that must be an integer >= -1 (a step or an index); `fallback` if absent.
long long query_integer(const httplib::Request& req, const char* name, long long fallback);

/// The body fields the sampler reads (temperature, top_k up to `vocab_size`, top_p, min_p,
/// repeat_penalty, repeat_last_n) over the defaults of `glass sample`, validated. Throws
/// BadRequest naming the field.
SamplingOptions sampling_fields(const json& body, std::size_t vocab_size);

/// The prompt as characters. Throws BadRequest when it is not valid UTF-8.
std::u32string decode_prompt(const std::string& utf8);
/// A 400 when an inspected prompt is longer than the model's window (Checkpoint::window, in
/// its unit: a character model's characters, a BPE model's tokens): inspection shows one
/// window, position by position, as glass inspect does.
void refuse_past_context(const std::u32string& prompt, const Checkpoint& model);

/// --allow-unknown in the API's words: the body's "allow_unknown" (false when absent) as the
/// tokenizer's policy.
UnknownPolicy unknown_policy(const json& body);
/// The ids generation continues from: the prompt's (Checkpoint::encode_prompt; a character
/// model's unknown characters refused with UnknownCharacterError, or mapped to id 0 under
/// `policy`), the tokenizer's start id for an empty prompt, a prompt longer than the model's
/// window cropped to its last window (as glass sample).
std::vector<std::int32_t> prompt_ids(const std::u32string& prompt, const Checkpoint& model,
                                     UnknownPolicy policy);
/// The ids of a body's "tokens" field (a list of ids, as /api/inspect answers them): each below
/// `vocab_size`, 1 to `window` of them. Throws BadRequest naming the field.
std::vector<std::int32_t> token_ids_field(const json& body, std::size_t vocab_size,
                                          std::size_t window);

/// `s` in ASCII lower case.
std::string lower_case(std::string s);

}  // namespace glass::serve_api
