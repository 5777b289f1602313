// `glass train --tokenizer bpe` through the real binary: a tiny BPE model trained, evaluated,
// sampled and resumed end to end; its tokenizer.json in each save (atomic, in the manifest);
// bits per byte printed as the formula says on counts computed here; glass inspect drawing each
// token (terminal, --json, --html) with its text and id; glass export of it; and the refusals (a
// bad --vocab-size, a missing, corrupt or foreign tokenizer.json), each with a clear message and
// a non-zero exit. glass serve on a BPE model: the BPE tests of tests/serve/serve_cli_test.cpp.

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <regex>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.hpp"
#include "checkpoint/sha256.hpp"
#include "cli_test_util.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/text.hpp"
#include "test_util.hpp"
#include "train/trainer.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

class BpeCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path text_;  // 20000 bytes of Dom Casmurro
  static fs::path ckpt_;  // a BPE model of 384 tokens, trained once for the suite
  static CliRun first_run_;

  static std::string tiny() { return glass_test::tiny(); }
  static CliRun glass(const std::string& args) { return glass_test::run_glass(args, dir_); }
  static std::string train_flags() {
    return " --data " + q(text_.string()) + " --tokenizer bpe --vocab-size 384" + tiny();
  }

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-bpe-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(20000));
    ckpt_ = dir_ / "ckpt";
    first_run_ =
        glass("train --out " + q(ckpt_.string()) + " --iters 20 --eval-every 10" + train_flags());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
  }

  /// A copy of the checkpoint's current save as a plain directory without its manifest (so the
  /// loader's own checks of tokenizer.json are reached, not the manifest's checksum).
  static fs::path flat_copy(const std::string& name) {
    const fs::path out = dir_ / name;
    fs::remove_all(out);
    fs::create_directories(out);
    for (const auto& e : fs::directory_iterator(fs::canonical(ckpt_ / "current")))
      if (e.path().filename() != "manifest.json")
        fs::copy_file(e.path(), out / e.path().filename());
    return out;
  }
};

fs::path BpeCli::dir_, BpeCli::text_, BpeCli::ckpt_;
CliRun BpeCli::first_run_;

/// Where a BPE run splits its text (split_point, data/text_tokenizer.hpp): the first space at or after 90% of
/// the characters.
std::size_t split_point(const std::u32string& text) {
  const std::size_t at =
      static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9));
  const std::size_t space = text.find(U' ', at);
  return space == std::u32string::npos ? at : space;
}

}  // namespace

TEST(BitsPerByte, IsTheLossTimesTokensOverBytesInBits) {
  // 2 nats per token, 100 tokens over 150 bytes: 2 * 100 / (150 * ln 2) (Python: math.log).
  EXPECT_NEAR(glass::bits_per_byte(2.0, 100, 150), 1.9235933878519513, 1e-15);
  // One token per byte: bits per byte = nats / ln 2.
  EXPECT_NEAR(glass::bits_per_byte(std::log(2.0), 7, 7), 1.0, 1e-15);
  EXPECT_THROW(glass::bits_per_byte(1.0, 1, 0), std::invalid_argument);
}

TEST_F(BpeCli, TrainSavesTokenizerJsonInEachSaveCoveredByTheManifest) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  EXPECT_NE(first_run_.out.find("a BPE vocabulary of 384 tokens"), std::string::npos)
      << first_run_.out;
  EXPECT_NE(first_run_.out.find("\n  per token: "), std::string::npos) << first_run_.out;
  // The loss page says tokens too (its words follow the JSON's "unit").
  EXPECT_NE(read_file(ckpt_ / "loss.html").find("\"unit\":\"token\""), std::string::npos);
  const fs::path save = fs::canonical(ckpt_ / "current");
  const json config = json::parse(read_file(save / "config.json"));
  EXPECT_EQ(config["tokenizer"]["type"], "bpe");
  EXPECT_EQ(config["tokenizer"]["vocab_size"], 384);
  EXPECT_EQ(config["model"]["vocab_size"], 384);
  const std::string tokenizer_json = read_file(save / "tokenizer.json");
  const glass::BpeTokenizer bpe = glass::bpe_from_json(tokenizer_json, "tokenizer.json");
  EXPECT_EQ(bpe.vocab_size(), 384u);
  const json manifest = json::parse(read_file(save / "manifest.json"));
  ASSERT_TRUE(manifest["files"].contains("tokenizer.json"));
  EXPECT_EQ(manifest["files"]["tokenizer.json"]["sha256"], glass::sha256_hex(tokenizer_json));
  EXPECT_EQ(manifest["files"]["tokenizer.json"]["bytes"], tokenizer_json.size());
  // The weights record the tokenizer they were trained with.
  const glass::SafetensorsContents weights =
      glass::load_safetensors((save / "model.safetensors").string());
  EXPECT_EQ(weights.metadata.at("tokenizer"), "bpe");
  EXPECT_EQ(weights.metadata.at("tokenizer_sha256"), glass::sha256_hex(tokenizer_json));
  EXPECT_EQ(weights.metadata.count("tokenizer_chars"), 0u);
  // The tokenizer is trained on the training split only: the same vocabulary as one trained here
  // on the text before the split point.
  const std::u32string text = glass::utf8_to_u32(read_file(text_));
  const glass::BpeTokenizer expected =
      glass::BpeTokenizer::train(text.substr(0, split_point(text)), 384);
  EXPECT_EQ(glass::bpe_to_json(expected), tokenizer_json);
  // The saves of steps 0 and 10 are removed once step 20's is current, as in a character run
  // (tokenizer.json is one of a save's own files, not a stranger that keeps the directory).
  std::vector<std::string> steps;
  for (const auto& e : fs::directory_iterator(ckpt_))
    if (e.path().filename().string().rfind("step-", 0) == 0)
      steps.push_back(e.path().filename().string());
  EXPECT_EQ(steps, std::vector<std::string>{"step-000020"});
}

TEST_F(BpeCli, EvaluationPrintsBitsPerByteOfTheValidationSplit) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  // step 20: train loss X, val loss Y ... \n  val Z bits per byte (N tokens over M bytes ...
  const std::regex line(
      R"(step 20: train loss [0-9.]+, val loss ([0-9.]+)[^\n]*\n  val ([0-9.]+) bits per byte \(([0-9]+) tokens over ([0-9]+) bytes)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(first_run_.out, m, line)) << first_run_.out;
  const double val_loss = std::stod(m[1]), bpb = std::stod(m[2]);
  const std::size_t tokens = std::stoul(m[3]), bytes = std::stoul(m[4]);
  // The counts, computed here from the text and the saved tokenizer.
  const std::u32string text = glass::utf8_to_u32(read_file(text_));
  const std::size_t cut = split_point(text);
  const glass::BpeTokenizer bpe = glass::bpe_from_json(
      read_file(fs::canonical(ckpt_ / "current") / "tokenizer.json"), "tokenizer.json");
  EXPECT_EQ(bytes, glass::u32_to_utf8(text.substr(cut)).size());
  EXPECT_EQ(tokens, bpe.encode(text).size() - bpe.encode(text.substr(0, cut)).size());
  // Z = Y * N / (M ln 2), up to the 4 printed decimals of Y and Z.
  EXPECT_NEAR(bpb,
              val_loss * static_cast<double>(tokens) / (static_cast<double>(bytes) * std::log(2.0)),
              2e-4);
}

TEST_F(BpeCli, TrainingAndEvalGiveTheSameBitsPerByteForTheValidationText) {
  // With a sample of at least as many windows as the validation split holds (25 x 4 windows of
  // 16 tokens; the split has 1325 tokens, 83 windows), the evaluation predicts every token of the
  // split once, as glass eval predicts every token of a file: the two agree but for the first
  // window's first input (the training split's last token; in glass eval the dummy prefix).
  // Estimated from the 100 random windows instead, the training gave 4.2143 bits per byte and
  // glass eval 4.1833.
  const fs::path run = dir_ / "bpb";
  std::string flags = train_flags();
  flags.replace(flags.find(" --eval-iters 2 "), 16, " --eval-iters 25 ");
  const CliRun trained =
      glass("train --out " + q(run.string()) + " --iters 60 --eval-every 30 --lr 3e-3" + flags);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(trained.out, m,
                                std::regex(R"(step 60: [^\n]*\n  val ([0-9.]+) bits per byte)")))
      << trained.out;
  const double in_training = std::stod(m[1]);
  const std::u32string text = glass::utf8_to_u32(read_file(text_));
  const fs::path val = dir_ / "validation.txt";
  write_file(val, glass::u32_to_utf8(text.substr(split_point(text))));
  const CliRun evaluated = glass("eval -m " + q(run.string()) + " --data " + q(val.string()));
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  ASSERT_TRUE(std::regex_search(evaluated.out, m, std::regex(R"(\n([0-9.]+) bits per byte \()")))
      << evaluated.out;
  EXPECT_NEAR(in_training, std::stod(m[1]), 0.002) << trained.out << evaluated.out;
}

TEST_F(BpeCli, EvalPrintsLossPerTokenAndBitsPerByte) {
  const CliRun r = glass("eval -m " + q(ckpt_.string()) + " --data " + q(text_.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex line(
      R"(^loss ([0-9.]+) nats per token over ([0-9]+) predictions[^\n]*\n([0-9.]+) bits per byte \(([0-9]+) tokens over ([0-9]+) bytes of text\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
  const double loss = std::stod(m[1]), bpb = std::stod(m[3]);
  const std::size_t predictions = std::stoul(m[2]), tokens = std::stoul(m[4]),
                    bytes = std::stoul(m[5]);
  EXPECT_GT(loss, 0.5);
  EXPECT_LT(loss, std::log(384.0) + 0.5);
  EXPECT_EQ(tokens, predictions);
  EXPECT_EQ(bytes, read_file(text_).size());
  const glass::BpeTokenizer bpe = glass::bpe_from_json(
      read_file(fs::canonical(ckpt_ / "current") / "tokenizer.json"), "tokenizer.json");
  EXPECT_EQ(predictions + 1, bpe.encode(glass::utf8_to_u32(read_file(text_))).size());
  EXPECT_NEAR(
      bpb, loss * static_cast<double>(tokens) / (static_cast<double>(bytes) * std::log(2.0)), 2e-4);
}

TEST_F(BpeCli, SampleContinuesAPromptAndIsReproducible) {
  const std::string base = "sample -m " + q(ckpt_.string()) + " --tokens 15";
  const CliRun a = glass(base + " --prompt 'Era uma vez' --seed 3");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out.rfind("Era uma vez", 0), 0u) << a.out;
  EXPECT_NE(a.err.find("15 tokens"), std::string::npos) << a.err;
  EXPECT_EQ(a.out, glass(base + " --prompt 'Era uma vez' --seed 3").out);
  const CliRun greedy = glass(base + " --prompt 'Capitu' --temperature 0");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  // A character no training text had goes to byte tokens, not an error.
  const CliRun unseen = glass(base + " --prompt '€ ☃'");
  EXPECT_EQ(unseen.exit_code, 0) << unseen.err;
  EXPECT_EQ(unseen.out.rfind("€ ☃", 0), 0u) << unseen.out;
  const CliRun js = glass(base + " --prompt 'Capitu' --json");
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json out = json::parse(js.out);
  ASSERT_EQ(out["samples"][0]["tokens"].size(), 15u);
  std::string joined;
  for (const json& t : out["samples"][0]["tokens"]) joined += t["text"].get<std::string>();
  // Pieces joined give the text, unless byte tokens split a character (then pieces are U+FFFD).
  if (joined.find("\xEF\xBF\xBD") == std::string::npos) {
    EXPECT_EQ(joined, out["samples"][0]["text"].get<std::string>());
  }
}

TEST_F(BpeCli, ResumeKeepsTheSavedTokenizerAndMatchesOneRun) {
  const std::string flags = train_flags() + " --eval-every 10 --threads 2 --decay-iters 30";
  const fs::path one = dir_ / "one", two = dir_ / "two";
  ASSERT_EQ(glass("train --out " + q(one.string()) + " --iters 30" + flags).exit_code, 0);
  ASSERT_EQ(glass("train --out " + q(two.string()) + " --iters 20" + flags).exit_code, 0);
  const std::string tokenizer_before = read_file(fs::canonical(two / "current") / "tokenizer.json");
  const CliRun resumed = glass("train --out " + q(two.string()) + " --iters 30 --resume" + flags);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(read_file(fs::canonical(two / "current") / "tokenizer.json"), tokenizer_before);
  glass::SafetensorsContents a = glass::load_safetensors((one / "model.safetensors").string());
  glass::SafetensorsContents b = glass::load_safetensors((two / "model.safetensors").string());
  a.metadata.erase("run_id");
  b.metadata.erase("run_id");
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i)
    EXPECT_EQ(a.tensors[i].data, b.tensors[i].data) << a.tensors[i].name;
  EXPECT_EQ(read_file(fs::canonical(one / "current") / "tokenizer.json"), tokenizer_before);
}

TEST_F(BpeCli, AVocabularySizeTheTextCannotHaveIsRefused) {
  const CliRun small = glass("train --out " + q((dir_ / "small").string()) + " --iters 2" + tiny() +
                             " --data " + q(text_.string()) + " --tokenizer bpe --vocab-size 300");
  expect_error(small, "--vocab-size 300");
  EXPECT_NE(small.err.find("too small"), std::string::npos) << small.err;
  EXPECT_FALSE(fs::exists(dir_ / "small" / "current"));
  const CliRun large =
      glass("train --out " + q((dir_ / "large").string()) + " --iters 2" + tiny() + " --data " +
            q(text_.string()) + " --tokenizer bpe --vocab-size 60000");
  expect_error(large, "larger than this text supports");
  EXPECT_FALSE(fs::exists(dir_ / "large" / "current"));
  expect_error(glass("train --out " + q((dir_ / "bad").string()) + " --data " + q(text_.string()) +
                     " --tokenizer words"),
               "--tokenizer");
  // The context counts tokens: a validation split of fewer tokens than the context needs.
  const fs::path short_text = dir_ / "short.txt";
  write_file(short_text, glass_test::corpus_start(2500));
  const CliRun too_short =
      glass("train --out " + q((dir_ / "short").string()) + " --data " + q(short_text.string()) +
            " --tokenizer bpe --vocab-size 400 --context 200 --iters 2");
  expect_error(too_short, "--context 200 needs at least 201 tokens");
  EXPECT_NE(too_short.err.find("but the validation split of " + short_text.string() + " has "),
            std::string::npos)
      << too_short.err;
}

TEST_F(BpeCli, AMissingCorruptOrForeignTokenizerJsonIsRefused) {
  const std::string sample = " --tokens 5 --prompt 'Era'";
  // In the run directory the manifest catches a changed file first.
  {
    const fs::path run = dir_ / "edited";
    fs::remove_all(run);
    fs::copy(ckpt_, run, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    const fs::path file = fs::canonical(run / "current") / "tokenizer.json";
    write_file(file, read_file(file) + " ");
    expect_error(glass("sample -m " + q(run.string()) + sample), "tokenizer.json");
  }
  const fs::path missing = flat_copy("missing");
  fs::remove(missing / "tokenizer.json");
  expect_error(glass("sample -m " + q(missing.string()) + sample), "tokenizer.json is missing");
  expect_error(glass("eval -m " + q(missing.string()) + " --data " + q(text_.string())),
               "is missing");

  const fs::path corrupt = flat_copy("corrupt");
  write_file(corrupt / "tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
  expect_error(glass("sample -m " + q(corrupt.string()) + sample), "tokenizer.json");

  // Another vocabulary size than the embedding's rows.
  const std::u32string text = glass::utf8_to_u32(read_file(text_));
  const fs::path bigger = flat_copy("bigger");
  write_file(bigger / "tokenizer.json", glass::bpe_to_json(glass::BpeTokenizer::train(text, 400)));
  expect_error(glass("sample -m " + q(bigger.string()) + sample),
               "the tokenizer has 400 tokens but the model's embedding has 384 rows");

  // The same size but another vocabulary (trained on the whole text, not the training split).
  const fs::path other = flat_copy("other");
  write_file(other / "tokenizer.json", glass::bpe_to_json(glass::BpeTokenizer::train(text, 384)));
  expect_error(glass("sample -m " + q(other.string()) + sample), "is not the tokenizer");
}

TEST_F(BpeCli, ExportWritesTheBpeVocabulary) {
  // The files' contents are tested in tests/export (and run in llama.cpp by export_llama_cpp).
  const std::string m = " -m " + q(ckpt_.string());
  const CliRun g = glass("export" + m + " --format gguf --out " + q((dir_ / "x.gguf").string()));
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("a BPE vocabulary of 384 tokens, context 16 tokens"), std::string::npos)
      << g.out;
  const std::string gguf = read_file(dir_ / "x.gguf");
  EXPECT_EQ(gguf.substr(0, 4), "GGUF");
  // The vocabulary's texts are in the file once each: the byte tokens are not added again.
  std::size_t count = 0;
  for (std::size_t at = gguf.find("<0x0A>"); at != std::string::npos;
       at = gguf.find("<0x0A>", at + 1))
    ++count;
  EXPECT_EQ(count, 1u);

  const CliRun l = glass("export" + m + " --format llama2c --out " + q((dir_ / "l2c").string()));
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("seq_len 16 tokens"), std::string::npos) << l.out;
  // model.bin's header holds the vocabulary as it is (negative: wcls follows): 384 tokens.
  const std::string bin = read_file(dir_ / "l2c" / "model.bin");
  ASSERT_GE(bin.size(), 28u);
  std::int32_t vocab = 0;
  std::memcpy(&vocab, bin.data() + 20, 4);
  EXPECT_EQ(vocab, -384);
  // tokenizer.bin: the first pieces are run.c's <unk>, <s>, </s>, <0x00> (score 0, length, text).
  const std::string tok = read_file(dir_ / "l2c" / "tokenizer.bin");
  EXPECT_NE(tok.find(std::string("\5\0\0\0<unk>", 9) + std::string("\0\0\0\0\3\0\0\0<s>", 11)),
            std::string::npos);
  EXPECT_EQ(tok.find("\u2581"), std::string::npos);  // '▁' is written as ' '
}

/// The checkpoint's own tokenizer, read from its tokenizer.json.
glass::BpeTokenizer checkpoint_tokenizer(const fs::path& ckpt) {
  const fs::path file = fs::canonical(ckpt / "current") / "tokenizer.json";
  return glass::bpe_from_json(read_file(file), file.string());
}

TEST_F(BpeCli, InspectShowsEachTokenAsAChipWithItsTextAndId) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const glass::BpeTokenizer bpe = checkpoint_tokenizer(ckpt_);
  // A word of the text, a space and a character the text never had (byte fallback: 4 bytes).
  const std::string prompt = "Era um \xF0\x9F\x99\x82";  // "Era um 🙂"
  const std::vector<std::int32_t> ids = bpe.encode(glass::utf8_to_u32(prompt));
  ASSERT_GE(ids.size(), 6u);
  ASSERT_LE(ids.size(), 16u) << "the tiny model's context is 16 tokens";
  // The last four tokens are the emoji's UTF-8 bytes F0 9F 99 82 (id = byte + 3).
  EXPECT_EQ(std::vector<std::int32_t>(ids.end() - 4, ids.end()),
            (std::vector<std::int32_t>{0xF0 + 3, 0x9F + 3, 0x99 + 3, 0x82 + 3}));

  const CliRun r = glass("inspect -m " + q(ckpt_.string()) + " --prompt " + q(prompt));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The token row holds every token's text (its '▁' for a space) and the id row every id,
  // both in the order of the tokens, chips separated by '|'.
  const auto row = [&](const std::string& name) {
    const std::size_t at = r.out.find("\n  " + name);
    EXPECT_NE(at, std::string::npos) << name << " row missing:\n" << r.out;
    if (at == std::string::npos) return std::string();
    return r.out.substr(at + 3 + name.size(), r.out.find('\n', at + 1) - at - 3 - name.size());
  };
  const std::string texts = row("token     "), id_row = row("token id  ");
  std::size_t from = 0, id_from = 0;
  for (std::int32_t id : ids) {
    const std::size_t at = texts.find(bpe.token_text(id), from);
    EXPECT_NE(at, std::string::npos) << "token " << bpe.token_text(id) << " in " << texts;
    if (at != std::string::npos) from = at + 1;
    const std::size_t id_at = id_row.find(std::to_string(id), id_from);
    EXPECT_NE(id_at, std::string::npos) << "id " << id << " in " << id_row;
    if (id_at != std::string::npos) id_from = id_at + 1;
  }
  EXPECT_NE(texts.find("\u2581"), std::string::npos) << "a space is shown as '\u2581': " << texts;
  EXPECT_NE(texts.find("<0xF0>|<0x9F>|<0x99>|<0x82>"), std::string::npos) << texts;
  EXPECT_EQ(texts.find("\u2423"), std::string::npos) << "no character-model space mark: " << texts;
  EXPECT_NE(r.out.find(fmt::format("= {} tokens", ids.size())), std::string::npos) << r.out;
  // The next-token bars are labelled with vocabulary texts, and count the vocabulary's 384.
  EXPECT_NE(r.out.find("of 384 vocabulary entries"), std::string::npos) << r.out;

  // A snapshot's heatmap: rows labelled with the token texts.
  const CliRun soft = glass("inspect -m " + q(ckpt_.string()) + " --prompt " + q(prompt) +
                            " --snapshot attn.softmax");
  ASSERT_EQ(soft.exit_code, 0) << soft.err;
  EXPECT_NE(soft.out.find(fmt::format("{:>3} {}", 0, bpe.token_text(ids[0]))), std::string::npos)
      << soft.out;
  EXPECT_NE(soft.out.find(fmt::format("{:>3} <0x82>", ids.size() - 1)), std::string::npos)
      << soft.out;
}

TEST_F(BpeCli, InspectJsonAndHtmlCarryTheTokenTexts) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const glass::BpeTokenizer bpe = checkpoint_tokenizer(ckpt_);
  const std::string prompt = "Era uma vez";
  const std::vector<std::int32_t> ids = bpe.encode(glass::utf8_to_u32(prompt));
  const CliRun r = glass("inspect -m " + q(ckpt_.string()) + " --prompt " + q(prompt) +
                         " --json - --html " + q((dir_ / "bpe.html").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["tokenizer"], "bpe");
  EXPECT_EQ(j["tokens"].get<std::vector<std::int32_t>>(), ids);
  ASSERT_EQ(j["token_texts"].size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(j["token_texts"][i], bpe.token_text(ids[i])) << i;
  EXPECT_EQ(j["token_texts"][0].get<std::string>().rfind("\u2581", 0), 0u)
      << "the dummy prefix: the first token starts with '\u2581'";
  ASSERT_EQ(j["vocab"].size(), 384u);
  EXPECT_EQ(j["vocab"][0], "<unk>");
  EXPECT_EQ(j["vocab"][1], "<s>");
  EXPECT_EQ(j["vocab"][3 + 0x0A], "<0x0A>");
  EXPECT_EQ(j["vocab"][383], bpe.token_text(383));
  EXPECT_EQ(j["probs"]["shape"], json::array({ids.size(), 384}));
  EXPECT_EQ(j["chars"].size(), prompt.size()) << "the prompt's characters stay listed";
  // The page holds the same inspection for its chips.
  const std::string page = read_file(dir_ / "bpe.html");
  EXPECT_NE(page.find("\"token_texts\""), std::string::npos);
  EXPECT_NE(page.find("\"tokenizer\":\"bpe\""), std::string::npos);
}

TEST_F(BpeCli, InspectCountsTheContextInTokens) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.err;
  const glass::BpeTokenizer bpe = checkpoint_tokenizer(ckpt_);
  const std::string prompt =
      "Uma noite destas, vindo da cidade para o Engenho Novo, encontrei no trem";
  const std::size_t n = bpe.encode(glass::utf8_to_u32(prompt)).size();
  ASSERT_GT(n, 16u);
  ASSERT_LT(n, prompt.size()) << "fewer tokens than characters";
  const CliRun r = glass("inspect -m " + q(ckpt_.string()) + " --prompt " + q(prompt));
  expect_error(r, fmt::format("the prompt has {} tokens; the model's context is 16 tokens", n));
  EXPECT_NE(r.err.find("give at most 16 tokens"), std::string::npos) << r.err;
}

TEST_F(BpeCli, ACharacterCheckpointHasNoTokenizerJson) {
  const fs::path out = dir_ / "chars";
  const CliRun r = glass("train --out " + q(out.string()) + " --iters 2 --eval-every 2 --data " +
                         q(text_.string()) + tiny());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(fs::canonical(out / "current") / "tokenizer.json"));
  const json config = json::parse(read_file(out / "config.json"));
  EXPECT_EQ(config["tokenizer"]["type"], "char");
  // Characters: bits per byte from the validation split's characters and bytes.
  const std::u32string text = glass::utf8_to_u32(read_file(text_));
  const std::size_t n_train =
      static_cast<std::size_t>(std::floor(static_cast<double>(text.size()) * 0.9));
  const std::string expected = " (" + std::to_string(text.size() - n_train) + " characters over " +
                               std::to_string(glass::u32_to_utf8(text.substr(n_train)).size()) +
                               " bytes";
  EXPECT_NE(r.out.find(expected), std::string::npos) << r.out;
  const CliRun e = glass("eval -m " + q(out.string()) + " --data " + q(text_.string()));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.rfind("loss ", 0), 0u);
  EXPECT_NE(e.out.find("nats per character"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("bits per byte"), std::string::npos) << e.out;
}
