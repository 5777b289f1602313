// The inspector (see inspect.hpp): one traced forward pass, then terminal, JSON and HTML views.

#include "inspect/inspect.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "autograd/tape.hpp"
#include "data/text.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "inspect/web_page.hpp"

namespace glass {

namespace {

// ---- what each snapshot means ------------------------------------------------------------

/// Which head axis a per-layer snapshot has (nn/tracer.hpp: Q and the weights have n_heads
/// heads, projected K/V have n_kv_heads).
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

/// True for the code points a terminal draws two columns wide (East Asian Wide and Fullwidth:
/// Hangul Jamo, CJK, Hangul syllables, fullwidth forms, most emoji; Unicode UAX #11).
bool is_wide(char32_t c) {
  return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) || (c >= 0x3041 && c <= 0x33FF) ||
         (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
         (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) ||
         (c >= 0xFF00 && c <= 0xFF60) || (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
         (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD);
}

/// True for the code points that take no column of their own: combining marks (they sit on the
/// character before), zero-width and format characters (U+200B..U+200F joiners and marks,
/// U+2060 word joiner, U+FEFF), variation selectors (U+FE00..U+FE0F, U+E0100..U+E01EF).
bool is_invisible(char32_t c) {
  return (c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) || (c >= 0x1DC0 && c <= 0x1DFF) ||
         (c >= 0x20D0 && c <= 0x20FF) || (c >= 0xFE20 && c <= 0xFE2F) || c == 0x00AD ||
         (c >= 0x180B && c <= 0x180F) || (c >= 0x200B && c <= 0x200F) || (c >= 0x202A && c <= 0x202E) ||
         (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF || (c >= 0xFE00 && c <= 0xFE0F) ||
         (c >= 0xE0100 && c <= 0xE01EF);
}

/// The columns a UTF-8 string takes in a terminal: 2 per wide character, 0 per invisible one,
/// 1 per other code point (invalid bytes count 1 each).
std::size_t display_width(const std::string& s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
    char32_t c = n == 1 ? b : b & (0x7F >> n);
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k)
      c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    w += is_invisible(c) ? 0 : is_wide(c) ? 2 : 1;
    i += n;
  }
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
    // The first few, and how many: a long prompt in another script would list hundreds.
    constexpr std::size_t kShown = 5;
    std::vector<std::string> shown(unknown.begin(), unknown.begin() + static_cast<long>(std::min(kShown, unknown.size())));
    if (unknown.size() > kShown) shown.push_back(fmt::format("and {} more", unknown.size() - kShown));
    throw InspectError(fmt::format(
        "the prompt has {} character(s) outside the model's vocabulary of {} characters: {}\n"
        "(--allow-unknown maps them to the unknown id 0)",
        unknown.size(), loaded.tokenizer.chars().size(), join(shown, ", ")));
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
  // NaN or +inf logits would show as plausible bars and heatmaps; refuse them (-inf is a
  // legitimate "never this token").
  for (std::size_t i = 0; i < ins.logits.size(); ++i) {
    const Scalar x = ins.logits.data()[i];
    if (std::isnan(x) || x == std::numeric_limits<Scalar>::infinity())
      throw InspectError(fmt::format(
          "the model's logits are not finite ({} at position {}, vocabulary entry {}): its weights "
          "are corrupt or diverged",
          std::isnan(x) ? "NaN" : "+inf", i / config.vocab_size, i % config.vocab_size));
  }
  ins.probs = tracer.get("probs");  // the decoder's softmax of the logits
  ins.probs.reshape({n, config.vocab_size});
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
  if (is_invisible(c)) return fmt::format("U+{:04X}", static_cast<std::uint32_t>(c));
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

// ---- HTML ----------------------------------------------------------------------------------

std::string inspection_html(const Inspection& ins, const HtmlOptions& options) {
  // The page (web/) draws everything from two JSON tags: the inspection itself,
  // in the format of --json, and the view: title, initial selection, top-k and the loss curve.
  nlohmann::ordered_json view;
  view["title"] = options.title;
  view["checkpoint"] = options.checkpoint;
  view["layer"] = std::min(options.layer, ins.config.n_layers - 1);
  view["head"] = std::min(options.head, ins.config.n_heads - 1);
  view["top_k"] = options.top_k;
  nlohmann::ordered_json meaning = nlohmann::ordered_json::object();
  for (const char* name : {"attn.q", "attn.k", "attn.v", "attn.rope_q", "attn.rope_k", "attn.scores",
                           "attn.mask", "attn.softmax", "attn.mix", "attn.out", "out", "embeddings",
                           "logits", "probs"})
    meaning[name] = meaning_of(name);
  view["meaning"] = std::move(meaning);
  view["loss"] = nlohmann::ordered_json::parse(loss_json(options.loss, ""));
  return with_json(with_json(inspector_page(), "glass-inspection", inspection_json(ins)),
                   "glass-view", view.dump());
}

void write_html(const Inspection& ins, const std::string& path, const HtmlOptions& options) {
  write_file_atomic(path, inspection_html(ins, options));
}

}  // namespace glass
