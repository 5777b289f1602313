#pragma once
// The inspector's terminal view (`glass inspect` without --json/--html): the overview of a
// layer, one snapshot's values as an aligned table, heatmaps in 256 colours or plain shades.

#include <cstddef>
#include <string>
#include <vector>

#include "autograd/tensor.hpp"
#include "inspect/inspect.hpp"

namespace glass {

/// How terminal output is drawn.
struct RenderOptions {
  bool color = false;       ///< 256-colour heatmaps (ANSI escapes); false = plain text shades
  std::size_t width = 120;  ///< wrap wide tables into column blocks of at most this width
};

/// `glass inspect` without --snapshot: model and prompt, every snapshot of `layer` with its
/// shape and min/max/mean, then the top-k next-token probabilities after the whole prompt.
std::string render_overview(const Inspection& inspection, std::size_t layer, std::size_t k,
                            const RenderOptions& options = {});

/// `glass inspect --snapshot NAME`: the chosen head's values, rounded and aligned, with the
/// prompt's tokens as labels (characters, or a BPE model's token texts) where an axis is
/// positions; a heatmap for attn.softmax, attn.scores and attn.mask.
std::string render_snapshot(const Inspection& inspection, std::size_t layer, std::size_t head,
                            const std::string& name, const RenderOptions& options = {});

/// A heatmap of a 2-D array (rows x cols) scaled from `lo` (lightest) to `hi` (darkest), with
/// row and column labels (one visible character each, or short numbers). With
/// `show_causal_mask`, cells with column > row (future keys) are drawn as "··" instead.
std::string render_heatmap(const Array& values, const std::vector<std::string>& row_labels,
                           const std::vector<std::string>& col_labels, double lo, double hi,
                           const RenderOptions& options = {}, bool show_causal_mask = false);

}  // namespace glass
