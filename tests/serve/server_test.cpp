// The server of `glass serve` (serve/server.hpp) through a real HTTP client
// (cpp-httplib's): every endpoint, its answers checked against the library computed directly
// (inspect, generate), every kind of bad request, a run directory watched while saves arrive,
// concurrent clients, a busy port and a clean stop. Servers listen on free ports (port 0).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "data/text.hpp"
#include "data/visible_text.hpp"
#include "fixtures.hpp"
#include "raw_control.hpp"
#include "raw_http.hpp"
#include "test_util.hpp"
#include "inspect/inspect.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "sample/sampler.hpp"
#include "serve/server.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::size_t kContext = 32;

/// A client with timeouts, so that no test can hang on a server that does not answer.
std::unique_ptr<httplib::Client> client_for(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(5, 0);
  return c;
}

json body_json(const httplib::Result& r) {
  EXPECT_TRUE(r) << "no answer: " << httplib::to_string(r.error());
  if (!r) return json();
  return json::parse(r->body, nullptr, false);
}

/// Waits (up to 20 s) for `done`; returns whether it came true.
template <class F>
bool eventually(F done) {
  for (int i = 0; i < 400; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

/// A save of the run directory `run` as the trainer makes it: a step directory with an untrained
/// model (weights from `seed`) and its log.csv, then one switch of `current`.
void commit_step_save(const fs::path& run, long step, std::uint64_t seed) {
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  const glass::ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), kContext);
  const std::string step_dir = glass::begin_save(run.string(), step);
  glass::save_model(step_dir, glass::Decoder(config, seed), tokenizer, "model.safetensors", "",
                    step);
  glass_test::write_file(
      fs::path(step_dir) / "log.csv",
      "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n0,0.001,4.0,4.1,0,0\n" +
          (step > 0 ? std::to_string(step) + ",0.001,3.0,3.25,100,1\n" : std::string()));
  glass::commit_save(run.string(), step_dir);
}

/// A server on a small untrained checkpoint (the test vocabulary of fixtures.hpp), on a free port.
class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("serve_test");
    checkpoint_ = (dir_ / "ckpt").string();
    glass_test::write_small_checkpoint(checkpoint_, kContext, 11, 0.3);
    glass::ServeOptions options;
    options.checkpoint = checkpoint_;
    options.port = 0;
    options.probe = "to be";
    options.poll_seconds = 0.05;
    server_ = std::make_unique<glass::Server>(options);
    port_ = server_->start();
    ASSERT_GT(port_, 0);
    client_ = client_for(port_);
  }
  void TearDown() override { server_.reset(); }
  /// The Host header line a client of this machine sends.
  std::string host() const { return "Host: 127.0.0.1:" + std::to_string(port_) + "\r\n"; }

  httplib::Result post(const std::string& path, const std::string& body) {
    return client_->Post(path.c_str(), body, "application/json");
  }
  /// Expects `status` and a JSON {"error": message} containing `words`.
  void expect_error(const httplib::Result& r, int status, const std::string& words) {
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, status) << r->body;
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(words), std::string::npos) << j["error"];
  }

  fs::path dir_;
  std::string checkpoint_;
  std::unique_ptr<glass::Server> server_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, ThePageIsTheEmbeddedLivePageWithItsScriptsInlined) {
  const auto r = client_->Get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(r->body.find("<title>GlassLLM live</title>"), std::string::npos);
  EXPECT_NE(r->body.find("function attentionLinesSvg"), std::string::npos) << "lines.js inlined";
  EXPECT_NE(r->body.find("function drawTraining"), std::string::npos) << "live.js inlined";
  EXPECT_NE(r->body.find("function drawNext"), std::string::npos) << "next_token.js inlined";
  // next_token.js comes first: live.js starts the page and calls it.
  EXPECT_LT(r->body.find("function setUpNextToken"), r->body.find("function drawTraining"));
  EXPECT_NE(r->body.find("function visible"), std::string::npos) << "common.js inlined";
  EXPECT_NE(r->body.find("function lossChartSvg"), std::string::npos) << "loss_chart.js inlined";
  EXPECT_EQ(r->body.find("<script src="), std::string::npos) << "no file to fetch besides the page";
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
}

TEST_F(ServerTest, InfoDescribesTheModel) {
  const json j = body_json(client_->Get("/api/info"));
  EXPECT_TRUE(j["loaded"].get<bool>());
  EXPECT_EQ(j["config"]["n_layers"], 2);
  EXPECT_EQ(j["config"]["n_heads"], 4);
  EXPECT_EQ(j["config"]["n_kv_heads"], 2);
  EXPECT_EQ(j["config"]["context_length"], kContext);
  EXPECT_EQ(j["max_prompt_tokens"], kContext);
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  ASSERT_EQ(j["vocab"].size(), tokenizer.vocab_size());
  EXPECT_EQ(j["vocab"][0], "") << "id 0 is the unknown token";
  EXPECT_EQ(j["vocab"][static_cast<std::size_t>(tokenizer.id_of(U'b'))], "b");
  EXPECT_EQ(j["probe"], "to be");
  EXPECT_EQ(j["status"], "");
  EXPECT_TRUE(j["step"].is_null())
      << "these weights record no step: null, not \"\" (" << j["step"] << ")";
  EXPECT_TRUE(body_json(client_->Get("/api/log"))["step"].is_null());
}

TEST_F(ServerTest, InspectAnswersTheAttentionAndLogitsThatInspectComputes) {
  const std::string prompt = "not to be";
  const auto r = post("/api/inspect", json{{"prompt", prompt}, {"top_k", 3}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);

  // The same forward pass, computed here without the server.
  const glass::Checkpoint loaded = glass::load_checkpoint(checkpoint_);
  const glass::Inspection ins = glass::inspect(loaded, glass::utf8_to_u32(prompt));
  const std::size_t n = prompt.size(), V = loaded.config().vocab_size;
  EXPECT_EQ(j["prompt"], prompt);
  EXPECT_EQ(j["tokens"].get<std::vector<std::int32_t>>(), ins.tokens);
  ASSERT_EQ(j["attention"].size(), 2u);
  for (std::size_t l = 0; l < 2; ++l) {
    const glass::Array& a = ins.get("layers." + std::to_string(l) + ".attn.softmax");
    ASSERT_EQ(j["attention"][l].size(), 4u);
    for (std::size_t h = 0; h < 4; ++h) {
      ASSERT_EQ(j["attention"][l][h].size(), n);
      for (std::size_t i = 0; i < n; ++i) {
        double row_sum = 0;
        for (std::size_t k = 0; k < n; ++k) {
          const double got = j["attention"][l][h][i][k].get<double>();
          EXPECT_NEAR(got, a.data()[(h * n + i) * n + k], 5.1e-5)
              << l << "," << h << "," << i << "," << k;
          if (k > i) {
            EXPECT_EQ(got, 0.0) << "a future key";
          }
          row_sum += got;
        }
        EXPECT_NEAR(row_sum, 1.0, n * 5.1e-5);
      }
    }
  }
  ASSERT_EQ(j["logits"].size(), n);
  ASSERT_EQ(j["logits"][n - 1].size(), V);
  for (std::size_t v = 0; v < V; ++v)
    EXPECT_NEAR(j["logits"][n - 1][v].get<double>(), ins.logits.data()[(n - 1) * V + v], 5.1e-5);
  const std::vector<glass::TopToken> top = glass::top_k(ins, n - 1, 3);
  ASSERT_EQ(j["top"][n - 1].size(), 3u);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(j["top"][n - 1][k]["id"], top[k].id);
    EXPECT_NEAR(j["top"][n - 1][k]["p"].get<double>(), top[k].prob, 5.1e-5);
  }
  // Every snapshot's summary: 11 per layer, embeddings, the final output ones, logits, probs.
  std::size_t softmax_rows = 0;
  for (const json& s : j["snapshots"])
    if (s["name"] == "layers.1.attn.softmax") {
      EXPECT_EQ(s["shape"], json::array({4, n, n}));
      ++softmax_rows;
    }
  EXPECT_EQ(softmax_rows, 1u);
  EXPECT_EQ(j["snapshots"].size(), ins.snapshots.size() + 2);
}

TEST_F(ServerTest, SampleStreamsTheTextGenerateProduces) {
  const std::string prompt = "to be";
  const json request = {{"prompt", prompt}, {"temperature", 0.9}, {"top_k", 5},
                        {"top_p", 0.95},    {"seed", 7},          {"n", 60}};
  const auto r = client_->Post("/api/sample", request.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(r->get_header_value("Transfer-Encoding"), "chunked") << "sent as it is generated";
  const std::string streamed = r->body;

  // The same generation without the server.
  const glass::Checkpoint loaded = glass::load_checkpoint(checkpoint_);
  glass::SamplingOptions sampling;
  sampling.temperature = 0.9;
  sampling.top_k = 5;
  sampling.top_p = 0.95;
  std::mt19937_64 rng(7);
  const std::vector<std::int32_t> ids = glass::generate(
      loaded.model(), loaded.tokenizer().chars()->encode(glass::utf8_to_u32(prompt)), 60, kContext,
      sampling, rng);
  EXPECT_EQ(streamed, loaded.tokenizer().chars()->decode_utf8(ids));
  EXPECT_EQ(glass::utf8_to_u32(streamed).size(), 60u);

  // Greedy (temperature 0) ignores the seed.
  const auto a = post("/api/sample",
                      json{{"prompt", "to"}, {"temperature", 0}, {"seed", 1}, {"n", 20}}.dump());
  const auto b = post("/api/sample",
                      json{{"prompt", "to"}, {"temperature", 0}, {"seed", 2}, {"n", 20}}.dump());
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->body, b->body);
  // No prompt: starts at a new paragraph.
  const auto c = post("/api/sample", json{{"n", 5}}.dump());
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200);
  EXPECT_EQ(glass::utf8_to_u32(c->body).size(), 5u);
}

// The samplers of glass sample (min-p, llama.cpp's repetition penalty) in the API body, the
// same text as generate() with them; one context for inspect and sample; errors in the API's
// words (the JSON field "allow_unknown", not the command line's --allow-unknown).
TEST_F(ServerTest, SampleTakesMinPAndTheRepetitionPenaltyAndErrorsNameJsonFields) {
  const json request = {
      {"prompt", "to be"},  {"temperature", 0.9}, {"min_p", 0.1}, {"repeat_penalty", 1.5},
      {"repeat_last_n", 8}, {"seed", 7},          {"n", 60}};
  const auto r = post("/api/sample", request.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const glass::Checkpoint loaded = glass::load_checkpoint(checkpoint_);
  glass::SamplingOptions sampling;
  sampling.temperature = 0.9;
  sampling.min_p = 0.1;
  sampling.repeat_penalty = 1.5;
  sampling.repeat_last_n = 8;
  std::mt19937_64 rng(7);
  const std::vector<std::int32_t> ids = glass::generate(
      loaded.model(), loaded.tokenizer().chars()->encode(glass::utf8_to_u32("to be")), 60, kContext,
      sampling, rng);
  EXPECT_EQ(r->body, loaded.tokenizer().chars()->decode_utf8(ids));

  // A prompt longer than the context: a sample keeps its last kContext characters (as glass
  // sample does), an inspection refuses it, both saying the context the same way.
  const std::string prompt = std::string(kContext, 'b') + "to be";
  const auto long_sample =
      post("/api/sample", json{{"prompt", prompt}, {"temperature", 0}, {"n", 10}}.dump());
  const auto cropped =
      post("/api/sample", json{{"prompt", prompt.substr(5)}, {"temperature", 0}, {"n", 10}}.dump());
  ASSERT_TRUE(long_sample && cropped);
  EXPECT_EQ(long_sample->status, 200) << long_sample->body;
  EXPECT_EQ(long_sample->body, cropped->body);
  expect_error(post("/api/inspect", json{{"prompt", prompt}}.dump()), 400,
               "the prompt has 37 characters; the model's context is 32 characters");
  const json info = body_json(client_->Get("/api/info"));
  EXPECT_EQ(info["max_prompt_tokens"], kContext);
  EXPECT_EQ(info["context_note"], glass::context_sentence(kContext));

  for (const char* path : {"/api/inspect", "/api/sample"}) {
    const auto bad = post(path, "{\"prompt\": \"to be?\"}");
    expect_error(bad, 400, "send \"allow_unknown\": true");
    ASSERT_TRUE(bad);
    EXPECT_EQ(bad->body.find("--allow-unknown"), std::string::npos) << path << ": " << bad->body;
  }
}

// The live page shows the distribution of POST /api/next: the probabilities generate() draws
// the character after the prompt from (the library's sampler, not a copy), so the first
// character /api/sample streams for a seed is the one draw() picks from them with that seed.
TEST_F(ServerTest, NextAnswersTheProbabilitiesTheSampleIsDrawnFrom) {
  const std::string prompt = "to be or";
  json request = {{"prompt", prompt}, {"temperature", 0.7},    {"top_k", 6},
                  {"top_p", 0.9},     {"repeat_penalty", 1.3}, {"repeat_last_n", 4}};
  const auto r = post("/api/next", request.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = json::parse(r->body);
  const std::vector<double> probs = j["probs"].get<std::vector<double>>();

  const glass::Checkpoint loaded = glass::load_checkpoint(checkpoint_);
  const std::vector<std::int32_t> ids =
      loaded.tokenizer().chars()->encode(glass::utf8_to_u32(prompt));
  EXPECT_EQ(j["tokens"].get<std::vector<std::int32_t>>(), ids);
  ASSERT_EQ(probs.size(), loaded.config().vocab_size);
  glass::SamplingOptions sampling;
  sampling.temperature = 0.7;
  sampling.top_k = 6;
  sampling.top_p = 0.9;
  sampling.repeat_penalty = 1.3;
  sampling.repeat_last_n = 4;
  glass::NextTokenLogits next_logits(loaded.model(), kContext, sampling);
  const std::vector<double> logits = next_logits(ids);
  const std::vector<double> expected = glass::generation_probs(logits, sampling, ids);
  for (std::size_t id = 0; id < probs.size(); ++id) EXPECT_DOUBLE_EQ(probs[id], expected[id]) << id;
  EXPECT_EQ(probs[0], 0.0) << "the unknown id is never drawn";
  // Not the plain softmax: top-k and top-p leave at most 6 characters, and the kept ones keep
  // the ratios exp((z_a - z_b) / T) of their penalised logits.
  std::vector<double> z = logits;  // the repetition penalty by hand: the last 4 ids, once each
  for (const std::int32_t id : std::set<std::int32_t>(ids.end() - 4, ids.end())) {
    double& v = z[static_cast<std::size_t>(id)];
    v = v > 0 ? v / 1.3 : v * 1.3;
  }
  std::vector<std::size_t> kept;
  for (std::size_t id = 0; id < probs.size(); ++id)
    if (probs[id] > 0) kept.push_back(id);
  ASSERT_GE(kept.size(), 2u) << "an untrained model spreads its mass: more than one is kept";
  EXPECT_LE(kept.size(), 6u);
  for (const std::size_t a : kept) {  // the softmax runs in float: 1e-6 relative
    const double ratio = std::exp((z[a] - z[kept[0]]) / 0.7);
    EXPECT_NEAR(probs[a] / probs[kept[0]], ratio, 1e-6 * ratio) << a;
  }
  EXPECT_NEAR(std::accumulate(probs.begin(), probs.end(), 0.0), 1.0, 1e-6);

  for (const std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u}) {
    request["seed"] = seed;
    request["n"] = 1;
    const auto sample = post("/api/sample", request.dump());
    ASSERT_TRUE(sample);
    std::mt19937_64 rng(seed);
    EXPECT_EQ(sample->body, loaded.tokenizer().chars()->decode_utf8({glass::draw(probs, rng)}))
        << "seed " << seed;
  }

  // Greedy: all mass on one character.
  const json greedy =
      body_json(post("/api/next", json{{"prompt", prompt}, {"temperature", 0}}.dump()));
  std::size_t ones = 0;
  for (const json& p : greedy["probs"]) ones += p.get<double>() == 1.0;
  EXPECT_EQ(ones, 1u);

  // Checked as /api/sample checks them.
  expect_error(post("/api/next", "{\"prompt\": \"to\", \"seed\": 1}"), 400,
               "unknown parameter 'seed'");
  expect_error(post("/api/next", "{\"temperature\": -1}"), 400, "'temperature'");
  expect_error(post("/api/next", "{\"top_p\": 0}"), 400, "'top_p'");
  expect_error(post("/api/next", "{\"top_k\": 1000}"), 400, "'top_k'");
  expect_error(post("/api/next", "{\"prompt\": \"to be?\"}"), 400, "send \"allow_unknown\": true");
  expect_error(post("/api/next", "[1, 2]"), 400, "JSON object");
}

TEST_F(ServerTest, TheStaticInspectorPageIsServedForAPrompt) {
  const auto r = client_->Get("/inspector?prompt=to%20be");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_NE(r->body.find("<title>GlassLLM inspector</title>"), std::string::npos);
  EXPECT_NE(r->body.find("\"prompt\":\"to be\""), std::string::npos)
      << "the inspection is in the page";
  expect_error(client_->Get("/inspector"), 400, "prompt");
  expect_error(client_->Get("/inspector?prompt=xyz"), 400, "vocabulary");
}

TEST_F(ServerTest, LogAnswersTheStepsSinceAStepAndTheEvaluations) {
  // The trainer's logs, written here: steps.csv (with a line still being written) and log.csv.
  const fs::path steps = fs::path(checkpoint_) / "steps.csv";
  {
    std::ofstream out(steps);
    out << "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n";
    for (int s = 1; s <= 5; ++s)
      out << s << "," << 4.0 - 0.1 * s << ",0.001," << 1.5 << ",1000," << s * 0.1 << "\n";
    out << "6,3.4,0.00";  // half a line
  }
  glass_test::write_file(
      fs::path(checkpoint_) / "log.csv",
      "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n0,0.001,4.2,4.25,0,0\n5,0.001,3.5,,1000,0.5\n");
  json j = body_json(client_->Get("/api/log"));
  ASSERT_EQ(j["steps"].size(), 5u);
  EXPECT_EQ(j["steps"][0]["step"], 1);
  EXPECT_DOUBLE_EQ(j["steps"][4]["loss"].get<double>(), 3.5);
  EXPECT_EQ(j["last_step"], 5);
  ASSERT_EQ(j["evals"].size(), 2u);
  EXPECT_DOUBLE_EQ(j["evals"][0]["val_loss"].get<double>(), 4.25);
  EXPECT_TRUE(j["evals"][1]["val_loss"].is_null()) << "not measured: null";

  j = body_json(client_->Get("/api/log?since=3"));
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][0]["step"], 4);

  // The trainer finishes the line and writes another: the log grows.
  {
    std::ofstream out(steps, std::ios::app);
    out << "1,1.2,1000,0.6\n7,3.3,0.001,1.1,1000,0.7\n";
  }
  j = body_json(client_->Get("/api/log?since=5"));
  ASSERT_EQ(j["steps"].size(), 2u);
  EXPECT_EQ(j["steps"][0]["step"], 6);
  EXPECT_DOUBLE_EQ(j["steps"][0]["lr"].get<double>(), 0.001);
  EXPECT_EQ(j["steps"][1]["step"], 7);
  EXPECT_EQ(body_json(client_->Get("/api/log?since=7"))["steps"].size(), 0u);
}

TEST_F(ServerTest, HostileStepRowsAreLeftOutAndLastStepIsAnInteger) {
  // A hand-edited or hostile steps.csv: steps that are not integers from 0 to 2^53.
  glass_test::write_file(
      fs::path(checkpoint_) / "steps.csv",
      "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n"
      "1,4,0.001,1,1000,0.1\n2,3.9,0.001,1,1000,0.2\n"
      "1e+23,3,0.001,1,1000,0.3\n-4,3,0.001,1,1000,0.3\n2.5,3,0.001,1,1000,0.3\n"
      "nan,3,0.001,1,1000,0.3\n,3,0.001,1,1000,0.3\n9007199254740994,3,0.001,1,1000,0.3\n");
  const json j = body_json(client_->Get("/api/log?since=-1"));
  ASSERT_EQ(j["steps"].size(), 2u) << j.dump();
  ASSERT_TRUE(j["last_step"].is_number_integer()) << j["last_step"];
  EXPECT_EQ(j["last_step"].get<long long>(), 2);
  EXPECT_EQ(j["refused_rows"], 6);
  // The last step is one `since` takes.
  EXPECT_EQ(
      client_->Get("/api/log?since=" + std::to_string(j["last_step"].get<long long>()))->status,
      200);
}

TEST_F(ServerTest, DuplicateKeysAreRefusedAndErrorsNameTheJsonFields) {
  expect_error(post("/api/inspect", "{\"prompt\": \"to\", \"prompt\": \"be\"}"), 400,
               "\"prompt\" appears twice");
  expect_error(post("/api/sample", "{\"n\": 3, \"seed\": 1, \"n\": 2000}"), 400,
               "\"n\" appears twice");
  // An API caller is told the JSON field, not the command line's --allow-unknown.
  for (const auto& r : {post("/api/inspect", "{\"prompt\": \"to be?\"}"),
                        post("/api/sample", "{\"prompt\": \"to be?\"}")}) {
    expect_error(r, 400, "\"allow_unknown\": true");
    EXPECT_EQ(r->body.find("--allow-unknown"), std::string::npos) << r->body;
  }
  const auto page = client_->Get("/inspector?prompt=to%20be%3F");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 400);
  EXPECT_EQ(page->body.find("--allow-unknown"), std::string::npos) << page->body;
  // Still answered when the field is given.
  EXPECT_EQ(post("/api/inspect", "{\"prompt\": \"to be?\", \"allow_unknown\": true}")->status, 200);
}

// A prompt's character outside the vocabulary: the library's typed error states the facts (which
// character, where), the server maps the type to 400 and adds the fix in the API's words, never
// the command line's flag.
TEST_F(ServerTest, AnUnknownCharacterIs400WithTheFactsAndTheJsonField) {
  for (const char* path : {"/api/inspect", "/api/sample", "/api/next"}) {
    const auto r = post(path, "{\"prompt\": \"to be?\"}");
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    const std::string error = json::parse(r->body)["error"].get<std::string>();
    EXPECT_NE(error.find("'?' (U+003F) at position 5"), std::string::npos) << path << ": " << error;
    EXPECT_NE(error.find("send \"allow_unknown\": true"), std::string::npos) << error;
    EXPECT_EQ(error.find("--"), std::string::npos) << "a command-line flag: " << error;
  }
}

TEST_F(ServerTest, EvalsHoldTheProbesAttentionAndASample) {
  const json j = body_json(client_->Get("/api/evals"));
  EXPECT_EQ(j["probe"], "to be");
  EXPECT_EQ(j["chars"], json::array({"t", "o", " ", "b", "e"}));
  ASSERT_EQ(j["evaluations"].size(), 1u);
  const json& e = j["evaluations"][0];
  EXPECT_EQ(e["index"], 0);
  EXPECT_EQ(e["save"], "ckpt");
  ASSERT_EQ(e["attention"].size(), 2u);
  ASSERT_EQ(e["attention"][0].size(), 4u);
  ASSERT_EQ(e["attention"][0][0].size(), 5u);
  EXPECT_EQ(e["attention"][0][0][0][0], 1.0) << "the first position sees only itself";
  EXPECT_EQ(glass::utf8_to_u32(e["sample"].get<std::string>()).size(), 120u);
  EXPECT_EQ(body_json(client_->Get("/api/evals?since=1"))["evaluations"].size(), 0u);
}

TEST_F(ServerTest, BadRequestsAnswer400WithAMessageAndTheServerKeepsAnswering) {
  expect_error(post("/api/inspect", "{\"prompt\": "), 400, "not valid JSON");
  expect_error(post("/api/inspect", "[1, 2]"), 400, "JSON object");
  expect_error(post("/api/inspect", "{\"prompt\": 5}"), 400, "'prompt' must be a string");
  expect_error(post("/api/inspect", "{}"), 400, "give the prompt");
  expect_error(post("/api/inspect", "{\"prompt\": \"to\", \"temp\": 1}"), 400,
               "unknown parameter 'temp'");
  expect_error(post("/api/inspect", "{\"prompt\": \"\"}"), 400, "empty");
  expect_error(post("/api/inspect", "{\"prompt\": \"to be?\"}"), 400,
               "'?'");  // not in the vocabulary
  expect_error(post("/api/inspect", json{{"prompt", std::string(kContext + 1, 't')}}.dump()), 400,
               "context");
  expect_error(post("/api/inspect", "{\"prompt\": \"to\", \"top_k\": 0}"), 400, "'top_k'");
  expect_error(post("/api/inspect", "{\"prompt\": \"\xff\xfe\"}"), 400,
               "not valid JSON");  // bad UTF-8
  expect_error(post("/api/sample", "{\"temperature\": -1}"), 400, "'temperature'");
  expect_error(post("/api/sample", "{\"temperature\": \"hot\"}"), 400, "'temperature'");
  expect_error(post("/api/sample", "{\"temperature\": 1e300}"), 400, "'temperature'");
  expect_error(post("/api/sample", "{\"top_p\": 0}"), 400, "'top_p'");
  expect_error(post("/api/sample", "{\"top_p\": 1.5}"), 400, "'top_p'");
  expect_error(post("/api/sample", "{\"top_k\": 2.5}"), 400, "'top_k'");
  expect_error(post("/api/sample", "{\"top_k\": 100000}"), 400, "'top_k'");
  expect_error(post("/api/sample", "{\"n\": 0}"), 400, "'n'");
  expect_error(post("/api/sample", "{\"n\": 1000000000}"), 400, "'n'");
  expect_error(post("/api/sample", "{\"seed\": -3}"), 400, "'seed'");
  expect_error(post("/api/sample", "{\"prompt\": \"to be!\"}"), 400, "never saw");
  expect_error(post("/api/sample", "{\"min_p\": 1.5}"), 400, "'min_p'");
  expect_error(post("/api/sample", "{\"repeat_penalty\": 0}"), 400, "'repeat_penalty'");
  expect_error(post("/api/sample", "{\"repeat_last_n\": -1}"), 400, "'repeat_last_n'");
  expect_error(client_->Get("/api/log?since=abc"), 400, "'since'");
  expect_error(client_->Get("/api/log?since=-5"), 400, "'since'");
  expect_error(client_->Get("/api/evals?since=1x"), 400, "'since'");

  // Oversized body (the limit is 64 KiB): 413 with a message, the body is not read.
  expect_error(post("/api/inspect", json{{"prompt", std::string(100 * 1024, 't')}}.dump()), 413,
               "too large");
  // Unknown paths, and paths that try to leave: 404 (never a file of the machine).
  expect_error(client_->Get("/nothing"), 404, "no such page");
  // Another method on a known path: 405 with the one it answers (Allow), not 404.
  for (const char* path :
       {"/api/inspect", "/api/sample", "/api/next", "/api/lens", "/api/ablate"}) {
    const auto get = client_->Get(path);
    expect_error(get, 405, std::string(path) + " answers POST only, not GET");
    EXPECT_EQ(get->get_header_value("Allow"), "POST") << path;
    const auto put = client_->Put(path, "{}", "application/json");
    ASSERT_TRUE(get && put) << path;
    expect_error(put, 405, "answers POST only, not PUT");
    EXPECT_EQ(put->get_header_value("Allow"), "POST") << path;
  }
  for (const char* path :
       {"/", "/inspector", "/api/info", "/api/log", "/api/evals", "/api/interp"}) {
    const auto r = post(path, "{}");
    ASSERT_TRUE(r) << path;
    expect_error(r, 405, "answers GET only, not POST");
    EXPECT_EQ(r->get_header_value("Allow"), "GET") << path;
  }
  for (const char* path : {"/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/live.js",
                           "/index.html", "/..%2f..%2fetc%2fpasswd", "//etc/passwd"}) {
    const auto r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_TRUE(r->status == 404 || r->status == 400) << path << ": " << r->status;
    EXPECT_EQ(r->body.find("root:"), std::string::npos) << path;
  }
  // Still answering (requests that are not HTTP at all: NotHttpAnswers4xx... below).
  const auto r = post("/api/inspect", "{\"prompt\": \"to be\"}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

/// A TCP connection to the server that sends `bytes` (raw HTTP) and is left open.
int raw_connection(int port, const std::string& bytes) {
  const int fd = glass_test::connect_local(port);
  if (fd < 0) return -1;
  if (send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
    close(fd);
    return -1;
  }
  return fd;
}

using glass_test::status_line;

TEST_F(ServerTest, RequestsThatAreNotHttpAnswer4xxAndTheServerKeepsAnswering) {
  // cpp-httplib (Debian's 0.11) reads the request line itself: longer than 8192 bytes
  // (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH) answers 414; a line that is not "METHOD TARGET
  // HTTP/1.0|1.1" (an unknown method or version) answers 400. It closes no connection unanswered.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"GARBAGE\r\n\r\n", "HTTP/1.1 400"},
      {"GET /" + std::string(10000, 'a') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "HTTP/1.1 414"},
      {"GET / HTTP/9.9\r\n\r\n", "HTTP/1.1 400"},
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11) + "\r\n\r\n",
       "HTTP/1.1 400"},  // TLS hello
  };
  for (const auto& [request, want] : cases) {
    const int fd = raw_connection(port_, request);
    ASSERT_GE(fd, 0);
    const std::string line = status_line(fd);
    close(fd);
    EXPECT_EQ(line.rfind(want, 0), 0u) << "got '" << line << "' for " << request.substr(0, 40);
  }
  const auto r = post("/api/inspect", "{\"prompt\": \"to be\"}");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(ServerTest, ClientsThatLeaveMidAnswerOrNeverFinishTheirRequestHoldNothing) {
  // Clients that hang up while a long sample streams (the server's next write fails).
  for (int k = 0; k < 3; ++k) {
    const std::string body = json{{"n", 2000}, {"seed", k}}.dump();
    const int fd = raw_connection(port_, "POST /api/sample HTTP/1.1\r\n" + host() +
                                             "Content-Type: application/json\r\n"
                                             "Content-Length: " +
                                             std::to_string(body.size()) + "\r\n\r\n" + body);
    ASSERT_GE(fd, 0);
    char buf[64];
    EXPECT_GT(recv(fd, buf, sizeof(buf), 0), 0) << "the answer began";
    close(fd);
  }
  // A client that announces a body and never sends it, still connected.
  const int slow = raw_connection(
      port_, "POST /api/inspect HTTP/1.1\r\n" + host() + "Content-Length: 100\r\n\r\n{\"pro");
  ASSERT_GE(slow, 0);
  // Everyone else is answered, and the model is free again.
  const auto r = post("/api/sample", json{{"n", 20}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(glass::utf8_to_u32(r->body).size(), 20u);
  const auto i = post("/api/inspect", "{\"prompt\": \"to be\"}");
  ASSERT_TRUE(i);
  EXPECT_EQ(i->status, 200);
  close(slow);
}

/// The status line of the answer to one raw request (a new connection, closed after).
std::string status_of(int port, const std::string& request) {
  const int fd = raw_connection(port, request);
  if (fd < 0) return "cannot connect";
  const std::string line = status_line(fd);
  close(fd);
  return line;
}

/// A POST of `body` to /api/sample with the given extra header lines (each ending in CRLF).
std::string sample_post(int port, const std::string& headers,
                        const std::string& body = "{\"n\": 3}") {
  return "POST /api/sample HTTP/1.1\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

TEST_F(ServerTest, OnlyThisMachinesNamesInHostAndOnlySameOriginJsonPostsAreAnswered) {
  const std::string port = std::to_string(port_);
  const std::string json_type = "Content-Type: application/json\r\n";
  // A DNS-rebinding page reaches 127.0.0.1 under its own name: 421, for GET and POST alike.
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\nHost: evil.example\r\n\r\n")
                .rfind("HTTP/1.1 421", 0),
            0u);
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\nHost: evil.example:" + port + "\r\n\r\n")
                .rfind("HTTP/1.1 421", 0),
            0u);
  EXPECT_EQ(status_of(port_, sample_post(port_, "Host: evil.example\r\n" + json_type))
                .rfind("HTTP/1.1 421", 0),
            0u);
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
                .rfind("HTTP/1.1 421", 0),
            0u);
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 421", 0),
            0u);  // no Host in HTTP/1.0: no name of this machine
  // An HTTP/1.1 request without Host: 400 (RFC 9112, section 3.2).
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(status_of(port_, sample_post(port_, json_type)).rfind("HTTP/1.1 400", 0), 0u);
  // Two Host lines: 400 (RFC 9112, section 3.2), even when both name this server.
  for (const std::string& second : {std::string("evil.example"), "127.0.0.1:" + port})
    EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\nHost: 127.0.0.1:" + port +
                                   "\r\nHost: " + second + "\r\n\r\n")
                  .rfind("HTTP/1.1 400", 0),
              0u)
        << second;
  // This machine's names with the port: answered.
  for (const std::string name : {"127.0.0.1", "localhost", "LocalHost", "[::1]"})
    EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\nHost: " + name + ":" + port + "\r\n\r\n")
                  .rfind("HTTP/1.1 200", 0),
              0u)
        << name;
  // A POST computes: only with Content-Type application/json (415 otherwise: a form or a
  // text/plain fetch of another site needs no permission from the browser) and from this
  // server's own page or no page (403 for another Origin).
  EXPECT_EQ(status_of(port_, sample_post(port_, host() + "Content-Type: text/plain\r\n"))
                .rfind("HTTP/1.1 415", 0),
            0u);
  EXPECT_EQ(status_of(port_, sample_post(port_, host())).rfind("HTTP/1.1 415", 0), 0u);
  EXPECT_EQ(
      status_of(port_, sample_post(port_, host() + json_type + "Origin: http://evil.example\r\n"))
          .rfind("HTTP/1.1 403", 0),
      0u);
  EXPECT_EQ(status_of(port_, sample_post(port_, host() + json_type + "Origin: null\r\n"))
                .rfind("HTTP/1.1 403", 0),
            0u);
  EXPECT_EQ(
      status_of(port_,
                sample_post(port_,
                            host() + "Content-Type: text/plain\r\nOrigin: http://evil.example\r\n"))
          .rfind("HTTP/1.1 4", 0),
      0u);
  EXPECT_EQ(status_of(port_, sample_post(port_, host() + json_type +
                                                    "Origin: http://127.0.0.1:" + port + "\r\n"))
                .rfind("HTTP/1.1 200", 0),
            0u);
  EXPECT_EQ(
      status_of(port_,
                sample_post(port_, host() + "Content-Type: Application/JSON; charset=utf-8\r\n"))
          .rfind("HTTP/1.1 200", 0),
      0u);
  // The refusal says why, as JSON.
  const int fd = raw_connection(port_, "GET /api/info HTTP/1.1\r\nHost: evil.example\r\n\r\n");
  ASSERT_GE(fd, 0);
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  close(fd);
  EXPECT_NE(reply.find("not to Host 'evil.example'"), std::string::npos) << reply;
  EXPECT_NE(reply.find("--allow-host"), std::string::npos) << reply;
}

TEST(Server, AnotherNameIsAnsweredWhenAllowed) {
  const fs::path dir = glass_test::temp_dir("serve_allow");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), kContext, 11);
  glass::ServeOptions options;
  options.checkpoint = (dir / "ckpt").string();
  options.port = 0;
  options.allowed_hosts = {"glass.lan", "::2"};
  glass::Server server(options);
  const int port = server.start();
  const std::string p = std::to_string(port);
  EXPECT_EQ(status_of(port, "GET /api/info HTTP/1.1\r\nHost: glass.lan:" + p + "\r\n\r\n")
                .rfind("HTTP/1.1 200", 0),
            0u);
  EXPECT_EQ(status_of(port, "GET /api/info HTTP/1.1\r\nHost: [::2]:" + p + "\r\n\r\n")
                .rfind("HTTP/1.1 200", 0),
            0u);
  EXPECT_EQ(status_of(port, "GET /api/info HTTP/1.1\r\nHost: other.lan:" + p + "\r\n\r\n")
                .rfind("HTTP/1.1 421", 0),
            0u);
}

TEST_F(ServerTest, BodiesAreBoundedWhateverTheirFraming) {
  // Chunked: refused (413) as soon as the chunks pass 64 KiB, whatever the total announced.
  std::string chunked = "POST /api/inspect HTTP/1.1\r\n" + host() +
                        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 100; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";  // 100 KiB
  chunked += "0\r\n\r\n";
  EXPECT_EQ(status_of(port_, chunked).rfind("HTTP/1.1 413", 0), 0u);
  // A small chunked body is read and answered.
  const std::string prompt = "{\"prompt\": \"to be\"}";
  EXPECT_EQ(
      status_of(port_,
                "POST /api/inspect HTTP/1.1\r\n" + host() +
                    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n" +
                    prompt.substr(0, 5) + "\r\n" + fmt::format("{:x}", prompt.size() - 5) + "\r\n" +
                    prompt.substr(5) + "\r\n0\r\n\r\n")
          .rfind("HTTP/1.1 200", 0),
      0u);
  // An announced length over the limit: 413 before the body is sent.
  EXPECT_EQ(
      status_of(port_, "POST /api/inspect HTTP/1.1\r\n" + host() +
                           "Content-Type: application/json\r\nContent-Length: 1000000000\r\n\r\n")
          .rfind("HTTP/1.1 413", 0),
      0u);
  // Framing that two readers could read differently (request smuggling), or that is not HTTP/1.1's.
  for (const std::string& framing :
       {std::string("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
        std::string("Content-Length: 5\r\nContent-Length: 6\r\n"),
        std::string("Content-Length: -5\r\n"), std::string("Content-Length: 0x10\r\n")})
    EXPECT_EQ(status_of(port_, "POST /api/inspect HTTP/1.1\r\n" + host() + framing + "\r\n{}")
                  .rfind("HTTP/1.1 400", 0),
              0u)
        << framing;
  EXPECT_EQ(status_of(port_,
                      "POST /api/inspect HTTP/1.1\r\n" + host() + "Transfer-Encoding: gzip\r\n\r\n")
                .rfind("HTTP/1.1 501", 0),
            0u);
  EXPECT_EQ(status_of(port_, "POST /api/inspect HTTP/1.1\r\n" + host() +
                                 "Transfer-Encoding: chunked\r\n\r\nzz\r\n")
                .rfind("HTTP/1.1 400", 0),
            0u);
  // Headers over 16 KiB: 431.
  EXPECT_EQ(status_of(port_, "GET /api/info HTTP/1.1\r\n" + host() +
                                 "X-Big: " + std::string(20000, 'b') + "\r\n\r\n")
                .rfind("HTTP/1.1 431", 0),
            0u);
  // A client that waits for "100 Continue" before its body gets it, then the answer.
  const int fd = raw_connection(
      port_, "POST /api/inspect HTTP/1.1\r\n" + host() +
                 "Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " +
                 std::to_string(prompt.size()) + "\r\n\r\n");
  ASSERT_GE(fd, 0);
  EXPECT_EQ(status_line(fd), "HTTP/1.1 100 Continue");
  ASSERT_EQ(send(fd, prompt.data(), prompt.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(prompt.size()));
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply.substr(0, 200);
  EXPECT_EQ(reply.find("HTTP/1.1 100"), std::string::npos) << "one 100 Continue only";
}

TEST(Server, SlowClientsAreClosedAndNeverKeepANormalRequestWaiting) {
  const fs::path dir = glass_test::temp_dir("serve_slow");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), kContext, 11);
  glass::ServeOptions options;
  options.checkpoint = (dir / "ckpt").string();
  options.port = 0;
  options.request_seconds = 6;  // the deadline of a whole request
  glass::Server server(options);
  const int port = server.start();
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port) + "\r\n";
  // Slowloris: 40 connections that send one header line a second and never end their request
  // (more than the 16 workers and the 32 connections that may be sending at once).
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) {
    slow.push_back(raw_connection(port, "GET /api/info HTTP/1.1\r\n" + host));
    ASSERT_GE(slow.back(), 0);
  }
  std::atomic<bool> done{false};
  std::thread dripper([&] {
    while (!done) {
      for (int fd : slow) send(fd, "X-Slow: 1\r\n", 11, MSG_NOSIGNAL);
      for (int i = 0; i < 20 && !done; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  // Meanwhile normal requests are answered again and again, each long before the slow ones'
  // 6 s deadline that a request queued behind them would wait for (the bound is loose so that a
  // loaded machine does not fail it: this is no speed measurement).
  auto client = client_for(port);
  for (int k = 0; k < 6; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = client->Get("/api/info");
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(seconds, 3.0) << "request " << k;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  // Every slow one was answered 408 and closed: evicted to make room, or at its deadline.
  int timed_out = 0;
  for (int fd : slow) {
    const std::string line = status_line(fd);  // up to 10 s (raw_connection's receive timeout)
    timed_out += line.rfind("HTTP/1.1 408", 0) == 0 ? 1 : 0;
    close(fd);
  }
  done = true;
  dripper.join();
  EXPECT_EQ(timed_out, 40);
}

TEST_F(ServerTest, EightClientsTimesFiftyRequestsAreAllAnswered) {
  constexpr int kClients = 8, kRequests = 50;
  const std::vector<std::string> prompts = {"to",   "be", "or",  "not",
                                            "that", "is", "the", "question"};
  std::atomic<int> ok{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = client_for(port_);
      for (int k = 0; k < kRequests; ++k) {
        bool good = false;
        switch (k % 4) {
          case 0: {  // inspect: the answer is for this client's prompt
            const auto r = client->Post("/api/inspect", json{{"prompt", prompts[c]}}.dump(),
                                        "application/json");
            good = r && r->status == 200 && json::parse(r->body)["prompt"] == prompts[c];
            break;
          }
          case 1: {
            const auto r = client->Get("/api/info");
            good = r && r->status == 200 && json::parse(r->body)["loaded"] == true;
            break;
          }
          case 2: {
            const auto r = client->Post("/api/sample",
                                        json{{"prompt", prompts[c]}, {"n", 10}, {"seed", k}}.dump(),
                                        "application/json");
            good = r && r->status == 200 && glass::utf8_to_u32(r->body).size() == 10;
            break;
          }
          default: {
            const auto r = client->Get("/api/log?since=-1");
            good = r && r->status == 200 && json::parse(r->body).contains("steps");
          }
        }
        (good ? ok : wrong)++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), kClients * kRequests);
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ServerTest, ABusyPortIsAClearErrorAndStopIsClean) {
  glass::ServeOptions options;
  options.checkpoint = checkpoint_;
  options.port = port_;  // taken by the fixture's server
  glass::Server second(options);
  try {
    second.start();
    FAIL() << "a second server on a busy port started";
  } catch (const glass::ServeError& e) {
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::to_string(port_)), std::string::npos) << e.what();
  }
  server_->stop();
  server_->stop();  // twice is fine
  auto c = client_for(port_);
  c->set_connection_timeout(1, 0);
  EXPECT_FALSE(c->Get("/api/info")) << "stopped: nothing answers";
}

TEST(Server, AMissingDirectoryOrABrokenCheckpointIsRefused) {
  glass::ServeOptions options;
  options.checkpoint = "/nonexistent/glass-serve-dir";
  EXPECT_THROW(glass::Server{options}, glass::ServeError);
  const fs::path dir = glass_test::temp_dir("serve_broken");
  glass_test::write_small_checkpoint(dir.string(), kContext, 1);
  glass_test::write_file(dir / "model.safetensors", "garbage");
  options.checkpoint = dir.string();
  EXPECT_THROW(glass::Server{options}, glass::CheckpointError);
  options.checkpoint = glass_test::temp_dir("serve_port").string();
  options.port = 70000;
  EXPECT_THROW(glass::Server{options}, glass::ServeError);
}

TEST(Server, ARunDirectoryIsWatchedFromBeforeItsFirstSaveThroughEachNewSave) {
  const fs::path run = glass_test::temp_dir("serve_run");
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.probe = "to be or";
  options.poll_seconds = 0.05;
  glass::Server server(options);
  EXPECT_NE(server.status().find("waiting for the trainer's first save"), std::string::npos)
      << server.status();
  const int port = server.start();
  auto client = client_for(port);
  {
    const auto r = client->Post("/api/inspect", "{\"prompt\": \"to\"}", "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << "no model yet";
    EXPECT_NE(r->body.find("waiting"), std::string::npos) << r->body;
  }
  EXPECT_FALSE(body_json(client->Get("/api/info"))["loaded"].get<bool>());

  // Saves as the trainer makes them: a step directory, then one switch of `current`.
  auto save = [&](long step, std::uint64_t seed) { commit_step_save(run, step, seed); };
  save(0, 1);
  ASSERT_TRUE(eventually([&] { return body_json(client->Get("/api/info"))["loaded"] == true; }));
  const json first = body_json(client->Get("/api/info"));
  EXPECT_TRUE(first["step"].is_number_integer()) << "a number, not a string: " << first["step"];
  EXPECT_EQ(first["step"], 0);
  save(10, 2);
  ASSERT_TRUE(
      eventually([&] { return body_json(client->Get("/api/evals"))["evaluations"].size() == 2; }));
  const json evals = body_json(client->Get("/api/evals"));
  EXPECT_EQ(evals["evaluations"][0]["step"], 0);
  EXPECT_EQ(evals["evaluations"][1]["step"], 10);
  EXPECT_DOUBLE_EQ(evals["evaluations"][1]["val_loss"].get<double>(), 3.25);
  EXPECT_EQ(evals["evaluations"][0]["attention"][0][0].size(), 8u) << "the probe's 8 characters";
  // Different weights, different attention: the slider has something to show.
  EXPECT_NE(evals["evaluations"][0]["attention"][1][0][7],
            evals["evaluations"][1]["attention"][1][0][7]);
  const json info = body_json(client->Get("/api/info"));
  EXPECT_TRUE(info["step"].is_number_integer()) << info["step"];
  EXPECT_EQ(info["step"], 10);
  EXPECT_EQ(info["save"], "step-000010");
  const json log = body_json(client->Get("/api/log"));
  EXPECT_EQ(log["evals"].size(), 2u) << "the current save's log.csv";
  EXPECT_EQ(log["step"], info["step"]) << "the page compares the two to see a new save";
  server.stop();
}

/// Options that serve `run` on a free port, probe "to be" and look for new saves every 0.05 s.
glass::ServeOptions watching(const fs::path& run) {
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.probe = "to be";
  options.poll_seconds = 0.05;
  return options;
}

TEST(Server, ANewSaveThatCannotBeLoadedIsReportedAndTheOldModelAnswers) {
  const fs::path run = glass_test::temp_dir("serve_corrupt");
  commit_step_save(run, 0, 5);
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.probe = "to be";
  options.poll_seconds = 0.05;
  std::mutex mutex;
  std::vector<std::string> warnings;
  options.warn = [&](const std::string& w) {
    std::lock_guard lock(mutex);
    warnings.push_back(w);
  };
  glass::Server server(options);
  const int port = server.start();
  auto client = client_for(port);
  ASSERT_EQ(body_json(client->Get("/api/info"))["step"], 0);
  // A save whose weights are broken (a bad disk, a hand edit) becomes current.
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  const std::string step_dir = glass::begin_save(run.string(), 10);
  glass::save_model(step_dir,
                    glass::Decoder(glass_test::small_config(tokenizer.vocab_size(), kContext), 6),
                    tokenizer, "model.safetensors", "", 10);
  glass_test::write_file(fs::path(step_dir) / "model.safetensors", "garbage");
  glass::commit_save(run.string(), step_dir);
  // Said on the status of /api/info and /api/log, and once as a warning; the old model answers.
  ASSERT_TRUE(eventually([&] {
    return body_json(client->Get("/api/info"))["status"].get<std::string>().find(
               "cannot be loaded") != std::string::npos;
  }));
  const json info = body_json(client->Get("/api/info"));
  EXPECT_EQ(info["step"], 0);
  EXPECT_NE(info["status"].get<std::string>().find("step-000010"), std::string::npos)
      << info["status"];
  EXPECT_NE(info["status"].get<std::string>().find("still serving the previous one, step-000000"),
            std::string::npos)
      << info["status"];
  EXPECT_EQ(body_json(client->Get("/api/log"))["status"], info["status"]);
  EXPECT_EQ(client->Post("/api/inspect", "{\"prompt\": \"to\"}", "application/json")->status, 200);
  const std::size_t looks = server.looks();  // six more looks at the broken save: still one warning
  ASSERT_TRUE(eventually([&] { return server.looks() >= looks + 6; }));
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_EQ(warnings[0], info["status"]);
  }
  // A good save after it: served, and the status is clear again.
  commit_step_save(run, 20, 7);
  ASSERT_TRUE(eventually([&] { return body_json(client->Get("/api/info"))["step"] == 20; }));
  EXPECT_EQ(body_json(client->Get("/api/info"))["status"], "");
}

TEST(Server, ANewSavesEvaluationWaitsWhileAnotherForwardPassRuns) {
  const fs::path run = glass_test::temp_dir("serve_compute");
  commit_step_save(run, 0, 1);
  glass::ServeOptions options = watching(run);
  glass::Server server(options);
  auto client = client_for(server.start());
  EXPECT_EQ(body_json(client->Get("/api/info"))["step"], 0);
  {
    // As if a request's forward pass were running: the new save is found (every 0.05 s) and
    // read, but its evaluation (the probe's inspection and a sample) must wait for the model.
    const auto busy = server.hold_compute();
    commit_step_save(run, 10, 2);
    // The watcher finds the save, reads it and starts its evaluation, which then waits.
    ASSERT_TRUE(eventually([&] { return server.evaluations_started() == 2; }));
    const json info = body_json(client->Get("/api/info"));
    EXPECT_EQ(info["step"], 0) << "evaluated during another forward pass";
    EXPECT_EQ(body_json(client->Get("/api/evals"))["evaluations"].size(), 1u);
  }
  ASSERT_TRUE(eventually([&] { return body_json(client->Get("/api/info"))["step"] == 10; }));
  EXPECT_EQ(body_json(client->Get("/api/evals"))["evaluations"].size(), 2u);
  server.stop();
}

TEST(Server, EvaluationsKeepTheFirstSaveAndTheNewestOnes) {
  const fs::path run = glass_test::temp_dir("serve_cap");
  commit_step_save(run, 0, 1);
  glass::ServeOptions options = watching(run);
  options.eval_sample_tokens = 5;
  options.max_evaluations = 3;  // the first and the newest 3
  glass::Server server(options);
  auto client = client_for(server.start());
  // Saves at steps 0, 10, ..., 60: 7 evaluations (indices 0..6), one at a time.
  for (long k = 1; k <= 6; ++k) {
    commit_step_save(run, 10 * k, static_cast<std::uint64_t>(k + 1));
    ASSERT_TRUE(eventually([&] {
      return body_json(client->Get("/api/log"))["evaluations"] == k + 1;
    })) << k;
  }
  const json all = body_json(client->Get("/api/evals?since=0"));
  EXPECT_EQ(all["count"], 4) << "capped: the first and the newest 3";
  EXPECT_EQ(all["seen"], 7);
  EXPECT_EQ(all["max_evaluations"], 3);
  EXPECT_EQ(body_json(client->Get("/api/info"))["evaluations"], 7)
      << "as /api/log: evaluated so far";
  ASSERT_EQ(all["evaluations"].size(), 4u);
  const std::vector<std::pair<int, int>> kept = {{0, 0}, {4, 40}, {5, 50}, {6, 60}};  // index, step
  for (std::size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(all["evaluations"][i]["index"], kept[i].first) << i;
    EXPECT_EQ(all["evaluations"][i]["step"], kept[i].second) << i;
  }
  // `since` is an index: the kept evaluations from it on; a dropped index starts at the next kept.
  const json from5 = body_json(client->Get("/api/evals?since=5"));
  ASSERT_EQ(from5["evaluations"].size(), 2u);
  EXPECT_EQ(from5["evaluations"][0]["index"], 5);
  EXPECT_EQ(from5["evaluations"][1]["index"], 6);
  const json from2 = body_json(client->Get("/api/evals?since=2"));
  ASSERT_EQ(from2["evaluations"].size(), 3u);
  EXPECT_EQ(from2["evaluations"][0]["index"], 4);
  EXPECT_EQ(body_json(client->Get("/api/evals?since=7"))["evaluations"].size(), 0u)
      << "nothing new";
  // The next save drops index 4 and keeps the first.
  commit_step_save(run, 70, 9);
  ASSERT_TRUE(eventually([&] { return body_json(client->Get("/api/log"))["evaluations"] == 8; }));
  const json after = body_json(client->Get("/api/evals"));
  ASSERT_EQ(after["evaluations"].size(), 4u);
  EXPECT_EQ(after["evaluations"][0]["step"], 0);
  EXPECT_EQ(after["evaluations"][1]["index"], 5);
  EXPECT_EQ(after["evaluations"][3]["step"], 70);
  server.stop();
}

TEST(Server, AProbeThatIsNotUtf8FallsBackToTheDefaultProbe) {
  const fs::path dir = glass_test::temp_dir("serve_bad_probe");
  glass_test::write_small_checkpoint(dir.string(), kContext, 11, 0.3);
  glass::ServeOptions options;
  options.checkpoint = dir.string();
  options.port = 0;
  options.probe = "\xff\xfe";     // no character of UTF-8 in it
  glass::Server server(options);  // was: CheckpointError "the prompt is empty"
  EXPECT_EQ(server.status(), "");
  auto client = client_for(server.start());
  const json evals = body_json(client->Get("/api/evals"));
  // No training text is known: the default is the vocabulary's first characters.
  const glass::Tokenizer tokenizer = glass::Tokenizer::from_text(glass_test::kSmallText);
  const std::u32string chars(tokenizer.chars().begin(),
                             tokenizer.chars().end());  // 14 < 32 of them
  EXPECT_EQ(evals["probe"], glass::u32_to_utf8(chars));
  ASSERT_EQ(evals["evaluations"].size(), 1u);
  server.stop();
}

TEST(Server, TheDefaultProbeStartsAtTheTextsFirstNonBlankCharacter) {
  // A text that starts with 200 spaces and newlines (a licence, a centred title): its first 32
  // characters would draw a grid of blanks; the probe starts at "to be" instead.
  const fs::path dir = glass_test::temp_dir("serve_blank_probe");
  glass_test::write_small_checkpoint(dir.string(), kContext, 11, 0.3);
  const fs::path text = dir / "text.txt";
  glass_test::write_file(text, std::string(150, ' ') + std::string(50, '\n') +
                                   glass::u32_to_utf8(glass_test::kSmallText));
  glass::ServeOptions options;
  options.checkpoint = dir.string();
  options.port = 0;
  options.data_path = text.string();
  glass::Server server(options);
  auto client = client_for(server.start());
  const json evals = body_json(client->Get("/api/evals"));
  const std::u32string first = std::u32string(glass_test::kSmallText).substr(0, 32);
  EXPECT_EQ(evals["probe"], glass::u32_to_utf8(first));  // "to be or not to be\nthat is the q"
  server.stop();
}

TEST(Server, TheStreamedSampleShowsControlCharactersUnlessRawIsAsked) {
  // A model whose every token is a control character or part of ESC[2J: /api/sample streams
  // them as visible escapes (as glass sample prints them), the bytes themselves with "raw".
  const fs::path dir = glass_test::temp_dir("serve_controls");
  const glass::Tokenizer tokenizer =
      glass::Tokenizer::from_text(std::u32string(U"\0\x04\x1B[2J\r\x7F\u009B", 9));
  glass::ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), kContext);
  config.init_std = 0.5;
  glass::save_model(dir.string(), glass::Decoder(config, 3), tokenizer);
  glass::ServeOptions options;
  options.checkpoint = dir.string();
  options.port = 0;
  options.probe = "[2J";
  glass::Server server(options);
  auto client = client_for(server.start());
  const json request = {{"prompt", "J"}, {"temperature", 1}, {"n", 200}, {"seed", 5}};
  const auto shown = client->Post("/api/sample", request.dump(), "application/json");
  ASSERT_TRUE(shown && shown->status == 200);
  EXPECT_FALSE(glass_test::has_raw_control(shown->body)) << shown->body;
  json raw_request = request;
  raw_request["raw"] = true;
  const auto raw = client->Post("/api/sample", raw_request.dump(), "application/json");
  ASSERT_TRUE(raw && raw->status == 200);
  EXPECT_TRUE(glass_test::has_raw_control(raw->body));
  EXPECT_EQ(glass::escape_controls(raw->body), shown->body) << "the same draws, escaped";
  server.stop();
}

}  // namespace
