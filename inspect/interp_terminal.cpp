// The interpretability views as terminal text (interp_terminal in interp_report.hpp): aligned
// tables of the lab report's numbers with the tokens' text next to them.

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "inspect/inspect.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/text_cells.hpp"

namespace glass {

using text_cells::pad_left;
using text_cells::pad_right;

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

std::string head_name(std::size_t L, std::size_t h) { return fmt::format("{}.{}", L, h); }

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
    out += fmt::format("\nposition {} '{}'", t, r.label(lens.tokens[t]));
    if (t + 1 < T) out += fmt::format(" -> true next '{}'", r.label(lens.tokens[t + 1]));
    out += "\n";
    for (std::size_t s = 0; s < S; ++s) {
      std::string row = "  " + pad_right(lens.points[s], name_w) + "  ";
      for (std::size_t j = 0; j < k; ++j)
        row += pad_right("'" + r.label(lens.top_ids(s, t, j)) + "'", 5) + " " +
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
  const std::vector<std::size_t> ids = a.listed();
  out += "  next token   without    with the heads ablated   change\n";
  for (std::size_t id : ids)
    out += fmt::format("  {}   {}    {}                    {}\n",
                       pad_right("'" + r.label(static_cast<std::int32_t>(id)) + "'", 10),
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
      r.label(res.answer), r.label(res.other), num(res.clean_diff, 4), num(res.corrupted_diff, 4));
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
      head += pad_left(r.label(r.prompt[t]), cell);
      head2 += pad_left(r.label(p.corrupted[t]), cell);
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

/// The probe's attention over training (probe_history.json): each head's previous-token and
/// first-position share of the recorded pattern at every save, next to its validation loss.
std::string probe_history_terminal(const ProbeHistory& probe, std::size_t width) {
  if (probe.records.empty()) return "";
  std::string visible;
  for (const std::string& t : probe.probe.token_texts) visible += token_label(t);
  std::string out = fmt::format(
      "\nThe probe's attention over training: {} saves, probe \"{}\" ({} tokens; glass serve "
      "draws it).\n",
      probe.records.size(), visible, probe.probe.tokens.size());
  const std::size_t H = probe.n_layers * probe.n_heads, cell = 7, fixed = 8 + 10;
  const std::size_t per_block =
      std::max<std::size_t>(1, (std::max(width, fixed + cell) - fixed) / cell);
  std::vector<ProbeHeadShares> shares;
  for (const ProbeRecord& rec : probe.records) shares.push_back(probe_head_shares(rec));
  for (int which = 0; which < 2; ++which) {
    out += which == 0 ? "\nprevious-token share on the probe\n"
                      : "\nfirst-position share on the probe\n";
    for (std::size_t j0 = 0; j0 < H; j0 += per_block) {
      const std::size_t j1 = std::min(H, j0 + per_block);
      std::string head = "    step  val loss";
      for (std::size_t j = j0; j < j1; ++j)
        head += pad_left(head_name(j / probe.n_heads, j % probe.n_heads), cell);
      out += head + "\n";
      for (std::size_t k = 0; k < probe.records.size(); ++k) {
        const ProbeRecord& rec = probe.records[k];
        const Array& t = which == 0 ? shares[k].previous_token : shares[k].first_position;
        std::string row =
            pad_left(std::to_string(rec.step), 8) + "  " + pad_left(num(rec.val_loss), 8);
        for (std::size_t j = j0; j < j1; ++j)
          row += pad_left(num(t(j / probe.n_heads, j % probe.n_heads)), cell);
        out += row + "\n";
      }
    }
  }
  return out;
}

std::string history_terminal(const InterpReport& r, std::size_t width) {
  const auto& hist = *r.history;
  if (hist.records.empty())
    return "No interpretability record in this run directory (trained before glass train "
           "recorded one, or with --no-interp-record).\n" +
           (hist.probe ? probe_history_terminal(*hist.probe, width) : std::string());
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
  if (hist.probe) out += probe_history_terminal(*hist.probe, width);
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
  if (r.dla) parts.push_back(dla_terminal(r));
  if (r.attribution) parts.push_back(attribution_terminal(r));
  return text_cells::join(parts, "\n");
}

}  // namespace glass
