// config.json: round trip of ModelConfig + tokenizer, and clear errors for bad files.

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "checkpoint/config_json.hpp"
#include "data/text.hpp"
#include "test_paths.hpp"

using glass::ConfigError;
using glass::ModelConfig;
using glass::Tokenizer;

namespace {

/// Expects config_from_json to throw ConfigError whose message contains `needle` and the source.
void expect_rejected(const std::string& text, const std::string& needle) {
  try {
    glass::config_from_json(text, "ckpt/config.json");
    ADD_FAILURE() << "expected ConfigError containing: " << needle;
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find("ckpt/config.json"), std::string::npos) << msg;
  }
}

/// A valid config.json text with a 3-character tokenizer ("a", "é", "😀"), vocab_size 4.
/// `from` (which must occur) is replaced by `to`, to make one defect at a time.
std::string config_text(const std::string& from = "", const std::string& to = "") {
  std::string text = R"({"format": "glassllm", "version": 1,
    "model": {"vocab_size": 4, "d_model": 16, "n_layers": 2, "n_heads": 4, "n_kv_heads": 2,
              "ffn_hidden": 40, "context_length": 32, "vocab_cap": 1024,
              "rope_base": 10000.0, "norm_eps": 1e-05, "init_std": 0.02},
    "tokenizer": {"type": "char", "unknown_id": 0, "chars": ["a", "é", "😀"]}})";
  if (!from.empty()) {
    const auto pos = text.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    text.replace(pos, from.size(), to);
  }
  return text;
}

}  // namespace

TEST(ConfigJson, RoundTrip) {
  ModelConfig m;
  m.d_model = 64;
  m.n_layers = 3;
  m.n_heads = 8;
  m.n_kv_heads = 4;
  m.ffn_hidden = 176;
  m.context_length = 64;
  m.rope_base = 500000.0;
  m.norm_eps = 1e-6;
  m.init_std = 0.0125;
  const std::u32string text = glass::utf8_to_u32("ação \"aspas\" \\ barra\n\ttab 😀 ü");
  const Tokenizer tok = Tokenizer::from_text(text);
  m.vocab_size = tok.vocab_size();

  const std::string json = glass::config_to_json(m, tok, R"({"trainer": {"step": 5}})");
  const glass::CheckpointConfig back = glass::config_from_json(json, "mem");
  EXPECT_EQ(back.model.vocab_size, m.vocab_size);
  EXPECT_EQ(back.model.d_model, 64u);
  EXPECT_EQ(back.model.n_layers, 3u);
  EXPECT_EQ(back.model.n_heads, 8u);
  EXPECT_EQ(back.model.n_kv_heads, 4u);
  EXPECT_EQ(back.model.ffn_hidden, 176u);
  EXPECT_EQ(back.model.context_length, 64u);
  EXPECT_EQ(back.model.vocab_cap, 1024u);
  EXPECT_EQ(back.model.rope_base, 500000.0);
  EXPECT_EQ(back.model.norm_eps, 1e-6);  // doubles survive JSON exactly (shortest round trip)
  EXPECT_EQ(back.model.init_std, 0.0125);
  EXPECT_EQ(back.tokenizer.chars(), tok.chars());
  EXPECT_EQ(back.tokenizer.encode(text), tok.encode(text));
  EXPECT_NE(json.find("\"trainer\""), std::string::npos);
  // Readable: characters are stored as UTF-8 strings, not numbers.
  EXPECT_NE(json.find("\"ç\""), std::string::npos) << json;
  EXPECT_THROW(glass::config_to_json(m, tok, R"({"model": 1})"), std::invalid_argument);
  EXPECT_THROW(glass::config_to_json(m, tok, "[1]"), std::invalid_argument);
}

TEST(ConfigJson, ParsesHandWrittenFile) {
  const glass::CheckpointConfig c = glass::config_from_json(config_text(), "hand");
  EXPECT_EQ(c.model.vocab_size, 4u);
  EXPECT_EQ(c.model.head_dim(), 4u);
  ASSERT_EQ(c.tokenizer.vocab_size(), 4u);
  EXPECT_EQ(c.tokenizer.char_of(2), U'\u00E9');
  EXPECT_EQ(c.tokenizer.char_of(3), U'\U0001F600');
}

TEST(ConfigJson, ModelObjectAlone) {
  ModelConfig m;
  const ModelConfig back = glass::model_config_from_json(glass::model_config_to_json(m), "m");
  EXPECT_EQ(back.d_model, m.d_model);
  EXPECT_EQ(back.ffn_hidden, m.ffn_hidden);
  EXPECT_THROW(glass::model_config_from_json("{}", "m"), ConfigError);
}

TEST(ConfigJson, RejectsBadJsonAndFormat) {
  expect_rejected("{\"format\": \"glassllm\",", "not valid JSON");
  expect_rejected("", "not valid JSON");
  expect_rejected("[]", "top level must be a JSON object");
  expect_rejected(config_text("\"glassllm\"", "\"other\""), "\"format\": \"glassllm\"");
  expect_rejected(config_text("\"version\": 1", "\"version\": 2"), "version 2 is not supported");
}

TEST(ConfigJson, RefusesDeeplyNestedJsonWithoutRecursingIntoIt) {
  // A field whose value is nested a million levels deep: quoting it in the "must be a number"
  // message (nlohmann's recursive dump) overflowed the stack; the parser now stops at level 65.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  expect_rejected(config_text("\"version\": 1", "\"version\": " + deep), "nested more than 64");
  // 64 levels are read (and refused for what they are, quoted in full).
  const std::string ok = std::string(63, '[') + std::string(63, ']');
  expect_rejected(config_text("\"version\": 1", "\"version\": " + ok), "version");
}

TEST(ConfigJson, RejectsMissingAndMistypedFields) {
  expect_rejected(config_text("\"d_model\": 16, ", ""), "missing field \"d_model\"");
  expect_rejected(config_text("\"d_model\": 16", "\"d_model\": \"16\""),
                  "\"d_model\" must be a non-negative integer");
  expect_rejected(config_text("\"d_model\": 16", "\"d_model\": -16"),
                  "\"d_model\" must be a non-negative integer");
  expect_rejected(config_text("\"d_model\": 16", "\"d_model\": 16.5"),
                  "\"d_model\" must be a non-negative integer");
  expect_rejected(config_text("\"norm_eps\": 1e-05", "\"norm_eps\": null"),
                  "\"norm_eps\" must be a number");
  expect_rejected(config_text("\"init_std\": 0.02", "\"init_std\": 0.02, \"dmodel\": 3"),
                  "unknown field \"dmodel\"");
  expect_rejected(config_text("\"tokenizer\":", "\"tokeniser\":"), "missing \"tokenizer\"");
}

TEST(ConfigJson, RejectsInvalidModel) {
  // 16 is not divisible into 3 heads: ModelConfig::validate's message is passed on.
  expect_rejected(config_text("\"n_heads\": 4", "\"n_heads\": 3"), "n_heads");
  expect_rejected(config_text("\"d_model\": 16", "\"d_model\": 0"), "d_model must be at least 1");
}

TEST(ConfigJson, RejectsBadTokenizer) {
  expect_rejected(config_text(R"(["a", "é", "😀"])", R"(["a", "é", "é"])"), "appears twice");
  expect_rejected(config_text(R"(["a", "é", "😀"])", R"(["a", "é", "ab"])"), "chars[2]");
  expect_rejected(config_text(R"(["a", "é", "😀"])", R"(["a", "é", ""])"), "exactly one character");
  expect_rejected(config_text(R"(["a", "é", "😀"])", R"(["a", "é", 7])"),
                  "chars[2] must be a string");
  expect_rejected(config_text(R"(["a", "é", "😀"])", R"(["a", "é"])"), "model's vocab_size is 4");
  expect_rejected(config_text("\"type\": \"char\"", "\"type\": \"wordpiece\""), "not supported");
}

TEST(ConfigJson, ABpeTokenizerIsReadAndItsSizeChecked) {
  const std::string bpe =
      R"("tokenizer": {"type": "bpe", "file": "tokenizer.json", "vocab_size": 4})";
  const std::string chars =
      R"("tokenizer": {"type": "char", "unknown_id": 0, "chars": ["a", "é", "😀"]})";
  const glass::CheckpointConfig c =
      glass::config_from_json(config_text(chars, bpe), "ckpt/config.json");
  EXPECT_EQ(c.tokenizer_kind, glass::TokenizerKind::kBpe);
  EXPECT_EQ(c.tokenizer.vocab_size(), 1u);  // no characters: the vocabulary is tokenizer.json
  // No "type": a character tokenizer (config.json written before BPE existed).
  const std::string untyped = R"("tokenizer": {"unknown_id": 0, "chars": ["a", "é", "😀"]})";
  EXPECT_EQ(glass::config_from_json(config_text(chars, untyped), "ckpt/config.json").tokenizer_kind,
            glass::TokenizerKind::kChar);
  expect_rejected(config_text(chars, R"("tokenizer": {"type": "bpe", "vocab_size": 5})"),
                  "the BPE vocabulary has 5 tokens but the model's vocab_size is 4");
  expect_rejected(config_text(chars, R"("tokenizer": {"type": "bpe"})"),
                  "needs an integer \"vocab_size\"");
  expect_rejected(
      config_text(chars, R"("tokenizer": {"type": "bpe", "vocab_size": 4, "file": "x.json"})"),
      "not supported");
  // Written and read back.
  ModelConfig m;
  m.vocab_size = 300;
  const std::string text = glass::config_to_json_bpe(m, 300);
  EXPECT_NE(text.find(R"("type": "bpe")"), std::string::npos) << text;
  EXPECT_EQ(glass::config_from_json(text, "x").tokenizer_kind, glass::TokenizerKind::kBpe);
}

TEST(ConfigJson, ChatTokensAfterTheCharacters) {
  const std::string path = glass_test::source_dir("/tests/fuzz/corpus/config_json/config.json");
  std::ifstream in(path, std::ios::binary);
  const std::string old((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(old.empty()) << path;
  // A file written without chat tokens loads, and its tokenizer is written back byte for byte
  // (the model object has gained fields since the file was written).
  const glass::CheckpointConfig c = glass::config_from_json(old, path);
  EXPECT_TRUE(c.tokenizer.specials().empty());
  const std::size_t from = old.find("\"tokenizer\"");
  const std::string old_tokenizer =
      old.substr(from, old.rfind('}', old.find("\"training\"")) + 1 - from);
  EXPECT_NE(glass::config_to_json(c.model, c.tokenizer).find(old_tokenizer + "\n}"),
            std::string::npos)
      << old_tokenizer;
  // With them: "special_tokens" after "chars", read back with the same ids.
  const glass::TextTokenizer chat = glass::TextTokenizer(c.tokenizer).with_chat_tokens();
  ModelConfig m = c.model;
  m.vocab_size = chat.vocab_size();
  const std::string json = glass::config_to_json(m, *chat.chars());
  EXPECT_NE(json.find("\"special_tokens\""), std::string::npos) << json;
  const glass::CheckpointConfig back = glass::config_from_json(json, "mem");
  EXPECT_EQ(back.tokenizer.chars(), c.tokenizer.chars());
  EXPECT_EQ(back.tokenizer.specials(), chat.chars()->specials());
  EXPECT_EQ(back.tokenizer.vocab_size(), 7u);
  EXPECT_EQ(*glass::TextTokenizer(back.tokenizer).special_id(glass::SpecialToken::kImEnd), 6);
  // The model's vocab_size must count them.
  m.vocab_size = c.model.vocab_size;
  EXPECT_THROW(glass::config_from_json(glass::config_to_json(m, *chat.chars()), "mem"),
               ConfigError);
}

TEST(ConfigJson, RecipeOptionsAreWrittenOnlyWhenOnAndReadBack) {
  ModelConfig m;
  // Off (the default): config.json has none of the three keys, and a file without them reads
  // as off (every save made before the options existed).
  const std::string plain = glass::model_config_to_json(m);
  for (const char* key : {"qk_norm", "\"mlp\"", "logit_softcap"})
    EXPECT_EQ(plain.find(key), std::string::npos) << key << "\n" << plain;
  const glass::CheckpointConfig off = glass::config_from_json(config_text(), "hand");
  EXPECT_FALSE(off.model.qk_norm);
  EXPECT_EQ(off.model.mlp, glass::Mlp::swiglu);
  EXPECT_EQ(off.model.logit_softcap, 0.0);
  // On: written and read back.
  m.qk_norm = true;
  m.mlp = glass::Mlp::relu2;
  m.logit_softcap = 15.5;
  const std::string on = glass::model_config_to_json(m);
  EXPECT_NE(on.find("\"qk_norm\": true"), std::string::npos) << on;
  EXPECT_NE(on.find("\"mlp\": \"relu2\""), std::string::npos) << on;
  EXPECT_NE(on.find("\"logit_softcap\": 15.5"), std::string::npos) << on;
  const ModelConfig back = glass::model_config_from_json(on, "m");
  EXPECT_TRUE(back.qk_norm);
  EXPECT_EQ(back.mlp, glass::Mlp::relu2);
  EXPECT_EQ(back.logit_softcap, 15.5);
}

TEST(ConfigJson, RejectsBadRecipeOptions) {
  const std::string end = "\"init_std\": 0.02}";
  expect_rejected(config_text(end, "\"init_std\": 0.02, \"qk_norm\": 1}"),
                  "\"qk_norm\" must be true or false, got 1");
  expect_rejected(config_text(end, "\"init_std\": 0.02, \"mlp\": \"gelu\"}"),
                  "\"mlp\": the MLP must be \"swiglu\" or \"relu2\" (got \"gelu\")");
  expect_rejected(config_text(end, "\"init_std\": 0.02, \"mlp\": 2}"),
                  "\"mlp\" must be \"swiglu\" or \"relu2\", got 2");
  expect_rejected(config_text(end, "\"init_std\": 0.02, \"logit_softcap\": -3}"),
                  "logit_softcap must be a finite number >= 0");
  expect_rejected(config_text(end, "\"init_std\": 0.02, \"logit_softcap\": \"30\"}"),
                  "\"logit_softcap\" must be a number");
}
