// The inspector library (inspect/inspect.hpp) on a tiny random model: snapshots against the
// tracer, head selection, top-k, errors, terminal rendering, JSON round trip, HTML page.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "checkpoint/checkpoint.hpp"
#include "inspect/inspect.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/render_html.hpp"
#include "inspect/render_json.hpp"
#include "inspect/render_terminal.hpp"
#include "inspect/text_cells.hpp"

#include "fixtures.hpp"

namespace glass {
namespace {

const char32_t* kText = U"hello world\nthe cat sat on the mat. </script> & 'quotes'";

/// A tiny untrained model: 2 layers, 4 query heads and 2 KV heads of dim 4, context 16.
Checkpoint tiny_model(std::uint64_t seed = 7) {
  const Tokenizer tokenizer = Tokenizer::from_text(kText);
  ModelConfig config = glass_test::small_config(tokenizer.vocab_size(), 16);
  config.init_std = 0.5;  // large weights: attention rows far from uniform
  return Checkpoint(config, TextTokenizer(tokenizer), std::make_unique<Decoder>(config, seed));
}

/// The tracer's own snapshots for the same prompt, computed independently of inspect().
Tracer trace(const Checkpoint& loaded, const std::u32string& prompt) {
  const std::vector<std::int32_t> tokens = loaded.tokenizer().chars()->encode(prompt);
  Ids ids = Ids::from_shape({std::size_t(1), tokens.size()});
  std::copy(tokens.begin(), tokens.end(), ids.data());
  Tracer tracer;
  NoGradGuard no_grad;
  loaded.model().forward(ids, nullptr, &tracer);
  return tracer;
}

void expect_equal_arrays(const Array& a, const Array& b, const std::string& what) {
  ASSERT_EQ(shape_of(a), shape_of(b)) << what;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a.data()[i], b.data()[i]) << what << " at " << i;
}

TEST(Inspect, SnapshotsEqualTheTracerAndHaveTheDocumentedShapes) {
  const Checkpoint loaded = tiny_model();
  const std::u32string prompt = U"the cat";
  const Inspection ins = inspect(loaded, prompt);
  const Tracer tracer = trace(loaded, prompt);
  const std::size_t n = prompt.size(), H = 4, KV = 2, hd = 4, d = 16,
                    V = loaded.config().vocab_size;

  ASSERT_EQ(ins.n(), n);
  EXPECT_EQ(ins.tokens, loaded.tokenizer().chars()->encode(prompt));
  // Every tracer snapshot is in the inspection, with equal shape and values.
  std::size_t compared = 0;
  for (const std::string& name : tracer.names()) {
    if (name == "logits" || name == "probs") continue;
    ASSERT_TRUE(ins.has(name)) << name;
    expect_equal_arrays(ins.get(name), tracer.get(name), name);
    ++compared;
  }
  EXPECT_EQ(compared, ins.snapshots.size());
  // Shapes of nn/tracer.hpp, batch removed, for this config (m = n without cache).
  const std::map<std::string, Shape> expected = {{"attn.q", {H, n, hd}},
                                                 {"attn.k", {KV, n, hd}},
                                                 {"attn.v", {KV, n, hd}},
                                                 {"attn.rope_q", {H, n, hd}},
                                                 {"attn.rope_k", {KV, n, hd}},
                                                 {"attn.scores", {H, n, n}},
                                                 {"attn.mask", {n, n}},
                                                 {"attn.softmax", {H, n, n}},
                                                 {"attn.mix", {H, n, hd}},
                                                 {"attn.out", {n, d}},
                                                 {"out", {n, d}}};
  for (std::size_t layer = 0; layer < 2; ++layer)
    for (const auto& [name, shape] : expected)
      EXPECT_EQ(shape_of(ins.get(full_snapshot_name(ins, layer, name))), shape)
          << layer << " " << name;
  EXPECT_EQ(shape_of(ins.get("embeddings")), (Shape{n, d}));

  // Logits equal the tracer's; probs are the softmax of the logits (rows sum to 1).
  Array traced_logits = tracer.get("logits");
  traced_logits.reshape({n, V});
  expect_equal_arrays(ins.logits, traced_logits, "logits");
  ASSERT_EQ(shape_of(ins.probs), (Shape{n, V}));
  for (std::size_t i = 0; i < n; ++i) {
    double total = 0, max = -1e30;
    for (std::size_t v = 0; v < V; ++v) max = std::max(max, double(ins.logits(i, v)));
    for (std::size_t v = 0; v < V; ++v) total += std::exp(double(ins.logits(i, v)) - max);
    double sum = 0;
    for (std::size_t v = 0; v < V; ++v) {
      const double expected_p = std::exp(double(ins.logits(i, v)) - max) / total;
      EXPECT_NEAR(ins.probs(i, v), expected_p, 1e-6);
      sum += ins.probs(i, v);
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
}

TEST(Inspect, HeadViewSelectsQueryHeadsAndTheirKvHeads) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"hello");
  const std::size_t n = 5;
  const Array& softmax = ins.get("layers.1.attn.softmax");
  const HeadView w = head_view(ins, 1, 2, "attn.softmax");
  ASSERT_EQ(shape_of(w.values), (Shape{n, n}));
  EXPECT_TRUE(w.per_head && w.rows_are_positions && w.cols_are_positions);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(w.values(i, j), softmax(2, i, j));
  // GQA: 4 query heads, 2 KV heads -> query head 3 uses KV head 1, query head 1 uses KV head 0.
  const Array& keys = ins.get("layers.0.attn.k");
  const HeadView k3 = head_view(ins, 0, 3, "attn.k");
  EXPECT_EQ(k3.kv_head, 1u);
  EXPECT_EQ(k3.values(4, 3), keys(1, 4, 3));
  EXPECT_EQ(head_view(ins, 0, 1, "attn.v").kv_head, 0u);
  // The mask has no head axis: 1 above the diagonal (future), 0 elsewhere.
  const HeadView mask = head_view(ins, 0, 3, "attn.mask");
  EXPECT_FALSE(mask.per_head);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) EXPECT_EQ(mask.values(i, j), j > i ? 1 : 0);
  // Model-wide snapshots are reachable from any layer.
  EXPECT_EQ(full_snapshot_name(ins, 1, "logits"), "logits");
  EXPECT_EQ(full_snapshot_name(ins, 1, "out"), "layers.1.out");
  EXPECT_TRUE(head_view(ins, 0, 0, "probs").cols_are_vocab);
}

TEST(Inspect, OutOfRangeAndUnknownNamesAreClearErrors) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"hello");
  try {
    head_view(ins, 0, 4, "attn.q");
    FAIL() << "head 4 of 4 accepted";
  } catch (const InspectError& e) {
    EXPECT_NE(std::string(e.what()).find("head 4 is out of range"), std::string::npos) << e.what();
  }
  try {
    head_view(ins, 2, 0, "attn.q");
    FAIL() << "layer 2 of 2 accepted";
  } catch (const InspectError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 2 is out of range"), std::string::npos) << e.what();
  }
  try {
    full_snapshot_name(ins, 0, "attn.qq");
    FAIL() << "unknown name accepted";
  } catch (const InspectError& e) {
    const std::string what = e.what();
    for (const char* name : {"attn.q", "attn.rope_k", "attn.softmax", "attn.out", "logits"})
      EXPECT_NE(what.find(name), std::string::npos) << what;
  }
}

TEST(Inspect, BadPromptsAreRejected) {
  const Checkpoint loaded = tiny_model();
  EXPECT_THROW(inspect(loaded, U""), InspectError);
  EXPECT_THROW(inspect(loaded, std::u32string(17, U'a')), InspectError);  // context is 16
  EXPECT_NO_THROW(inspect(loaded, std::u32string(16, U'a')));
  try {
    inspect(loaded, U"hello Zürich");
    FAIL() << "characters outside the vocabulary accepted";
  } catch (const UnknownCharacterError& e) {
    EXPECT_EQ(e.character(), U'Z');
    EXPECT_EQ(e.position(), 6u);
    EXPECT_EQ(e.count(), 2u);
    const std::string what = e.what();
    EXPECT_NE(what.find("'Z'"), std::string::npos) << what;
    EXPECT_NE(what.find("position 6"), std::string::npos) << what;
    EXPECT_NE(what.find("ü"), std::string::npos) << what;
  }
  // Asked for: unknown characters become id 0 and are counted.
  std::size_t unknown = 0;
  const Inspection ins = inspect(loaded, U"hello Zürich", UnknownPolicy::kMapToUnknownId, &unknown);
  EXPECT_EQ(unknown, 2u);
  EXPECT_EQ(ins.tokens[6], Tokenizer::kUnknownId);
  EXPECT_EQ(ins.tokens[7], Tokenizer::kUnknownId);
  EXPECT_EQ(ins.tokens[8], loaded.tokenizer().chars()->id_of(U'r'));
}

TEST(Inspect, TopKIsSortedSumsToAtMostOneAndMatchesAFullSort) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"the mat");
  const std::size_t V = loaded.config().vocab_size;
  for (std::size_t pos = 0; pos < ins.n(); ++pos) {
    const std::vector<TopToken> top = top_k(ins, pos, 5);
    ASSERT_EQ(top.size(), 5u);
    std::vector<double> row(V);
    for (std::size_t v = 0; v < V; ++v) row[v] = ins.probs(pos, v);
    std::vector<double> sorted = row;
    std::sort(sorted.rbegin(), sorted.rend());
    double total = 0;
    for (std::size_t r = 0; r < top.size(); ++r) {
      if (r > 0) {
        EXPECT_GE(top[r - 1].prob, top[r].prob);
      }
      EXPECT_EQ(top[r].prob, sorted[r]);
      EXPECT_EQ(top[r].prob, row[top[r].id]);
      EXPECT_EQ(top[r].character, ins.vocab[top[r].id]);
      total += top[r].prob;
    }
    EXPECT_LE(total, 1.0 + 1e-6);
  }
  EXPECT_EQ(top_k(ins, 0, 10000).size(), V);  // clamped to the vocabulary
  EXPECT_THROW(top_k(ins, ins.n(), 3), InspectError);
}

TEST(Inspect, SummaryAndVisibleCharacters) {
  Array a = {{1.0f, -2.0f}, {4.0f, 5.0f}};
  const Summary s = summarize(a);
  EXPECT_EQ(s.min, -2.0);
  EXPECT_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_EQ(visible_char(U' '), "␣");
  EXPECT_EQ(visible_char(U'\n'), "⏎");
  EXPECT_EQ(visible_char(U'\t'), "⇥");
  EXPECT_EQ(visible_char(U'\r'), "␍");
  EXPECT_EQ(visible_char(U'a'), "a");
  EXPECT_EQ(visible_char(U'é'), "é");
  // Characters that draw nothing on their own get their code point.
  EXPECT_EQ(visible_char(U'\u200D'), "U+200D");  // zero-width joiner
  EXPECT_EQ(visible_char(U'\uFE0F'), "U+FE0F");  // variation selector 16 (emoji style)
  EXPECT_EQ(visible_char(U'\u0301'), "U+0301");  // combining acute accent
  EXPECT_EQ(visible_char(U'\U000E0100'), "U+E0100");
  EXPECT_EQ(visible_char(U'猫'), "猫");
}

TEST(Inspect, TerminalOverviewListsEverySnapshotAndTheTopK) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"the cat");
  const std::string out = render_overview(ins, 1, 3);
  for (const std::string& name : snapshot_choices(ins, 1)) {
    const std::string full = full_snapshot_name(ins, 1, name);
    EXPECT_NE(out.find(name), std::string::npos) << name;
    EXPECT_NE(out.find(shape_str(shape_of(ins.get(full)))), std::string::npos) << name;
  }
  EXPECT_NE(out.find("\"the␣cat\""), std::string::npos) << out;
  EXPECT_NE(out.find("top 3 of"), std::string::npos);
  EXPECT_NE(out.find("not an explanation"), std::string::npos);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "escape codes without colour";
}

TEST(Inspect, TerminalSnapshotHasLabelsValuesAndAHeatmap) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"a t");
  RenderOptions plain;
  const std::string out = render_snapshot(ins, 0, 1, "attn.softmax", plain);
  EXPECT_NE(out.find("head 1 of 4: (3, 3)"), std::string::npos) << out;
  EXPECT_NE(out.find("  1 ␣"), std::string::npos) << out;  // row label of position 1
  EXPECT_NE(out.find("Heatmap"), std::string::npos);
  EXPECT_NE(out.find("  0 a | 1.000     ·     ·\n"), std::string::npos)
      << "row 0: all weight on itself";
  EXPECT_NE(out.find("█"), std::string::npos) << "weight 1 is the darkest shade";
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  RenderOptions color;
  color.color = true;
  EXPECT_NE(render_snapshot(ins, 0, 1, "attn.mask", color).find("\x1b[48;5;"), std::string::npos);
  // Without a heatmap for q; values of head 2 rounded to 3 decimals.
  const std::string q = render_snapshot(ins, 1, 2, "attn.q", plain);
  EXPECT_EQ(q.find("Heatmap"), std::string::npos);
  char expected[32];
  std::snprintf(expected, sizeof expected, "%.3f", double(ins.get("layers.1.attn.q")(2, 0, 0)));
  EXPECT_NE(q.find(expected), std::string::npos) << expected << "\n" << q;
  EXPECT_NE(render_snapshot(ins, 0, 3, "attn.k", plain).find("KV head 1 (for query head 3)"),
            std::string::npos);
}

TEST(Inspect, JsonRoundTrip) {
  const Checkpoint loaded = tiny_model();
  const std::u32string prompt = U"hi\nthe";
  const Inspection ins = inspect(loaded, prompt);
  const auto dir =
      std::filesystem::temp_directory_path() / ("glass-inspect-json-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "inspect.json").string();
  write_json(ins, path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["format"], "glass-inspect");
  EXPECT_EQ(j["prompt"], u32_to_utf8(prompt));
  EXPECT_EQ(j["tokens"].get<std::vector<std::int32_t>>(), ins.tokens);
  EXPECT_EQ(j["chars"][2], "\n");
  EXPECT_EQ(j["vocab"].size(), loaded.config().vocab_size);
  EXPECT_EQ(j["config"]["n_kv_heads"], 2);
  auto check = [](const nlohmann::json& node, const Array& a, const std::string& what) {
    ASSERT_EQ(node["shape"].get<Shape>(), shape_of(a)) << what;
    // Flatten the nested values back in row-major order.
    std::vector<double> flat;
    std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& x) {
      if (x.is_array())
        for (const auto& y : x) walk(y);
      else
        flat.push_back(x.get<double>());
    };
    walk(node["values"]);
    ASSERT_EQ(flat.size(), a.size()) << what;
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(static_cast<Scalar>(flat[i]), a.data()[i]) << what << " at " << i;
  };
  check(j["logits"], ins.logits, "logits");
  check(j["probs"], ins.probs, "probs");
  ASSERT_EQ(j["snapshots"].size(), ins.snapshots.size());
  for (const auto& [name, value] : ins.snapshots) check(j["snapshots"][name], value, name);
  std::filesystem::remove_all(dir);
}

TEST(Inspect, HtmlPageIsSelfContainedAndCarriesItsData) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"</script>");
  HtmlOptions options;
  options.top_k = 4;
  options.layer = 7;  // clamped to the last layer
  options.loss = {{0, 4.2, 4.3}, {10, 3.1, std::nan("")}, {20, 2.5, 2.6}};
  const std::string html = inspection_html(ins, options);
  for (const char* banned :
       {"src=\"http", "href=\"http", "<script src=", "<link", "@import", "url("})
    EXPECT_EQ(html.find(banned), std::string::npos) << banned;
  // The prompt "</script>" must not close a data block early: the three JSON tags (the
  // inspection, the view, the lab report) and the six inline scripts (common.js, loss_chart.js,
  // lines.js, script.js, lab_views.js, lab_page.js) close once each.
  std::size_t closings = 0;
  for (std::size_t at = html.find("</script>"); at != std::string::npos;
       at = html.find("</script>", at + 1))
    ++closings;
  EXPECT_EQ(closings, 9u);
  auto json_tag = [&](const std::string& id) {
    const std::string open = "<script type=\"application/json\" id=\"" + id + "\">";
    const std::size_t begin = html.find(open) + open.size();
    return nlohmann::json::parse(html.substr(begin, html.find("</script>", begin) - begin));
  };
  // The page's data is exactly what --json writes.
  EXPECT_EQ(json_tag("glass-inspection"), nlohmann::json::parse(inspection_json(ins)));
  const nlohmann::json view = json_tag("glass-view");
  EXPECT_EQ(view["layer"], 1);
  EXPECT_EQ(view["top_k"], 4);
  EXPECT_EQ(view["loss"]["step"].size(), 3u);
  EXPECT_TRUE(view["loss"]["val"][1].is_null());
  EXPECT_EQ(view["meaning"].size(), 14u);
}

TEST(Inspect, TokenLabelsShowEachCharacterAsVisibleChar) {
  EXPECT_EQ(token_label(" "), "␣");
  EXPECT_EQ(token_label("a\n"), "a⏎");
  EXPECT_EQ(token_label("\u2581de"), "\u2581de") << "a BPE token keeps its '▁'";
  EXPECT_EQ(token_label("<0x0A>"), "<0x0A>") << "a byte token as its vocabulary writes it";
}

TEST(Inspect, ACharacterModelsTokensAreItsCharacters) {
  const Checkpoint loaded = tiny_model();
  const Inspection ins = inspect(loaded, U"hi t");
  EXPECT_FALSE(ins.tokenizer->tokens_span_characters());
  EXPECT_EQ(ins.token_texts, (std::vector<std::string>{"h", "i", " ", "t"}));
  EXPECT_EQ(ins.position_label(2), "␣");
  EXPECT_EQ(ins.vocab_label(0), "<unk>");
  // One rule labels an id for the inspector, the lab's report and the server (id_label).
  const std::vector<std::string> labels = token_labels(loaded);
  ASSERT_EQ(labels.size(), loaded.config().vocab_size);
  for (std::size_t id = 0; id < labels.size(); ++id) {
    const auto i = static_cast<std::int32_t>(id);
    EXPECT_EQ(labels[id], id_label(loaded.tokenizer(), i)) << id;
    EXPECT_EQ(ins.vocab_label(i), labels[id]) << id;
  }
  EXPECT_EQ(id_label(loaded.tokenizer(), -1), "?");
  EXPECT_EQ(id_label(loaded.tokenizer(), static_cast<std::int32_t>(labels.size())), "?");
  ASSERT_EQ(ins.vocab_texts.size(), loaded.config().vocab_size);
  for (std::size_t id = 1; id < ins.vocab_texts.size(); ++id)
    EXPECT_EQ(ins.vocab_texts[id], char_to_utf8(ins.vocab[id]));
  EXPECT_STREQ(ins.unit(), "characters");
}

TEST(Inspect, ABpeModelIsInspectedInItsTokens) {
  // A BPE vocabulary of a few merges on the text, and a model of its size.
  const BpeTokenizer bpe = BpeTokenizer::train(kText, 259 + 30 + 4);
  const ModelConfig config = glass_test::small_config(bpe.vocab_size(), 16);
  const Checkpoint loaded(config, TextTokenizer(bpe), std::make_unique<Decoder>(config, 3));
  const std::u32string prompt = U"the cat \U0001F642";  // 🙂 is outside the vocabulary: bytes
  const std::vector<std::int32_t> ids = bpe.encode(prompt);
  ASSERT_LE(ids.size(), 16u);
  const Inspection ins = inspect(loaded, prompt);
  EXPECT_TRUE(ins.tokenizer->tokens_span_characters());
  EXPECT_STREQ(ins.unit(), "tokens");
  EXPECT_EQ(ins.tokens, ids);
  ASSERT_EQ(ins.token_texts.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i)
    EXPECT_EQ(ins.token_texts[i], bpe.token_text(ids[i]));
  EXPECT_EQ(ins.token_texts.back(), "<0x82>");
  EXPECT_EQ(ins.vocab_label(0), "<unk>");
  EXPECT_EQ(ins.vocab_label(3 + 0x41), "<0x41>");
  // The snapshots are those of the same ids through the tracer.
  Ids batch = Ids::from_shape({std::size_t(1), ids.size()});
  std::copy(ids.begin(), ids.end(), batch.data());
  Tracer tracer;
  {
    NoGradGuard no_grad;
    loaded.model().forward(batch, nullptr, &tracer);
  }
  expect_equal_arrays(ins.get("layers.0.attn.softmax"), tracer.get("layers.0.attn.softmax"),
                      "attn.softmax");
  for (const TopToken& t : top_k(ins, ids.size() - 1, 3)) EXPECT_EQ(t.text, bpe.token_text(t.id));
  // The terminal shows a token row of texts, '|' between the chips.
  const std::string overview = render_overview(ins, 0, 3, RenderOptions{});
  EXPECT_NE(overview.find("  token     "), std::string::npos) << overview;
  EXPECT_NE(overview.find("<0xF0>|<0x9F>|<0x99>|<0x82>"), std::string::npos) << overview;
  // The context counts tokens: more tokens than the context is refused in tokens.
  std::u32string long_prompt;
  while (bpe.encode(long_prompt).size() <= 16) long_prompt += U"\U0001F642";
  try {
    inspect(loaded, long_prompt);
    FAIL() << "a prompt past the context accepted";
  } catch (const InspectError& e) {
    EXPECT_NE(std::string(e.what()).find(" tokens but the model's context holds at most 16"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace glass
