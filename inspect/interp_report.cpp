#include "inspect/interp_report.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/tokenizer.hpp"
#include "inspect/inspect.hpp"
#include "inspect/text_cells.hpp"

namespace glass {

namespace fs = std::filesystem;
using text_cells::pad_left;
using text_cells::pad_right;

// ---- tokens -----------------------------------------------------------------------------------

std::vector<std::string> token_labels(const Checkpoint& loaded) {
  const std::size_t V = loaded.config().vocab_size;
  std::vector<std::string> labels(V);
  for (std::size_t id = 0; id < V; ++id)
    labels[id] = token_label(loaded.tokenizer().token_text(static_cast<std::int32_t>(id)));
  return labels;
}

std::vector<HeadRef> parse_head_list(const std::string& text, std::size_t n_layers,
                                     std::size_t n_heads) {
  const std::string valid = fmt::format(
      "give heads as LAYER.HEAD separated by commas, e.g. 0.1,2.3 (layers 0..{}, heads 0..{})",
      n_layers - 1, n_heads - 1);
  if (text.empty() || text.front() == ',' || text.back() == ',' ||
      text.find(",,") != std::string::npos)
    throw std::invalid_argument(fmt::format("'{}' has an empty item: {}", text, valid));
  std::vector<HeadRef> heads;
  std::set<std::pair<std::size_t, std::size_t>> seen;
  std::stringstream in(text);
  std::string item;
  auto number = [&](const std::string& s, const std::string& whole) {
    if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), ::isdigit))
      throw std::invalid_argument(fmt::format("'{}' is not a head: {}", whole, valid));
    return static_cast<std::size_t>(std::stoul(s));
  };
  while (std::getline(in, item, ',')) {
    const std::size_t dot = item.find('.');
    if (dot == std::string::npos)
      throw std::invalid_argument(fmt::format("'{}' is not a head: {}", item, valid));
    const std::size_t L = number(item.substr(0, dot), item), h = number(item.substr(dot + 1), item);
    if (L >= n_layers)
      throw std::invalid_argument(
          fmt::format("head {}: there is no layer {}, the model has {} "
                      "layers (0..{})",
                      item, L, n_layers, n_layers - 1));
    if (h >= n_heads)
      throw std::invalid_argument(
          fmt::format("head {}: there is no head {}, each layer has {} "
                      "heads (0..{})",
                      item, h, n_heads, n_heads - 1));
    if (seen.insert({L, h}).second) heads.push_back({L, h});
  }
  if (heads.empty()) throw std::invalid_argument("no head given: " + valid);
  return heads;
}

// ---- the recorded history -------------------------------------------------------------------

namespace {

/// DIR/NAME read and checked against DIR's manifest (CheckpointError when it differs).
std::string read_verified(const std::string& dir, const std::string& name) {
  const std::string text = read_file((fs::path(dir) / name).string());
  check_against_manifest(read_manifest(dir), dir, name, text);
  return text;
}

InterpRecord parse_or_throw(const std::string& text, const std::string& where) {
  try {
    return parse_interp_record(text);
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(where + ": " + e.what());
  }
}

}  // namespace

std::vector<InterpRecord> read_interp_history(const std::string& run_dir) {
  std::map<long, InterpRecord> by_step;
  const std::string current = checkpoint_files_dir(run_dir);
  const fs::path history = fs::path(current) / kInterpHistoryFile;
  if (fs::exists(history)) {
    const std::string text = read_verified(current, kInterpHistoryFile);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw CheckpointError(history.string() + ": not JSON: " + e.what());
    }
    if (!doc.is_object() || !doc.contains("records") || !doc["records"].is_array())
      throw CheckpointError(history.string() + ": no \"records\" list");
    for (const auto& r : doc["records"]) {
      InterpRecord rec = parse_or_throw(r.dump(), history.string());
      by_step[rec.step] = std::move(rec);
    }
  }
  // Saves kept beside the current one (copies a user made, or a save a reader still held).
  std::error_code ec;
  std::vector<fs::path> dirs = {fs::path(current)};
  if (fs::is_directory(run_dir, ec))
    for (const auto& entry : fs::directory_iterator(run_dir, ec))
      if (entry.is_directory() && is_step_dir_name(entry.path().filename().string()))
        dirs.push_back(entry.path());
  for (const fs::path& dir : dirs) {
    if (!fs::exists(dir / kInterpFile) || !fs::exists(dir / kManifestFile)) continue;
    InterpRecord rec =
        parse_or_throw(read_verified(dir.string(), kInterpFile), (dir / kInterpFile).string());
    by_step[rec.step] = std::move(rec);
  }
  std::vector<InterpRecord> records;
  for (auto& [step, rec] : by_step) records.push_back(std::move(rec));
  return records;
}

InterpRecord measure_head_scores(const Decoder& model, const std::vector<std::int32_t>& text,
                                 std::size_t window) {
  ProbeSpec spec;
  spec.source = "prompt";
  spec.tokens = text.size() - 1;  // every window the text holds
  return record_interp(model, make_probe(text, window, model.config(), spec), -1);
}

// ---- formatting helpers -------------------------------------------------------------------

namespace {

std::string num(double v, int decimals = 3) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find_first_not_of("-0.") == std::string::npos && s[0] == '-') s = s.substr(1);
  return s;
}

std::string signed_num(double v, int decimals = 4) {
  std::string s = num(v, decimals);
  return (v >= 0 && s[0] != '-') ? "+" + s : s;
}

nlohmann::ordered_json json_number(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

std::string head_name(std::size_t L, std::size_t h) { return fmt::format("{}.{}", L, h); }

std::string label(const InterpReport& r, std::int32_t id) {
  return id >= 0 && static_cast<std::size_t>(id) < r.labels.size() ? r.labels[id] : "?";
}

nlohmann::ordered_json token_json(const InterpReport& r, std::int32_t id) {
  return {{"id", id}, {"text", label(r, id)}};
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// A cell shaded from white (0) to blue (1) by `shade` in [0, 1] (red for negative).
std::string html_cell(const std::string& text, double shade) {
  if (!std::isfinite(shade)) shade = 0;
  const double a = std::min(1.0, std::abs(shade));
  const char* rgb = shade >= 0 ? "37,99,235" : "220,38,38";
  return fmt::format("<td style=\"background:rgba({},{:.2f})\">{}</td>", rgb, a * 0.8,
                     html_escape(text));
}

/// The layers x heads tables of a record as rows "L.H" (terminal).
const char* kScoreNames[] = {"previous-token", "induction", "first-position", "ablation Δloss"};

const Array& score_table(const InterpRecord& r, int which) {
  switch (which) {
    case 0:
      return r.previous_token;
    case 1:
      return r.induction;
    case 2:
      return r.first_position;
    default:
      return r.ablation_delta_loss;
  }
}

double max_abs(const Array& a) {
  double m = 0;
  for (Scalar v : a)
    if (std::isfinite(static_cast<double>(v))) m = std::max(m, std::abs(static_cast<double>(v)));
  return m;
}

}  // namespace

// ---- terminal -------------------------------------------------------------------------------

namespace {

std::string lens_terminal(const InterpReport& r) {
  const LogitLens& lens = *r.lens;
  const std::size_t S = lens.points.size(), T = lens.tokens.size(), k = lens.top_ids.shape()[2];
  std::string out = fmt::format(
      "Logit lens (nostalgebraist 2020): the residual stream after each block read through the "
      "final RMSNorm and the output matrix.\nEach row: the top {} next tokens with their "
      "probabilities | the probability of the true next token.\n",
      k);
  std::size_t name_w = 0;
  for (const auto& p : lens.points) name_w = std::max(name_w, p.size());
  for (std::size_t t = 0; t < T; ++t) {
    out += fmt::format("\nposition {} '{}'", t, label(r, lens.tokens[t]));
    if (t + 1 < T) out += fmt::format(" -> true next '{}'", label(r, lens.tokens[t + 1]));
    out += "\n";
    for (std::size_t s = 0; s < S; ++s) {
      std::string row = "  " + pad_right(lens.points[s], name_w) + "  ";
      for (std::size_t j = 0; j < k; ++j)
        row += pad_right("'" + label(r, lens.top_ids(s, t, j)) + "'", 5) + " " +
               num(lens.top_probs(s, t, j)) + "  ";
      row += "| " + (t + 1 < T ? num(lens.next_prob(s, t)) : std::string("-"));
      out += row + "\n";
    }
  }
  return out;
}

std::string ablation_terminal(const InterpReport& r) {
  const auto& a = *r.ablation;
  std::vector<std::string> names;
  for (const HeadRef& h : a.heads) names.push_back(head_name(h.layer, h.head));
  std::string out = fmt::format(
      "Ablation of head(s) {} ({} ablation: {}), the next-token distribution after the prompt:\n",
      text_cells::join(names, ", "), a.mode == AblationMode::zero ? "zero" : "mean",
      a.mode == AblationMode::zero ? "their output before W_O set to 0"
                                   : "their output before W_O set to its mean over the prompt's "
                                     "positions");
  const std::size_t V = a.shift.before.size();
  std::vector<std::size_t> ids = top_k_indices(a.shift.before.data(), V, a.top_k);
  for (std::size_t id : top_k_indices(a.shift.after.data(), V, a.top_k))
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  out += "  next token   without    with the heads ablated   change\n";
  for (std::size_t id : ids)
    out += fmt::format("  {}   {}    {}                    {}\n",
                       pad_right("'" + label(r, static_cast<std::int32_t>(id)) + "'", 10),
                       num(a.shift.before(id)), num(a.shift.after(id)),
                       signed_num(a.shift.after(id) - a.shift.before(id), 3));
  out += fmt::format("  KL(without || with) = {} nats\n", num(a.shift.kl_divergence, 4));
  return out;
}

std::string scores_table_terminal(const InterpRecord& rec) {
  std::string out =
      "  head   previous-token   induction   first-position   ablation Δloss (nats/token)\n";
  for (std::size_t L = 0; L < rec.n_layers; ++L)
    for (std::size_t h = 0; h < rec.n_heads; ++h)
      out += fmt::format("  {}   {}   {}   {}   {}\n", pad_right(head_name(L, h), 4),
                         pad_left(num(rec.previous_token(L, h)), 14),
                         pad_left(num(rec.induction(L, h)), 9),
                         pad_left(num(rec.first_position(L, h)), 14),
                         pad_left(signed_num(rec.ablation_delta_loss(L, h)), 14));
  return out;
}

std::string scores_terminal(const InterpReport& r) {
  const auto& s = *r.head_scores;
  const InterpRecord& rec = s.record;
  std::string out = fmt::format(
      "Head scores: previous-token and first-position share and the zero-ablation Δloss on {} "
      "({} tokens, loss {} nats/token); induction on {} random tokens repeated twice (seed {}).\n",
      s.source, rec.probe.tokens, num(rec.probe_loss, 4), rec.probe.period, rec.probe.seed);
  return out + scores_table_terminal(rec);
}

std::string patch_terminal(const InterpReport& r, std::size_t width) {
  const auto& p = *r.patch;
  const PatchingResult& res = p.result;
  std::string out = fmt::format(
      "Activation patching of the residual stream: the clean run's stream at (point, position) "
      "copied into the corrupted run.\nLogit difference logit['{}'] - logit['{}'] at the last "
      "position: clean {}, corrupted {}.\nEach cell: the fraction of it recovered, (patched - "
      "corrupted) / (clean - corrupted).\n",
      label(r, res.answer), label(r, res.other), num(res.clean_diff, 4),
      num(res.corrupted_diff, 4));
  const std::size_t T = r.prompt.size();
  std::size_t name_w = 0;
  for (const auto& row : res.rows) name_w = std::max(name_w, row.size());
  const std::size_t cell = 7;
  const std::size_t per_block = std::max<std::size_t>(1, (width - name_w - 4) / cell);
  for (std::size_t t0 = 0; t0 < T; t0 += per_block) {
    const std::size_t t1 = std::min(T, t0 + per_block);
    std::string head = "  " + pad_right("clean", name_w) + " ";
    std::string head2 = "  " + pad_right("corrupted", name_w) + " ";
    for (std::size_t t = t0; t < t1; ++t) {
      head += pad_left(label(r, r.prompt[t]), cell);
      head2 += pad_left(label(r, p.corrupted[t]), cell);
    }
    out += "\n" + head + "\n" + head2 + "\n";
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
      std::string row = "  " + pad_right(res.rows[i], name_w) + " ";
      for (std::size_t t = t0; t < t1; ++t) row += pad_left(num(res.recovered(i, t), 2), cell);
      out += row + "\n";
    }
  }
  return out;
}

std::string history_terminal(const InterpReport& r, std::size_t width) {
  const auto& hist = *r.history;
  if (hist.records.empty())
    return "No interpretability record in this run directory (trained before glass train "
           "recorded one, or with --no-interp-record).\n";
  const InterpRecord& first = hist.records.front();
  std::map<long, double> val;
  for (const LossPoint& p : hist.loss) val[static_cast<long>(p.step)] = p.val_loss;
  std::string out = fmt::format(
      "Head scores over training: {} saves, probe {} tokens of the {} split (induction: period "
      "{}, seed {}).\n",
      hist.records.size(), first.probe.tokens, first.probe.source, first.probe.period,
      first.probe.seed);
  const std::size_t n_layers = first.n_layers, n_heads = first.n_heads;
  const std::size_t cell = 7, fixed = 8 + 9 + 9;
  const std::size_t per_block =
      std::max<std::size_t>(1, (std::max(width, fixed + cell) - fixed) / cell);
  for (int which = 0; which < 4; ++which) {
    out += fmt::format("\n{}{}\n", kScoreNames[which], which == 3 ? " (nats/token)" : "");
    const std::size_t H = n_layers * n_heads;
    for (std::size_t j0 = 0; j0 < H; j0 += per_block) {
      const std::size_t j1 = std::min(H, j0 + per_block);
      std::string head = "    step  val loss  probe   ";
      for (std::size_t j = j0; j < j1; ++j)
        head += pad_left(head_name(j / n_heads, j % n_heads), cell);
      out += head + "\n";
      for (const InterpRecord& rec : hist.records) {
        const auto it = val.find(rec.step);
        std::string row = pad_left(std::to_string(rec.step), 8) + "  " +
                          pad_left(it != val.end() ? num(it->second) : "-", 8) + "  " +
                          pad_left(num(rec.probe_loss), 5) + " ";
        for (std::size_t j = j0; j < j1; ++j) {
          const Array& t = score_table(rec, which);
          const double v = (rec.n_layers == n_layers && rec.n_heads == n_heads)
                               ? static_cast<double>(t(j / n_heads, j % n_heads))
                               : NAN;
          row += pad_left(which == 3 ? signed_num(v, 3) : num(v), cell);
        }
        out += row + "\n";
      }
    }
  }
  // When did a head form: the first save where its previous-token or induction score reached
  // 0.5 (an even split of its attention is far from what it does at random, 1/position).
  out += "\n";
  for (int which = 0; which < 2; ++which) {
    std::vector<std::string> formed;
    for (std::size_t L = 0; L < n_layers; ++L)
      for (std::size_t h = 0; h < n_heads; ++h)
        for (const InterpRecord& rec : hist.records)
          if (rec.n_layers == n_layers && rec.n_heads == n_heads &&
              score_table(rec, which)(L, h) >= 0.5) {
            formed.push_back(fmt::format("{} at step {}", head_name(L, h), rec.step));
            break;
          }
    out += fmt::format("{} score >= 0.5 first reached: {}\n", kScoreNames[which],
                       formed.empty() ? "by no head" : text_cells::join(formed, ", "));
  }
  return out;
}

}  // namespace

std::string interp_terminal(const InterpReport& r, std::size_t width) {
  std::vector<std::string> parts;
  if (r.lens) parts.push_back(lens_terminal(r));
  if (r.ablation) parts.push_back(ablation_terminal(r));
  if (r.head_scores) parts.push_back(scores_terminal(r));
  if (r.patch) parts.push_back(patch_terminal(r, width));
  if (r.history) parts.push_back(history_terminal(r, width));
  return text_cells::join(parts, "\n");
}

// ---- JSON -----------------------------------------------------------------------------------

namespace {

nlohmann::ordered_json record_json(const InterpRecord& rec) {
  return nlohmann::ordered_json::parse(interp_record_json(rec));
}

}  // namespace

nlohmann::ordered_json interp_json(const InterpReport& r) {
  nlohmann::ordered_json doc;
  doc["checkpoint"] = r.checkpoint;
  nlohmann::ordered_json prompt = nlohmann::ordered_json::array();
  for (std::int32_t id : r.prompt) prompt.push_back(token_json(r, id));
  doc["prompt"] = std::move(prompt);
  if (r.lens) {
    const LogitLens& lens = *r.lens;
    const std::size_t S = lens.points.size(), T = lens.tokens.size(), k = lens.top_ids.shape()[2];
    nlohmann::ordered_json top = nlohmann::ordered_json::array(),
                           next = nlohmann::ordered_json::array();
    for (std::size_t s = 0; s < S; ++s) {
      nlohmann::ordered_json rows = nlohmann::ordered_json::array(),
                             nrow = nlohmann::ordered_json::array();
      for (std::size_t t = 0; t < T; ++t) {
        nlohmann::ordered_json cands = nlohmann::ordered_json::array();
        for (std::size_t j = 0; j < k; ++j) {
          nlohmann::ordered_json c = token_json(r, lens.top_ids(s, t, j));
          c["prob"] = json_number(lens.top_probs(s, t, j));
          cands.push_back(std::move(c));
        }
        rows.push_back(std::move(cands));
        if (t + 1 < T) nrow.push_back(json_number(lens.next_prob(s, t)));
      }
      top.push_back(std::move(rows));
      next.push_back(std::move(nrow));
    }
    doc["lens"] = {{"points", lens.points}, {"top_k", k}, {"top", top}, {"true_next_prob", next}};
  }
  if (r.ablation) {
    const auto& a = *r.ablation;
    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
    for (const HeadRef& h : a.heads) heads.push_back({h.layer, h.head});
    nlohmann::ordered_json before = nlohmann::ordered_json::array(),
                           after = nlohmann::ordered_json::array();
    for (std::size_t v = 0; v < a.shift.before.size(); ++v) {
      before.push_back(json_number(a.shift.before(v)));
      after.push_back(json_number(a.shift.after(v)));
    }
    doc["ablation"] = {{"heads", heads},
                       {"mode", a.mode == AblationMode::zero ? "zero" : "mean"},
                       {"kl_divergence", json_number(a.shift.kl_divergence)},
                       {"before", before},
                       {"after", after}};
  }
  if (r.head_scores) {
    nlohmann::ordered_json s = record_json(r.head_scores->record);
    s["source"] = r.head_scores->source;
    doc["head_scores"] = std::move(s);
  }
  if (r.patch) {
    const PatchingResult& res = r.patch->result;
    nlohmann::ordered_json corrupted = nlohmann::ordered_json::array();
    for (std::int32_t id : r.patch->corrupted) corrupted.push_back(token_json(r, id));
    nlohmann::ordered_json rec = nlohmann::ordered_json::array(),
                           pd = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array(),
                             b = nlohmann::ordered_json::array();
      for (std::size_t t = 0; t < res.recovered.shape()[1]; ++t) {
        a.push_back(json_number(res.recovered(i, t)));
        b.push_back(json_number(res.patched_diff(i, t)));
      }
      rec.push_back(std::move(a));
      pd.push_back(std::move(b));
    }
    doc["patching"] = {{"corrupted", corrupted},
                       {"answer", token_json(r, res.answer)},
                       {"other", token_json(r, res.other)},
                       {"clean_diff", json_number(res.clean_diff)},
                       {"corrupted_diff", json_number(res.corrupted_diff)},
                       {"points", res.rows},
                       {"patched_diff", pd},
                       {"recovered", rec}};
  }
  if (r.history) {
    std::map<long, double> val;
    for (const LossPoint& p : r.history->loss) val[static_cast<long>(p.step)] = p.val_loss;
    nlohmann::ordered_json steps = nlohmann::ordered_json::array(),
                           vals = nlohmann::ordered_json::array(),
                           records = nlohmann::ordered_json::array();
    for (const InterpRecord& rec : r.history->records) {
      steps.push_back(rec.step);
      const auto it = val.find(rec.step);
      vals.push_back(it != val.end() ? json_number(it->second) : nlohmann::ordered_json(nullptr));
      records.push_back(record_json(rec));
    }
    doc["history"] = {{"steps", steps}, {"val_loss", vals}, {"records", records}};
  }
  return doc;
}

// ---- HTML -----------------------------------------------------------------------------------

namespace {

std::string scores_html_table(const InterpRecord& rec) {
  std::string out =
      "<table><tr><th>head</th><th>previous-token</th><th>induction</th><th>first-position</th>"
      "<th>ablation Δloss (nats/token)</th></tr>";
  const double dl = std::max(1e-9, max_abs(rec.ablation_delta_loss));
  for (std::size_t L = 0; L < rec.n_layers; ++L)
    for (std::size_t h = 0; h < rec.n_heads; ++h)
      out +=
          "<tr><th>" + head_name(L, h) + "</th>" +
          html_cell(num(rec.previous_token(L, h)), rec.previous_token(L, h)) +
          html_cell(num(rec.induction(L, h)), rec.induction(L, h)) +
          html_cell(num(rec.first_position(L, h)), rec.first_position(L, h)) +
          html_cell(signed_num(rec.ablation_delta_loss(L, h)), rec.ablation_delta_loss(L, h) / dl) +
          "</tr>";
  return out + "</table>";
}

}  // namespace

std::string interp_html_sections(const InterpReport& r) {
  std::string out =
      "<style>.glass-interp{font-family:system-ui,sans-serif;margin:1.5em 1em}"
      ".glass-interp table{border-collapse:collapse;font-size:13px;margin:.5em 0}"
      ".glass-interp td,.glass-interp th{border:1px solid #ddd;padding:2px 6px;text-align:right;"
      "font-family:ui-monospace,monospace}</style>\n";
  if (r.lens) {
    const LogitLens& lens = *r.lens;
    const std::size_t S = lens.points.size(), T = lens.tokens.size();
    out +=
        "<section class=\"glass-interp\" id=\"interp-lens\"><h2>Logit lens</h2><p>The "
        "residual stream after each block read through the final RMSNorm and the output matrix "
        "(nostalgebraist 2020). Each cell: the most probable next token and its probability; "
        "shade: the probability of the true next token.</p><table><tr><th></th>";
    for (std::size_t t = 0; t < T; ++t)
      out += "<th>" + html_escape(label(r, lens.tokens[t])) + "</th>";
    out += "</tr>";
    for (std::size_t s = 0; s < S; ++s) {
      out += "<tr><th>" + html_escape(lens.points[s]) + "</th>";
      for (std::size_t t = 0; t < T; ++t) {
        const double p = t + 1 < T ? static_cast<double>(lens.next_prob(s, t)) : 0.0;
        out +=
            html_cell(label(r, lens.top_ids(s, t, 0)) + " " + num(lens.top_probs(s, t, 0), 2), p);
      }
      out += "</tr>";
    }
    out += "</table></section>\n";
  }
  if (r.ablation) {
    const auto& a = *r.ablation;
    std::vector<std::string> names;
    for (const HeadRef& h : a.heads) names.push_back(head_name(h.layer, h.head));
    out += "<section class=\"glass-interp\" id=\"interp-ablation\"><h2>Ablation of " +
           html_escape(text_cells::join(names, ", ")) + " (" +
           (a.mode == AblationMode::zero ? "zero" : "mean") +
           ")</h2><table><tr><th>next token</th><th>without</th><th>with the heads "
           "ablated</th><th>change</th></tr>";
    const std::size_t V = a.shift.before.size();
    std::vector<std::size_t> ids = top_k_indices(a.shift.before.data(), V, a.top_k);
    for (std::size_t id : top_k_indices(a.shift.after.data(), V, a.top_k))
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    for (std::size_t id : ids) {
      const double d = a.shift.after(id) - a.shift.before(id);
      out += "<tr><th>" + html_escape(label(r, static_cast<std::int32_t>(id))) + "</th>" +
             html_cell(num(a.shift.before(id)), a.shift.before(id)) +
             html_cell(num(a.shift.after(id)), a.shift.after(id)) + html_cell(signed_num(d, 3), d) +
             "</tr>";
    }
    out += "</table><p>KL(without || with) = " + num(a.shift.kl_divergence, 4) +
           " nats</p></section>\n";
  }
  if (r.head_scores) {
    out +=
        "<section class=\"glass-interp\" id=\"interp-head-scores\"><h2>Head scores</h2><p>"
        "Previous-token, first-position share and zero-ablation Δloss on " +
        html_escape(r.head_scores->source) + "; induction on " +
        std::to_string(r.head_scores->record.probe.period) +
        " random tokens repeated twice (Olsson et al. 2022).</p>" +
        scores_html_table(r.head_scores->record) + "</section>\n";
  }
  if (r.patch) {
    const PatchingResult& res = r.patch->result;
    out +=
        "<section class=\"glass-interp\" id=\"interp-patching\"><h2>Activation patching</h2>"
        "<p>Fraction of the logit difference logit['" +
        html_escape(label(r, res.answer)) + "'] - logit['" + html_escape(label(r, res.other)) +
        "'] recovered by copying the clean residual stream at (point, position) into the "
        "corrupted run (clean " +
        num(res.clean_diff, 4) + ", corrupted " + num(res.corrupted_diff, 4) +
        ").</p><table><tr><th>clean / corrupted</th>";
    for (std::size_t t = 0; t < r.prompt.size(); ++t)
      out += "<th>" + html_escape(label(r, r.prompt[t])) + " / " +
             html_escape(label(r, r.patch->corrupted[t])) + "</th>";
    out += "</tr>";
    for (std::size_t i = 0; i < res.rows.size(); ++i) {
      out += "<tr><th>" + html_escape(res.rows[i]) + "</th>";
      for (std::size_t t = 0; t < r.prompt.size(); ++t)
        out += html_cell(num(res.recovered(i, t), 2), res.recovered(i, t));
      out += "</tr>";
    }
    out += "</table></section>\n";
  }
  if (r.history) {
    out +=
        "<section class=\"glass-interp\" id=\"interp-history\"><h2>Head scores over "
        "training</h2>";
    if (r.history->records.empty()) {
      out += "<p>No interpretability record in this run directory.</p>";
    } else {
      std::map<long, double> val;
      for (const LossPoint& p : r.history->loss) val[static_cast<long>(p.step)] = p.val_loss;
      const InterpRecord& first = r.history->records.front();
      for (int which = 0; which < 4; ++which) {
        out += std::string("<h3>") + kScoreNames[which] +
               "</h3><table><tr><th>step</th><th>val "
               "loss</th><th>probe loss</th>";
        for (std::size_t L = 0; L < first.n_layers; ++L)
          for (std::size_t h = 0; h < first.n_heads; ++h) out += "<th>" + head_name(L, h) + "</th>";
        out += "</tr>";
        for (const InterpRecord& rec : r.history->records) {
          const auto it = val.find(rec.step);
          out += "<tr><th>" + std::to_string(rec.step) + "</th><td>" +
                 (it != val.end() ? num(it->second) : "-") + "</td><td>" + num(rec.probe_loss) +
                 "</td>";
          const Array& t = score_table(rec, which);
          const double scale = which == 3 ? std::max(1e-9, max_abs(t)) : 1.0;
          for (std::size_t j = 0; j < t.size(); ++j)
            out += html_cell(which == 3 ? signed_num(t.data()[j], 3) : num(t.data()[j]),
                             t.data()[j] / scale);
          out += "</tr>";
        }
        out += "</table>";
      }
    }
    out += "</section>\n";
  }
  return out;
}

std::string interp_page(const InterpReport& r, const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
         html_escape(title) +
         "</title></head><body><h1 style=\"font-family:system-ui,sans-serif;"
         "margin:.5em 1em\">" +
         html_escape(title) + "</h1>\n" + interp_html_sections(r) + "</body></html>\n";
}

std::string insert_before_body_end(std::string page, const std::string& sections) {
  const std::size_t at = page.rfind("</body>");
  if (at == std::string::npos) return page + sections;
  page.insert(at, sections);
  return page;
}

}  // namespace glass
