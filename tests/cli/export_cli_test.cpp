// `glass export` through the real binary: both formats written from a trained checkpoint, and
// bad input (an unknown format, an unwritable path, a directory that is not a checkpoint, a
// model llama2.c cannot run) refused with a clear message, a non-zero exit and no file written;
// a vocabulary holding U+2581 exported to GGUF with a note; a model trained with a recipe option
// (QK-norm, ReLU², logit soft-capping) refused by both formats, naming the option; a quantized
// GGUF (--type) with its bits per weight, an unknown type answered with a did-you-mean.

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_test_util.hpp"
#include "nn/decoder.hpp"
#include "checkpoint/checkpoint.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::GlassRun;
using glass_test::quote;

class ExportCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path ckpt_;  // a tiny checkpoint trained once

  static GlassRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 120 ");
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-export-cli");
    glass_test::write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
    ckpt_ = dir_ / "ckpt";
    const GlassRun r =
        glass("train --data " + quote((dir_ / "text.txt").string()) + " --out " +
              quote(ckpt_.string()) + " --iters 4 --eval-every 4" + glass_test::tiny(5));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  /// Every entry of `d`, names only (to show that nothing, not even a temporary file, was left).
  static std::vector<std::string> entries(const fs::path& d) {
    std::vector<std::string> names;
    if (fs::is_directory(d))
      for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  static void expect_error(const GlassRun& r, const std::string& part) {
    EXPECT_NE(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(part), std::string::npos) << "stderr: " << r.err;
  }
};

fs::path ExportCli::dir_;
fs::path ExportCli::ckpt_;

TEST_F(ExportCli, HelpNamesBothFormats) {
  const GlassRun r = glass("export --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* word :
       {"--checkpoint", "--format", "--out", "--best", "--type", "int8", "gguf", "llama2c"})
    EXPECT_NE(r.out.find(word), std::string::npos) << word << "\n" << r.out;
  EXPECT_NE(glass("--help").out.find("export"), std::string::npos);
}

TEST_F(ExportCli, WritesBothFormats) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-out");
  GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format gguf --out " +
                     quote((out / "m.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("m.gguf"), std::string::npos) << r.out;
  const std::string gguf = glass_test::read_file(out / "m.gguf");
  EXPECT_EQ(gguf.substr(0, 4), "GGUF");
  EXPECT_NE(gguf.find("ckpt"), std::string::npos);  // general.name: the checkpoint directory's

  r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format llama2c --out " +
            quote((out / "l2c").string()) + " --best");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(entries(out / "l2c"), (std::vector<std::string>{"model.bin", "tokenizer.bin"}));
  // seq_len (the 7th int of the header) is the training context, 16.
  const std::string bin = glass_test::read_file(out / "l2c" / "model.bin");
  ASSERT_GE(bin.size(), 28u);
  std::int32_t seq_len;
  std::memcpy(&seq_len, bin.data() + 24, 4);
  EXPECT_EQ(seq_len, 16);
  EXPECT_EQ(entries(out), (std::vector<std::string>{"l2c", "m.gguf"}));
}

// The suggested llama.cpp and llama2.c commands continue a prompt from the model's own training
// text (its first line of three words or more, two words and a space), not always "Capitu ".
TEST_F(ExportCli, TheSuggestedCommandUsesAPromptFromTheTrainingText) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-prompt");
  GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format gguf --out " +
                     quote((out / "m.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Dom Casmurro begins "I", "", "Do titulo.", "", "Uma noite destas, vindo da cidade ...".
  EXPECT_NE(r.out.find("llama-completion -m " + (out / "m.gguf").string() +
                       " -p 'Uma noite ' -n 50 --temp 0"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("context 16 characters"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Capitu"), std::string::npos) << r.out;

  std::string verse;
  for (int i = 0; i < 40; ++i)
    verse += "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind\n";
  glass_test::write_file(dir_ / "hamlet.txt", verse);
  r = glass("train --data " + quote((dir_ / "hamlet.txt").string()) + " --out " +
            quote((dir_ / "hamlet").string()) + " --iters 1 --eval-every 1" + glass_test::tiny(0));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = glass("export -m " + quote((dir_ / "hamlet").string()) + " --format llama2c --out " +
            quote((out / "l2c").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" -t 0 -i 'To be, '\n"), std::string::npos) << r.out;
}

// A fine-tuned chat model: the GGUF export says how to chat with it (llama.cpp reads its
// template), the llama2.c export what run.c cannot do; a base model gets neither line.
TEST_F(ExportCli, AChatModelIsToldHowToChatInEachEngine) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-chat");
  std::string chats;
  for (const char* word : {"casa", "noite", "cidade", "vinho", "olhos", "mesa"})
    chats += std::string(R"({"messages":[{"role":"user","content":"soletre )") + word +
             R"("},{"role":"assistant","content":"ok"}]})" + "\n";
  glass_test::write_file(dir_ / "chat.jsonl", chats);
  GlassRun r = glass("finetune --from " + quote(ckpt_.string()) + " --chat " +
                     quote((dir_ / "chat.jsonl").string()) + " --out " +
                     quote((dir_ / "chat").string()) + " --iters 1 --eval-every 1 --batch-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = glass("export -m " + quote((dir_ / "chat").string()) + " --format gguf --out " +
            quote((out / "chat.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a chat model: the file carries its ChatML template and ends answers at "
                       "<|im_end|>; chat with it in llama.cpp, e.g. llama-cli -m " +
                       (out / "chat.gguf").string() + " --temp 0\n"),
            std::string::npos)
      << r.out;
  r = glass("export -m " + quote((dir_ / "chat").string()) + " --format llama2c --out " +
            quote((out / "l2c").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note: a chat model: run.c's chat mode is Llama 2's [INST] format"),
            std::string::npos)
      << r.out;
  r = glass("export -m " + quote(ckpt_.string()) + " --format gguf --out " +
            quote((out / "base.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("chat model"), std::string::npos) << r.out;
}

TEST_F(ExportCli, UnknownFormat) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-format");
  const GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) +
                           " --format onnx --out " + quote((out / "m.onnx").string()));
  expect_error(r, "unknown export format 'onnx'");
  EXPECT_NE(r.err.find("gguf"), std::string::npos);
  EXPECT_TRUE(entries(out).empty());
}

// --type int8: llama2.c's version-2 file for runq.c; a type the format lacks is refused, naming
// the ones it has, and writes nothing.
TEST_F(ExportCli, Llama2cInt8AndTypesTheFormatLacks) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-int8");
  GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) +
                     " --format llama2c --type int8 --out " + quote((out / "q").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // d_model 32 and ffn_hidden 32: groups of 32, 8 + 32/32 = 9 bits a weight.
  EXPECT_NE(r.out.find("int8 in groups of 32: 9 bits per matrix weight"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("llama2.c's runq: ./runq " + (out / "q" / "model.bin").string()),
            std::string::npos)
      << r.out;
  const std::string q = glass_test::read_file(out / "q" / "model.bin");
  ASSERT_GE(q.size(), 256u);
  EXPECT_EQ(q.substr(0, 4), "24ka");  // the magic 0x616b3432, little-endian
  std::int32_t version = 0, group_size = 0;
  std::memcpy(&version, q.data() + 4, 4);
  std::memcpy(&group_size, q.data() + 37, 4);
  EXPECT_EQ(version, 2);
  EXPECT_EQ(group_size, 32);
  r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format llama2c --type F32 --out " +
            quote((out / "f").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("./run "), std::string::npos) << r.out;
  const std::string f = glass_test::read_file(out / "f" / "model.bin");
  EXPECT_LT(q.size(), f.size() / 3);  // 9 bits against 32, less the RoPE tables
  EXPECT_EQ(glass_test::read_file(out / "q" / "tokenizer.bin"),
            glass_test::read_file(out / "f" / "tokenizer.bin"));

  r = glass("export --checkpoint " + quote(ckpt_.string()) +
            " --format llama2c --type q4_0 --out " + quote((out / "q4").string()));
  expect_error(r, "the llama2c format has no type 'q4_0'; it writes: f32, int8");
  r = glass("export --checkpoint " + quote(ckpt_.string()) +
            " --format llama2c --type int9 --out " + quote((out / "q4").string()));
  expect_error(r, "no type 'int9' (did you mean int8?)");
  r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format gguf --type int8 --out " +
            quote((out / "m.gguf").string()));
  expect_error(r, "the gguf format has no type 'int8'");
  EXPECT_EQ(entries(out), (std::vector<std::string>{"f", "q"}));
}

TEST_F(ExportCli, AQuantizedGgufPrintsItsBitsPerWeight) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-q4");
  const GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) +
                           " --format gguf --type Q4_0 --out " + quote((out / "m.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // d_model 32, ffn_hidden 32: every matrix is blocked; the norm gains stay f32. Q4_0's blocks
  // are 4.5 bits per weight, the file a little more.
  EXPECT_NE(r.out.find("bits per weight"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% q4_0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% f32"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("% f16"), std::string::npos) << r.out;
  const auto at = r.out.find(" bits per weight");
  const double bits = std::stod(r.out.substr(r.out.rfind(' ', at - 1) + 1));
  EXPECT_GT(bits, 4.5);
  EXPECT_LT(bits, 5.0);
}

TEST_F(ExportCli, UnknownTypeGetsADidYouMean) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-type");
  GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) +
                     " --format gguf --type q4_1 --out " + quote((out / "m.gguf").string()));
  expect_error(r,
               "the gguf format has no type 'q4_1' (did you mean q4_0?); it writes: f32, f16, "
               "q8_0, q4_0");
  EXPECT_TRUE(entries(out).empty());
  // llama2.c's files hold f32 or runq.c's int8 groups: a GGUF type is refused, not ignored.
  r = glass("export --checkpoint " + quote(ckpt_.string()) +
            " --format llama2c --type q8_0 --out " + quote((out / "l2c").string()));
  expect_error(r, "the llama2c format has no type 'q8_0'; it writes: f32, int8");
  EXPECT_TRUE(entries(out).empty());
}

TEST_F(ExportCli, EvalQuantizePrintsTheFloatLossBesideTheQuantizedOne) {
  const std::string eval =
      "eval -m " + quote(ckpt_.string()) + " --data " + quote((dir_ / "text.txt").string());
  GlassRun r = glass(eval + " --quantize Q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* part :
       {"float32 weights: loss ", "q8_0 weights (", "bits per weight", "cost of q8_0: "})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  const auto number_after = [&](const std::string& line_start, const std::string& word) {
    const auto line = r.out.find(line_start);
    return std::stod(r.out.substr(r.out.find(word, line) + word.size()));
  };
  const double before = number_after("float32 weights", "loss "),
               after = number_after("q8_0 weights", "loss ");
  EXPECT_NE(before, after);                    // the weights did change
  EXPECT_LT(std::fabs(after - before), 0.01);  // by a Q8_0 step
  r = glass(eval + " --quantize q5_0");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--quantize: unknown quantization type 'q5_0'; did you mean q8_0?"),
            std::string::npos)
      << r.err;
}

TEST_F(ExportCli, SampleQuantizeRunsOnTheWeightsReadBack) {
  const std::string sample =
      "sample -m " + quote(ckpt_.string()) + " -p 'Capitu' -n 8 --temp 0 --json";
  const GlassRun floats = glass(sample), q4 = glass(sample + " --quantize q4_0");
  ASSERT_EQ(q4.exit_code, 0) << q4.err;
  EXPECT_NE(q4.err.find("note: the weights quantized to q4_0 and read back ("), std::string::npos)
      << q4.err;
  EXPECT_EQ(floats.err.find("quantized"), std::string::npos) << floats.err;
  // Q4_0's steps move the probabilities (the tokens may or may not change).
  EXPECT_NE(q4.out, floats.out);
}

TEST_F(ExportCli, UnwritablePath) {
  // A path below a regular file cannot be created, even by root.
  const fs::path out = glass_test::temp_dir("glass-export-cli-unwritable");
  glass_test::write_file(out / "file", "x");
  GlassRun r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format gguf --out " +
                     quote((out / "file" / "m.gguf").string()));
  expect_error(r, (out / "file").string());
  r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format llama2c --out " +
            quote((out / "file" / "l2c").string()));
  expect_error(r, (out / "file").string());
  // An existing directory as the GGUF file.
  fs::create_directory(out / "dir");
  r = glass("export --checkpoint " + quote(ckpt_.string()) + " --format gguf --out " +
            quote((out / "dir").string()));
  expect_error(r, "is a directory");
  EXPECT_EQ(entries(out), (std::vector<std::string>{"dir", "file"}));
  EXPECT_TRUE(entries(out / "dir").empty());
  EXPECT_EQ(glass_test::read_file(out / "file"), "x");
}

TEST_F(ExportCli, NotACheckpoint) {
  const fs::path out = glass_test::temp_dir("glass-export-cli-notckpt");
  fs::create_directory(out / "empty");
  const GlassRun r = glass("export --checkpoint " + quote((out / "empty").string()) +
                           " --format gguf --out " + quote((out / "m.gguf").string()));
  expect_error(r, "config.json");
  EXPECT_EQ(entries(out), (std::vector<std::string>{"empty"}));
}

TEST_F(ExportCli, ModelLlama2cCannotRun) {
  // A checkpoint whose RoPE base is not run.c's 10000, saved through the checkpoint API.
  const fs::path out = glass_test::temp_dir("glass-export-cli-rope");
  glass::ModelConfig c;
  c.vocab_size = 4;
  c.d_model = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_hidden = 8;
  c.context_length = 16;
  c.rope_base = 500000;
  glass::save_model((out / "ckpt").string(), glass::Decoder(c, 1),
                    glass::Tokenizer({U'a', U' ', U'\n'}));
  GlassRun r = glass("export --checkpoint " + quote((out / "ckpt").string()) +
                     " --format llama2c --out " + quote((out / "l2c").string()));
  expect_error(r, "rope_base 500000");
  EXPECT_FALSE(fs::exists(out / "l2c" / "model.bin"));
  EXPECT_FALSE(fs::exists(out / "l2c" / "tokenizer.bin"));
  // llama.cpp reads the base from the file: GGUF export works.
  r = glass("export --checkpoint " + quote((out / "ckpt").string()) + " --format gguf --out " +
            quote((out / "m.gguf").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

/// A small model with one recipe option set by `set`, saved through the checkpoint API in
/// `out`/ckpt.
template <class Set>
fs::path save_with_option(const fs::path& out, Set set) {
  glass::ModelConfig c;
  c.vocab_size = 4;
  c.d_model = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_hidden = 8;
  c.context_length = 16;
  set(c);
  glass::save_model((out / "ckpt").string(), glass::Decoder(c, 1),
                    glass::Tokenizer({U'a', U' ', U'\n'}));
  return out / "ckpt";
}

TEST_F(ExportCli, ARecipeOptionIsRefusedByGgufNamingIt) {
  // llama.cpp's `llama` architecture has no QK-norm, ReLU² MLP or soft-capping: a GGUF file of
  // such a model would load and give other numbers, so it is refused, naming the option.
  const fs::path out = glass_test::temp_dir("glass-export-cli-recipe-gguf");
  const std::vector<std::pair<std::string, void (*)(glass::ModelConfig&)>> cases = {
      {"QK-norm (config.json \"qk_norm\": true)", [](glass::ModelConfig& c) { c.qk_norm = true; }},
      {"ReLU² MLP (config.json \"mlp\": \"relu2\")",
       [](glass::ModelConfig& c) { c.mlp = glass::Mlp::relu2; }},
      {"logit soft-capping (config.json \"logit_softcap\": 30)",
       [](glass::ModelConfig& c) { c.logit_softcap = 30; }}};
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& [named, set] = cases[i];
    const fs::path dir = out / std::to_string(i);
    const fs::path ckpt = save_with_option(dir, set);
    const GlassRun r = glass("export --checkpoint " + quote(ckpt.string()) +
                             " --format gguf --out " + quote((dir / "m.gguf").string()));
    expect_error(r, named);
    expect_error(r, "llama.cpp's `llama` architecture does not compute");
    EXPECT_FALSE(fs::exists(dir / "m.gguf")) << named;
  }
}

TEST_F(ExportCli, RecipeOptionsAreRefusedByLlama2cNamingEach) {
  // A run trained through `glass train` with all three options: config.json records them, and
  // llama2.c's run.c (no QK-norm, ReLU² or soft-capping) refuses the model, naming each.
  const fs::path out = glass_test::temp_dir("glass-export-cli-recipe-l2c");
  const fs::path ckpt = out / "ckpt";
  GlassRun r = glass("train --data " + quote((dir_ / "text.txt").string()) + " --out " +
                     quote(ckpt.string()) + " --iters 2 --eval-every 2" + glass_test::tiny(5) +
                     " --qk-norm --mlp relu2 --logit-softcap 15");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string config = glass_test::read_file(ckpt / "config.json");
  for (const char* field : {"\"qk_norm\": true", "\"mlp\": \"relu2\"", "\"logit_softcap\": 15"})
    EXPECT_NE(config.find(field), std::string::npos) << field << "\n" << config;
  r = glass("export --checkpoint " + quote(ckpt.string()) + " --format llama2c --out " +
            quote((out / "l2c").string()));
  expect_error(r,
               "this model uses QK-norm (config.json \"qk_norm\": true), the ReLU² MLP "
               "(config.json \"mlp\": \"relu2\") and logit soft-capping (config.json "
               "\"logit_softcap\": 15), which llama2.c's run.c does not compute");
  EXPECT_FALSE(fs::exists(out / "l2c" / "model.bin"));
  EXPECT_FALSE(fs::exists(out / "l2c" / "tokenizer.bin"));
}

TEST_F(ExportCli, AVocabularyHoldingU2581IsExportedWithANote) {
  // The character llama.cpp writes for a space, in the text: the export goes on and says, in one
  // line, what it wrote for it (the file itself is run in llama.cpp by export_llama_cpp).
  const fs::path out = glass_test::temp_dir("glass-export-cli-u2581");
  glass::ModelConfig c;
  c.vocab_size = 5;
  c.d_model = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.ffn_hidden = 8;
  c.context_length = 16;
  glass::save_model((out / "ckpt").string(), glass::Decoder(c, 1),
                    glass::Tokenizer({U'a', U' ', U'\u2581', U'\n'}));
  const GlassRun r = glass("export --checkpoint " + quote((out / "ckpt").string()) +
                           " --format gguf --out " + quote((out / "m.gguf").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("note: the vocabulary holds U+2581 (\u2581)", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;  // the note, "wrote ..."
  const std::string gguf = glass_test::read_file(out / "m.gguf");
  EXPECT_EQ(gguf.substr(0, 4), "GGUF");
}

}  // namespace
