// The interpretability options of `glass inspect` (--lens, --ablate, --head-scores, --patch,
// --history, --dla, --attribution) through the real binary: their --json numbers against the library (interp/) on the
// same checkpoint, the terminal view, the page of --html (the report of --json inside, the loss
// curve, the head chosen), and every bad input with a clear message and a non-zero exit.

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "cli_test_util.hpp"
#include "data/text.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/loss_plot.hpp"
#include "interp/interp.hpp"

namespace fs = std::filesystem;
using glass_test::CliRun;
using glass_test::q;
using nlohmann::json;

namespace {

/// A two-layer model of two heads each, trained 60 steps with a save every 20 (long enough for
/// its next-token prediction to depend on the prompt).
const char* kRecipe =
    " --batch-size 4 --context 16 --d-model 32 --n-layers 2 --n-heads 2 --n-kv-heads 1"
    " --ffn-hidden 32 --eval-iters 2 --sample-tokens 0 --warmup 5 --lr 3e-3 --iters 60"
    " --eval-every 20";

class InterpCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-interp-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    glass_test::write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
    for (const char* name : {"run", "off"}) {
      const CliRun r =
          glass_test::run_glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                                    q((dir_ / name).string()) + kRecipe +
                                    (std::string(name) == "off" ? " --no-interp-record" : ""),
                                dir_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static CliRun inspect(const std::string& args, const std::string& run = "run") {
    return glass_test::run_glass("inspect --checkpoint " + q((dir_ / run).string()) + " " + args,
                                 dir_);
  }
  static json inspect_json(const std::string& args) {
    const CliRun r = inspect(args + " --json -");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }
  /// The checkpoint as the library loads it, on the path the hook points need.
  static glass::Checkpoint load() {
    glass::Checkpoint loaded = glass::load_checkpoint((dir_ / "run").string());
    loaded.model().set_ops_path(glass::OpsPath::reference);
    return loaded;
  }
  static std::vector<std::int32_t> tokens(const glass::Checkpoint& m, const std::string& text) {
    return m.encode_prompt(glass::utf8_to_u32(text), glass::UnknownPolicy::kRefuse);
  }
};

fs::path InterpCli::dir_;

TEST_F(InterpCli, SavesHoldTheRecordUnlessTurnedOff) {
  EXPECT_TRUE(fs::exists(dir_ / "run" / "current" / "interp.json"));
  EXPECT_FALSE(fs::exists(dir_ / "off" / "current" / "interp.json"));
  const CliRun help = glass_test::run_glass("train --help", dir_);
  EXPECT_NE(help.out.find("--no-interp-record"), std::string::npos);
}

TEST_F(InterpCli, LensEqualsTheLibrary) {
  const json j = inspect_json("--prompt 'Capitu e' --lens --top-k 3");
  const glass::Checkpoint m = load();
  const glass::LogitLens lens = glass::logit_lens(m.model(), tokens(m, "Capitu e"), 3);
  ASSERT_EQ(j["lens"]["points"].size(), 3u);  // embeddings, layers.0.out, layers.1.out
  EXPECT_EQ(j["lens"]["points"][2], "layers.1.out");
  ASSERT_EQ(j["prompt"].size(), 8u);
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t t = 0; t < 8; ++t) {
      for (std::size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(j["lens"]["top"][s][t][k]["id"].get<int>(), lens.top_ids(s, t, k));
        EXPECT_NEAR(j["lens"]["top"][s][t][k]["prob"].get<double>(), lens.top_probs(s, t, k), 1e-6);
      }
      if (t + 1 < 8) {
        EXPECT_NEAR(j["lens"]["true_next_prob"][s][t].get<double>(), lens.next_prob(s, t), 1e-6);
      }
    }
  // The terminal table: one block per position, labelled with the token and the true next one.
  const CliRun text = inspect("--prompt 'Capitu e' --lens --top-k 3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Logit lens"), std::string::npos);
  EXPECT_NE(text.out.find("position 6 '␣' -> true next 'e'"), std::string::npos) << text.out;
}

TEST_F(InterpCli, AblationEqualsTheLibraryInBothModes) {
  const glass::Checkpoint m = load();
  const std::vector<std::int32_t> ids = tokens(m, "Capitu e");
  const std::vector<glass::HeadRef> heads = {{0, 1}, {1, 0}};
  const glass::NextTokenShift zero =
      glass::next_token_shift(m.model(), ids, heads, glass::AblationMode::zero);
  const glass::HeadMeans means = glass::head_means(m.model(), glass::as_batch(ids));
  const glass::NextTokenShift mean =
      glass::next_token_shift(m.model(), ids, heads, glass::AblationMode::mean, &means);
  for (const auto& [mode, shift] : {std::pair{"zero", zero}, std::pair{"mean", mean}}) {
    const json j =
        inspect_json(std::string("--prompt 'Capitu e' --ablate 0.1,1.0 --ablation ") + mode);
    EXPECT_EQ(j["ablation"]["mode"], mode);
    EXPECT_EQ(j["ablation"]["heads"], json::parse("[[0,1],[1,0]]"));
    ASSERT_EQ(j["ablation"]["after"].size(), shift.after.size());
    for (std::size_t v = 0; v < shift.after.size(); ++v) {
      EXPECT_NEAR(j["ablation"]["before"][v].get<double>(), shift.before(v), 1e-6);
      EXPECT_NEAR(j["ablation"]["after"][v].get<double>(), shift.after(v), 1e-6);
    }
    EXPECT_NEAR(j["ablation"]["kl_divergence"].get<double>(), shift.kl_divergence, 1e-6);
    EXPECT_GT(shift.kl_divergence, 0);  // two heads of a trained model matter somewhat
  }
}

TEST_F(InterpCli, HeadScoresOnAPromptEqualTheLibrarysPatternsAndAblation) {
  const std::string prompt = "Capitu e a casa";
  const json j = inspect_json("--prompt '" + prompt + "' --head-scores");
  const glass::Checkpoint m = load();
  const std::vector<std::int32_t> ids = tokens(m, prompt);
  const std::size_t n = ids.size() - 1;  // one window: every token but the last predicts one
  // Independently of the record's code: the patterns from a traced forward, the Δloss table.
  glass::Ids inputs = glass::Ids::from_shape({1, n}), targets = glass::Ids::from_shape({1, n});
  for (std::size_t t = 0; t < n; ++t) inputs(0, t) = ids[t], targets(0, t) = ids[t + 1];
  glass::Tracer tracer;
  glass::run_with_hooks(m.model(), inputs, tracer);
  const glass::AblationTable table =
      glass::ablation_table(m.model(), inputs, targets, glass::AblationMode::zero);
  EXPECT_NEAR(j["head_scores"]["probe_loss"].get<double>(), table.base_loss, 1e-6);
  const std::size_t period = n / 2;  // 32 does not fit a window of n tokens
  const glass::HeadScores induction = glass::head_scores(
      m.model(), glass::repeated_random_tokens(period, m.model().config().vocab_size, 1234),
      period);
  for (std::size_t L = 0; L < 2; ++L) {
    const glass::Array& softmax = tracer.get(glass::attention_point(L, "softmax"));  // (H, n, n)
    for (std::size_t h = 0; h < 2; ++h) {
      glass::Array pattern = glass::Array::from_shape({n, n});
      std::copy(softmax.data() + h * n * n, softmax.data() + (h + 1) * n * n, pattern.data());
      EXPECT_NEAR(j["head_scores"]["previous_token"][L][h].get<double>(),
                  glass::previous_token_score(pattern), 1e-6);
      EXPECT_NEAR(j["head_scores"]["first_position"][L][h].get<double>(),
                  glass::first_position_share(pattern), 1e-6);
      EXPECT_NEAR(j["head_scores"]["ablation_delta_loss"][L][h].get<double>(),
                  table.delta_loss(L, h), 1e-6);
      EXPECT_NEAR(j["head_scores"]["induction"][L][h].get<double>(), induction.induction(L, h),
                  1e-6);
    }
  }
  EXPECT_EQ(j["head_scores"]["probe"]["period"], period);
}

TEST_F(InterpCli, HeadScoresWithoutAPromptAreTheSavesRecord) {
  const json j = inspect_json("--head-scores");
  const glass::InterpRecord saved =
      glass::parse_interp_record(glass_test::read_file(dir_ / "run" / "current" / "interp.json"));
  EXPECT_EQ(j["head_scores"]["step"], 60);
  EXPECT_EQ(j["head_scores"]["probe"]["source"], "validation");
  for (std::size_t L = 0; L < 2; ++L)
    for (std::size_t h = 0; h < 2; ++h)
      EXPECT_NEAR(j["head_scores"]["previous_token"][L][h].get<double>(),
                  saved.previous_token(L, h), 1e-9);
  const CliRun table = inspect("--head-scores");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("previous-token   induction   first-position"), std::string::npos);
  // A save without the record, and --best, need a prompt.
  const CliRun off = inspect("--head-scores", "off");
  EXPECT_NE(off.exit_code, 0);
  EXPECT_NE(off.err.find("holds no interp.json"), std::string::npos) << off.err;
  const CliRun best = inspect("--head-scores --best");
  EXPECT_NE(best.exit_code, 0);
  EXPECT_NE(best.err.find("give --prompt"), std::string::npos) << best.err;
}

TEST_F(InterpCli, PatchingEqualsTheLibrary) {
  const glass::Checkpoint m = load();
  const std::string clean = "Capitu e";
  const std::vector<std::int32_t> clean_ids = tokens(m, clean);
  const std::size_t V = m.model().config().vocab_size, T = clean_ids.size();
  auto predicted = [&](const std::vector<std::int32_t>& ids) {
    const glass::Array logits =
        glass::ablated_logits(m.model(), glass::as_batch(ids), {}, glass::AblationMode::zero);
    return static_cast<std::int32_t>(
        glass::top_k_indices(logits.data() + (T - 1) * V, V, 1).front());
  };
  // A corrupted prompt of the same length whose next token differs: one character changed.
  std::string corrupted;
  const std::u32string clean32 = glass::utf8_to_u32(clean);
  for (std::size_t p = T; p-- > 0 && corrupted.empty();)
    for (std::size_t v = 1; v < V && corrupted.empty(); ++v) {
      std::u32string candidate = clean32;
      candidate[p] = m.tokenizer().chars()->char_of(static_cast<std::int32_t>(v));
      if (candidate[p] == '\'' || candidate[p] == '\n' || candidate == clean32) continue;
      const std::string text = glass::u32_to_utf8(candidate);
      if (predicted(tokens(m, text)) != predicted(clean_ids)) corrupted = text;
    }
  ASSERT_FALSE(corrupted.empty()) << "no candidate changes the prediction";
  const json j = inspect_json("--prompt '" + clean + "' --patch --corrupted '" + corrupted + "'");
  const glass::PatchingResult res =
      glass::patch_residual_stream(m.model(), clean_ids, tokens(m, corrupted), predicted(clean_ids),
                                   predicted(tokens(m, corrupted)));
  EXPECT_EQ(j["patching"]["answer"]["id"].get<int>(), res.answer);
  EXPECT_EQ(j["patching"]["other"]["id"].get<int>(), res.other);
  EXPECT_NEAR(j["patching"]["clean_diff"].get<double>(), res.clean_diff, 1e-5);
  ASSERT_EQ(j["patching"]["points"].size(), res.rows.size());
  for (std::size_t i = 0; i < res.rows.size(); ++i)
    for (std::size_t t = 0; t < T; ++t) {
      if (!std::isfinite(static_cast<double>(res.recovered(i, t)))) continue;
      EXPECT_NEAR(j["patching"]["recovered"][i][t].get<double>(), res.recovered(i, t), 1e-5);
    }
  // Patching the whole stream after the last block at the last position restores the clean run.
  EXPECT_NEAR(j["patching"]["recovered"][res.rows.size() - 1][T - 1].get<double>(), 1.0, 1e-5);
}

TEST_F(InterpCli, HistoryListsEverySaveNextToItsValidationLoss) {
  const json j = inspect_json("--history");
  EXPECT_EQ(j["history"]["steps"], json::parse("[0,20,40,60]"));
  const std::vector<glass::LossPoint> log =
      glass::read_loss_log((dir_ / "run" / "current" / "log.csv").string());
  ASSERT_EQ(log.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(j["history"]["val_loss"][i].get<double>(), log[i].val_loss, 1e-9);
  const json history =
      json::parse(glass_test::read_file(dir_ / "run" / "current" / "interp_history.json"));
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(j["history"]["records"][i]["previous_token"],
              history["records"][i]["previous_token"]);
  const CliRun text = inspect("--history");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Head scores over training: 4 saves"), std::string::npos) << text.out;
  const CliRun none = inspect("--history", "off");
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_NE(none.out.find("No interpretability record"), std::string::npos);
}

/// The JSON of the page's <script type="application/json" id="ID"> tag.
json page_json(const std::string& html, const std::string& id) {
  const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
  const std::size_t at = html.find(open);
  EXPECT_NE(at, std::string::npos) << id;
  if (at == std::string::npos) return json();
  const std::size_t from = at + open.size();
  return json::parse(html.substr(from, html.find("</script>", from) - from));
}

TEST_F(InterpCli, ThePageEmbedsTheReportOfJsonTheLossAndTheChosenHead) {
  const std::string args =
      "--prompt 'Capitu e' --lens --ablate 0.0 --head-scores --history --layer 1 --head 1";
  json expected = inspect_json(args);
  const fs::path page = dir_ / "lab.html";
  const CliRun r = inspect(args + " --html " + q(page.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = glass_test::read_file(page);
  json embedded = page_json(html, "lab-data");
  // The head scores measured on the prompt in each run took their own time.
  for (json* j : {&expected, &embedded}) (*j)["head_scores"].erase("seconds");
  EXPECT_EQ(embedded, expected) << "the report of --json, drawn by lab_views.js";
  const json view = page_json(html, "glass-view");
  EXPECT_EQ(view["layer"], 1);
  EXPECT_EQ(view["head"], 1);
  EXPECT_EQ(view["loss"]["step"].size(), 4u) << "the save's log.csv";
  EXPECT_TRUE(page_json(html, "glass-inspection").contains("config")) << "the prompt inspected";
  EXPECT_EQ(html.find("<script src="), std::string::npos) << "self-contained";
  // Without a prompt: the report and the loss curve, no inspection.
  const fs::path alone = dir_ / "history.html";
  const CliRun h = inspect("--history --html " + q(alone.string()));
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const std::string history = glass_test::read_file(alone);
  EXPECT_EQ(page_json(history, "lab-data"), inspect_json("--history"));
  EXPECT_EQ(page_json(history, "glass-inspection"), json::object());
  EXPECT_EQ(page_json(history, "glass-view")["loss"]["step"].size(), 4u);
  // The head chosen is checked against the model.
  const CliRun layer = inspect("--history --layer 2 --html " + q(alone.string()));
  EXPECT_NE(layer.exit_code, 0);
  EXPECT_NE(layer.err.find("--layer 2 is out of range: the model has 2 layers (0..1)"),
            std::string::npos)
      << layer.err;
  const CliRun head = inspect("--prompt 'Capitu' --lens --head 2");
  EXPECT_NE(head.err.find("--head 2 is out of range: the model has 2 query heads (0..1)"),
            std::string::npos)
      << head.err;
}

TEST_F(InterpCli, ABpeRunRecordsAndInspectsInTokens) {
  const fs::path run = dir_ / "bpe";
  const CliRun t =
      glass_test::run_glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                                q(run.string()) + kRecipe + " --tokenizer bpe --vocab-size 400",
                            dir_);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const glass::InterpRecord saved =
      glass::parse_interp_record(glass_test::read_file(run / "current" / "interp.json"));
  EXPECT_EQ(saved.step, 60);
  EXPECT_EQ(saved.probe.tokens, 256u);  // tokens (subwords), not characters
  const CliRun h = inspect("--history", "bpe");
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_NE(h.out.find("4 saves"), std::string::npos) << h.out;
  // The lens of a BPE prompt has one column per subword, fewer than its characters.
  const CliRun lens = inspect("--prompt 'Capitu e Bentinho' --lens --json -", "bpe");
  ASSERT_EQ(lens.exit_code, 0) << lens.err;
  const json j = json::parse(lens.out);
  glass::Checkpoint m = glass::load_checkpoint(run.string());
  m.model().set_ops_path(glass::OpsPath::reference);
  const std::vector<std::int32_t> ids =
      m.encode_prompt(glass::utf8_to_u32("Capitu e Bentinho"), glass::UnknownPolicy::kRefuse);
  ASSERT_EQ(j["prompt"].size(), ids.size());
  EXPECT_LT(ids.size(), std::string("Capitu e Bentinho").size());
  const glass::LogitLens expected = glass::logit_lens(m.model(), ids, 5);
  EXPECT_EQ(j["lens"]["top"][2][ids.size() - 1][0]["id"].get<int>(),
            expected.top_ids(2, ids.size() - 1, 0));
}

TEST_F(InterpCli, BadInputsFailWithAClearMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--prompt 'Capitu' --ablate 5.0", "there is no layer 5, the model has 2 layers (0..1)"},
      {"--prompt 'Capitu' --ablate 0.2", "there is no head 2, each layer has 2 heads (0..1)"},
      {"--prompt 'Capitu' --ablate zero", "'zero' is not a head"},
      {"--prompt 'Capitu' --ablate 0.1,", "has an empty item"},
      {"--prompt 'Capitu' --ablate 1.-1", "'1.-1' is not a head"},
      {"--prompt 'Capitu' --ablate 0.0 --ablation half", "--ablation"},
      {"--prompt 'Capitu' --ablation mean", "add --ablate"},
      {"--lens", "give --prompt"},
      {"--prompt 'Capitu' --patch", "--patch needs the corrupted prompt"},
      {"--prompt 'Capitu' --corrupted 'Escoba'", "add --patch"},
      {"--prompt 'Capitu' --patch --corrupted 'Escobar'",
       "--corrupted has 7 tokens and the prompt 6"},
      {"--prompt 'Capitu e a casa e a sala' --lens", "has 24 characters"},
      {"--prompt 'Ca' --head-scores", "at least 3 tokens"},
      {"--prompt 'Capitu' --lens --snapshot attn.q", "does not combine"},
      {"--prompt 'Capitu' --lens --top-k 0", "--top-k must be from 1 to 1000 (got 0)"},
      {"--prompt 'Capitu' --lens --top-k -3", "--top-k must be from 1 to 1000 (got -3)"},
      {"--prompt 'Capitu' --lens --top-k 1001", "--top-k must be from 1 to 1000 (got 1001)"},
      {"--prompt 'Capitu' --lens --layer -1", "--layer -1 is out of range"},
      {"--prompt 'Capitu' --ablate ''", "--ablate: needs at least one head"},
  };
  for (const auto& [args, message] : cases) {
    const CliRun r = inspect(args);
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

/// A copy of the trained run (its links kept) at dir_/NAME, to damage.
fs::path copy_of_run(const fs::path& dir, const std::string& name) {
  const fs::path copy = dir / name;
  fs::remove_all(copy);
  fs::copy(dir / "run", copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  return copy;
}

/// The save `current` of `run` points to.
fs::path current_save(const fs::path& run) { return run / fs::read_symlink(run / "current"); }

TEST_F(InterpCli, TheHistoryShowsOnlyThisRunsSavesNeverThoseAnOverwriteLeft) {
  // `glass train --overwrite` leaves the replaced run's pinned saves in place: here a complete
  // save of another run, at a step this run saved no record of (50), with its own record.
  const fs::path run = copy_of_run(dir_, "foreign");
  const fs::path mine = current_save(run);
  const fs::path theirs = run / "step-000050";
  fs::copy(mine, theirs, fs::copy_options::recursive);
  json record = json::parse(glass_test::read_file(theirs / "interp.json"));
  record["step"] = 50;
  glass_test::write_file(theirs / "interp.json", record.dump());
  fs::remove(theirs / "interp_history.json");
  glass::write_manifest(theirs.string(), "0123456789abcdef", 50);  // another run, sealed
  const CliRun r = glass_test::run_glass(
      "inspect --checkpoint " + q(run.string()) + " --history --json -", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["history"]["steps"], json::parse("[0,20,40,60]"))
      << "step 50 belongs to another run";
  // The same save, sealed as this run's, is shown: the run id is what tells them apart.
  glass::write_manifest(theirs.string(), glass::read_manifest(mine.string()).run_id, 50);
  const CliRun same = glass_test::run_glass(
      "inspect --checkpoint " + q(run.string()) + " --history --json -", dir_);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(json::parse(same.out)["history"]["steps"], json::parse("[0,20,40,50,60]"));
}

TEST_F(InterpCli, ADamagedLogIsVerifiedLikeEveryFileAndLeftOutWithAWarning) {
  const fs::path run = copy_of_run(dir_, "damaged_log");
  const fs::path log = current_save(run) / "log.csv";
  std::string text = glass_test::read_file(log);
  const std::size_t digit = text.find_first_of("123456789", text.find('\n') + 3);
  text[digit] = text[digit] == '9' ? '8' : '9';  // one digit of a loss: same size, other hash
  glass_test::write_file(log, text);
  // --history: the records, without the losses, and a warning naming the file.
  const CliRun h = glass_test::run_glass(
      "inspect --checkpoint " + q(run.string()) + " --history --json -", dir_);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const json j = json::parse(h.out);
  EXPECT_EQ(j["history"]["steps"], json::parse("[0,20,40,60]"));
  for (const json& v : j["history"]["val_loss"]) EXPECT_TRUE(v.is_null()) << j["history"];
  EXPECT_NE(h.err.find("log.csv: the file was changed after glass train wrote it"),
            std::string::npos)
      << h.err;
  // --html: the page, without the loss curve, and the same warning.
  const fs::path page = dir_ / "damaged_log.html";
  const CliRun p = glass_test::run_glass(
      "inspect --checkpoint " + q(run.string()) + " --history --html " + q(page.string()), dir_);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.err.find("no loss curve on the page"), std::string::npos) << p.err;
  EXPECT_EQ(page_json(glass_test::read_file(page), "glass-view")["loss"]["step"].size(), 0u);
}

TEST_F(InterpCli, AResealedRecordWithImpossibleValuesIsRefused) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& r) { r["previous_token"][0][0] = 1e308; },
       "previous_token[0][0] = inf, a mean attention weight outside [0, 1]"},
      {[](json& r) { r["induction"][1][1] = -0.5; }, "induction[1][1] = -0.5"},
      {[](json& r) { r["ablation_delta_loss"][0][1] = 1e6; }, "beyond 1000 nats"},
      {[](json& r) { r["step"] = 1000; }, "it records step 1000, after its save's step 60"},
      {[](json& r) {
         for (const char* kind :
              {"previous_token", "induction", "first_position", "ablation_delta_loss"})
           r[kind] = json::parse("[[0,0,0],[0,0,0],[0,0,0]]");
         r["n_layers"] = 3;
         r["n_heads"] = 3;
       },
       "it has 3 x 3 heads, the model 2 layers of 2 heads"},
  };
  for (const auto& [edit, message] : cases) {
    const fs::path run = copy_of_run(dir_, "resealed");
    const fs::path save = current_save(run);
    json record = json::parse(glass_test::read_file(save / "interp.json"));
    edit(record);
    glass_test::write_file(save / "interp.json", record.dump());
    const glass::Manifest m = glass::read_manifest(save.string());
    glass::write_manifest(save.string(), m.run_id, m.step);  // resealed: the checksums agree
    const CliRun r =
        glass_test::run_glass("inspect --checkpoint " + q(run.string()) + " --head-scores", dir_);
    EXPECT_NE(r.exit_code, 0) << message;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no training of this model writes such a record"), std::string::npos)
        << r.err;
  }
}

}  // namespace

TEST_F(InterpCli, DirectLogitAttributionSumsToTheLogitAndEqualsTheLibrary) {
  const glass::Checkpoint m = load();
  const std::string prompt = "Capitu e";
  const json j = inspect_json("--prompt '" + prompt + "' --dla --target a --position 3");
  const json& d = j["dla"];
  const glass::LogitAttribution a =
      glass::logit_attribution(m.model(), tokens(m, prompt), 3, tokens(m, "a").front());
  EXPECT_EQ(d["position"].get<std::size_t>(), 3u);
  EXPECT_EQ(d["target"]["id"].get<int>(), a.target);
  EXPECT_EQ(d["target"]["text"], "a");
  EXPECT_NEAR(d["logit"].get<double>(), a.logit, 1e-5);
  EXPECT_NEAR(d["sum"].get<double>(), d["logit"].get<double>(), 1e-4);
  double sum = d["embeddings"].get<double>();
  for (std::size_t L = 0; L < 2; ++L) {
    sum += d["mlps"][L].get<double>();
    for (std::size_t h = 0; h < 2; ++h) {
      sum += d["heads"][L][h].get<double>();
      EXPECT_NEAR(d["heads"][L][h].get<double>(), a.heads(L, h), 1e-5);
    }
  }
  EXPECT_NEAR(sum, a.logit, 1e-4);
  // The terminal table, with the default target (the most probable token) at the last position.
  const CliRun r = inspect("--prompt '" + prompt + "' --dla");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Direct logit attribution at position 7"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sum of the parts"), std::string::npos) << r.out;
}

TEST_F(InterpCli, AttributionPatchingStandsNextToExactPatching) {
  const glass::Checkpoint m = load();
  const std::string clean = "Capitu e", corrupted = "Capito e";
  const json j = inspect_json("--prompt '" + clean + "' --attribution --corrupted '" + corrupted +
                              "' --metric log-prob");
  const json& at = j["attribution"];
  EXPECT_EQ(at["metric"], "log_prob");
  const glass::PatchMetric metric{glass::PatchMetric::Kind::log_prob,
                                  at["answer"]["id"].get<std::int32_t>(), 0};
  const auto estimate =
      glass::attribution_patching(m.model(), tokens(m, clean), tokens(m, corrupted), metric);
  const auto exact =
      glass::exact_patching(m.model(), tokens(m, clean), tokens(m, corrupted), metric);
  for (std::size_t L = 0; L < 2; ++L) {
    EXPECT_NEAR(at["estimate"]["mlps"][L].get<double>(), estimate.total.mlps(L), 1e-5);
    EXPECT_NEAR(at["exact"]["mlps"][L].get<double>(), exact.mlps(L), 1e-5);
    for (std::size_t h = 0; h < 2; ++h) {
      EXPECT_NEAR(at["estimate"]["heads"][L][h].get<double>(), estimate.total.heads(L, h), 1e-5);
      EXPECT_NEAR(at["exact"]["heads"][L][h].get<double>(), exact.heads(L, h), 1e-5);
    }
  }
  EXPECT_EQ(at["head_positions"][1][1].size(), 8u);
  EXPECT_NEAR(at["spearman_heads"].get<double>(),
              glass::spearman(estimate.total.heads, exact.heads), 1e-9);
  const CliRun r = inspect("--prompt '" + clean + "' --attribution --corrupted '" + corrupted +
                           "' --metric log-prob");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Rank correlation (Spearman) over the heads"), std::string::npos) << r.out;
}

TEST_F(InterpCli, AttributionToolsRefuseBadInputClearly) {
  const struct {
    std::string args, message;
  } cases[] = {
      {"--prompt 'Capitu e' --dla --position 8", "--position 8 is out of range: the prompt has 8"},
      {"--prompt 'Capitu e' --dla --position -2", "--position -2 is out of range"},
      {"--prompt 'Capitu e' --dla --target ab", "--target 'ab' is 2 tokens"},
      {"--prompt 'Capitu e' --dla --target '\xe2\x98\x83'", "--target is refused"},
      {"--prompt 'Capitu e' --target a", "--target and --position say what --dla splits"},
      {"--dla", "--prompt"},
      {"--prompt 'Capitu e' --attribution", "--attribution needs the corrupted prompt"},
      {"--prompt 'Capitu e' --attribution --corrupted 'Capitu'", "--corrupted has 6 tokens"},
      {"--prompt 'Capitu e' --attribution --corrupted 'Capitu e'", "there is no logit difference"},
      {"--prompt 'Capitu e' --metric log-prob --lens", "--metric says what --attribution"},
      {"--prompt 'Capitu e' --attribution --corrupted 'Capito e' --metric kl", "--metric"},
  };
  for (const auto& c : cases) {
    const CliRun r = inspect(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(r.err.find("terminate"), std::string::npos) << c.args << "\n" << r.err;
  }
}
