// The inspector's HTML view: web/index.html with the inspection and the page's options in its
// JSON tags. See render_html.hpp.

#include "inspect/render_html.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "inspect/render_json.hpp"
#include "inspect/snapshots.hpp"
#include "inspect/web_page.hpp"

namespace glass {

namespace {

/// The page's options as the "glass-view" tag holds them: title, initial selection (clamped to
/// the inspection's model when there is one), top-k, what each snapshot means, the loss curve.
std::string view_json(const HtmlOptions& options, const Inspection* ins) {
  nlohmann::ordered_json view;
  view["title"] = options.title;
  view["checkpoint"] = options.checkpoint;
  view["layer"] = ins ? std::min(options.layer, ins->config.n_layers - 1) : options.layer;
  view["head"] = ins ? std::min(options.head, ins->config.n_heads - 1) : options.head;
  view["top_k"] = options.top_k;
  view["unit"] = options.unit;
  nlohmann::ordered_json meaning = nlohmann::ordered_json::object();
  for (const SnapshotInfo& info : snapshot_catalogue()) meaning[info.name] = info.meaning;
  view["meaning"] = std::move(meaning);
  view["loss"] = nlohmann::ordered_json::parse(loss_json(options.loss, ""));
  return view.dump();
}

}  // namespace

std::string inspection_html(const Inspection& ins, const HtmlOptions& options) {
  // The page (web/) draws everything from its JSON tags: the inspection itself, in the format
  // of --json, and the view: title, initial selection, top-k and the loss curve.
  return with_json(with_json(inspector_page(), "glass-inspection", inspection_json(ins)),
                   "glass-view", view_json(options, &ins));
}

std::string lab_html(const nlohmann::ordered_json& lab, const Inspection* inspection,
                     const HtmlOptions& options) {
  std::string page = with_json(inspector_page(), "lab-data", lab.dump());
  if (inspection) page = with_json(page, "glass-inspection", inspection_json(*inspection));
  return with_json(page, "glass-view", view_json(options, inspection));
}

void write_html(const Inspection& ins, const std::string& path, const HtmlOptions& options) {
  write_file_atomic(path, inspection_html(ins, options));
}

}  // namespace glass
