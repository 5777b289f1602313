// The inspector's terminal view: the overview of a layer, one snapshot as an aligned table of
// rounded values, heatmaps in 256 colours or plain shades. See render_terminal.hpp.

#include "inspect/render_terminal.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "inspect/snapshots.hpp"
#include "inspect/text_cells.hpp"

namespace glass {

namespace {

using text_cells::all_integral;
using text_cells::display_width;
using text_cells::format_value;
using text_cells::join;
using text_cells::pad_left;
using text_cells::pad_right;
using text_cells::starts_with;

std::string quoted_prompt(const std::u32string& prompt) {
  std::string out = "\"";
  for (char32_t c : prompt) out += visible_char(c);
  return out + "\"";
}

std::string shape_text(const Array& a) { return shape_str(shape_of(a)); }

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
  for (std::size_t i = 0; i < count; ++i) labels.push_back(ins.position_label(i));
  return labels;
}

/// The first characters of `label` that fit in `width` columns (a heatmap's column is 2 wide:
/// a BPE token "▁de" shows as "▁d" there; the row labels and the table above show it whole).
std::string clip_to_width(const std::string& label, std::size_t width) {
  if (display_width(label) <= width) return label;
  std::string out;
  for (std::size_t i = 0; i < label.size();) {
    std::size_t n = 1;
    while (i + n < label.size() && (static_cast<unsigned char>(label[i + n]) & 0xC0) == 0x80) ++n;
    const std::string next = label.substr(i, n);
    if (display_width(out + next) > width) break;
    out += next;
    i += n;
  }
  return out;
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

  const std::size_t fit =
      std::max<std::size_t>(1, (width > label_w + 2 ? width - label_w - 2 : 0) / (cell_w + 1));
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
  static const std::vector<int> ramp = {231, 195, 189, 153, 147, 111, 75, 69,
                                        33,  27,  26,  20,  19,  18,  17};
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
    "  - the next-token probabilities spread 1 over the vocabulary (every possible next token).\n"
    "A high attention weight alone is not an explanation of the prediction: the mixed values still\n"
    "pass through W_O, the residual stream, SwiGLU and the later layers before the LM head.\n";

}  // namespace

std::string render_heatmap(const Array& values, const std::vector<std::string>& row_labels,
                           const std::vector<std::string>& col_labels, double lo, double hi,
                           const RenderOptions& options, bool show_causal_mask) {
  const Array m = as_matrix(values);
  const std::size_t rows = m.shape(0), cols = m.shape(1);
  std::size_t label_w = 0;
  for (const auto& label : row_labels) label_w = std::max(label_w, display_width(label));
  const std::size_t per_block = balanced_block(
      cols, std::max<std::size_t>(
                1, (options.width > label_w + 3 ? options.width - label_w - 3 : 0) / 2));
  std::string out;
  for (std::size_t c0 = 0; c0 < cols; c0 += per_block) {
    const std::size_t c1 = std::min(cols, c0 + per_block);
    if (cols > per_block) out += fmt::format("columns {}..{} of {}:\n", c0, c1 - 1, cols);
    // Two header lines: the column index (last digit) and the column label.
    out += std::string(label_w, ' ') + "  ";
    for (std::size_t c = c0; c < c1; ++c) out += std::to_string(c % 10) + " ";
    out += "\n" + std::string(label_w, ' ') + "  ";
    for (std::size_t c = c0; c < c1; ++c)
      out += pad_right(c < col_labels.size() ? clip_to_width(col_labels[c], 2) : "", 2);
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

namespace {

/// The prompt as three aligned rows: position, character (a BPE model: token, its text as the
/// vocabulary writes it, '▁' for a space), token id. Each column is one token's chip.
std::string prompt_rows(const Inspection& ins) {
  std::vector<std::string> pos, chr, ids;
  for (std::size_t i = 0; i < ins.n(); ++i) {
    std::string p = std::to_string(i), ch = ins.position_label(i),
                id = std::to_string(ins.tokens[i]);
    std::size_t w = std::max({display_width(p), display_width(ch), display_width(id)});
    pos.push_back(pad_left(p, w));
    chr.push_back(pad_left(ch, w));
    ids.push_back(pad_left(id, w));
  }
  // A BPE model's tokens are several characters long: a '|' between them shows the boundaries.
  const std::string sep = ins.tokenizer->tokens_span_characters() ? "|" : " ";
  return "  position  " + join(pos, sep) + "\n" +
         pad_right("  " + std::string(ins.tokenizer->unit(false)), 12) + join(chr, sep) + "\n" +
         "  token id  " + join(ids, sep) + "\n";
}

/// Every snapshot of `layer`, then the model-wide ones: name, shape, min, max, mean, meaning.
std::string snapshot_rows(const Inspection& ins, std::size_t layer) {
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"name", "shape", "min", "max", "mean", "meaning"});
  bool model_wide_header = false;
  for (const std::string& name : snapshot_choices(ins, layer)) {
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
  std::string out;
  for (const auto& r : rows) {
    std::string line = "  " + pad_right(r[0], w[0]) + "  " + pad_right(r[1], w[1]);
    for (std::size_t i = 2; i < 5; ++i) line += "  " + pad_left(r[i], w[i]);
    line += "  " + r[5];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

/// The k most probable next tokens after the whole prompt, as bars of up to 40 blocks.
std::string next_token_bars(const Inspection& ins, std::size_t k) {
  const std::vector<TopToken> top = top_k(ins, ins.n() - 1, k);
  std::string out =
      fmt::format("\nNext-token probabilities after {} (top {} of {} vocabulary entries):\n",
                  quoted_prompt(ins.prompt), top.size(), ins.probs.shape(1));
  double total = 0;
  for (std::size_t r = 0; r < top.size(); ++r) {
    const TopToken& t = top[r];
    total += t.prob;
    const std::string shown_label = ins.vocab_label(t.id);
    // "<unk>" (a character model's unknown id 0, no text of its own) is not quoted.
    std::string label = !ins.tokenizer->has_text(t.id) ? shown_label : "'" + shown_label + "'";
    const double shown =
        t.prob > 0 ? std::min(t.prob, 1.0) : 0.0;  // NaN -> no bar (not 2^63 blocks)
    std::size_t bar = static_cast<std::size_t>(std::lround(shown * 40));
    std::string bars;
    for (std::size_t b = 0; b < bar; ++b) bars += "█";
    out += fmt::format("  {:>2}. {} id {:>4}  {:.4f}  {}\n", r + 1, pad_right(label, 7), t.id,
                       t.prob, bars);
  }
  out += fmt::format("  (these {} together: {:.4f}; the other {} entries share the rest)\n",
                     top.size(), total, ins.probs.shape(1) - top.size());
  return out;
}

}  // namespace

std::string render_overview(const Inspection& ins, std::size_t layer, std::size_t k,
                            const RenderOptions& options) {
  const ModelConfig& c = ins.config;
  std::string out;
  out += fmt::format(
      "Model: vocab {}, d_model {}, {} layers, {} query heads and {} KV heads of dim {}, "
      "context {}\n",
      c.vocab_size, c.d_model, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim(), c.context_length);
  const std::string notation = ins.tokenizer->notation();
  out += fmt::format("Prompt: {} ({} characters = {} tokens{})\n", quoted_prompt(ins.prompt),
                     ins.prompt.size(), ins.n(), notation.empty() ? "" : "; " + notation);
  out += prompt_rows(ins);
  out += fmt::format("\nLayer {} snapshots (batch axis removed; n = {} positions, m = {} keys):\n",
                     layer, ins.n(), ins.n());
  out += snapshot_rows(ins, layer);
  out += next_token_bars(ins, k);
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
    out +=
        kv ? fmt::format("KV head {} (for query head {}) of {}", view.kv_head, head, whole.shape(0))
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
        label = ins.position_label(c);
      else
        label = ins.vocab_label(static_cast<std::int32_t>(c));
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
    out += fmt::format(
        "\nHeatmap of {} (rows = query position i, columns = key position j; "
        "darker = larger):\n",
        name);
    out += render_heatmap(view.values, row_labels, col_chars, lo, hi, options, softmax);
  }
  if (name == "attn.softmax" || name == "probs" || name == "logits")
    out += "\n" + std::string(kAttentionVsProbabilities);
  if (name == "attn.mask")
    out += "\nThe mask is the same for every head: position i may look at keys j <= i only.\n";
  return out;
}

}  // namespace glass
