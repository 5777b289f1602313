// The features page of `glass serve` (serve/routes_features.cpp) through a real HTTP client: an
// SAE saved beside a checkpoint is found and verified; GET /api/features, /api/features/latent
// and /api/features/prompt answer what the library (inspect/sae_features.hpp) computes here on
// the same files; the page is served; no SAE, a latent out of range, a bad prompt and an SAE
// of another model are refused with a JSON error.

#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "fixtures.hpp"
#include "inspect/sae_features.hpp"
#include "serve/server.hpp"
#include "test_util.hpp"
#include "train/sae_file.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::size_t kContext = 16;

class FeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("serve_features");
    fs::remove_all(dir_);
    checkpoint_ = (dir_ / "ckpt").string();
    glass_test::write_small_checkpoint(checkpoint_, kContext, 11, 0.3);
    std::string text;
    for (int i = 0; i < 40; ++i) text += "to be or not to be\nthat is the question\n";
    data_ = (dir_ / "text.txt").string();
    glass_test::write_file(data_, text);
    loaded_ = std::make_unique<glass::Checkpoint>(glass::load_checkpoint(checkpoint_));
    glass::Rng rng(3);
    sae_ = std::make_unique<glass::SparseAutoencoder>(loaded_->config().d_model, 32, 4, rng);
  }
  void start() {
    glass::ServeOptions options;
    options.checkpoint = checkpoint_;
    options.port = 0;
    options.poll_seconds = 0.05;
    options.data_path = data_;
    server_ = std::make_unique<glass::Server>(options);
    const int port = server_->start();
    ASSERT_GT(port, 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port);
    client_->set_read_timeout(30, 0);
  }
  void save_sae() {
    glass::save_sae(checkpoint_ + "/sae-layers.0.out.safetensors", *sae_, "layers.0.out", *loaded_,
                    json::object());
  }
  /// The answer to GET `path`: its status and JSON.
  std::pair<int, json> get(const std::string& path) {
    const auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r);
    if (!r) return {0, json()};
    return {r->status, json::parse(r->body, nullptr, false)};
  }
  /// The library's browser on the same files: the validation split of the same text.
  glass::SaeFeatures here() {
    const glass::SplitIds split = loaded_->tokenizer().encode_split(
        glass::load_text(data_), glass::UnknownPolicy::kMapToUnknownId);
    return glass::SaeFeatures(*loaded_, *sae_, "layers.0.out",
                              split.ids.to_vector(split.n_train, split.ids.size()));
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  fs::path dir_;
  std::string checkpoint_, data_;
  std::unique_ptr<glass::Checkpoint> loaded_;
  std::unique_ptr<glass::SparseAutoencoder> sae_;
  std::unique_ptr<glass::Server> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(FeaturesTest, TheLatentAndPromptViewsAreTheLibrarys) {
  save_sae();
  start();
  const auto [status, overview] = get("/api/features");
  ASSERT_EQ(status, 200) << overview;
  EXPECT_EQ(overview["sae"], "sae-layers.0.out.safetensors");
  EXPECT_EQ(overview["point"], "layers.0.out");
  EXPECT_EQ(overview["n_latents"], 32);
  const glass::SaeFeatures features = here();
  EXPECT_EQ(overview["fired"], features.overview()["fired"]);
  for (int latent : {0, 7, 31}) {
    const auto [s, j] = get("/api/features/latent?latent=" + std::to_string(latent));
    ASSERT_EQ(s, 200) << j;
    const json want = features.latent(static_cast<std::size_t>(latent));
    EXPECT_EQ(j["contexts"], want["contexts"]) << latent;
    EXPECT_EQ(j["histogram"], want["histogram"]) << latent;
    EXPECT_EQ(j["promoted"], want["promoted"]) << latent;
    EXPECT_EQ(j["fired"], want["fired"]) << latent;
  }
  const auto [s, p] = get("/api/features/prompt?prompt=to%20be&top=3");
  ASSERT_EQ(s, 200) << p;
  EXPECT_EQ(p, features.prompt("to be", 3));
  const auto page = client_->Get("/features");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("/api/features/latent?latent="), std::string::npos);
}

TEST_F(FeaturesTest, BadRequestsAreRefusedWithAJsonError) {
  save_sae();
  start();
  const std::pair<std::string, std::string> cases[] = {
      {"/api/features/latent?latent=32", "latent 32 is out of range"},
      {"/api/features/latent", "give the latent"},
      {"/api/features/latent?latent=x", "latent"},
      {"/api/features/prompt", "give the prompt"},
      {"/api/features/prompt?prompt=", "'prompt' is empty"},
      {"/api/features/prompt?prompt=to&top=0", "'top' must be from 1 to 20"},
  };
  for (const auto& [path, words] : cases) {
    const auto [s, j] = get(path);
    EXPECT_EQ(s, 400) << path << " -> " << j;
    ASSERT_TRUE(j.is_object() && j.contains("error")) << path;
    EXPECT_NE(j["error"].get<std::string>().find(words), std::string::npos) << path << j;
  }
  const auto [s, j] = get("/api/features/prompt?prompt=" + std::string(kContext + 1, 't'));
  EXPECT_EQ(s, 400) << j;
}

TEST_F(FeaturesTest, NoSaeOrAnSaeOfAnotherModelAnswers404SayingWhy) {
  start();
  auto [s, j] = get("/api/features");
  EXPECT_EQ(s, 404) << j;
  EXPECT_NE(j["error"].get<std::string>().find("glass sae train"), std::string::npos) << j;
  server_.reset();
  // An SAE pinned to other weights: written for this model, then the model's weights change.
  save_sae();
  glass_test::write_small_checkpoint(checkpoint_, kContext, 12, 0.3);
  start();
  std::tie(s, j) = get("/api/features/latent?latent=1");
  EXPECT_EQ(s, 404) << j;
  EXPECT_NE(j["error"].get<std::string>().find("trained on another model"), std::string::npos) << j;
}

}  // namespace
