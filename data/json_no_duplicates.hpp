#pragma once
// JSON parsing for files and requests glass did not write itself: it refuses an object with the
// same key twice and nesting deeper than kMaxJsonDepth.
// - RFC 8259 (section 4) leaves duplicate names undefined and nlohmann::json keeps the last one
//   silently; in a file header (safetensors) or a checkpoint's JSON a second "model.wq" or
//   "step" is corruption or tampering, so it is refused.
// - nlohmann::json parses without recursion, but printing (dump), copying and comparing a value
//   recurse once per level: a file of a million '[' would overflow the stack in the first error
//   message that quotes it. Every JSON glass reads is a few levels deep, so the parser stops at
//   the first value nested deeper than the limit.

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/file_limits.hpp"  // kMaxJsonDepth

namespace glass {

/// A JSON object that holds the same key twice; what() names the key.
class DuplicateKeyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// JSON nested deeper than kMaxJsonDepth; what() says how deep the limit is.
class JsonTooDeepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// nlohmann::json::parse of [first, last), throwing DuplicateKeyError ("the key \"k\" appears
/// twice in one object") for a repeated key at any depth, JsonTooDeepError for a value nested
/// deeper than kMaxJsonDepth, and nlohmann's parse_error for invalid JSON.
template <class Iterator>
nlohmann::json parse_json_no_duplicate_keys(Iterator first, Iterator last) {
  std::vector<std::set<std::string>> keys;  // the keys seen in each open object
  auto callback = [&keys](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth > kMaxJsonDepth)
      throw JsonTooDeepError("JSON nested more than " + std::to_string(kMaxJsonDepth) +
                             " levels deep");
    if (event == E::object_start) {
      keys.emplace_back();
    } else if (event == E::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == E::key && !keys.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!keys.back().insert(key).second)
        throw DuplicateKeyError("the key \"" + key + "\" appears twice in one object");
    }
    return true;
  };
  return nlohmann::json::parse(first, last, callback);
}

inline nlohmann::json parse_json_no_duplicate_keys(const std::string& text) {
  return parse_json_no_duplicate_keys(text.begin(), text.end());
}

}  // namespace glass
