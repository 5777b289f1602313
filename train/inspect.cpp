// The inspector (see inspect.hpp): one traced forward pass, then terminal, JSON and HTML views.

#include "train/inspect.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "train/atomic_file.hpp"
#include "train/checkpoint.hpp"

namespace glass {

namespace {

// ---- what each snapshot means ------------------------------------------------------------

/// Which head axis a per-layer snapshot has (seed 000: Q and the weights have n_heads heads,
/// projected K/V have n_kv_heads).
enum class HeadAxis { none, query, kv };

struct SnapshotInfo {
  HeadAxis head_axis;
  const char* rows;
  const char* cols;
  bool rows_are_positions, cols_are_positions, cols_are_vocab;
  const char* meaning;
};

/// Meaning of every snapshot name, relative to its layer ("attn.q") or model-wide ("logits").
const SnapshotInfo* snapshot_info(const std::string& name) {
  static const std::map<std::string, SnapshotInfo> table = {
      {"attn.q", {HeadAxis::query, "position", "dim", true, false, false,
                  "queries per head, before RoPE"}},
      {"attn.k", {HeadAxis::kv, "position", "dim", true, false, false,
                  "new keys per KV head, before RoPE"}},
      {"attn.v", {HeadAxis::kv, "position", "dim", true, false, false,
                  "new values per KV head"}},
      {"attn.rope_q", {HeadAxis::query, "position", "dim", true, false, false,
                       "queries after RoPE (rotated by position)"}},
      {"attn.rope_k", {HeadAxis::kv, "position", "dim", true, false, false,
                       "keys after RoPE (rotated by position)"}},
      {"attn.scores", {HeadAxis::query, "query position i", "key position j", true, true, false,
                       "QK^T / sqrt(head_dim), before the causal mask"}},
      {"attn.mask", {HeadAxis::none, "query position i", "key position j", true, true, false,
                     "causal mask: 1 = future key (forbidden), 0 = visible"}},
      {"attn.softmax", {HeadAxis::query, "query position i", "key position j", true, true, false,
                        "attention weights: softmax over keys, each row sums to 1"}},
      {"attn.mix", {HeadAxis::query, "position", "dim", true, false, false,
                    "weights @ V: each position's mix of the values it looks at"}},
      {"attn.out", {HeadAxis::none, "position", "feature", true, false, false,
                    "heads concatenated and projected by W_O"}},
      {"out", {HeadAxis::none, "position", "feature", true, false, false,
               "the block's output: residual stream after attention and SwiGLU"}},
      {"embeddings", {HeadAxis::none, "position", "feature", true, false, false,
                      "token embeddings (input of layer 0)"}},
      {"logits", {HeadAxis::none, "position", "vocabulary entry", true, false, true,
                  "next-token logits at every position (LM head)"}},
      {"probs", {HeadAxis::none, "position", "vocabulary entry", true, false, true,
                 "next-token probabilities: softmax of the logits, each row sums to 1"}},
  };
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

const char* meaning_of(const std::string& name) {
  const SnapshotInfo* info = snapshot_info(name);
  return info ? info->meaning : "";
}

std::string layer_prefix(std::size_t layer) { return "layers." + std::to_string(layer) + "."; }

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

/// Number of code points in a UTF-8 string: the display width for the characters we print.
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

std::string pad_left(const std::string& s, std::size_t width) {
  std::size_t w = display_width(s);
  return w >= width ? s : std::string(width - w, ' ') + s;
}

std::string pad_right(const std::string& s, std::size_t width) {
  std::size_t w = display_width(s);
  return w >= width ? s : s + std::string(width - w, ' ');
}

/// A number rounded for a table: integers stay integers ("0", "1"), others get 3 decimals;
/// "-0.000" is printed as "0.000".
std::string format_value(double v, bool integral) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::string s = integral ? fmt::format("{:.0f}", v) : fmt::format("{:.3f}", v);
  if (s == "-0.000" || s == "-0") s.erase(0, 1);
  return s;
}

bool all_integral(const Array& a) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    double v = a.data()[i];
    if (std::isfinite(v) && v != std::floor(v)) return false;
  }
  return true;
}

std::string quoted_prompt(const std::u32string& prompt) {
  std::string out = "\"";
  for (char32_t c : prompt) out += visible_char(c);
  return out + "\"";
}

std::string shape_text(const Array& a) { return shape_str(shape_of(a)); }

/// Copies the 2-D block `index` of a 3-D row-major array.
Array block_of(const Array& a, std::size_t index) {
  const std::size_t rows = a.shape(1), cols = a.shape(2);
  Array out = Array::from_shape({rows, cols});
  std::copy_n(a.data() + index * rows * cols, rows * cols, out.data());
  return out;
}

/// Any array as 2-D: a 1-D array is one row, leading axes of higher ranks are merged.
Array as_matrix(const Array& a) {
  Array out = a;
  if (a.dimension() == 0) {
    out.reshape({std::size_t(1), std::size_t(1)});
  } else if (a.dimension() == 1) {
    out.reshape({std::size_t(1), a.shape(0)});
  } else if (a.dimension() > 2) {
    std::size_t cols = a.shape(a.dimension() - 1);
    out.reshape({a.size() / cols, cols});
  }
  return out;
}

std::vector<std::string> position_labels(const Inspection& ins, std::size_t count) {
  std::vector<std::string> labels;
  for (std::size_t i = 0; i < count; ++i)
    labels.push_back(i < ins.prompt.size() ? visible_char(ins.prompt[i]) : "?");
  return labels;
}

/// Columns per block when `cols` columns are split into blocks of at most `fit`, as evenly as
/// possible (17 columns, 16 fit -> two blocks of 9 and 8, not 16 and 1).
std::size_t balanced_block(std::size_t cols, std::size_t fit) {
  const std::size_t blocks = (cols + fit - 1) / fit;
  return blocks == 0 ? fit : (cols + blocks - 1) / blocks;
}

std::string render_table(const Array& values, const std::vector<std::string>& row_labels,
                         const std::vector<std::vector<std::string>>& header_lines,
                         const std::string& header_caption, std::size_t width,
                         bool show_causal_mask = false) {
  const Array m = as_matrix(values);
  const std::size_t rows = m.shape(0), cols = m.shape(1);
  const bool integral = all_integral(m);
  std::vector<std::string> cells(rows * cols);
  std::size_t cell_w = 1;
  for (std::size_t i = 0; i < rows * cols; ++i) {
    const bool masked = show_causal_mask && i % cols > i / cols;  // future key j > i
    cells[i] = masked ? "·" : format_value(m.data()[i], integral);
    cell_w = std::max(cell_w, display_width(cells[i]));
  }
  for (const auto& line : header_lines)
    for (const auto& label : line) cell_w = std::max(cell_w, display_width(label));
  std::size_t label_w = display_width(header_caption);
  for (const auto& label : row_labels) label_w = std::max(label_w, display_width(label));

  const std::size_t fit = std::max<std::size_t>(1, (width > label_w + 2 ? width - label_w - 2 : 0) / (cell_w + 1));
  const std::size_t per_block = balanced_block(cols, fit);
  std::string out;
  for (std::size_t c0 = 0; c0 < cols; c0 += per_block) {
    std::size_t c1 = std::min(cols, c0 + per_block);
    if (cols > per_block) out += fmt::format("columns {}..{} of {}:\n", c0, c1 - 1, cols);
    for (std::size_t h = 0; h < header_lines.size(); ++h) {
      out += pad_right(h + 1 == header_lines.size() ? header_caption : "", label_w) + " |";
      for (std::size_t c = c0; c < c1; ++c) out += " " + pad_left(header_lines[h][c], cell_w);
      out += "\n";
    }
    out += std::string(label_w, '-') + "-+" + std::string((c1 - c0) * (cell_w + 1), '-') + "\n";
    for (std::size_t r = 0; r < rows; ++r) {
      out += pad_right(r < row_labels.size() ? row_labels[r] : "", label_w) + " |";
      for (std::size_t c = c0; c < c1; ++c) out += " " + pad_left(cells[r * cols + c], cell_w);
      out += "\n";
    }
  }
  return out;
}

/// 256-colour palette from light to dark (xterm colour cube: white -> blue).
const std::vector<int>& color_ramp() {
  static const std::vector<int> ramp = {231, 195, 189, 153, 147, 111, 75, 69, 33, 27, 26, 20, 19, 18, 17};
  return ramp;
}

const std::vector<std::string>& shade_ramp() {
  static const std::vector<std::string> ramp = {" ", "░", "▒", "▓", "█"};
  return ramp;
}

std::size_t level_of(double v, double lo, double hi, std::size_t levels) {
  if (!std::isfinite(v)) return v > 0 ? levels - 1 : 0;
  double t = hi > lo ? (v - lo) / (hi - lo) : 0.0;
  t = std::clamp(t, 0.0, 1.0);
  return static_cast<std::size_t>(std::lround(t * static_cast<double>(levels - 1)));
}

const char* kAttentionVsProbabilities =
    "Attention weights (attn.softmax) and output probabilities (probs) are different things:\n"
    "  - an attention weight A[h,i,j] says how much query position i of head h mixes in the value\n"
    "    of key position j; each row spreads 1 over the context positions it may see (j <= i);\n"
    "  - the next-token probabilities spread 1 over the vocabulary (every possible next character).\n"
    "A high attention weight alone is not an explanation of the prediction: the mixed values still\n"
    "pass through W_O, the residual stream, SwiGLU and the later layers before the LM head.\n";

}  // namespace

// ---- Inspection ----------------------------------------------------------------------------

bool Inspection::has(const std::string& full_name) const {
  if (full_name == "logits" || full_name == "probs") return true;
  for (const auto& [name, value] : snapshots)
    if (name == full_name) return true;
  return false;
}

const Array& Inspection::get(const std::string& full_name) const {
  if (full_name == "logits") return logits;
  if (full_name == "probs") return probs;
  for (const auto& [name, value] : snapshots)
    if (name == full_name) return value;
  std::vector<std::string> names;
  for (const auto& [name, value] : snapshots) names.push_back(name);
  names.push_back("logits");
  names.push_back("probs");
  throw InspectError("no snapshot named '" + full_name + "'; recorded: " + join(names, ", "));
}

Inspection inspect(const LoadedModel& loaded, const std::u32string& prompt, bool allow_unknown,
                   std::size_t* unknown_count) {
  if (!loaded.model) throw InspectError("no model loaded");
  const ModelConfig& config = loaded.model->config();
  if (prompt.empty()) throw InspectError("the prompt is empty: give at least one character");
  if (prompt.size() > config.context_length)
    throw InspectError(fmt::format(
        "the prompt has {} characters but the model's context holds at most {} (context_length)",
        prompt.size(), config.context_length));
  std::vector<std::string> unknown;
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (!loaded.tokenizer.contains(prompt[i]))
      unknown.push_back(describe_char(prompt[i]) + " at position " + std::to_string(i));
  if (unknown_count) *unknown_count = unknown.size();
  if (!unknown.empty() && !allow_unknown) {
    std::string vocab;
    for (char32_t c : loaded.tokenizer.chars()) vocab += visible_char(c);
    throw InspectError("the prompt has characters outside the model's vocabulary: " +
                       join(unknown, ", ") + "\nthe vocabulary (" +
                       std::to_string(loaded.tokenizer.chars().size()) + " characters): " + vocab +
                       "\n(--allow-unknown maps them to the unknown id 0)");
  }

  Inspection ins;
  ins.config = config;
  ins.prompt = prompt;
  ins.tokens = loaded.tokenizer.encode(prompt, allow_unknown);
  ins.vocab.resize(config.vocab_size);
  for (std::size_t id = 0; id < config.vocab_size; ++id)
    ins.vocab[id] = id < loaded.tokenizer.vocab_size()
                        ? loaded.tokenizer.char_of(static_cast<std::int32_t>(id))
                        : char32_t(0xFFFD);

  const std::size_t n = ins.tokens.size();
  Ids ids = Ids::from_shape({std::size_t(1), n});
  std::copy(ins.tokens.begin(), ins.tokens.end(), ids.data());

  Tracer tracer(0);
  Tensor logits;
  {
    NoGradGuard no_grad;
    logits = loaded.model->forward(ids, nullptr, &tracer);
  }
  ins.logits = logits.value();
  ins.logits.reshape({n, config.vocab_size});
  ins.probs = tracer.get("probs");  // the model's softmax of the logits (reference op)
  for (const std::string& name : tracer.names())
    if (name != "logits" && name != "probs") ins.snapshots.emplace_back(name, tracer.get(name));
  return ins;
}

std::vector<std::string> snapshot_choices(const Inspection& ins, std::size_t layer) {
  if (layer >= ins.config.n_layers)
    throw InspectError(fmt::format("layer {} is out of range: the model has {} layers (0..{})", layer,
                                   ins.config.n_layers, ins.config.n_layers - 1));
  const std::string prefix = layer_prefix(layer);
  std::vector<std::string> choices;
  for (const auto& [name, value] : ins.snapshots)
    if (starts_with(name, prefix)) choices.push_back(name.substr(prefix.size()));
  for (const auto& [name, value] : ins.snapshots)
    if (!starts_with(name, "layers.")) choices.push_back(name);
  choices.push_back("logits");
  choices.push_back("probs");
  return choices;
}

std::string full_snapshot_name(const Inspection& ins, std::size_t layer, const std::string& name) {
  const std::vector<std::string> choices = snapshot_choices(ins, layer);
  if (std::find(choices.begin(), choices.end(), name) == choices.end())
    throw InspectError("unknown snapshot '" + name + "'; valid names: " + join(choices, ", "));
  const std::string in_layer = layer_prefix(layer) + name;
  return ins.has(in_layer) ? in_layer : name;  // a layer snapshot, else a model-wide one
}

HeadView head_view(const Inspection& ins, std::size_t layer, std::size_t head,
                   const std::string& name) {
  const ModelConfig& config = ins.config;
  if (head >= config.n_heads)
    throw InspectError(fmt::format("head {} is out of range: the model has {} query heads (0..{})",
                                   head, config.n_heads, config.n_heads - 1));
  const std::string full = full_snapshot_name(ins, layer, name);
  const Array& a = ins.get(full);
  const SnapshotInfo* info = snapshot_info(name);

  HeadView view;
  view.rows = info ? info->rows : "row";
  view.cols = info ? info->cols : "column";
  view.rows_are_positions = info ? info->rows_are_positions : false;
  view.cols_are_positions = info ? info->cols_are_positions : false;
  view.cols_are_vocab = info ? info->cols_are_vocab : false;
  const HeadAxis axis = info ? info->head_axis : HeadAxis::none;
  const std::size_t group = config.n_heads / config.n_kv_heads;  // query heads per KV head

  if (axis != HeadAxis::none && a.dimension() == 3) {
    std::size_t index = head;
    if (axis == HeadAxis::kv) {
      index = head / group;
      view.kv_head = index;
      view.note = fmt::format(
          "GQA: {} query heads share each KV head; query head {} uses KV head {} of {}", group, head,
          index, config.n_kv_heads);
    }
    if (index >= a.shape(0))
      throw InspectError(fmt::format("snapshot {} has only {} heads", full, a.shape(0)));
    view.values = block_of(a, index);
    view.per_head = true;
  } else {
    view.values = a;
  }
  if (name == "attn.scores")
    view.note = "scores are taken before the causal mask: entries with j > i are replaced by -inf "
                "next, so they get weight 0 in attn.softmax";
  return view;
}

Summary summarize(const Array& values) {
  Summary s;
  if (values.size() == 0) return s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  double total = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double v = values.data()[i];
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    total += v;
  }
  s.mean = total / static_cast<double>(values.size());
  return s;
}

std::vector<TopToken> top_k(const Inspection& ins, std::size_t position, std::size_t k) {
  if (position >= ins.n())
    throw InspectError(fmt::format("position {} is out of range: the prompt has {} positions",
                                   position, ins.n()));
  const std::size_t vocab = ins.probs.shape(1);
  const Scalar* row = ins.probs.data() + position * vocab;
  std::vector<std::int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min(k, vocab);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [row](std::int32_t a, std::int32_t b) {
                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                    });
  std::vector<TopToken> out;
  for (std::size_t r = 0; r < k; ++r)
    out.push_back({ids[r], ins.vocab.at(static_cast<std::size_t>(ids[r])), static_cast<double>(row[ids[r]])});
  return out;
}

std::string visible_char(char32_t c) {
  if (c == U' ') return "␣";
  if (c == U'\n') return "⏎";
  if (c == U'\t') return "⇥";
  if (c < 0x20) return char_to_utf8(0x2400 + c);  // Unicode control pictures
  if (c == 0x7F) return "␡";
  return char_to_utf8(c);
}

// ---- terminal ------------------------------------------------------------------------------

std::string render_heatmap(const Array& values, const std::vector<std::string>& row_labels,
                           const std::vector<std::string>& col_labels, double lo, double hi,
                           const RenderOptions& options, bool show_causal_mask) {
  const Array m = as_matrix(values);
  const std::size_t rows = m.shape(0), cols = m.shape(1);
  std::size_t label_w = 0;
  for (const auto& label : row_labels) label_w = std::max(label_w, display_width(label));
  const std::size_t per_block = balanced_block(
      cols, std::max<std::size_t>(1, (options.width > label_w + 3 ? options.width - label_w - 3 : 0) / 2));
  std::string out;
  for (std::size_t c0 = 0; c0 < cols; c0 += per_block) {
    const std::size_t c1 = std::min(cols, c0 + per_block);
    if (cols > per_block) out += fmt::format("columns {}..{} of {}:\n", c0, c1 - 1, cols);
    // Two header lines: the column index (last digit) and the column label.
    out += std::string(label_w, ' ') + "  ";
    for (std::size_t c = c0; c < c1; ++c) out += std::to_string(c % 10) + " ";
    out += "\n" + std::string(label_w, ' ') + "  ";
    for (std::size_t c = c0; c < c1; ++c) out += pad_right(c < col_labels.size() ? col_labels[c] : "", 2);
    out += "\n";
    for (std::size_t r = 0; r < rows; ++r) {
      out += pad_right(r < row_labels.size() ? row_labels[r] : "", label_w) + " ";
      out += options.color ? " " : "|";
      for (std::size_t c = c0; c < c1; ++c) {
        const double v = m(r, c);
        if (show_causal_mask && c > r) {
          out += options.color ? "\x1b[49;38;5;245m··" : "··";
        } else if (options.color) {
          const auto& ramp = color_ramp();
          out += fmt::format("\x1b[48;5;{}m  ", ramp[level_of(v, lo, hi, ramp.size())]);
        } else {
          const std::string& shade = shade_ramp()[level_of(v, lo, hi, shade_ramp().size())];
          out += shade + shade;
        }
      }
      out += options.color ? "\x1b[0m\n" : "|\n";
    }
  }
  if (options.color) {
    out += fmt::format("scale: {:.3f} ", lo);
    for (int c : color_ramp()) out += fmt::format("\x1b[48;5;{}m ", c);
    out += fmt::format("\x1b[0m {:.3f}\n", hi);
  } else {
    out += fmt::format("scale: {:.3f} '", lo);
    for (const auto& s : shade_ramp()) out += s;
    out += fmt::format("' {:.3f}\n", hi);
  }
  return out;
}

std::string render_overview(const Inspection& ins, std::size_t layer, std::size_t k,
                            const RenderOptions& options) {
  const ModelConfig& c = ins.config;
  const std::vector<std::string> choices = snapshot_choices(ins, layer);
  std::string out;
  out += fmt::format(
      "Model: vocab {}, d_model {}, {} layers, {} query heads and {} KV heads of dim {}, "
      "context {}\n",
      c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim(), c.context_length);
  out += fmt::format("Prompt: {} ({} characters = {} tokens)\n", quoted_prompt(ins.prompt),
                     ins.prompt.size(), ins.n());
  {
    std::vector<std::string> pos, chr, ids;
    for (std::size_t i = 0; i < ins.n(); ++i) {
      std::string p = std::to_string(i), ch = visible_char(ins.prompt[i]),
                  id = std::to_string(ins.tokens[i]);
      std::size_t w = std::max({display_width(p), display_width(ch), display_width(id)});
      pos.push_back(pad_left(p, w));
      chr.push_back(pad_left(ch, w));
      ids.push_back(pad_left(id, w));
    }
    out += "  position  " + join(pos, " ") + "\n";
    out += "  character " + join(chr, " ") + "\n";
    out += "  token id  " + join(ids, " ") + "\n";
  }
  out += fmt::format(
      "\nLayer {} snapshots (batch axis removed; n = {} positions, m = {} keys):\n", layer, ins.n(),
      ins.n());
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"name", "shape", "min", "max", "mean", "meaning"});
  bool model_wide_header = false;
  for (const std::string& name : choices) {
    const std::string full = full_snapshot_name(ins, layer, name);
    if (!starts_with(full, "layers.") && !model_wide_header) {
      rows.push_back({"", "", "", "", "", ""});
      rows.push_back({"model-wide:", "", "", "", "", ""});
      model_wide_header = true;
    }
    const Array& a = ins.get(full);
    Summary s = summarize(a);
    rows.push_back({name, shape_text(a), format_value(s.min, false), format_value(s.max, false),
                    format_value(s.mean, false), meaning_of(name)});
  }
  std::array<std::size_t, 6> w{};
  for (const auto& r : rows)
    for (std::size_t i = 0; i < 6; ++i) w[i] = std::max(w[i], display_width(r[i]));
  for (const auto& r : rows) {
    std::string line = "  " + pad_right(r[0], w[0]) + "  " + pad_right(r[1], w[1]);
    for (std::size_t i = 2; i < 5; ++i) line += "  " + pad_left(r[i], w[i]);
    line += "  " + r[5];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }

  const std::vector<TopToken> top = top_k(ins, ins.n() - 1, k);
  out += fmt::format("\nNext-token probabilities after {} (top {} of {} vocabulary entries):\n",
                     quoted_prompt(ins.prompt), top.size(), ins.probs.shape(1));
  double total = 0;
  for (std::size_t r = 0; r < top.size(); ++r) {
    const TopToken& t = top[r];
    total += t.prob;
    std::string label = t.id == 0 ? "<unk>" : "'" + visible_char(t.character) + "'";
    const double shown = t.prob > 0 ? std::min(t.prob, 1.0) : 0.0;  // NaN -> no bar (not 2^63 blocks)
    std::size_t bar = static_cast<std::size_t>(std::lround(shown * 40));
    std::string bars;
    for (std::size_t b = 0; b < bar; ++b) bars += "█";
    out += fmt::format("  {:>2}. {} id {:>4}  {:.4f}  {}\n", r + 1, pad_right(label, 7), t.id, t.prob,
                       bars);
  }
  out += fmt::format("  (these {} together: {:.4f}; the other {} entries share the rest)\n",
                     top.size(), total, ins.probs.shape(1) - top.size());
  out += "\n";
  out += kAttentionVsProbabilities;
  out += fmt::format(
      "\nSee one head's values: add --snapshot NAME (e.g. --snapshot attn.softmax --head 0); "
      "layers 0..{}, heads 0..{}.\n",
      c.n_layers - 1, c.n_heads - 1);
  return out;
}

std::string render_snapshot(const Inspection& ins, std::size_t layer, std::size_t head,
                            const std::string& name, const RenderOptions& options) {
  const HeadView view = head_view(ins, layer, head, name);
  const std::string full = full_snapshot_name(ins, layer, name);
  const Array& whole = ins.get(full);
  const Array m = as_matrix(view.values);
  const std::size_t rows = m.shape(0), cols = m.shape(1);

  std::string out = fmt::format("{}  shape {}: {}\n", full, shape_text(whole), meaning_of(name));
  if (view.per_head) {
    const bool kv = snapshot_info(name) && snapshot_info(name)->head_axis == HeadAxis::kv;
    out += kv ? fmt::format("KV head {} (for query head {}) of {}", view.kv_head, head, whole.shape(0))
              : fmt::format("head {} of {}", head, whole.shape(0));
    out += fmt::format(": {}", shape_text(view.values));
  } else {
    out += fmt::format("no head axis: the whole snapshot {}", shape_text(view.values));
  }
  out += fmt::format(", rows = {}, columns = {}\n", view.rows, view.cols);
  if (!view.note.empty()) out += view.note + "\n";
  out += "\n";

  std::vector<std::string> row_labels;
  const std::vector<std::string> chars = position_labels(ins, rows);
  for (std::size_t r = 0; r < rows; ++r)
    row_labels.push_back(view.rows_are_positions ? fmt::format("{:>3} {}", r, chars[r])
                                                 : std::to_string(r));
  std::vector<std::vector<std::string>> header(1);
  for (std::size_t c = 0; c < cols; ++c) header[0].push_back(std::to_string(c));
  std::vector<std::string> col_chars;
  if (view.cols_are_positions || view.cols_are_vocab) {
    header.emplace_back();
    for (std::size_t c = 0; c < cols; ++c) {
      std::string label;
      if (view.cols_are_positions)
        label = c < ins.prompt.size() ? visible_char(ins.prompt[c]) : "?";
      else
        label = c == 0 ? "<unk>" : visible_char(c < ins.vocab.size() ? ins.vocab[c] : U'?');
      header.back().push_back(label);
      col_chars.push_back(label);
    }
  }
  const bool softmax = name == "attn.softmax";
  out += render_table(view.values, row_labels, header, view.rows_are_positions ? "pos" : "",
                      options.width, softmax);
  if (softmax) out += "· = future key (j > i): masked, weight exactly 0\n";

  if (name == "attn.softmax" || name == "attn.scores" || name == "attn.mask") {
    double lo = 0, hi = 1;
    if (name == "attn.scores") {
      Summary s = summarize(view.values);
      lo = s.min;
      hi = s.max;
    }
    out += fmt::format("\nHeatmap of {} (rows = query position i, columns = key position j; "
                       "darker = larger):\n",
                       name);
    out += render_heatmap(view.values, row_labels, col_chars, lo, hi, options, softmax);
  }
  if (name == "attn.softmax" || name == "probs" || name == "logits") out += "\n" + std::string(kAttentionVsProbabilities);
  if (name == "attn.mask")
    out += "\nThe mask is the same for every head: position i may look at keys j <= i only.\n";
  return out;
}

// ---- JSON ----------------------------------------------------------------------------------

namespace {

using ordered_json = nlohmann::ordered_json;

/// Nested lists of an array (non-finite values become null), e.g. (2, 3) -> [[a,b,c],[d,e,f]].
ordered_json nested(const Scalar* data, const std::vector<std::size_t>& shape, std::size_t axis,
                    std::size_t& offset) {
  if (axis == shape.size()) {
    const double v = data[offset++];
    return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);
  }
  ordered_json list = ordered_json::array();
  for (std::size_t i = 0; i < shape[axis]; ++i) list.push_back(nested(data, shape, axis + 1, offset));
  return list;
}

ordered_json array_json(const Array& a) {
  ordered_json out;
  const Shape shape = shape_of(a);
  out["shape"] = shape;
  std::size_t offset = 0;
  out["values"] = nested(a.data(), shape, 0, offset);
  return out;
}

ordered_json config_json(const ModelConfig& c) {
  ordered_json j;
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["n_layers"] = c.n_layers;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim();
  j["ffn_hidden"] = c.ffn_hidden;
  j["context_length"] = c.context_length;
  j["rope_base"] = c.rope_base;
  j["norm_eps"] = c.norm_eps;
  return j;
}

}  // namespace

std::string inspection_json(const Inspection& ins, int indent) {
  ordered_json j;
  j["format"] = "glass-inspect";
  j["version"] = 1;
  j["prompt"] = u32_to_utf8(ins.prompt);
  j["tokens"] = ins.tokens;
  std::vector<std::string> chars, vocab;
  for (char32_t c : ins.prompt) chars.push_back(char_to_utf8(c));
  for (char32_t c : ins.vocab) vocab.push_back(char_to_utf8(c));
  j["chars"] = chars;
  j["vocab"] = vocab;
  j["config"] = config_json(ins.config);
  j["logits"] = array_json(ins.logits);
  j["probs"] = array_json(ins.probs);
  ordered_json snaps = ordered_json::object();
  for (const auto& [name, value] : ins.snapshots) snaps[name] = array_json(value);
  j["snapshots"] = snaps;
  return j.dump(indent);
}

void write_json(const Inspection& ins, const std::string& path) {
  write_file_atomic(path, inspection_json(ins, -1) + "\n");
}

// ---- loss log ------------------------------------------------------------------------------

std::vector<LossPoint> read_loss_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return {};
  std::string line;
  if (!std::getline(in, line)) return {};
  auto split = [](const std::string& s) {
    std::vector<std::string> fields;
    std::stringstream ss(s);
    std::string f;
    while (std::getline(ss, f, ',')) {
      while (!f.empty() && (f.back() == '\r' || f.back() == ' ')) f.pop_back();
      fields.push_back(f);
    }
    return fields;
  };
  const std::vector<std::string> header = split(line);
  auto column = [&](const std::string& name) -> long {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<long>(it - header.begin());
  };
  const long step_col = column("step"), train_col = column("train_loss"), val_col = column("val_loss");
  if (step_col < 0 || train_col < 0)
    throw std::runtime_error(path + " has no 'step' and 'train_loss' columns (header: " + line + ")");
  auto number = [](const std::vector<std::string>& fields, long col) {
    if (col < 0 || static_cast<std::size_t>(col) >= fields.size() || fields[col].empty())
      return std::numeric_limits<double>::quiet_NaN();
    try {
      return std::stod(fields[col]);
    } catch (const std::exception&) {
      return std::numeric_limits<double>::quiet_NaN();
    }
  };
  std::vector<LossPoint> points;
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split(line);
    LossPoint p{number(fields, step_col), number(fields, train_col), number(fields, val_col)};
    if (std::isfinite(p.step)) points.push_back(p);
  }
  return points;
}

// ---- HTML ----------------------------------------------------------------------------------

namespace {

/// A value rounded to 4 significant digits for the page (keeps the file small); null when not finite.
nlohmann::json page_number(double v) {
  if (!std::isfinite(v)) return nullptr;
  return std::strtod(fmt::format("{:.4g}", v).c_str(), nullptr);
}

nlohmann::json page_array(const Array& a) {
  nlohmann::json out;
  out["shape"] = shape_of(a);
  nlohmann::json values = nlohmann::json::array();
  for (std::size_t i = 0; i < a.size(); ++i) values.push_back(page_number(a.data()[i]));
  out["values"] = std::move(values);
  Summary s = summarize(a);
  out["min"] = page_number(s.min);
  out["max"] = page_number(s.max);
  out["mean"] = page_number(s.mean);
  return out;
}

/// JSON made safe to sit inside <script>: '<', '>' and '&' only occur inside JSON strings, where
/// \u escapes mean the same characters.
std::string script_safe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

const char* kPageHead = R"HTML(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GlassLLM inspector</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
header { background: #14213d; color: #fff; padding: 14px 24px; }
header h1 { margin: 0 0 4px 0; font-size: 22px; overflow-wrap: anywhere; }
header .meta { font-size: 13px; opacity: 0.85; }
main { padding: 12px 24px 40px; max-width: 1400px; }
section { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 12px 16px; margin: 12px 0; }
h2 { font-size: 17px; margin: 4px 0 8px; }
.explain { font-size: 13px; color: #444; max-width: 900px; line-height: 1.45; }
.controls { display: flex; gap: 18px; align-items: center; flex-wrap: wrap; font-size: 14px; }
.controls select { font-size: 14px; padding: 2px 4px; }
.tokens { display: flex; flex-wrap: wrap; gap: 3px; margin-top: 6px; }
.token { font-family: ui-monospace, Menlo, Consolas, monospace; background: #e9eef6; color: #14213d; border-radius: 4px; padding: 1px 5px; font-size: 13px; }
.token small { color: #777; font-size: 10px; margin-left: 2px; }
.row { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; }
table.heatmap { border-collapse: collapse; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 11px; }
table.heatmap th { font-weight: normal; color: #555; padding: 0 3px; text-align: center; }
table.heatmap th.rowlabel { text-align: right; white-space: pre; }
td.hm-cell { width: 26px; height: 22px; min-width: 14px; border: 1px solid #fff; text-align: center; cursor: crosshair; font-size: 9px; }
td.hm-cell:hover { outline: 2px solid #e63946; }
td.hm-cell.masked { background: repeating-linear-gradient(45deg, #f4f4f4, #f4f4f4 3px, #e4e4e4 3px, #e4e4e4 5px) !important; }
.hover-info { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; min-height: 20px; margin: 6px 0; color: #14213d; }
.thumbs { display: flex; gap: 10px; flex-wrap: wrap; }
.thumb { border: 2px solid transparent; border-radius: 4px; padding: 3px; cursor: pointer; font-size: 12px; text-align: center; }
.thumb.selected { border-color: #e63946; }
.thumb canvas { display: block; image-rendering: pixelated; }
table.snaps { border-collapse: collapse; font-size: 13px; }
table.snaps td, table.snaps th { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; }
table.snaps td.num { text-align: right; font-family: ui-monospace, Menlo, Consolas, monospace; }
table.snaps tr.snap-row { cursor: pointer; }
table.snaps tr.snap-row:hover { background: #f0f4fa; }
table.snaps tr.selected { background: #ffe8cc; }
.topk-grid { display: flex; flex-wrap: wrap; gap: 10px 24px; }
.topk-pos { width: 250px; font-size: 12px; }
.topk-pos .ctx { font-family: ui-monospace, Menlo, Consolas, monospace; margin-bottom: 2px; white-space: pre; overflow: hidden; text-overflow: ellipsis; }
.topk-bar { display: flex; align-items: center; gap: 6px; height: 16px; }
.topk-bar .ch { width: 38px; font-family: ui-monospace, Menlo, Consolas, monospace; text-align: right; }
.topk-bar .track { flex: 1; background: #eef1f5; height: 12px; border-radius: 2px; }
.topk-bar .fill { background: #2a6f97; height: 12px; border-radius: 2px; }
.topk-bar .p { width: 46px; font-family: ui-monospace, Menlo, Consolas, monospace; }
.legend { font-size: 12px; color: #555; }
svg text { font-size: 11px; fill: #444; }
</style>
</head>
<body>
<header>
  <h1 id="title">GlassLLM inspector</h1>
  <div class="meta" id="meta"></div>
  <div class="tokens" id="prompt-tokens"></div>
</header>
<main>
<section>
  <div class="controls">
    <label>Layer <select id="layer-select"></select></label>
    <label>Head <select id="head-select"></select></label>
    <label>Attention view <select id="attn-select">
      <option value="attn.softmax">attn.softmax (weights)</option>
      <option value="attn.scores">attn.scores (before the mask)</option>
      <option value="attn.mask">attn.mask</option>
    </select></label>
  </div>
</section>
<section id="attention-section">
  <h2 id="attn-title">Attention</h2>
  <p class="explain">Row <i>i</i> is a query position, column <i>j</i> a key position, both labelled with the prompt's characters
  (␣ = space, ⏎ = newline). In <b>attn.softmax</b> each row spreads a total weight of 1 over the positions <i>j ≤ i</i>
  that query may see: that is how one head mixes context. The output probabilities (below) are something else: they
  spread 1 over the vocabulary. A high attention weight alone is not an explanation of the prediction: the mixed
  values still pass through W_O, the residual stream, SwiGLU and the later layers.</p>
  <div class="hover-info" id="attn-info">Hover over a cell to see its value.</div>
  <div class="row">
    <div id="attn-heatmap"></div>
    <div>
      <div class="legend">All heads of this layer (click to select):</div>
      <div class="thumbs" id="head-thumbs"></div>
    </div>
  </div>
</section>
<section id="snapshot-section">
  <h2>Snapshot browser</h2>
  <p class="explain">Every value the tracer recorded for the selected layer (batch axis removed) and the model-wide ones.
  Click a row to see it; snapshots with a head axis show the selected head (K and V have fewer heads under GQA:
  query head <i>h</i> uses KV head <i>h</i> / (n_heads / n_kv_heads)).</p>
  <div class="row">
    <table class="snaps" id="snapshot-table"></table>
    <div>
      <div class="hover-info" id="snap-title"></div>
      <div class="hover-info" id="snap-info"></div>
      <div id="snapshot-view"></div>
    </div>
  </div>
</section>
<section id="topk-section">
  <h2 id="topk-title">Next-token probabilities</h2>
  <p class="explain">For every position, the most probable next characters after the prompt up to and including
  that position (softmax of the logits over the whole vocabulary).</p>
  <div class="topk-grid" id="topk"></div>
</section>
<section id="loss-section">
  <h2>Training loss</h2>
  <div id="loss-chart"></div>
</section>
</main>
<script type="application/json" id="glass-data">)HTML";

const char* kPageTail = R"HTML(</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("glass-data").textContent);
const $ = (id) => document.getElementById(id);
const C = D.config;
const n = D.tokens.length;
const QHEAD = ["attn.q", "attn.rope_q", "attn.scores", "attn.softmax", "attn.mix"];
const KVHEAD = ["attn.k", "attn.v", "attn.rope_k"];
const state = { layer: D.initial.layer, head: D.initial.head, attn: "attn.softmax", snap: "attn.softmax" };

function make(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function fmtv(v) {
  if (v === null || v === undefined) return "-inf";
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(4);
}
function fullName(name, layer) {
  return D.snapshots["layers." + layer + "." + name] ? "layers." + layer + "." + name : name;
}
function getSnap(name, layer) { return D.snapshots[fullName(name, layer)]; }
function shapeText(s) { return "(" + s.join(", ") + ")"; }

// The chosen head's slice of a snapshot as a matrix {rows, cols, data, headText}.
function headSlice(name, layer, head) {
  const s = getSnap(name, layer);
  const shape = s.shape;
  const rel = name;
  let offset = 0, rows, cols, headText = "whole snapshot (no head axis)";
  if (shape.length === 3 && (QHEAD.includes(rel) || KVHEAD.includes(rel))) {
    let h = head;
    if (KVHEAD.includes(rel)) {
      h = Math.floor(head / (C.n_heads / C.n_kv_heads));
      headText = "KV head " + h + " of " + shape[0] + " (used by query head " + head + ")";
    } else {
      headText = "head " + h + " of " + shape[0];
    }
    rows = shape[1]; cols = shape[2]; offset = h * rows * cols;
  } else if (shape.length === 1) {
    rows = 1; cols = shape[0];
  } else {
    cols = shape[shape.length - 1]; rows = s.values.length / cols;
  }
  return { rows, cols, data: s.values.slice(offset, offset + rows * cols), headText };
}

// Colour of a value: sequential (white -> blue) for [lo, hi] or diverging (blue - white - red).
function colour(v, lo, hi, diverging) {
  if (v === null) return "#d9d9d9";
  if (diverging) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    const t = Math.max(-1, Math.min(1, v / m));
    const a = [255, 255, 255], b = t < 0 ? [33, 102, 172] : [178, 24, 43];
    const u = Math.abs(t);
    return "rgb(" + a.map((x, i) => Math.round(x + (b[i] - x) * u)).join(",") + ")";
  }
  const t = hi > lo ? Math.max(0, Math.min(1, (v - lo) / (hi - lo))) : 0;
  const a = [255, 255, 255], b = [8, 48, 107];
  return "rgb(" + a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(",") + ")";
}
function range(data) {
  let lo = Infinity, hi = -Infinity;
  for (const v of data) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  if (lo === Infinity) { lo = 0; hi = 1; }
  return [lo, hi];
}

// A heatmap table: td.hm-cell elements carry data-i, data-j, data-value and a title.
// Large matrices (long prompts, the vocabulary axis) are drawn on a canvas: a table cell per
// value would make the page slow. Hovering shows the value just the same.
function heatmapCanvas(container, m, opt, lo, hi) {
  const cell = Math.max(2, Math.min(14, Math.floor(760 / m.cols)));
  const labelW = cell >= 9 ? 48 : 0, labelH = cell >= 9 ? 14 : 0;
  const canvas = document.createElement("canvas");
  canvas.id = opt.id;
  canvas.className = "heatmap-canvas";
  canvas.width = labelW + m.cols * cell;
  canvas.height = labelH + m.rows * cell;
  const g = canvas.getContext("2d");
  g.font = Math.min(11, cell) + "px monospace";
  g.fillStyle = "#555";
  if (labelW) {
    g.textAlign = "right";
    for (let i = 0; i < m.rows; i++) g.fillText(opt.rowLabels[i], labelW - 3, labelH + i * cell + cell - 2);
    g.textAlign = "center";
    for (let j = 0; j < m.cols; j++) g.fillText(opt.colLabels[j], labelW + j * cell + cell / 2, labelH - 3);
  }
  for (let i = 0; i < m.rows; i++) for (let j = 0; j < m.cols; j++) {
    g.fillStyle = opt.masked && opt.masked(i, j) ? "#ececec" : colour(m.data[i * m.cols + j], lo, hi, opt.diverging);
    g.fillRect(labelW + j * cell, labelH + i * cell, cell, cell);
  }
  canvas.addEventListener("mousemove", (ev) => {
    const r = canvas.getBoundingClientRect();
    const j = Math.floor((ev.clientX - r.left - labelW) / cell), i = Math.floor((ev.clientY - r.top - labelH) / cell);
    if (i < 0 || j < 0 || i >= m.rows || j >= m.cols) return;
    canvas.title = opt.describe(i, j, m.data[i * m.cols + j]);
    opt.info.textContent = canvas.title;
  });
  container.appendChild(canvas);
}

function heatmap(container, m, opt) {
  container.textContent = "";
  if (m.rows * m.cols > 4096) {
    const [lo, hi] = opt.lo !== undefined ? [opt.lo, opt.hi] : range(m.data);
    heatmapCanvas(container, m, opt, lo, hi);
    container.appendChild(make("div", "legend", "colour scale: " + fmtv(lo) + " (light) … " + fmtv(hi) + (opt.diverging ? " (blue negative, red positive)" : " (dark)") + "; hover for values"));
    return;
  }
  const table = make("table", "heatmap");
  table.id = opt.id;
  const thead = make("tr");
  thead.appendChild(make("th", "rowlabel", opt.corner || ""));
  for (let j = 0; j < m.cols; j++) {
    const th = make("th", "collabel", opt.colLabels[j]);
    th.title = opt.colTitle(j);
    thead.appendChild(th);
  }
  table.appendChild(thead);
  const [lo, hi] = opt.lo !== undefined ? [opt.lo, opt.hi] : range(m.data);
  const showText = m.cols <= 24 && opt.showText;
  for (let i = 0; i < m.rows; i++) {
    const tr = make("tr");
    tr.appendChild(make("th", "rowlabel", opt.rowLabels[i]));
    for (let j = 0; j < m.cols; j++) {
      const v = m.data[i * m.cols + j];
      const td = make("td", "hm-cell");
      td.style.background = colour(v, lo, hi, opt.diverging);
      const t = opt.diverging ? Math.abs(v) / (Math.max(Math.abs(lo), Math.abs(hi)) || 1) : (v - lo) / ((hi - lo) || 1);
      const masked = opt.masked && opt.masked(i, j);
      if (masked) td.classList.add("masked");
      if (showText && !masked) { td.textContent = v === null ? "" : (Math.abs(v) >= 10 ? v.toFixed(0) : v.toFixed(2)); td.style.color = t > 0.55 ? "#fff" : "#333"; }
      td.dataset.i = i; td.dataset.j = j; td.dataset.value = fmtv(v);
      td.title = opt.describe(i, j, v);
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  table.addEventListener("mouseover", (ev) => {
    const td = ev.target.closest("td.hm-cell");
    if (td) opt.info.textContent = td.title;
  });
  container.appendChild(table);
  const legend = make("div", "legend", "colour scale: " + fmtv(lo) + " (light) … " + fmtv(hi) + (opt.diverging ? " (blue negative, red positive)" : " (dark)"));
  container.appendChild(legend);
}

function posLabel(i) { return D.labels[i]; }
function ctx(i) { return D.labels.slice(0, i + 1).join(""); }

function drawAttention() {
  const name = state.attn;
  const m = headSlice(name, state.layer, state.head);
  const full = fullName(name, state.layer);
  $("attn-title").textContent = "Attention: " + full + ", " + m.headText + " — " + shapeText([m.rows, m.cols]) + " (query i × key j)";
  heatmap($("attn-heatmap"), m, {
    id: "attention-heatmap", info: $("attn-info"), corner: "i \\ j", showText: true,
    rowLabels: Array.from({ length: m.rows }, (_, i) => i + " " + posLabel(i)),
    colLabels: Array.from({ length: m.cols }, (_, j) => posLabel(j)),
    colTitle: (j) => "key position " + j + " '" + posLabel(j) + "'",
    lo: name === "attn.scores" ? undefined : 0, hi: name === "attn.scores" ? undefined : 1,
    diverging: false, masked: name === "attn.softmax" ? (i, j) => j > i : null,
    describe: (i, j, v) => name + " layer " + state.layer + " head " + state.head + ": query " + i + " '" + posLabel(i) + "' → key " + j + " '" + posLabel(j) + "' = " + fmtv(v) + (j > i ? " (future: masked)" : ""),
  });
  const thumbs = $("head-thumbs");
  thumbs.textContent = "";
  for (let h = 0; h < C.n_heads; h++) {
    const t = headSlice("attn.softmax", state.layer, h);
    const div = make("div", "thumb" + (h === state.head ? " selected" : ""));
    const canvas = document.createElement("canvas");
    const px = Math.max(1, Math.min(12, Math.floor(120 / Math.max(1, t.cols))));
    canvas.width = t.cols * px; canvas.height = t.rows * px;
    canvas.style.width = canvas.style.height = Math.min(120, t.cols * px) + "px";
    const g = canvas.getContext("2d");
    for (let i = 0; i < t.rows; i++) for (let j = 0; j < t.cols; j++) {
      g.fillStyle = colour(t.data[i * t.cols + j], 0, 1, false);
      g.fillRect(j * px, i * px, px, px);
    }
    div.appendChild(canvas);
    div.appendChild(make("div", "", "head " + h));
    div.addEventListener("click", () => { state.head = h; $("head-select").value = String(h); drawAll(); });
    thumbs.appendChild(div);
  }
}

function choices() {
  const prefix = "layers." + state.layer + ".";
  const list = [];
  for (const name of D.order) if (name.startsWith(prefix)) list.push(name.substring(prefix.length));
  for (const name of D.order) if (!name.startsWith("layers.")) list.push(name);
  return list;
}

function drawSnapshotTable() {
  const table = $("snapshot-table");
  table.textContent = "";
  const head = make("tr");
  for (const h of ["snapshot", "shape", "min", "max", "mean", "meaning"]) head.appendChild(make("th", "", h));
  table.appendChild(head);
  for (const name of choices()) {
    const s = getSnap(name, state.layer);
    const tr = make("tr", "snap-row" + (name === state.snap ? " selected" : ""));
    tr.dataset.name = name;
    tr.appendChild(make("td", "", name));
    tr.appendChild(make("td", "num", shapeText(s.shape)));
    tr.appendChild(make("td", "num", fmtv(s.min)));
    tr.appendChild(make("td", "num", fmtv(s.max)));
    tr.appendChild(make("td", "num", fmtv(s.mean)));
    tr.appendChild(make("td", "", D.meaning[name] || ""));
    tr.addEventListener("click", () => { state.snap = name; drawSnapshotTable(); drawSnapshotView(); saveHash(); });
    table.appendChild(tr);
  }
}

function drawSnapshotView() {
  const name = state.snap;
  const s = getSnap(name, state.layer);
  const m = headSlice(name, state.layer, state.head);
  const full = fullName(name, state.layer);
  $("snap-title").textContent = full + " " + shapeText(s.shape) + " → " + m.headText + ": " + shapeText([m.rows, m.cols]);
  $("snap-info").textContent = "Hover over a cell to see its value.";
  const positionsCols = ["attn.scores", "attn.softmax", "attn.mask"].includes(name);
  const vocabCols = name === "logits" || name === "probs";
  const colLabel = (j) => positionsCols ? posLabel(j) : vocabCols ? D.vocab_labels[j] : String(j);
  const weights = name === "attn.softmax" || name === "attn.mask" || name === "probs";
  heatmap($("snapshot-view"), m, {
    id: "snapshot-heatmap", info: $("snap-info"), corner: "", showText: m.cols <= 16,
    rowLabels: Array.from({ length: m.rows }, (_, i) => i + " " + (m.rows === n ? posLabel(i) : "")),
    colLabels: Array.from({ length: m.cols }, (_, j) => colLabel(j)),
    colTitle: (j) => (positionsCols ? "key position " : vocabCols ? "vocabulary id " : "column ") + j + (positionsCols || vocabCols ? " '" + colLabel(j) + "'" : ""),
    lo: weights ? 0 : undefined, hi: weights ? 1 : undefined, diverging: !weights,
    describe: (i, j, v) => full + "[" + i + ", " + j + "] (row " + i + (m.rows === n ? " '" + posLabel(i) + "'" : "") + ", column " + j + (positionsCols || vocabCols ? " '" + colLabel(j) + "'" : "") + ") = " + fmtv(v),
  });
}

function drawTopK() {
  $("topk-title").textContent = "Next-token probabilities (top " + D.top_k + " of " + C.vocab_size + ", every position)";
  const grid = $("topk");
  grid.textContent = "";
  for (let i = 0; i < n; i++) {
    const box = make("div", "topk-pos");
    box.id = "topk-pos-" + i;
    box.appendChild(make("div", "ctx", "after " + i + ": …" + ctx(i).slice(-24)));
    for (const t of D.topk[i]) {
      const bar = make("div", "topk-bar");
      bar.appendChild(make("span", "ch", t.id === 0 ? "<unk>" : "'" + t.label + "'"));
      const track = make("div", "track");
      const fill = make("div", "fill");
      fill.style.width = (100 * t.p).toFixed(1) + "%";
      track.appendChild(fill);
      bar.appendChild(track);
      bar.appendChild(make("span", "p", t.p.toFixed(3)));
      bar.title = "P(next = '" + t.label + "' | " + ctx(i) + ") = " + t.p.toFixed(5) + " (id " + t.id + ")";
      box.appendChild(bar);
    }
    grid.appendChild(box);
  }
}

function drawLoss() {
  const box = $("loss-chart");
  const L = D.loss;
  if (!L || L.step.length === 0) {
    box.appendChild(make("p", "explain", "No training log (log.csv) in this checkpoint directory."));
    return;
  }
  const W = 720, H = 300, left = 56, right = 16, top = 12, bottom = 36;
  const xs = L.step;
  const all = L.train.concat(L.val).filter((v) => v !== null);
  let lo = Math.min(...all), hi = Math.max(...all);
  if (hi === lo) { hi += 1; lo -= 1; }
  const x0 = Math.min(...xs), x1 = Math.max(...xs) === x0 ? x0 + 1 : Math.max(...xs);
  const X = (s) => left + (s - x0) / (x1 - x0) * (W - left - right);
  const Y = (v) => top + (hi - v) / (hi - lo) * (H - top - bottom);
  const path = (ys) => {
    let d = "", pen = false;
    ys.forEach((v, k) => { if (v === null) return; d += (pen ? "L" : "M") + X(xs[k]).toFixed(1) + " " + Y(v).toFixed(1) + " "; pen = true; });
    return d;
  };
  const dots = (ys, colour) => ys.map((v, k) => v === null ? "" : '<circle cx="' + X(xs[k]).toFixed(1) + '" cy="' + Y(v).toFixed(1) + '" r="2.5" fill="' + colour + '"><title>step ' + xs[k] + ": " + v.toFixed(4) + "</title></circle>").join("");
  let svg = '<svg id="loss-svg" width="' + W + '" height="' + H + '" viewBox="0 0 ' + W + " " + H + '">';
  svg += '<rect x="' + left + '" y="' + top + '" width="' + (W - left - right) + '" height="' + (H - top - bottom) + '" fill="#fafbfc" stroke="#ccc"/>';
  for (let k = 0; k <= 4; k++) {
    const v = lo + (hi - lo) * k / 4;
    svg += '<text x="' + (left - 6) + '" y="' + (Y(v) + 4).toFixed(1) + '" text-anchor="end">' + v.toFixed(2) + "</text>";
    svg += '<line x1="' + left + '" x2="' + (W - right) + '" y1="' + Y(v).toFixed(1) + '" y2="' + Y(v).toFixed(1) + '" stroke="#eee"/>';
    const s = x0 + (x1 - x0) * k / 4;
    svg += '<text x="' + X(s).toFixed(1) + '" y="' + (H - bottom + 16) + '" text-anchor="middle">' + Math.round(s) + "</text>";
  }
  svg += '<text x="' + ((left + W - right) / 2) + '" y="' + (H - 4) + '" text-anchor="middle">step</text>';
  svg += '<path d="' + path(L.train) + '" fill="none" stroke="#2a6f97" stroke-width="1.6"/>';
  svg += '<path d="' + path(L.val) + '" fill="none" stroke="#e76f51" stroke-width="1.6"/>' + dots(L.val, "#e76f51");
  svg += '<text x="' + (W - right - 150) + '" y="' + (top + 16) + '" style="fill:#2a6f97">— train loss</text>';
  svg += '<text x="' + (W - right - 150) + '" y="' + (top + 32) + '" style="fill:#e76f51">— validation loss</text>';
  svg += "</svg>";
  box.innerHTML = svg;
  box.appendChild(make("div", "legend", "cross-entropy in nats per character; " + xs.length + " logged steps"));
}

function drawAll() {
  drawAttention();
  drawSnapshotTable();
  drawSnapshotView();
  saveHash();
}

// The view is kept in the address: #layer=1&head=2&attn=attn.softmax&snap=attn.k (so a view
// can be bookmarked, and a test can open one).
function saveHash() {
  const h = "#layer=" + state.layer + "&head=" + state.head + "&attn=" + state.attn + "&snap=" + state.snap;
  try { history.replaceState(null, "", h); } catch (e) { /* some browsers refuse on file:// */ }
}
function loadHash() {
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    const [key, value] = part.split("=").map(decodeURIComponent);
    const number = Number(value);
    if (key === "layer" && Number.isInteger(number) && number >= 0 && number < C.n_layers) state.layer = number;
    if (key === "head" && Number.isInteger(number) && number >= 0 && number < C.n_heads) state.head = number;
    if (key === "attn" && ["attn.softmax", "attn.scores", "attn.mask"].includes(value)) state.attn = value;
    if (key === "snap" && value) state.snap = value;
  }
  if (!getSnap(state.snap, state.layer)) state.snap = "attn.softmax";
}

// Header and selectors.
document.title = D.title;
$("title").textContent = D.title;
$("meta").textContent = "checkpoint " + D.checkpoint + " · vocab " + C.vocab_size + " · d_model " + C.d_model + " · " + C.n_layers + " layers · " + C.n_heads + " query heads, " + C.n_kv_heads + " KV heads of dim " + C.head_dim + " · prompt of " + n + " characters";
for (let i = 0; i < n; i++) {
  const t = make("span", "token", D.labels[i]);
  t.appendChild(make("small", "", String(D.tokens[i])));
  t.title = "position " + i + ", token id " + D.tokens[i];
  $("prompt-tokens").appendChild(t);
}
for (let l = 0; l < C.n_layers; l++) { const o = make("option", "", "layer " + l); o.value = String(l); $("layer-select").appendChild(o); }
for (let h = 0; h < C.n_heads; h++) { const o = make("option", "", "head " + h); o.value = String(h); $("head-select").appendChild(o); }
loadHash();
$("layer-select").value = String(state.layer);
$("attn-select").value = state.attn;
$("head-select").value = String(state.head);
$("layer-select").addEventListener("change", (e) => { state.layer = Number(e.target.value); drawAll(); });
$("head-select").addEventListener("change", (e) => { state.head = Number(e.target.value); drawAll(); });
$("attn-select").addEventListener("change", (e) => { state.attn = e.target.value; drawAttention(); saveHash(); });
drawAll();
drawTopK();
drawLoss();
document.body.dataset.rendered = "yes";
</script>
</body>
</html>
)HTML";

}  // namespace

std::string inspection_html(const Inspection& ins, const HtmlOptions& options) {
  const std::size_t layer = std::min(options.layer, ins.config.n_layers - 1);
  const std::size_t head = std::min(options.head, ins.config.n_heads - 1);
  nlohmann::json d;
  d["title"] = options.title;
  d["checkpoint"] = options.checkpoint;
  d["prompt"] = u32_to_utf8(ins.prompt);
  d["tokens"] = ins.tokens;
  std::vector<std::string> labels, vocab_labels;
  for (char32_t c : ins.prompt) labels.push_back(visible_char(c));
  for (std::size_t id = 0; id < ins.vocab.size(); ++id)
    vocab_labels.push_back(id == 0 ? "<unk>" : visible_char(ins.vocab[id]));
  d["labels"] = labels;
  d["vocab_labels"] = vocab_labels;
  d["config"] = config_json(ins.config);
  d["initial"] = {{"layer", layer}, {"head", head}};
  d["top_k"] = std::min(options.top_k, ins.vocab.size());

  nlohmann::json snaps = nlohmann::json::object(), order = nlohmann::json::array(),
                 meaning = nlohmann::json::object();
  auto add = [&](const std::string& name, const Array& a) {
    snaps[name] = page_array(a);
    order.push_back(name);
  };
  for (const auto& [name, value] : ins.snapshots) add(name, value);
  add("logits", ins.logits);
  add("probs", ins.probs);
  for (const char* name : {"attn.q", "attn.k", "attn.v", "attn.rope_q", "attn.rope_k",
                                  "attn.scores", "attn.mask", "attn.softmax", "attn.mix",
                                  "attn.out", "out", "embeddings", "logits", "probs"})
    meaning[name] = meaning_of(name);
  d["snapshots"] = std::move(snaps);
  d["order"] = std::move(order);
  d["meaning"] = std::move(meaning);

  nlohmann::json topk = nlohmann::json::array();
  for (std::size_t i = 0; i < ins.n(); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (const TopToken& t : top_k(ins, i, options.top_k))
      row.push_back({{"id", t.id}, {"label", visible_char(t.character)}, {"p", page_number(t.prob)}});
    topk.push_back(std::move(row));
  }
  d["topk"] = std::move(topk);

  nlohmann::json loss = {{"step", nlohmann::json::array()},
                         {"train", nlohmann::json::array()},
                         {"val", nlohmann::json::array()}};
  for (const LossPoint& p : options.loss) {
    loss["step"].push_back(p.step);
    loss["train"].push_back(page_number(p.train_loss));
    loss["val"].push_back(page_number(p.val_loss));
  }
  d["loss"] = std::move(loss);

  return std::string(kPageHead) + script_safe(d.dump()) + kPageTail;
}

void write_html(const Inspection& ins, const std::string& path, const HtmlOptions& options) {
  write_file_atomic(path, inspection_html(ins, options));
}

}  // namespace glass
