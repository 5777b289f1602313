// The lab's views on the page `glass inspect --html` writes with --lens, --ablate,
// --head-scores, --patch or --history: the lab report the program put into the "lab-data" tag
// (the JSON of `glass inspect --json`, inspect/interp_report.hpp) drawn by lab_views.js, the
// renderer the live page uses too. No server: the page opens from a file.
// VIEW (the page's options: layer and head chosen with --layer/--head) comes from script.js.
"use strict";

const LAB = JSON.parse($("lab-data").textContent);

// The selected head: --layer/--head, as the inspector's selectors.
const LAB_SELECTED = { layer: VIEW.layer || 0, head: VIEW.head || 0 };

function showLens() {
  $("lab-lens-section").hidden = false;
  drawLensTable($("lens-grid"), LAB, LAB_SELECTED.layer);
}

function showAblation() {
  $("lab-ablation-section").hidden = false;
  drawAblationBars($("ablation-bars"), LAB);
  const summary = ablationSummary(LAB);
  $("ablation-title").textContent = summary.title;
  $("ablation-kl").textContent = summary.kl;
}

function showHeadScores() {
  const S = LAB.head_scores;
  $("lab-scores-section").hidden = false;
  $("scores-source").textContent = "Previous-token, first-position share and zero-ablation Δloss on " + S.source +
      "; induction on " + S.probe.period + " random tokens repeated twice (Olsson et al. 2022). Selected: head " +
      LAB_SELECTED.layer + "." + LAB_SELECTED.head + ".";
  drawScoreTable($("scores-grid"), S, LAB_SELECTED);
}

function showPatching() {
  const P = LAB.patching;
  $("lab-patching-section").hidden = false;
  $("patching-note").textContent = "Fraction of the logit difference logit['" + labLabel(P.answer) + "'] − logit['" +
      labLabel(P.other) + "'] recovered by copying the clean residual stream at (point, position) into the corrupted run " +
      "(clean " + labNum(P.clean_diff, 4) + ", corrupted " + labNum(P.corrupted_diff, 4) + ").";
  drawPatchingTable($("patching-grid"), LAB);
}

function showHistory() {
  const H = LAB.history;
  $("lab-history-section").hidden = false;
  document.body.dataset.scoresRecorded = String(H.records.length);
  if (H.records.length === 0) {
    $("scores-note").textContent = "No interpretability record in this run directory.";
    return;
  }
  const records = H.records.map((r) => ({ step: r.step, interp: r }));
  const loss = H.steps.map((s, i) => [s, H.val_loss[i]]).filter((p) => typeof p[1] === "number");
  $("scores-note").textContent = records.length + " save(s) with scores, steps " + H.steps[0] + " to " +
      H.steps[H.steps.length - 1] + ". Colour = head, dash = layer; hover a line for its values.";
  drawScoreCharts($("score-charts"), records, loss);
}

if (LAB.lens) showLens();
if (LAB.ablation) showAblation();
if (LAB.head_scores) showHeadScores();
if (LAB.patching) showPatching();
if (LAB.history) showHistory();
document.body.dataset.labRendered = "yes";
