// The lab runner (inspect/lab.hpp) on a small untrained checkpoint: its report equals the
// interp/ library's numbers, its refusals are typed (field, problem) and name no flag of a
// front end, and the lab's page (lab_html) carries the report's JSON exactly, safely escaped.

#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "data/text.hpp"
#include "fixtures.hpp"
#include "inspect/lab.hpp"
#include "inspect/render_html.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;

namespace glass {
namespace {

constexpr std::size_t kContext = 16;

class Lab : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = glass_test::temp_dir("inspect_lab");
    checkpoint_ = (dir_ / "ckpt").string();
    glass_test::write_small_checkpoint(checkpoint_, kContext, 11, 0.3);
    loaded_ = std::make_unique<Checkpoint>(load_checkpoint(checkpoint_));
    loaded_->model().set_ops_path(OpsPath::reference);
  }
  std::vector<std::int32_t> ids(const std::string& text) {
    return loaded_->tokenizer().chars()->encode(utf8_to_u32(text));
  }
  /// The error run_lab throws for `q`, which must be a LabRequestError.
  LabRequestError refusal(const LabRequest& q) {
    try {
      run_lab(*loaded_, q);
    } catch (const LabRequestError& e) {
      return e;
    }
    ADD_FAILURE() << "run_lab accepted the request";
    return LabRequestError(LabField::prompt, LabProblem::missing, "");
  }
  fs::path dir_;
  std::string checkpoint_;
  std::unique_ptr<Checkpoint> loaded_;
};

TEST_F(Lab, TheReportIsTheLibrarys) {
  LabRequest q;
  q.prompt = "to be or";
  q.lens = true;
  q.top_k = 3;
  q.ablate = std::vector<HeadRef>{{1, 2}, {0, 0}};
  const InterpReport r = run_lab(*loaded_, q);
  ASSERT_EQ(r.prompt, ids("to be or"));
  const LogitLens lens = logit_lens(loaded_->model(), r.prompt, 3);
  ASSERT_TRUE(r.lens);
  EXPECT_EQ(r.lens->points, lens.points);
  for (std::size_t s = 0; s < lens.points.size(); ++s)
    for (std::size_t t = 0; t < r.prompt.size(); ++t)
      EXPECT_EQ(r.lens->top_ids(s, t, 0), lens.top_ids(s, t, 0));
  const NextTokenShift shift =
      next_token_shift(loaded_->model(), r.prompt, {{1, 2}, {0, 0}}, AblationMode::zero);
  ASSERT_TRUE(r.ablation);
  EXPECT_DOUBLE_EQ(r.ablation->shift.kl_divergence, shift.kl_divergence);
  EXPECT_GT(shift.kl_divergence, 0);
  EXPECT_FALSE(r.head_scores || r.patch || r.history) << "only what was asked";
  // The JSON lists the ablation's next tokens: the top 3 before, then those new after.
  const nlohmann::ordered_json j = interp_json(r);
  ASSERT_GE(j["ablation"]["top"].size(), 3u);
  EXPECT_EQ(j["ablation"]["top"][0]["id"].get<std::size_t>(),
            top_k_indices(shift.before.data(), shift.before.size(), 1).front());
}

TEST_F(Lab, RefusalsAreTypedAndNameNoFlag) {
  struct Case {
    LabRequest q;
    LabField field;
    LabProblem problem;
    const char* words;
  };
  auto with = [](auto change) {
    LabRequest q;
    q.prompt = "to be";
    q.lens = true;
    change(q);
    return q;
  };
  const std::vector<Case> cases = {
      {with([](LabRequest& q) { q.prompt.reset(); }), LabField::prompt, LabProblem::missing,
       "is needed"},
      {with([](LabRequest& q) { q.prompt = "\xff"; }), LabField::prompt, LabProblem::not_utf8,
       "not valid UTF-8"},
      {with([](LabRequest& q) { q.prompt = ""; }), LabField::prompt, LabProblem::empty, "empty"},
      {with([](LabRequest& q) { q.prompt = std::string(kContext + 1, 't'); }), LabField::prompt,
       LabProblem::too_long, "has 17 characters"},
      {with([](LabRequest& q) { q.prompt = "xyz"; }), LabField::prompt,
       LabProblem::unknown_characters, "never saw in training"},
      {with([](LabRequest& q) { q.top_k = 0; }), LabField::top_k, LabProblem::out_of_range,
       "must be from 1 to 1000 (got 0)"},
      {with([](LabRequest& q) { q.layer = 2; }), LabField::layer, LabProblem::out_of_range,
       "2 layers"},
      {with([](LabRequest& q) { q.head = 4; }), LabField::head, LabProblem::out_of_range,
       "4 query heads"},
      {with([](LabRequest& q) {
         q.ablate = std::vector<HeadRef>{{0, 9}};
       }),
       LabField::heads, LabProblem::out_of_range, "head 0.9"},
      {with([](LabRequest& q) { q.head_scores = true, q.prompt = "to"; }), LabField::prompt,
       LabProblem::too_short, "at least 3 tokens"},
      {with([](LabRequest& q) { q.patch = "to be or"; }), LabField::corrupted,
       LabProblem::length_mismatch, "has 8 tokens and the prompt 5"},
      {with([](LabRequest& q) { q.patch = "to be"; }), LabField::corrupted,
       LabProblem::same_prediction, "as the prompt does"},
      {with([](LabRequest& q) { q.prompt.reset(), q.lens = false, q.head_scores = true; }),
       LabField::head_scores, LabProblem::not_recorded, "holds no interp.json"},
      {with([](LabRequest& q) {
         q.prompt.reset(), q.lens = false, q.head_scores = true, q.weights_are_best = true;
       }),
       LabField::head_scores, LabProblem::missing, "best.safetensors"},
  };
  for (const Case& c : cases) {
    const LabRequestError e = refusal(c.q);
    const std::string what = e.what();
    EXPECT_EQ(e.field, c.field) << what;
    EXPECT_EQ(e.problem, c.problem) << what;
    EXPECT_NE(what.find(c.words), std::string::npos) << what;
    EXPECT_EQ(what.find("--"), std::string::npos) << "a flag named: " << what;
  }
  // Unknown characters are allowed when asked: id 0, with a warning.
  LabRequest allowed = with([](LabRequest& q) { q.prompt = "to xyz", q.allow_unknown = true; });
  const InterpReport r = run_lab(*loaded_, allowed);
  EXPECT_EQ(r.prompt[3], 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("3 character(s) of the prompt"), std::string::npos);
}

TEST_F(Lab, MeanAblationAveragesOverTheGivenTokensOrThePrompt) {
  LabRequest q;
  q.prompt = "to be";
  q.ablate = std::vector<HeadRef>{{0, 1}};
  q.ablation = AblationMode::mean;
  const InterpReport own = run_lab(*loaded_, q);
  const std::vector<std::int32_t> prompt = ids("to be");
  const HeadMeans means = head_means(loaded_->model(), as_batch(prompt));
  EXPECT_DOUBLE_EQ(own.ablation->shift.kl_divergence,
                   next_token_shift(loaded_->model(), prompt, {{0, 1}}, AblationMode::mean, &means)
                       .kl_divergence);
  EXPECT_EQ(own.ablation->mean_over, "the prompt's positions");
  // Two whole windows of a reference text (and the rest left out).
  std::string text;
  while (text.size() < 2 * kContext + 5) text += "to be or not to be ";
  q.mean_over = ids(text);
  q.mean_over_source = "two windows";
  const InterpReport over = run_lab(*loaded_, q);
  Ids batch = Ids::from_shape({2, kContext});
  std::copy(q.mean_over.begin(), q.mean_over.begin() + 2 * kContext, batch.data());
  const HeadMeans reference = head_means(loaded_->model(), batch);
  EXPECT_DOUBLE_EQ(
      over.ablation->shift.kl_divergence,
      next_token_shift(loaded_->model(), prompt, {{0, 1}}, AblationMode::mean, &reference)
          .kl_divergence);
  EXPECT_EQ(interp_json(over)["ablation"]["mean_over"], "two windows");
}

TEST_F(Lab, ThePageCarriesTheReportsJsonExactly) {
  LabRequest q;
  q.prompt = "to be";
  q.lens = true;
  InterpReport r = run_lab(*loaded_, q);
  r.checkpoint = "runs/</script><b>&";  // text that would end the tag if not escaped
  const nlohmann::ordered_json j = interp_json(r);
  HtmlOptions options;
  options.layer = 1;
  options.head = 3;
  const std::string page = lab_html(j, nullptr, options);
  const std::regex tag(R"re(<script type="application/json" id="lab-data">([^<]*)</script>)re");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(page, m, tag)) << "the report's tag, whole";
  EXPECT_EQ(nlohmann::ordered_json::parse(m[1].str()), j);
  EXPECT_EQ(page.find("runs/</script>"), std::string::npos);
  const std::regex view(R"re(<script type="application/json" id="glass-view">([^<]*)</script>)re");
  ASSERT_TRUE(std::regex_search(page, m, view));
  const auto v = nlohmann::json::parse(m[1].str());
  EXPECT_EQ(v["layer"], 1);
  EXPECT_EQ(v["head"], 3);
  EXPECT_NE(page.find("id=\"glass-inspection\">{}</script>"), std::string::npos)
      << "no inspection without one";
}

}  // namespace
}  // namespace glass
