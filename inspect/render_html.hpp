#pragma once
// The inspector's HTML view (`glass inspect --html`, GET /inspector of `glass serve`): one
// self-contained page, web/index.html with the inspection in it, and with a lab report
// (inspect/interp_report.hpp) when the interpretability lab ran.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inspect/inspect.hpp"
#include "inspect/loss_plot.hpp"

namespace glass {

/// Options of the HTML page.
struct HtmlOptions {
  std::size_t layer = 0, head = 0;  ///< initially selected
  std::size_t top_k = 5;            ///< next-token bars per position
  std::string title = "GlassLLM inspector";
  std::string checkpoint;       ///< shown on the page
  std::vector<LossPoint> loss;  ///< the training curve (empty: no curve)
  std::string unit = "token";   ///< what one prediction is: "character" or "token"
};

/// One self-contained HTML page that needs no network: web/ (built into the
/// program) with the data in it — inspection_json(inspection) and the options as JSON. In a
/// browser it shows layer/head selectors, attention heatmaps with token labels and values on
/// hover, a snapshot browser with shapes, next-token top-k bars for every position and the
/// training loss curve.
std::string inspection_html(const Inspection& inspection, const HtmlOptions& options = {});

/// The lab's page: web/index.html with the lab report `lab` (interp_json) in its "lab-data" tag,
/// drawn by web/lab_views.js as on the live page, and the inspection of the prompt when there is
/// one (`inspection` null: the page shows the lab's views and the loss curve alone). Opens from a
/// file, no network. options.layer and head: the head the views start on (the lens marks the
/// layer, the head-scores table the head).
std::string lab_html(const nlohmann::ordered_json& lab, const Inspection* inspection,
                     const HtmlOptions& options);

/// Writes inspection_html to `path` atomically. Throws std::runtime_error on failure.
void write_html(const Inspection& inspection, const std::string& path,
                const HtmlOptions& options = {});

}  // namespace glass
