// The interpretability lab of the live page (live.html): ask the model *why*.
//   - the logit lens (nostalgebraist 2020): the residual stream after each block read through the
//     final RMSNorm and the output matrix, as if that block were the last (POST /api/lens);
//   - head ablation: click heads to knock them out and compare the next-token distribution with
//     and without them (POST /api/ablate, zero or mean ablation);
//   - the head scores recorded at each save (GET /api/interp, the saves' interp.json) drawn over
//     the steps under the validation loss, to see when a head forms.
// The numbers all come from the server (interp/ on the reference path); this file only draws.
// It listens to the events live.js sends: "glass:prompt" (a new answer of /api/inspect for the
// prompt typed), "glass:info" (the model is known), "glass:save" (a new save is served) and
// "glass:log" (the training log was read again).
// $, make, visible, colour come from common.js, headColour from lines.js, live, getJson and
// readHash from live.js (loaded before this file).
"use strict";

const lab = {
  prompt: "",          // the prompt the lens and the ablation were asked for
  lens: null,          // the last POST /api/lens answer
  ablated: new Set(),  // the heads knocked out, as "layer.head"
  mode: "zero",        // "zero" | "mean"
  ablation: null,      // the last POST /api/ablate answer
  history: null,       // the last GET /api/interp answer
  colourBy: "previous_token",
  seq: { lens: 0, ablate: 0 },  // requests sent (answers to older ones are dropped)
};

// The score kinds of interp.json, with what each measures (docs: the interpretability page).
const SCORE_KINDS = {
  previous_token: "previous-token score: mean attention from each position to the one before",
  induction: "induction score: attention to the token after the earlier copy (Olsson et al. 2022)",
  first_position: "first-position share: mean attention to position 0 (an attention sink)",
  ablation_delta_loss: "ablation Δloss (nats): probe loss with the head zeroed, minus without",
};

async function postJson(path, body) {
  const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}

// A counter on <body> that tests wait for ("data-lens-shown" ...).
function bump(name) {
  document.body.dataset[name] = String(Number(document.body.dataset[name] || 0) + 1);
}

// ---- the logit lens -------------------------------------------------------------------------

// A token's label: its visible character, or "∅" for the unknown id 0 (its text is "").
function tokenLabel(c) { return c ? visible(c) : "\u2205"; }

// The name of residual-stream point s: "embeddings", "after layer L", the last one the output.
function pointLabel(points, s) {
  if (s === 0) return "embeddings";
  return "after layer " + (s - 1) + (s === points.length - 1 ? " = output" : "");
}

async function runLens() {
  const seq = ++lab.seq.lens;
  try {
    const j = await postJson("api/lens", { prompt: lab.prompt, top_k: 5 });
    if (seq !== lab.seq.lens) return;
    lab.lens = j;
    $("lab-error").textContent = "";
    drawLens();
    bump("lensShown");
  } catch (e) {
    if (seq === lab.seq.lens) $("lab-error").textContent = "logit lens: " + e.message;
  }
}

// The grid: a row per residual-stream point (embeddings at the top, the model's output at the
// bottom), a column per position; each cell is the most probable next token there, shaded by its
// probability, framed when it is the token that really comes next.
function drawLens() {
  const box = $("lens-grid");
  box.textContent = "";
  const R = lab.lens;
  if (!R) return;
  const n = R.tokens.length, labels = R.texts.map(tokenLabel);  // a label per token
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
    const tr = make("tr");
    tr.appendChild(make("th", "rowlabel", pointLabel(R.points, s)));
    for (let t = 0; t < n; t++) {
      const top = R.top[s][t], best = top[0], pNext = R.next_prob[s][t];
      const td = make("td", "hm-cell lens-cell", tokenLabel(best.char));
      td.style.background = colour(best.p, 0, 1, false);
      td.style.color = best.p > 0.55 ? "#fff" : "#333";
      if (t + 1 < n && best.id === R.tokens[t + 1]) td.classList.add("hit");
      td.dataset.point = String(s); td.dataset.pos = String(t);
      td.dataset.top = best.char; td.dataset.p = best.p.toFixed(4);
      if (pNext !== null) td.dataset.nextP = pNext.toFixed(4);
      td.title = pointLabel(R.points, s) + ", position " + t + " '" + labels[t] + "': " +
          top.map((c) => (c.char ? "'" + visible(c.char) + "'" : "∅ (unknown)") + " " + c.p.toFixed(3)).join(", ") +
          (pNext !== null ? " · true next '" + labels[t + 1] + "': " + pNext.toFixed(4) : " · (the next token is not in the prompt)");
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  table.addEventListener("mouseover", (ev) => {
    const td = ev.target.closest("td.lens-cell");
    if (td) $("lens-info").textContent = td.title;
  });
  box.appendChild(table);
}

// ---- head ablation --------------------------------------------------------------------------

// The latest save that recorded scores, or null.
function latestRecord() {
  const saves = lab.history ? lab.history.saves.filter((s) => s.recorded) : [];
  return saves.length ? saves[saves.length - 1] : null;
}

// The heads grid: a button per (layer, head); a click toggles its ablation. With a recorded save,
// each head is coloured by the chosen score of the latest save, its value written under its name.
function drawHeads() {
  const box = $("heads-grid");
  box.textContent = "";
  if (!live.info || !live.info.config) return;
  const C = live.info.config, record = latestRecord();
  const kind = lab.colourBy, scores = record && kind !== "none" ? record.interp[kind] : null;
  let lo = 0, hi = 1;
  if (scores && kind === "ablation_delta_loss") {
    const all = scores.flat();
    lo = Math.min(0, ...all); hi = Math.max(0, ...all);
  }
  const table = make("table", "heads");
  const head = make("tr");
  head.appendChild(make("th", "", ""));
  for (let h = 0; h < C.n_heads; h++) head.appendChild(make("th", "", "head " + h));
  table.appendChild(head);
  for (let l = 0; l < C.n_layers; l++) {
    const tr = make("tr");
    tr.appendChild(make("th", "rowlabel", "layer " + l));
    for (let h = 0; h < C.n_heads; h++) {
      const key = l + "." + h, td = make("td");
      const button = make("button", "head-cell", "L" + l + " H" + h);
      button.id = "head-" + l + "-" + h;
      button.dataset.head = key;
      if (lab.ablated.has(key)) button.classList.add("ablated");
      if (scores) {
        const v = scores[l][h];
        button.appendChild(make("small", "", (kind === "ablation_delta_loss" && v > 0 ? "+" : "") + v.toFixed(3)));
        button.style.background = colour(v, lo, hi, kind === "ablation_delta_loss");
        const dark = kind === "ablation_delta_loss" ? Math.abs(v) > 0.6 * Math.max(-lo, hi) : v > 0.55;
        button.style.color = dark ? "#fff" : "#1b1f24";
        button.title = SCORE_KINDS[kind] + " = " + v.toFixed(4) + " at step " + record.step + ". Click to ablate.";
      } else {
        button.title = "layer " + l + ", head " + h + ": click to ablate";
      }
      button.addEventListener("click", () => toggleHead(key));
      td.appendChild(button);
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  box.appendChild(table);
  $("heads-note").textContent = record
      ? (kind === "none" ? "" : "Colour: " + SCORE_KINDS[kind] + ", recorded at step " + record.step + ".")
      : "No head scores recorded for this run (see below).";
}

function toggleHead(key) {
  if (lab.ablated.has(key)) lab.ablated.delete(key); else lab.ablated.add(key);
  drawHeads();
  runAblation();
}

async function runAblation() {
  if (!lab.prompt) return;
  const seq = ++lab.seq.ablate;
  const heads = [...lab.ablated].map((k) => k.split(".").map(Number)).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  try {
    const j = await postJson("api/ablate", { prompt: lab.prompt, heads, mode: lab.mode, top_k: 10 });
    if (seq !== lab.seq.ablate) return;
    lab.ablation = j;
    $("lab-error").textContent = "";
    drawAblation();
    document.body.dataset.ablated = heads.map((h) => h.join(".")).join(",");
    bump("ablationShown");
  } catch (e) {
    if (seq === lab.seq.ablate) $("lab-error").textContent = "ablation: " + e.message;
  }
}

// The next-token bars after the whole prompt: for each token among the most probable ones
// (normal or ablated), the normal probability (blue) above the ablated one (orange).
function drawAblation() {
  const box = $("ablation-bars");
  box.textContent = "";
  const A = lab.ablation;
  if (!A) return;
  const ids = [];
  for (const c of [...A.normal, ...A.ablated]) if (!ids.includes(c.id)) ids.push(c.id);
  ids.sort((a, b) => A.probs_normal[b] - A.probs_normal[a] || a - b);
  const labels = A.texts.map(tokenLabel);
  const names = A.heads.map((h) => "L" + h[0] + " H" + h[1]).join(", ");
  $("ablation-title").textContent = "Next token after \"…" + labels.join("").slice(-24) + "\": normal vs " +
      (A.heads.length ? names + " " + A.mode + "-ablated" : "nothing ablated (click heads above)");
  $("ablation-kl").textContent = A.heads.length
      ? " · KL(normal ‖ ablated) = " + A.kl_divergence.toFixed(4) + " nats" + (A.mean_over ? " · mean over " + A.mean_over : "")
      : "";
  for (const id of ids.slice(0, 12)) {
    const p = A.probs_normal[id], q = A.probs_ablated[id];
    const c = live.info.vocab[id];
    const row = make("div", "ablation-bar");
    row.dataset.char = c; row.dataset.pNormal = p.toFixed(4); row.dataset.pAblated = q.toFixed(4);
    row.appendChild(make("span", "ch", c ? "'" + visible(c) + "'" : "\u2205"));
    const bars = make("div", "pair");
    for (const [v, cls] of [[p, "normal"], [q, "ablated"]]) {
      const track = make("div", "track"), fill = make("div", "fill " + cls);
      fill.style.width = (100 * v).toFixed(1) + "%";
      track.appendChild(fill);
      bars.appendChild(track);
    }
    row.appendChild(bars);
    const change = q - p;
    row.appendChild(make("span", "p", p.toFixed(3) + " → " + q.toFixed(3)));
    const delta = make("span", "delta " + (change > 0.0005 ? "up" : change < -0.0005 ? "down" : ""), (change >= 0 ? "+" : "") + change.toFixed(3));
    row.appendChild(delta);
    row.title = "P(next = " + (c ? "'" + visible(c) + "'" : "the unknown token") + "): " + p.toFixed(5) + " normally, " + q.toFixed(5) + " ablated (id " + id + ")";
    box.appendChild(row);
  }
}

// ---- head scores over the saves -------------------------------------------------------------

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

async function loadHistory() {
  try {
    lab.history = await getJson("api/interp");  // live.js: throws the server's error
  } catch (e) {
    $("scores-note").textContent = "no answer from the server: " + e.message;
    return;
  }
  drawHeads();
  drawScores();
  bump("scoresShown");
}

// The validation loss over the steps (the evaluations of the current save's log.csv, and the
// saves' own), then one chart per score kind with a line per head, on the same steps.
function drawScores() {
  const box = $("score-charts");
  box.textContent = "";
  const saves = lab.history ? lab.history.saves : [];
  const recorded = saves.filter((s) => s.recorded);
  const errors = saves.flatMap((s) => [s.error, s.history_error]).filter((e) => e);
  document.body.dataset.scoresRecorded = String(recorded.length);
  if (recorded.length === 0) {
    $("scores-note").textContent = "The head scores are not recorded for this run: no save seen holds interp.json " +
        "(a run trained before the recording existed, or with it off)." + (errors.length ? " " + errors.join("; ") : "");
    return;
  }
  $("scores-note").textContent = recorded.length + " save(s) with scores, steps " + recorded[0].step + " to " +
      recorded[recorded.length - 1].step + ". Colour = head, dash = layer; hover a line for its values." +
      (saves.length > recorded.length ? " " + (saves.length - recorded.length) + " save(s) without scores." : "") +
      (errors.length ? " " + errors.join("; ") : "");
  const loss = [];
  for (const r of live.evalRows || []) if (typeof r.val_loss === "number") loss.push([r.step, r.val_loss]);
  for (const s of saves) if (typeof s.val_loss === "number" && !loss.some((p) => p[0] === s.step)) loss.push([s.step, s.val_loss]);
  loss.sort((a, b) => a[0] - b[0]);
  const steps = [...recorded.map((s) => s.step), ...loss.map((p) => p[0])];
  const xLo = Math.min(...steps), xHi = Math.max(...steps);
  box.appendChild(stepChart("scores-loss", "validation loss (nats)", [{ name: "validation loss", short: "val", colour: "#d62728", points: loss }], xLo, xHi, { height: 120, label: 1 }));
  const legend = make("div", "legend score-legend");
  const L = recorded[0].interp.n_layers, H = recorded[0].interp.n_heads;
  for (let h = 0; h < H; h++) { const s = make("span", "", "■ head " + h + "  "); s.style.color = headColour(h); legend.appendChild(s); }
  for (let l = 0; l < L; l++) legend.appendChild(make("span", "", "layer " + l + ": " + (["solid", "dashed", "dotted", "dash-dot", "sparse dots"][l % 5]) + "  "));
  box.appendChild(legend);
  for (const kind of Object.keys(SCORE_KINDS)) {
    const series = [];
    for (let l = 0; l < L; l++) {
      for (let h = 0; h < H; h++) {
        series.push({ name: "layer " + l + " head " + h, short: "L" + l + " H" + h, colour: headColour(h), dash: LAYER_DASH[l % LAYER_DASH.length],
                      points: recorded.filter((s) => s.interp.n_layers === L && s.interp.n_heads === H).map((s) => [s.step, s.interp[kind][l][h]]) });
      }
    }
    const bounded = kind !== "ablation_delta_loss";
    box.appendChild(stepChart("scores-" + kind, SCORE_KINDS[kind], series, xLo, xHi, bounded ? { yMin: 0, yMax: 1, label: 2 } : { label: 2 }));
  }
}

// ---- wiring ---------------------------------------------------------------------------------

function promptAnswered(prompt) {
  lab.prompt = prompt;
  runLens();
  runAblation();
}

function labMain() {
  const hash = readHash();
  if (hash.mode === "mean") lab.mode = "mean";
  $("ablation-mode").value = lab.mode;
  if (hash.colour && (hash.colour === "none" || SCORE_KINDS[hash.colour])) lab.colourBy = hash.colour;
  $("colour-by").value = lab.colourBy;
  // #ablate=1.2,0.3: after the first answer, those heads are clicked as a person would.
  let toClick = hash.ablate ? hash.ablate.split(",").filter((k) => /^\d+\.\d+$/.test(k)) : [];
  document.addEventListener("glass:prompt", (ev) => {
    promptAnswered(ev.detail.prompt);
    if (toClick.length) {
      const keys = toClick;
      toClick = [];
      const clickAll = () => {
        for (const k of keys) { const b = document.querySelector('button.head-cell[data-head="' + k + '"]'); if (b) b.click(); }
      };
      setTimeout(clickAll, 300);  // after the normal bars were drawn
    }
  });
  // A new save: its scores (the prompt runs again through live.js, which sends "glass:prompt").
  document.addEventListener("glass:save", loadHistory);
  // The evaluations of the training log: the validation loss drawn over the scores.
  let evaluationsDrawn = -1;
  document.addEventListener("glass:log", () => {
    if (!lab.history || live.evalRows.length === evaluationsDrawn) return;
    evaluationsDrawn = live.evalRows.length;
    drawScores();
  });
  document.addEventListener("glass:info", () => { drawHeads(); loadHistory(); }, { once: true });
  $("ablation-mode").addEventListener("change", (e) => { lab.mode = e.target.value; runAblation(); });
  $("colour-by").addEventListener("change", (e) => { lab.colourBy = e.target.value; drawHeads(); });
  $("clear-ablation").addEventListener("click", () => { lab.ablated.clear(); drawHeads(); runAblation(); });
}

labMain();
