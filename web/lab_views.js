// The views of the interpretability lab, drawn from a lab report: the JSON both `glass inspect
// --json` (with --lens, --ablate, --head-scores, --patch, --history) and the lab routes of
// `glass serve` (POST /api/lens, /api/ablate) return (inspect/interp_report.hpp, interp_json):
//   {"checkpoint", "prompt": [{"id", "text"}...], "lens": {...}, "ablation": {...},
//    "head_scores": {...}, "patching": {...}, "history": {...}}   (absent views left out)
// A token's "text" is already a visible label (␣ for a space, ⏎ for a newline).
// The one renderer of each view: the live page (lab.js) and the written page (lab_page.js) call
// these functions; none of them asks a server. $, make and colour come from common.js,
// headColour from lines.js.
"use strict";

// The score kinds of interp.json, with what each measures (docs: the interpretability page).
const SCORE_KINDS = {
  previous_token: "previous-token score: mean attention from each position to the one before",
  induction: "induction score: attention to the token after the earlier copy (Olsson et al. 2022)",
  first_position: "first-position share: mean attention to position 0 (an attention sink)",
  ablation_delta_loss: "ablation Δloss (nats): probe loss with the head zeroed, minus without",
};

// A token's label: its text ("<unk>" for a character model's unknown id 0), or "∅" when the
// report gives none.
function labLabel(token) { return token && token.text ? token.text : "\u2205"; }

// A number with `d` decimals, "-" for a value that is not finite (null in the JSON).
function labNum(v, d) { return typeof v === "number" ? v.toFixed(d) : "-"; }

// The name of residual-stream point s: "embeddings", "after layer L", the last one the output.
function pointLabel(points, s) {
  if (s === 0) return "embeddings";
  return "after layer " + (s - 1) + (s === points.length - 1 ? " = output" : "");
}

// The logit lens as a table#lens-table in `box`: a row per residual-stream point (embeddings at
// the top, the model's output at the bottom), a column per position of the prompt; each cell is
// the most probable next token there, shaded by its probability, framed when it is the token
// that really comes next. `layer` (optional) marks the row after that layer.
function drawLensTable(box, report, layer) {
  box.textContent = "";
  const R = report.lens, tokens = report.prompt;
  if (!R) return;
  const n = tokens.length, labels = tokens.map(labLabel);
  const table = make("table", "heatmap lens");
  table.id = "lens-table";
  const inputs = make("tr"), nexts = make("tr");
  inputs.appendChild(make("th", "rowlabel", "input →"));
  nexts.appendChild(make("th", "rowlabel", "true next →"));
  for (let t = 0; t < n; t++) {
    inputs.appendChild(make("th", "collabel", labels[t]));
    nexts.appendChild(make("th", "collabel next", t + 1 < n ? labels[t + 1] : "…"));
  }
  table.appendChild(inputs);
  table.appendChild(nexts);
  for (let s = 0; s < R.points.length; s++) {
    const tr = make("tr", layer !== undefined && s === layer + 1 ? "selected" : "");
    tr.appendChild(make("th", "rowlabel", pointLabel(R.points, s)));
    for (let t = 0; t < n; t++) {
      const top = R.top[s][t], best = top[0];
      const pNext = t + 1 < n ? R.true_next_prob[s][t] : null;
      const td = make("td", "hm-cell lens-cell", labLabel(best));
      td.style.background = colour(best.prob, 0, 1, false);
      td.style.color = best.prob > 0.55 ? "#fff" : "#333";
      if (t + 1 < n && best.id === tokens[t + 1].id) td.classList.add("hit");
      td.dataset.point = String(s); td.dataset.pos = String(t);
      td.dataset.top = best.text; td.dataset.p = labNum(best.prob, 4); td.dataset.id = String(best.id);
      if (typeof pNext === "number") td.dataset.nextP = pNext.toFixed(4);
      td.title = pointLabel(R.points, s) + ", position " + t + " '" + labels[t] + "': " +
          top.map((c) => "'" + labLabel(c) + "' " + labNum(c.prob, 3)).join(", ") +
          (t + 1 < n ? " · true next '" + labels[t + 1] + "': " + labNum(pNext, 4) : " · (the next token is not in the prompt)");
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  table.addEventListener("mouseover", (ev) => {
    const td = ev.target.closest("td.lens-cell");
    if (td && $("lens-info")) $("lens-info").textContent = td.title;
  });
  box.appendChild(table);
}

// The heads an ablation knocked out, as "L0 H1, L1 H2".
function ablatedNames(A) { return A.heads.map((h) => "L" + h[0] + " H" + h[1]).join(", "); }

// The next-token bars after the whole prompt in `box`: for each token among the most probable
// ones (A.top: without or with the heads ablated), the probability without (blue) above the one
// with the heads ablated (orange).
function drawAblationBars(box, report) {
  box.textContent = "";
  const A = report.ablation;
  if (!A) return;
  for (const c of A.top) {
    const p = A.before[c.id], q = A.after[c.id];
    const row = make("div", "ablation-bar");
    row.dataset.char = c.text; row.dataset.id = String(c.id);
    row.dataset.pNormal = labNum(p, 4); row.dataset.pAblated = labNum(q, 4);
    row.appendChild(make("span", "ch", "'" + labLabel(c) + "'"));
    const bars = make("div", "pair");
    for (const [v, cls] of [[p, "normal"], [q, "ablated"]]) {
      const track = make("div", "track"), fill = make("div", "fill " + cls);
      fill.style.width = (100 * (v || 0)).toFixed(1) + "%";
      track.appendChild(fill);
      bars.appendChild(track);
    }
    row.appendChild(bars);
    const change = q - p;
    row.appendChild(make("span", "p", labNum(p, 3) + " → " + labNum(q, 3)));
    row.appendChild(make("span", "delta " + (change > 0.0005 ? "up" : change < -0.0005 ? "down" : ""), (change >= 0 ? "+" : "") + labNum(change, 3)));
    row.title = "P(next = '" + labLabel(c) + "'): " + labNum(p, 5) + " normally, " + labNum(q, 5) + " ablated (id " + c.id + ")";
    box.appendChild(row);
  }
}

// The ablation's headline: which heads, how, and the KL divergence between the distributions.
function ablationSummary(report) {
  const A = report.ablation, labels = report.prompt.map(labLabel);
  return {
    title: "Next token after \"…" + labels.join("").slice(-24) + "\": normal vs " +
        (A.heads.length ? ablatedNames(A) + " " + A.mode + "-ablated" : "nothing ablated"),
    kl: A.heads.length
        ? " · KL(normal ‖ ablated) = " + labNum(A.kl_divergence, 4) + " nats" + (A.mean_over ? " · mean over " + A.mean_over : "")
        : "",
  };
}

// A record's scores as a table in `box`: a row per head (layer.head), a column per score kind,
// cells shaded by value (Δloss diverging around 0). `selected` {layer, head} marks one row.
function drawScoreTable(box, record, selected) {
  box.textContent = "";
  const table = make("table", "scores");
  table.id = "scores-table";
  const head = make("tr");
  head.appendChild(make("th", "", "head"));
  for (const kind of Object.keys(SCORE_KINDS)) head.appendChild(make("th", "", kind.replace(/_/g, " ")));
  table.appendChild(head);
  const dl = record.ablation_delta_loss.flat().filter((v) => typeof v === "number");
  const lo = Math.min(0, ...dl), hi = Math.max(0, ...dl);
  for (let l = 0; l < record.n_layers; l++) {
    for (let h = 0; h < record.n_heads; h++) {
      const mine = selected && selected.layer === l && selected.head === h;
      const tr = make("tr", mine ? "selected" : "");
      tr.appendChild(make("th", "", l + "." + h));
      for (const kind of Object.keys(SCORE_KINDS)) {
        const v = record[kind][l][h], delta = kind === "ablation_delta_loss";
        const td = make("td", "score-cell", (delta && v > 0 ? "+" : "") + labNum(v, 3));
        td.style.background = delta ? colour(v, lo, hi, true) : colour(v, 0, 1, false);
        td.style.color = !delta && v > 0.55 ? "#fff" : "#1b1f24";
        td.title = SCORE_KINDS[kind] + " of layer " + l + ", head " + h;
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
  }
  box.appendChild(table);
}

// Activation patching as a table in `box`: a row per residual-stream point, a column per
// position (clean / corrupted token); each cell the fraction of the logit difference recovered.
function drawPatchingTable(box, report) {
  box.textContent = "";
  const P = report.patching;
  if (!P) return;
  const table = make("table", "heatmap patching");
  table.id = "patching-table";
  const head = make("tr");
  head.appendChild(make("th", "rowlabel", "clean / corrupted"));
  report.prompt.forEach((tok, t) => head.appendChild(make("th", "collabel", labLabel(tok) + " / " + labLabel(P.corrupted[t]))));
  table.appendChild(head);
  P.points.forEach((point, i) => {
    const tr = make("tr");
    tr.appendChild(make("th", "rowlabel", point));
    P.recovered[i].forEach((v, t) => {
      const td = make("td", "hm-cell patch-cell", labNum(v, 2));
      td.style.background = colour(v, -1, 1, true);
      td.dataset.point = String(i); td.dataset.pos = String(t); td.dataset.value = labNum(v, 4);
      td.title = point + ", position " + t + ": recovered " + labNum(v, 4) + " (logit difference " + labNum(P.patched_diff[i][t], 4) + ")";
      tr.appendChild(td);
    });
    table.appendChild(tr);
  });
  box.appendChild(table);
}

// A small SVG line chart (W x H) of several series against the step, x from xLo to xHi (shared
// by every chart so that they line up). series: [{name, colour, dash, points: [[step, v], ...]}].
// Each point has a marker (a run the server saw from its end may have a single save).
function stepChart(id, title, series, xLo, xHi, options) {
  const W = 640, H = options.height || 150, left = 56, right = 90, top = 20, bottom = 22;
  const NS = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const svg = el("svg", { id, width: W, height: H, "font-family": "sans-serif", "font-size": 11, class: "step-chart" });
  svg.appendChild(el("rect", { width: W, height: H, fill: "white" }));
  svg.appendChild(el("text", { x: left, y: 13, "font-weight": "bold" }, title));
  const values = series.flatMap((s) => s.points.map((p) => p[1]));
  if (values.length === 0) {
    svg.appendChild(el("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#666" }, "no data"));
    return svg;
  }
  let y0 = Math.min(...values, options.yMin ?? Infinity), y1 = Math.max(...values, options.yMax ?? -Infinity);
  if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
  if (xHi === xLo) { xLo -= 1; xHi += 1; }
  const px = (x) => left + (x - xLo) / (xHi - xLo) * (W - left - right);
  const py = (y) => top + (y1 - y) / (y1 - y0) * (H - top - bottom);
  const fmt = (v) => (Math.abs(v) >= 100 || v === 0 ? v.toFixed(0) : v.toPrecision(3));
  svg.appendChild(el("line", { x1: left, y1: H - bottom, x2: W - right, y2: H - bottom, stroke: "#999" }));
  svg.appendChild(el("line", { x1: left, y1: top, x2: left, y2: H - bottom, stroke: "#999" }));
  if (y0 < 0 && y1 > 0) svg.appendChild(el("line", { x1: left, y1: py(0), x2: W - right, y2: py(0), stroke: "#ccc", "stroke-dasharray": "3 3" }));
  svg.appendChild(el("text", { x: left - 4, y: top + 4, "text-anchor": "end" }, fmt(y1)));
  svg.appendChild(el("text", { x: left - 4, y: H - bottom, "text-anchor": "end" }, fmt(y0)));
  svg.appendChild(el("text", { x: left, y: H - 6 }, String(xLo)));
  svg.appendChild(el("text", { x: W - right, y: H - 6, "text-anchor": "end" }, "step " + xHi));
  for (const s of series) {
    const g = el("g", { class: "series" });
    g.appendChild(el("title", {}, s.name + ": " + s.points.map((p) => "step " + p[0] + " " + p[1].toFixed(3)).join(", ")));
    if (s.points.length > 1) {
      g.appendChild(el("polyline", { fill: "none", stroke: s.colour, "stroke-width": 1.6, "stroke-dasharray": s.dash || "",
                                     points: s.points.map((p) => px(p[0]).toFixed(1) + "," + py(p[1]).toFixed(1)).join(" ") }));
    }
    for (const p of s.points) g.appendChild(el("circle", { cx: px(p[0]).toFixed(1), cy: py(p[1]).toFixed(1), r: 2.5, fill: s.colour }));
    svg.appendChild(g);
  }
  // Name the series that end highest (options.label of them), at their last point: the heads
  // that formed.
  const ending = series.filter((s) => s.points.length).map((s) => ({ s, last: s.points[s.points.length - 1] }))
      .sort((a, b) => b.last[1] - a.last[1]).slice(0, options.label || 0);
  let previousY = -Infinity;
  for (const { s, last } of ending) {
    const y = Math.max(py(last[1]) + 4, previousY + 12);
    previousY = y;
    svg.appendChild(el("text", { x: px(last[0]) + 6, y: y.toFixed(1), fill: s.colour, class: "end-label" }, s.short + " " + last[1].toFixed(2)));
  }
  return svg;
}

// Dash patterns telling layers apart (colour tells heads apart, as in the line view).
const LAYER_DASH = ["", "6 3", "2 2", "8 3 2 3", "1 3"];

// The head scores over the steps in `box`: the validation loss (loss: [[step, v], ...]), then one
// chart per score kind with a line per head. records: [{step, interp: a record}], oldest first.
function drawScoreCharts(box, records, loss) {
  box.textContent = "";
  const steps = [...records.map((r) => r.step), ...loss.map((p) => p[0])];
  const xLo = Math.min(...steps), xHi = Math.max(...steps);
  box.appendChild(stepChart("scores-loss", "validation loss (nats)", [{ name: "validation loss", short: "val", colour: "#d62728", points: loss }], xLo, xHi, { height: 120, label: 1 }));
  const legend = make("div", "legend score-legend");
  const L = records[0].interp.n_layers, H = records[0].interp.n_heads;
  for (let h = 0; h < H; h++) { const s = make("span", "", "■ head " + h + "  "); s.style.color = headColour(h); legend.appendChild(s); }
  for (let l = 0; l < L; l++) legend.appendChild(make("span", "", "layer " + l + ": " + (["solid", "dashed", "dotted", "dash-dot", "sparse dots"][l % 5]) + "  "));
  box.appendChild(legend);
  const same = records.filter((r) => r.interp.n_layers === L && r.interp.n_heads === H);
  for (const kind of Object.keys(SCORE_KINDS)) {
    const series = [];
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        series.push({ name: "layer " + l + " head " + h, short: "L" + l + " H" + h, colour: headColour(h), dash: LAYER_DASH[l % LAYER_DASH.length],
                      points: same.map((r) => [r.step, r.interp[kind][l][h]]) });
      }
    }
    const bounded = kind !== "ablation_delta_loss";
    box.appendChild(stepChart("scores-" + kind, SCORE_KINDS[kind], series, xLo, xHi, bounded ? { yMin: 0, yMax: 1, label: 2 } : { label: 2 }));
  }
}
