// The interpretability lab of `glass serve` (serve/routes_interp.cpp, serve/interp_lab.hpp)
// through a real HTTP client: POST /api/lens, /api/ablate, /api/dla and /api/attribution against
// the interp/ library
// computed here on the same checkpoint, every kind of bad request answered 400 with the JSON
// field named, and GET /api/interp over a run directory whose saves hold interp.json files
// written here in the shared format (with and without the record, a tampered one, a malformed
// one, a save removed after the server saw it).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "inspect/interp_report.hpp"
#include "data/text.hpp"
#include "fixtures.hpp"
#include "interp_fixtures.hpp"
#include "interp/interp.hpp"
#include "serve/interp_lab.hpp"
#include "serve/server.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using interp_test::record;
using interp_test::record_with;
using interp_test::save_with_record;

namespace {

using interp_test::kContext;

/// How close the server's numbers are to the library's computed here: the same float code on
/// the same weights (equal to the last bit when both use the same threads; a thread count that
/// splits a sum differently moves the last bits).
constexpr double kTol = 1e-6;

std::unique_ptr<httplib::Client> client_for(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(5, 0);
  return c;
}

/// The prompt's ids as the server encodes them (one per character).
std::vector<std::int32_t> ids_of(const glass::Checkpoint& m, const std::string& prompt) {
  return m.tokenizer().chars()->encode(glass::utf8_to_u32(prompt));
}

/// Sends `bytes` (raw HTTP) on a new connection to the server and returns everything it answers
/// until it closes the connection (at most 10 s; "" when the connection fails).
std::string raw_exchange(int port, const std::string& bytes) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return "";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::size_t sent = 0;
  while (sent < bytes.size()) {  // the server may answer 413 and close before reading it all
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<std::size_t>(n);
  }
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;)
    reply.append(buf, static_cast<std::size_t>(n));
  close(fd);
  return reply;
}

/// A server on a small untrained checkpoint (init_std 0.3, so distributions are not flat).
class LabTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("serve_lab");
    checkpoint_ = (dir_ / "ckpt").string();
    glass_test::write_small_checkpoint(checkpoint_, kContext, 11, 0.3);
    start({});
  }
  void start(const std::string& data_path) {
    server_.reset();
    glass::ServeOptions options;
    options.checkpoint = checkpoint_;
    options.port = 0;
    options.probe = "to be";
    options.poll_seconds = 0.05;
    options.data_path = data_path;
    server_ = std::make_unique<glass::Server>(options);
    port_ = server_->start();
    ASSERT_GT(port_, 0);
    client_ = client_for(port_);
    loaded_ = std::make_unique<glass::Checkpoint>(glass::load_checkpoint(checkpoint_));
  }
  json post_ok(const std::string& path, const json& body) {
    const auto r = client_->Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return json();
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body);
  }
  /// Expects 400 (or `status`) with an {"error"} naming `words`.
  void expect_error(const std::string& path, const std::string& body, const std::string& words,
                    int status = 400) {
    const auto r = client_->Post(path.c_str(), body, "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error());
    EXPECT_EQ(r->status, status) << body << " -> " << r->body;
    const json j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(words), std::string::npos)
        << body << " -> " << j["error"];
  }
  void TearDown() override { server_.reset(); }

  fs::path dir_;
  std::string checkpoint_;
  std::unique_ptr<glass::Server> server_;
  int port_ = 0;
  std::unique_ptr<httplib::Client> client_;
  std::unique_ptr<glass::Checkpoint> loaded_;
};

TEST_F(LabTest, TheLensIsTheLibrarysAndItsLastRowIsTheModelsOwnNextTokenDistribution) {
  const std::string prompt = "to be or not";
  const json j = post_ok("/api/lens", {{"prompt", prompt}, {"top_k", 4}});
  const auto ids = ids_of(*loaded_, prompt);
  const std::size_t T = ids.size(), L = loaded_->config().n_layers;
  const glass::LogitLens lens = glass::logit_lens(loaded_->model(), ids, 4);
  // The lab report of `glass inspect --json` (interp_json): the prompt's tokens with their
  // labels, and the lens.
  const std::vector<std::string> labels = glass::token_labels(*loaded_);
  ASSERT_EQ(j["prompt"].size(), T);
  for (std::size_t t = 0; t < T; ++t) {
    EXPECT_EQ(j["prompt"][t]["id"].get<std::int32_t>(), ids[t]);
    EXPECT_EQ(j["prompt"][t]["text"], labels[ids[t]]);
  }
  const json& J = j["lens"];
  ASSERT_EQ(J["points"], json(lens.points));
  ASSERT_EQ(J["points"].size(), L + 1) << "embeddings, then after each block";
  ASSERT_EQ(J["top"].size(), L + 1);
  for (std::size_t s = 0; s <= L; ++s) {
    ASSERT_EQ(J["top"][s].size(), T);
    ASSERT_EQ(J["true_next_prob"][s].size(), T - 1) << "no true next token after the prompt";
    for (std::size_t t = 0; t < T; ++t) {
      ASSERT_EQ(J["top"][s][t].size(), 4u);
      for (std::size_t k = 0; k < 4; ++k) {
        const json& cell = J["top"][s][t][k];
        EXPECT_EQ(cell["id"].get<int>(), lens.top_ids(s, t, k)) << s << "," << t << "," << k;
        EXPECT_NEAR(cell["prob"].get<double>(), static_cast<double>(lens.top_probs(s, t, k)), kTol);
        EXPECT_EQ(cell["text"], labels[cell["id"].get<std::size_t>()]);
      }
      if (t + 1 < T) {
        EXPECT_NEAR(J["true_next_prob"][s][t].get<double>(),
                    static_cast<double>(lens.next_prob(s, t)), kTol);
      }
    }
  }
  // The last row: the model's own distribution, from a plain forward pass (no hooks) and from
  // /api/inspect (rounded to 4 decimals there).
  glass::Array probs;
  {
    glass::NoGradGuard no_grad;
    probs = glass::softmax(loaded_->model().forward(glass::as_batch(ids))).value();
  }
  const std::size_t V = loaded_->config().vocab_size;
  const json inspected = post_ok("/api/inspect", {{"prompt", prompt}, {"top_k", 4}});
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t k = 0; k < 4; ++k) {
      const json& cell = J["top"][L][t][k];
      const std::size_t id = cell["id"].get<std::size_t>();
      EXPECT_NEAR(cell["prob"].get<double>(), probs.data()[t * V + id], 1e-6) << t << "," << k;
      EXPECT_EQ(inspected["top"][t][k]["id"], cell["id"]) << t << "," << k;
      EXPECT_NEAR(inspected["top"][t][k]["p"].get<double>(), cell["prob"].get<double>(), 5e-5);
    }
  }
  // Reading the stream before the last block gives other predictions: the lens shows something.
  EXPECT_NE(J["top"][0][T - 1][0]["prob"], J["top"][L][T - 1][0]["prob"]);
}

TEST_F(LabTest, ZeroAblationIsTheLibrarysAndChangesTheDistribution) {
  const std::string prompt = "that is the";
  const json j =
      post_ok("/api/ablate",
              {{"prompt", prompt}, {"heads", {{1, 2}, {0, 0}}}, {"mode", "zero"}})["ablation"];
  const auto ids = ids_of(*loaded_, prompt);
  const glass::NextTokenShift shift =
      glass::next_token_shift(loaded_->model(), ids, {{1, 2}, {0, 0}}, glass::AblationMode::zero);
  const std::size_t V = loaded_->config().vocab_size;
  ASSERT_EQ(j["before"].size(), V);
  ASSERT_EQ(j["after"].size(), V);
  double changed = 0;
  for (std::size_t v = 0; v < V; ++v) {
    EXPECT_NEAR(j["before"][v].get<double>(), static_cast<double>(shift.before(v)), kTol) << v;
    EXPECT_NEAR(j["after"][v].get<double>(), static_cast<double>(shift.after(v)), kTol) << v;
    changed =
        std::max(changed, std::abs(j["after"][v].get<double>() - j["before"][v].get<double>()));
  }
  EXPECT_GT(changed, 1e-3) << "two heads knocked out move the distribution";
  EXPECT_NEAR(j["kl_divergence"].get<double>(), shift.kl_divergence, kTol);
  EXPECT_GT(j["kl_divergence"].get<double>(), 0);
  EXPECT_EQ(j["heads"], json({{1, 2}, {0, 0}}));
  EXPECT_EQ(j["mode"], "zero");
  // The tokens listed: the 10 most probable without the heads (top_k 10 by default), most
  // probable first, then those the ablation brings into its own top 10.
  ASSERT_GE(j["top"].size(), 10u);
  for (std::size_t k = 1; k < 10; ++k) {
    EXPECT_GE(j["before"][j["top"][k - 1]["id"].get<std::size_t>()].get<double>(),
              j["before"][j["top"][k]["id"].get<std::size_t>()].get<double>());
  }
  // No head: both distributions are the model's own.
  const json none =
      post_ok("/api/ablate", {{"prompt", prompt}, {"heads", json::array()}})["ablation"];
  EXPECT_EQ(none["before"], none["after"]);
  EXPECT_EQ(none["kl_divergence"].get<double>(), 0.0);
  EXPECT_EQ(none["before"], j["before"]);
}

TEST_F(LabTest, MeanAblationAveragesOverTheTrainingTextOrElseThePrompt) {
  const std::string prompt = "to be";
  const auto ids = ids_of(*loaded_, prompt);
  {  // No training text known: the mean over the prompt's own positions.
    const json j = post_ok("/api/ablate",
                           {{"prompt", prompt}, {"heads", {{0, 1}}}, {"mode", "mean"}})["ablation"];
    EXPECT_NE(j["mean_over"].get<std::string>().find("the prompt"), std::string::npos)
        << j["mean_over"];
    const glass::HeadMeans means = glass::head_means(loaded_->model(), glass::as_batch(ids));
    const auto shift =
        glass::next_token_shift(loaded_->model(), ids, {{0, 1}}, glass::AblationMode::mean, &means);
    for (std::size_t v = 0; v < loaded_->config().vocab_size; ++v)
      EXPECT_NEAR(j["after"][v].get<double>(), static_cast<double>(shift.after(v)), kTol) << v;
  }
  // With --data: its first 4 windows of 32 characters (the context), as a batch (4, 32).
  std::u32string text;
  while (text.size() < 200) text += glass_test::kSmallText + std::u32string(U"\n");
  const fs::path data = dir_ / "text.txt";
  glass_test::write_file(data, glass::u32_to_utf8(text));
  start(data.string());
  const json j =
      post_ok("/api/ablate",
              {{"prompt", prompt}, {"heads", {{0, 1}, {1, 3}}}, {"mode", "mean"}})["ablation"];
  EXPECT_EQ(j["mean_over"], "the first 128 characters of the training text text.txt");
  const auto ref = loaded_->tokenizer().chars()->encode(text.substr(0, 4 * kContext));
  glass::Ids batch = glass::Ids::from_shape({4, kContext});
  std::copy(ref.begin(), ref.end(), batch.data());
  const glass::HeadMeans means = glass::head_means(loaded_->model(), batch);
  const auto shift = glass::next_token_shift(loaded_->model(), ids, {{0, 1}, {1, 3}},
                                             glass::AblationMode::mean, &means);
  for (std::size_t v = 0; v < loaded_->config().vocab_size; ++v)
    EXPECT_NEAR(j["after"][v].get<double>(), static_cast<double>(shift.after(v)), kTol) << v;
  EXPECT_NEAR(j["kl_divergence"].get<double>(), shift.kl_divergence, kTol);
}

TEST_F(LabTest, BadRequestsNameTheField) {
  const std::string too_long(kContext + 1, 't');
  // The lens.
  expect_error("/api/lens", "{}", "give the prompt");
  expect_error("/api/lens", R"({"prompt": ""})", "'prompt' is empty");
  expect_error("/api/lens", R"({"prompt": 5})", "'prompt' must be a string");
  expect_error("/api/lens", json{{"prompt", too_long}}.dump(), "send at most 32 characters");
  expect_error("/api/lens", R"({"prompt": "to", "top_k": 0})", "'top_k' must be an integer from 1");
  // At most 20, and at most the vocabulary (15 here).
  expect_error("/api/lens", R"({"prompt": "to", "top_k": 16})",
               "'top_k' must be an integer from 1 to 15");
  expect_error("/api/lens", R"({"prompt": "to", "topk": 3})", "unknown parameter 'topk'");
  expect_error("/api/lens", R"({"prompt": "xyz"})", "never saw in training");
  expect_error("/api/lens", R"({"prompt": "to", "prompt": "be"})", "ambiguous");
  expect_error("/api/lens", "[1, 2]", "must be a JSON object");
  // The ablation: 2 layers of 4 heads.
  expect_error("/api/ablate", R"({"heads": [[0, 0]]})", "give the prompt");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": {"0": 1}})", "'heads' must be an array");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[0]]})", "'heads[0]' must be a pair");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[0, 0], [-1, 2]]})",
               "'heads[1]' must be a pair [layer, head] of integers >= 0");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[0, 1.5]]})",
               "'heads[0]' must be a pair");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[2, 0]]})",
               "'heads[0]' names layer 2; the layers are 0 to 1");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[1, 4]]})",
               "'heads[0]' names head 4; the heads of a layer are 0 to 3");
  expect_error("/api/ablate", R"({"prompt": "to", "heads": [[1, 3], [0, 0], [1, 3]]})",
               "'heads[2]' repeats [1, 3]");
  expect_error(
      "/api/ablate",
      R"({"prompt": "to", "heads": [[0,0],[0,1],[0,2],[0,3],[1,0],[1,1],[1,2],[1,3],[0,0]]})",
      "'heads' lists 9 heads; the model has 8");
  expect_error("/api/ablate", R"({"prompt": "to", "mode": "max"})",
               "'mode' must be \"zero\" or \"mean\"");
  expect_error("/api/ablate", R"({"prompt": "to", "mode": 1})", "'mode' must be a string");
  expect_error("/api/ablate", json{{"prompt", too_long}}.dump(), "send at most 32 characters");
  expect_error("/api/ablate", R"({"prompt": "to", "top_k": 100})", "'top_k' must be an integer");
  // Bounded like every request: a body over 64 KiB is refused before it is parsed.
  const std::string huge = json{{"prompt", "to"}, {"pad", std::string(70 * 1024, ' ')}}.dump();
  expect_error("/api/ablate", huge, "too large", 413);
  // A POST from another site's page is refused before any computation.
  httplib::Headers foreign = {{"Origin", "http://evil.example"}};
  const auto r = client_->Post("/api/lens", foreign, R"({"prompt": "to"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 403);
  // The server still answers.
  EXPECT_EQ(post_ok("/api/lens", {{"prompt", "to"}})["lens"]["points"].size(), 3u);
}

TEST_F(LabTest, DirectLogitAttributionIsTheLibrarys) {
  const std::string prompt = "that is the";
  const auto ids = ids_of(*loaded_, prompt);
  const json j = post_ok("/api/dla", {{"prompt", prompt}, {"target", "e"}, {"position", 4}})["dla"];
  const glass::LogitAttribution a =
      glass::logit_attribution(loaded_->model(), ids, 4, ids_of(*loaded_, "e").front());
  EXPECT_EQ(j["position"], 4);
  EXPECT_EQ(j["target"]["text"], "e");
  EXPECT_NEAR(j["logit"].get<double>(), a.logit, kTol);
  EXPECT_NEAR(j["sum"].get<double>(), a.logit, 1e-4);
  EXPECT_NEAR(j["embeddings"].get<double>(), a.embeddings, kTol);
  for (std::size_t L = 0; L < 2; ++L) {
    EXPECT_NEAR(j["mlps"][L].get<double>(), a.mlps(L), kTol);
    for (std::size_t h = 0; h < 4; ++h)
      EXPECT_NEAR(j["heads"][L][h].get<double>(), a.heads(L, h), kTol) << L << "." << h;
  }
  // Without target and position: the most probable token at the last position.
  const json d = post_ok("/api/dla", {{"prompt", prompt}})["dla"];
  EXPECT_EQ(d["position"], ids.size() - 1);
  EXPECT_EQ(d["target"]["id"], glass::logit_attribution(loaded_->model(), ids).target);
}

TEST_F(LabTest, AttributionPatchingIsTheLibrarysNextToExactPatching) {
  const std::string clean = "that is the", corrupted = "that is tho";
  const json j =
      post_ok("/api/attribution",
              {{"prompt", clean}, {"corrupted", corrupted}, {"metric", "log_prob"}})["attribution"];
  const glass::PatchMetric metric{glass::PatchMetric::Kind::log_prob,
                                  j["answer"]["id"].get<std::int32_t>(), 0};
  const auto a = ids_of(*loaded_, clean), b = ids_of(*loaded_, corrupted);
  const auto estimate = glass::attribution_patching(loaded_->model(), a, b, metric);
  const auto exact = glass::exact_patching(loaded_->model(), a, b, metric);
  EXPECT_EQ(j["metric"], "log_prob");
  EXPECT_NEAR(j["clean"].get<double>(), estimate.total.clean, kTol);
  for (std::size_t L = 0; L < 2; ++L)
    for (std::size_t h = 0; h < 4; ++h) {
      EXPECT_NEAR(j["estimate"]["heads"][L][h].get<double>(), estimate.total.heads(L, h), kTol);
      EXPECT_NEAR(j["exact"]["heads"][L][h].get<double>(), exact.heads(L, h), kTol);
    }
  EXPECT_NEAR(j["spearman_heads"].get<double>(), glass::spearman(estimate.total.heads, exact.heads),
              1e-9);
}

TEST_F(LabTest, AttributionRequestsNameTheField) {
  expect_error("/api/dla", "{}", "give the prompt");
  expect_error("/api/dla", R"({"prompt": "to be", "position": 5})",
               "'position' 5 is out of range: the prompt has 5 tokens");
  expect_error("/api/dla", R"({"prompt": "to be", "position": -1})", "'position' must be");
  expect_error("/api/dla", R"({"prompt": "to be", "target": "th"})", "'target' 'th' is 2 tokens");
  expect_error("/api/dla", R"({"prompt": "to be", "target": "z"})", "'target' is refused");
  expect_error("/api/dla", R"({"prompt": "to be", "target": 3})", "'target' must be a string");
  expect_error("/api/attribution", R"({"prompt": "to be"})", "give the corrupted prompt");
  expect_error("/api/attribution", R"({"prompt": "to be", "corrupted": "to"})",
               "'corrupted' has 2 tokens and the prompt 5");
  expect_error("/api/attribution", R"({"prompt": "to be", "corrupted": "to be"})",
               "no logit difference");
  expect_error("/api/attribution", R"({"prompt": "to be", "corrupted": "to bo", "metric": "kl"})",
               "'metric' must be");
}

TEST_F(LabTest, RawRequestsAreBoundedAndCheckedLikeEveryOther) {
  const std::string host = "Host: 127.0.0.1:" + std::to_string(port_) + "\r\n";
  auto post = [&](const std::string& path, const std::string& headers, const std::string& body) {
    return raw_exchange(port_, "POST " + path + " HTTP/1.1\r\n" + headers +
                                   "Content-Length: " + std::to_string(body.size()) +
                                   "\r\nConnection: close\r\n\r\n" + body);
  };
  const std::string ok = post("/api/lens", host + "Content-Type: application/json\r\n",
                              R"({"prompt": "to be", "top_k": 2})");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200", 0), 0u) << ok;
  const std::string json_body = ok.substr(ok.find("\r\n\r\n") + 4);
  EXPECT_EQ(json::parse(json_body)["lens"]["top"][2][4].size(), 2u) << json_body;
  // A chunked body past 64 KiB: 413 as soon as the chunks read pass the limit.
  std::string chunked = "POST /api/ablate HTTP/1.1\r\n" + host +
                        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunk(16 * 1024, ' ');
  for (int i = 0; i < 6; ++i) chunked += fmt::format("{:x}\r\n{}\r\n", chunk.size(), chunk);
  chunked += "0\r\n\r\n";
  const std::string big = raw_exchange(port_, chunked);
  EXPECT_EQ(big.rfind("HTTP/1.1 413", 0), 0u) << big.substr(0, 200);
  // A form or text/plain POST (which another site's page may send without asking): 415.
  const std::string text = post("/api/ablate", host + "Content-Type: text/plain\r\n",
                                R"({"prompt": "to", "heads": [[0, 0]]})");
  EXPECT_EQ(text.rfind("HTTP/1.1 415", 0), 0u) << text;
  // Another name in Host (DNS rebinding): 421, also for the records.
  const std::string rebound = raw_exchange(
      port_, "GET /api/interp HTTP/1.1\r\nHost: evil.example:" + std::to_string(port_) +
                 "\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(rebound.rfind("HTTP/1.1 421", 0), 0u) << rebound;
  EXPECT_NE(rebound.find("\"error\""), std::string::npos) << rebound;
}

TEST(ServeInterp, TheScoresOfEverySaveSeenWithTheirStepAndLoss) {
  const fs::path run = glass_test::temp_dir("serve_interp_history");
  save_with_record(run, 0, "");  // a save from before the recording: no interp.json
  const std::string s10 = save_with_record(run, 10, record(10, 0.1).dump());
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.probe = "to be";
  // The watcher looks once at the start; after that each GET /api/interp looks itself, so the
  // test knows what the server has read (a tampered file below is never read before the change).
  options.poll_seconds = 600;
  glass::Server server(options);
  const int port = server.start();
  auto client = client_for(port);
  auto history = [&] {
    const auto r = client->Get("/api/interp");
    EXPECT_TRUE(r && r->status == 200);
    return r ? json::parse(r->body) : json();
  };
  json h = history();
  ASSERT_EQ(h["saves"].size(), 2u) << h.dump();
  EXPECT_EQ(h["recorded"], 1);
  EXPECT_EQ(h["n_layers"], 2);
  EXPECT_EQ(h["n_heads"], 4);
  EXPECT_EQ(h["saves"][0]["save"], "step-000000");
  EXPECT_EQ(h["saves"][0]["recorded"], false);
  EXPECT_FALSE(h["saves"][0].contains("error")) << "no record is not an error";
  EXPECT_EQ(h["saves"][1]["step"], 10);
  EXPECT_EQ(h["saves"][1]["recorded"], true);
  EXPECT_NEAR(h["saves"][1]["val_loss"].get<double>(), interp_test::val_loss_at(10), 1e-12);
  EXPECT_NEAR(h["saves"][1]["train_loss"].get<double>(), interp_test::val_loss_at(10) - 0.5, 1e-12);
  EXPECT_EQ(h["saves"][1]["interp"], record(10, 0.1));

  // The trainer removes the previous save once the next is current: the server keeps what it
  // read. A tampered record and a malformed one are reported, never shown as scores.
  const std::string s20 = save_with_record(run, 20, record(20, 0.5).dump());
  ASSERT_EQ(history()["saves"].size(), 3u);
  fs::remove_all(s10);
  const std::string s30 = save_with_record(run, 30, record(30, 0.7).dump());
  glass_test::write_file(fs::path(s30) / glass::serve_api::kInterpRecordFile,
                         record(30, 0.9).dump());
  json bad = record(40, 0.2);
  bad["induction"][1].erase(3);
  save_with_record(run, 40, bad.dump());
  json other = record(50, 0.2);
  other["step"] = 49;
  save_with_record(run, 50, other.dump());
  h = history();
  ASSERT_EQ(h["saves"].size(), 6u) << h.dump();
  EXPECT_EQ(h["recorded"], 2);
  std::vector<long> steps;
  for (const json& s : h["saves"]) steps.push_back(s["step"].get<long>());
  EXPECT_EQ(steps, (std::vector<long>{0, 10, 20, 30, 40, 50})) << "by step, the removed one kept";
  EXPECT_EQ(h["saves"][1]["interp"], record(10, 0.1));
  EXPECT_EQ(h["saves"][2]["interp"], record(20, 0.5));
  EXPECT_NEAR(h["saves"][2]["val_loss"].get<double>(), interp_test::val_loss_at(20), 1e-12);
  EXPECT_EQ(h["saves"][3]["recorded"], false);
  EXPECT_NE(h["saves"][3]["error"].get<std::string>().find("step-000030/interp.json"),
            std::string::npos)
      << h["saves"][3];
  EXPECT_NE(h["saves"][3]["error"].get<std::string>().find("changed"), std::string::npos)
      << h["saves"][3];
  EXPECT_NE(h["saves"][4]["error"].get<std::string>().find("'induction' row 1 must have one "
                                                           "value per head, 4 (n_heads)"),
            std::string::npos)
      << h["saves"][4];
  EXPECT_NE(h["saves"][5]["error"].get<std::string>().find("it records step 49, the save is of "
                                                           "step 50"),
            std::string::npos)
      << h["saves"][5];
  server.stop();
}

/// interp_history.json of run kRun holding `records`.
std::string history_of(const std::vector<json>& records,
                       const std::string& run_id = interp_test::kRun) {
  return json{{"format", "glass-interp-history-1"}, {"run_id", run_id}, {"records", records}}
      .dump();
}

TEST(ServeInterp, AServerStartedAfterTheRunSeesItsEarlierSavesThroughTheHistoryFile) {
  // The trainer removed the saves of steps 100 and 200; the save of step 300 holds their
  // records in its interp_history.json, and its log.csv every evaluation.
  const fs::path run = glass_test::temp_dir("serve_interp_history_file");
  save_with_record(run, 300, record(300, 0.6).dump(),
                   history_of({record(100, 0.1), record(200, 0.3), record(300, 0.6)}));
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.poll_seconds = 600;
  glass::Server server(options);
  auto client = client_for(server.start());
  auto history = [&] { return json::parse(client->Get("/api/interp")->body); };
  json h = history();
  ASSERT_EQ(h["saves"].size(), 3u) << h.dump();
  EXPECT_EQ(h["recorded"], 3);
  for (int k = 0; k < 3; ++k) {
    const long step = 100 * (k + 1);
    EXPECT_EQ(h["saves"][k]["step"], step);
    EXPECT_EQ(h["saves"][k]["interp"], record(step, k == 0 ? 0.1 : k == 1 ? 0.3 : 0.6));
    EXPECT_NEAR(h["saves"][k]["val_loss"].get<double>(), interp_test::val_loss_at(step), 1e-12);
  }
  EXPECT_TRUE(h["saves"][0]["save"].is_null()) << "known only from the history file";
  EXPECT_EQ(h["saves"][0]["from"], "step-000300/interp_history.json");
  EXPECT_EQ(h["saves"][2]["save"], "step-000300");

  // The next save: its own record, and a history whose older records change nothing known.
  save_with_record(run, 400, record(400, 0.7).dump(),
                   history_of({record(100, 0.9), record(400, 0.7)}));
  h = history();
  ASSERT_EQ(h["saves"].size(), 4u) << h.dump();
  EXPECT_EQ(h["saves"][0]["interp"], record(100, 0.1)) << "what was read stays";
  EXPECT_EQ(h["saves"][3]["save"], "step-000400");

  // A history of another run, or with a bad record, is reported on its save and not used.
  save_with_record(run, 500, record(500, 0.7).dump(),
                   history_of({record(450, 0.7)}, "1111111111111111"));
  json bad = record(460, 0.7);
  bad["n_heads"] = 3;
  save_with_record(run, 600, record(600, 0.7).dump(), history_of({bad}));
  save_with_record(run, 700, record(700, 0.7).dump(), history_of({record(800, 0.7)}));
  h = history();
  ASSERT_EQ(h["saves"].size(), 7u) << h.dump();
  EXPECT_NE(h["saves"][4]["history_error"].get<std::string>().find(
                "step-000500/interp_history.json: 'run_id' must be the save's"),
            std::string::npos)
      << h["saves"][4];
  EXPECT_NE(h["saves"][5]["history_error"].get<std::string>().find(
                "records[0]: 'previous_token' row 0 must have one value per head, 3"),
            std::string::npos)
      << h["saves"][5];
  EXPECT_NE(h["saves"][6]["history_error"].get<std::string>().find(
                "records[0]: step 800 comes after the save's"),
            std::string::npos)
      << h["saves"][6];
  for (const json& s : h["saves"]) EXPECT_TRUE(s["recorded"].get<bool>()) << s;
  server.stop();
}

TEST(ServeInterp, OnlyThisRunsSavesAreShownNeverThoseAnOverwriteLeft) {
  const fs::path run = glass_test::temp_dir("serve_interp_foreign");
  const std::string mine = save_with_record(run, 10, record(10, 0.1).dump());
  // A pinned save of the run an --overwrite replaced: complete and sealed, of another run id.
  const fs::path theirs = run / "step-000007";
  fs::copy(mine, theirs, fs::copy_options::recursive);
  glass_test::write_file(theirs / glass::serve_api::kInterpRecordFile, record(7, 0.5).dump());
  glass::write_manifest(theirs.string(), "1111111111111111", 7);
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.poll_seconds = 600;
  glass::Server server(options);
  auto client = client_for(server.start());
  const json h = json::parse(client->Get("/api/interp")->body);
  ASSERT_EQ(h["saves"].size(), 1u) << h.dump();
  EXPECT_EQ(h["saves"][0]["step"], 10);
  EXPECT_EQ(h["saves"][0]["interp"], record(10, 0.1));
  server.stop();
}

TEST(ServeInterp, ADamagedLogIsNeverShownItsReasonIsGiven) {
  const fs::path run = glass_test::temp_dir("serve_interp_damaged_log");
  const std::string save = save_with_record(run, 50, record(50, 0.1).dump());
  std::string log = glass_test::read_file(fs::path(save) / "log.csv");
  log.replace(log.rfind(",100,"), 5, ",900,");  // a changed row, not resealed
  glass_test::write_file(fs::path(save) / "log.csv", log);
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.poll_seconds = 600;
  glass::Server server(options);
  auto client = client_for(server.start());
  const json h = json::parse(client->Get("/api/interp")->body);
  ASSERT_EQ(h["saves"].size(), 1u) << h.dump();
  EXPECT_TRUE(h["saves"][0]["val_loss"].is_null()) << h.dump();
  EXPECT_NE(h["saves"][0]["log_error"].get<std::string>().find(
                "step-000050/log.csv: " + (fs::path(save) / "log.csv").string() +
                ": the file was changed after glass train wrote it"),
            std::string::npos)
      << h.dump();
  const json l = json::parse(client->Get("/api/log")->body);
  EXPECT_EQ(l["evals"].size(), 0u) << l.dump();
  EXPECT_NE(l["evals_error"].get<std::string>().find("log.csv: the file was changed"),
            std::string::npos)
      << l.dump();
  server.stop();
}

TEST(ServeInterp, AResealedRecordWithImpossibleValuesIsAnError) {
  const fs::path run = glass_test::temp_dir("serve_interp_impossible");
  json shares = record(10, 0.1);
  shares["first_position"][0][0] = 1e308;
  save_with_record(run, 10, shares.dump());
  json wide = record_with(20, [](const std::string&, int, int) { return 0.5; });
  for (const char* kind : glass::serve_api::kInterpKinds)
    wide[kind] = json::parse("[[0,0,0,0,0],[0,0,0,0,0]]");
  wide["n_heads"] = 5;  // the model has 4
  save_with_record(run, 20, wide.dump());
  json delta = record(30, 0.1);
  delta["ablation_delta_loss"][1][2] = -5000;
  save_with_record(run, 30, delta.dump());
  glass::ServeOptions options;
  options.checkpoint = run.string();
  options.port = 0;
  options.poll_seconds = 600;
  glass::Server server(options);
  auto client = client_for(server.start());
  const json h = json::parse(client->Get("/api/interp")->body);
  ASSERT_EQ(h["saves"].size(), 3u) << h.dump();
  EXPECT_EQ(h["recorded"], 0) << h.dump();
  const std::vector<std::string> why = {
      "'first_position' holds 1e+308, impossible for a mean attention weight",
      "'n_heads' is 5, the model's is 4", "'ablation_delta_loss' holds -5000, impossible"};
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_NE(h["saves"][k]["error"].get<std::string>().find(why[k]), std::string::npos)
        << h["saves"][k];
  server.stop();
}

TEST(ServeInterp, ARecordIsCheckedFieldByField) {
  EXPECT_EQ(glass::serve_api::parse_interp_record(record(5, 0.3).dump()), record(5, 0.3));
  auto refused = [](json j, const std::string& words) {
    try {
      glass::serve_api::parse_interp_record(j.dump());
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  json j = record(5, 0.3);
  j["format"] = "glass-interp-2";
  refused(j, "'format' must be \"glass-interp-1\"");
  j = record(5, 0.3);
  j.erase("n_heads");
  refused(j, "'n_heads' is missing");
  j = record(5, 0.3);
  j["step"] = -1;
  refused(j, "'step' must be an integer of at least 0");
  j = record(5, 0.3);
  j["previous_token"][0][2] = "0.5";
  refused(j, "'previous_token[0][2]' must be a finite number");
  j = record(5, 0.3);
  j["first_position"].push_back(j["first_position"][0]);
  refused(j, "'first_position' must have one row per layer, 2 rows");
  j = record(5, 0.3);
  j.erase("ablation_delta_loss");
  refused(j, "'ablation_delta_loss' is missing");
  j = record(5, 0.3);
  j["probe_loss"] = nullptr;
  refused(j, "'probe_loss' must be a finite number");
  try {
    glass::serve_api::parse_interp_record(R"({"format": "glass-interp-1", "format": "x"})");
    ADD_FAILURE() << "a duplicate key accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("twice"), std::string::npos) << e.what();
  }
  // Extra fields of a later writer are left out of the answer, not refused.
  j = record(5, 0.3);
  j["comment"] = "x";
  EXPECT_EQ(glass::serve_api::parse_interp_record(j.dump()), record(5, 0.3));
}

TEST(ServeInterp, ARunWithoutRecordsSaysSoAndAFlatCheckpointIsReadToo) {
  const fs::path dir = glass_test::temp_dir("serve_interp_flat");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), kContext, 3, 0.3);
  glass::ServeOptions options;
  options.checkpoint = (dir / "ckpt").string();
  options.port = 0;
  glass::Server server(options);
  auto client = client_for(server.start());
  const auto r = client->Get("/api/interp");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json h = json::parse(r->body);
  ASSERT_EQ(h["saves"].size(), 1u) << h.dump();
  EXPECT_EQ(h["recorded"], 0);
  EXPECT_EQ(h["saves"][0]["recorded"], false);
  EXPECT_TRUE(h["saves"][0]["step"].is_null()) << "a flat checkpoint records no step";
  server.stop();

  // A run directory before its first save has no save to list; then its first save, whose
  // record is read at the next look.
  const fs::path run = dir / "run";
  fs::create_directories(run);
  options.checkpoint = run.string();
  options.poll_seconds = 0.05;
  glass::Server watching(options);
  auto watcher = client_for(watching.start());
  auto saves = [&] { return json::parse(watcher->Get("/api/interp")->body)["saves"]; };
  EXPECT_EQ(saves().size(), 0u) << saves().dump();
  save_with_record(run, 5, record(5, 0.4).dump());
  const json after = saves();
  ASSERT_EQ(after.size(), 1u) << after.dump();
  EXPECT_EQ(after[0]["save"], "step-000005");
  EXPECT_EQ(after[0]["interp"], record(5, 0.4));
  watching.stop();
}

TEST(ServeInterp, LooksFromManyThreadsAtOnceListEachSaveOnce) {
  // The page's route and the server's watcher both look at the run; a save read by two of
  // them at once is still one entry (a flat checkpoint has no step to tell two entries apart).
  const fs::path dir = glass_test::temp_dir("serve_interp_threads");
  glass_test::write_small_checkpoint((dir / "ckpt").string(), kContext, 3, 0.3);
  for (int round = 0; round < 20; ++round) {
    glass::serve_api::InterpHistory history;
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&] {
        while (!go) std::this_thread::yield();
        history.look((dir / "ckpt").string());
      });
    go = true;
    for (std::thread& t : threads) t.join();
    const json saves = history.to_json()["saves"];
    ASSERT_EQ(saves.size(), 1u) << "round " << round << ": " << saves.dump();
  }
}

}  // namespace
