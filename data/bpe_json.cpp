// tokenizer.json (Hugging Face, Llama 2 style) <-> BpeTokenizer. See data/bpe_tokenizer.hpp.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "data/file_limits.hpp"
#include "data/json_no_duplicates.hpp"

namespace glass {

namespace {

using ordered_json = nlohmann::ordered_json;
using json = nlohmann::json;

const char* const kSpecials[] = {"<unk>", "<s>", "</s>"};

/// The normalizer of Llama 2's tokenizer.json: the dummy prefix, then spaces as '▁'.
ordered_json expected_normalizer() {
  return {{"type", "Sequence"},
          {"normalizers",
           {{{"type", "Prepend"}, {"prepend", "▁"}},
            {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}}}};
}

/// The decoder of Llama 2's tokenizer.json: '▁' as space, bytes reassembled, joined, and the
/// dummy prefix's space dropped.
ordered_json expected_decoder() {
  return {{"type", "Sequence"},
          {"decoders",
           {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
            {{"type", "ByteFallback"}},
            {{"type", "Fuse"}},
            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
}

ordered_json special_token_json(int id, const char* content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

}  // namespace

std::string bpe_to_json(const BpeTokenizer& tokenizer) {
  ordered_json root;
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  ordered_json added = ordered_json::array();
  for (int i = 0; i < 3; ++i) added.push_back(special_token_json(i, kSpecials[i]));
  for (std::size_t k = 0; k < tokenizer.added().size(); ++k)
    added.push_back(special_token_json(tokenizer.first_added_id() + static_cast<int>(k),
                                       u32_to_utf8(tokenizer.added()[k]).c_str()));
  root["added_tokens"] = added;
  root["normalizer"] = expected_normalizer();
  root["pre_tokenizer"] = nullptr;
  // BOS first, as Llama 2's tokenizer (and run.c, llama.cpp) add it.
  root["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
      {"pair",
       {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
        {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
        {{"SpecialToken", {{"id", "<s>"}, {"type_id", 1}}}},
        {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  root["decoder"] = expected_decoder();
  ordered_json model;
  model["type"] = "BPE";
  model["dropout"] = nullptr;
  model["unk_token"] = "<unk>";
  model["continuing_subword_prefix"] = nullptr;
  model["end_of_word_suffix"] = nullptr;
  model["fuse_unk"] = true;
  model["byte_fallback"] = true;
  ordered_json vocab = ordered_json::object();
  for (std::size_t id = 0; id < tokenizer.vocab_size(); ++id)
    vocab[tokenizer.token_text(static_cast<std::int32_t>(id))] = id;
  model["vocab"] = std::move(vocab);
  ordered_json merges = ordered_json::array();
  for (const BpeMerge& m : tokenizer.merges())
    merges.push_back(tokenizer.token_text(m.left) + " " + tokenizer.token_text(m.right));
  model["merges"] = std::move(merges);
  root["model"] = std::move(model);
  return root.dump(2) + "\n";
}

namespace {

/// The reader, with the source's name for every message.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw TokenizerJsonError(source_ + ": " + what);
  }

  const json& field(const json& object, const char* key, const char* where) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(fmt::format("{} has no \"{}\"", where, key));
    return *it;
  }

  BpeTokenizer read(const std::string& text) const {
    json root;
    try {
      root = parse_json_no_duplicate_keys(text);
    } catch (const DuplicateKeyError& e) {
      fail(e.what());
    } catch (const JsonTooDeepError& e) {
      fail(e.what());
    } catch (const json::exception& e) {
      fail(fmt::format("not valid JSON ({})", e.what()));
    }
    if (!root.is_object()) fail("the top level is not a JSON object");

    // The pipeline must be the one this tokenizer implements (Llama 2's).
    const json& model = field(root, "model", "the file");
    if (!model.is_object()) fail("\"model\" is not an object");
    const json& type = field(model, "type", "\"model\"");
    if (type != "BPE") fail(fmt::format("the model type is {}, not \"BPE\"", type.dump()));
    if (field(model, "byte_fallback", "\"model\"") != true)
      fail("the model's \"byte_fallback\" is not true");
    if (field(model, "unk_token", "\"model\"") != "<unk>")
      fail("the model's \"unk_token\" is not \"<unk>\"");
    if (json(expected_normalizer()) != field(root, "normalizer", "the file"))
      fail("the normalizer is not Llama 2's (Prepend \"▁\", then Replace \" \" with \"▁\")");
    if (json(expected_decoder()) != field(root, "decoder", "the file"))
      fail("the decoder is not Llama 2's (Replace \"▁\" with \" \", ByteFallback, Fuse, Strip 1)");
    const auto pre = root.find("pre_tokenizer");
    if (pre != root.end() && !pre->is_null())
      fail("a pre_tokenizer is set; this tokenizer has none (words split at '▁' by its rules)");

    // Vocabulary: ids 0..N-1, each once.
    const json& vocab = field(model, "vocab", "\"model\"");
    if (!vocab.is_object()) fail("\"vocab\" is not an object");
    const std::size_t n = vocab.size();
    if (n > kMaxVocabSize)
      fail(fmt::format("the vocabulary has {} tokens; the largest glass reads has {}", n,
                       kMaxVocabSize));
    std::vector<std::u32string> texts(n);
    std::vector<bool> seen(n, false);
    for (const auto& [key, value] : vocab.items()) {
      if (!value.is_number_unsigned())
        fail(fmt::format("the id of \"{}\" in the vocabulary is not a non-negative integer", key));
      const auto id = value.get<std::uint64_t>();
      if (id >= n)
        fail(
            fmt::format("the vocabulary ids are not dense: \"{}\" has id {}, but {} tokens "
                        "need ids 0..{}",
                        key, id, n, n - 1));
      if (seen[id]) fail(fmt::format("the vocabulary ids are not dense: id {} appears twice", id));
      seen[id] = true;
      texts[id] = to_u32(key);
      if (texts[id].size() > kMaxTokenLength)
        fail(fmt::format("token id {} is {} characters long; the longest token glass reads has {}",
                         id, texts[id].size(), kMaxTokenLength));
    }
    // (n distinct ids below n: none is missing.)

    // Specials and bytes at their fixed ids.
    const std::size_t first_char = static_cast<std::size_t>(BpeTokenizer::kFirstCharId);
    if (n < first_char)
      fail(
          fmt::format("the vocabulary has {} tokens; 3 specials and 256 byte tokens need at "
                      "least {}",
                      n, first_char));
    for (std::size_t i = 0; i < first_char; ++i) {
      const std::u32string want =
          i < 3 ? to_u32(kSpecials[i]) : to_u32(fmt::format("<0x{:02X}>", i - 3));
      if (texts[i] != want)
        fail(
            fmt::format("id {} must be \"{}\" but is \"{}\" (ids 0..2 are <unk> <s> </s>, "
                        "3..258 the bytes <0x00>..<0xFF>)",
                        i, u32_to_utf8(want), u32_to_utf8(texts[i])));
    }
    const std::vector<std::u32string> added =
        check_added_tokens(field(root, "added_tokens", "the file"), texts);

    // Merges: "left right" strings (or [left, right] arrays).
    const json& merges_json = field(model, "merges", "\"model\"");
    if (!merges_json.is_array()) fail("\"merges\" is not an array");
    if (merges_json.size() + added.size() > n - first_char)
      fail(fmt::format("{} merges and {} added tokens but only {} tokens after the bytes",
                       merges_json.size(), added.size(), n - first_char));
    const std::size_t n_chars = n - first_char - merges_json.size() - added.size();
    std::vector<char32_t> chars;
    for (std::size_t i = 0; i < n_chars; ++i) {
      const std::u32string& t = texts[first_char + i];
      if (t.size() != 1)
        fail(
            fmt::format("id {} (\"{}\") should be a base character (ids {}..{}: the vocabulary "
                        "minus the 259 reserved tokens and the {} merged ones), but it is {} "
                        "characters long",
                        first_char + i, u32_to_utf8(t), first_char, first_char + n_chars - 1,
                        merges_json.size(), t.size()));
      chars.push_back(t[0]);
    }
    std::unordered_map<std::u32string, std::int32_t> ids;
    for (std::size_t i = 0; i < n; ++i) ids.emplace(texts[i], static_cast<std::int32_t>(i));
    std::vector<BpeMerge> merges;
    for (std::size_t r = 0; r < merges_json.size(); ++r) {
      const auto [left, right] = merge_parts(merges_json[r], r);
      const std::size_t made = first_char + n_chars + r;
      BpeMerge m;
      for (auto [part, id] : {std::pair{&left, &m.left}, std::pair{&right, &m.right}}) {
        const auto it = ids.find(to_u32(*part));
        if (it == ids.end())
          fail(fmt::format("merge {} (\"{} {}\") refers to \"{}\", which is not in the vocabulary",
                           r, left, right, *part));
        *id = it->second;
        if (*id < BpeTokenizer::kFirstCharId)
          fail(
              fmt::format("merge {} (\"{} {}\") refers to \"{}\", a special or byte token, "
                          "which never merges",
                          r, left, right, *part));
        if (static_cast<std::size_t>(*id) >= made)
          fail(
              fmt::format("merge {} (\"{} {}\") refers to \"{}\" (id {}), which is not "
                          "made before it (id {})",
                          r, left, right, *part, *id, made));
      }
      if (texts[made] != to_u32(left + right))
        fail(
            fmt::format("merge {} (\"{} {}\") should make token {}, but that token is \"{}\" "
                        "(merged tokens follow the base characters in merge order)",
                        r, left, right, made, u32_to_utf8(texts[made])));
      merges.push_back(m);
    }
    try {
      return BpeTokenizer(std::move(chars), std::move(merges), added);
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
  }

 private:
  std::u32string to_u32(const std::string& s) const {
    try {
      return utf8_to_u32(s);
    } catch (const Utf8Error& e) {
      fail(e.what());
    }
  }

  /// Checks "added_tokens": the three specials, then any added special tokens, which must hold
  /// the last ids in order with their vocabulary text. Returns the added ones' texts.
  std::vector<std::u32string> check_added_tokens(const json& added,
                                                 const std::vector<std::u32string>& texts) const {
    if (!added.is_array()) fail("\"added_tokens\" is not an array");
    std::set<std::pair<std::int64_t, std::string>> found;
    std::vector<std::pair<std::int64_t, std::string>> extra;
    for (const json& t : added) {
      if (!t.is_object()) fail("an entry of \"added_tokens\" is not an object");
      const json& id = field(t, "id", "an entry of \"added_tokens\"");
      const json& content = field(t, "content", "an entry of \"added_tokens\"");
      if (!id.is_number_integer() || !content.is_string())
        fail("an entry of \"added_tokens\" has a non-integer \"id\" or a non-string \"content\"");
      if (!found.emplace(id.get<std::int64_t>(), content.get<std::string>()).second)
        fail(fmt::format("\"added_tokens\" lists {} {} twice", id.dump(), content.dump()));
      if (id.get<std::int64_t>() >= 3) {
        const auto special = t.find("special");
        if (special == t.end() || *special != true)
          fail(
              fmt::format("added token {} {} is not \"special\": true (only special tokens are "
                          "added after the merges)",
                          id.dump(), content.dump()));
        extra.emplace_back(id.get<std::int64_t>(), content.get<std::string>());
        found.erase({id.get<std::int64_t>(), content.get<std::string>()});
      }
    }
    std::sort(extra.begin(), extra.end());
    std::vector<std::u32string> extra_texts;
    const auto n = static_cast<std::int64_t>(texts.size());
    for (std::size_t k = 0; k < extra.size(); ++k) {
      const std::int64_t want = n - static_cast<std::int64_t>(extra.size() - k);
      if (extra[k].first != want)
        fail(
            fmt::format("added token {} \"{}\" should hold id {} (added tokens follow every "
                        "other token, in id order)",
                        extra[k].first, extra[k].second, want));
      extra_texts.push_back(to_u32(extra[k].second));
      if (texts[static_cast<std::size_t>(want)] != extra_texts.back())
        fail(fmt::format("added token {} is \"{}\" but the vocabulary's id {} is \"{}\"", want,
                         extra[k].second, want,
                         u32_to_utf8(texts[static_cast<std::size_t>(want)])));
    }
    const std::set<std::pair<std::int64_t, std::string>> want = {
        {0, kSpecials[0]}, {1, kSpecials[1]}, {2, kSpecials[2]}};
    if (found != want)
      fail(
          "\"added_tokens\" must be exactly the three specials: 0 \"<unk>\", 1 \"<s>\", 2 "
          "\"</s>\" (then any added special tokens)");
    return extra_texts;
  }

  std::pair<std::string, std::string> merge_parts(const json& m, std::size_t r) const {
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos || space == 0 ||
          space + 1 == s.size())
        fail(fmt::format("merge {} ({}) is not two tokens separated by one space", r, m.dump()));
      return {s.substr(0, space), s.substr(space + 1)};
    }
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string())
      return {m[0].get<std::string>(), m[1].get<std::string>()};
    fail(fmt::format("merge {} is neither \"left right\" nor [\"left\", \"right\"]", r));
  }

  std::string source_;
};

}  // namespace

BpeTokenizer bpe_from_json(const std::string& text, const std::string& source) {
  return Reader(source).read(text);
}

}  // namespace glass
