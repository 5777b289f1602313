// The inspector page's behaviour: selectors, attention heatmaps, the snapshot browser, top-k
// bars and the loss curve (loss_chart.js), all computed here from the data the program wrote
// into the page: the inspection in the format of `glass inspect --json` and the page's options.
// $, visible, make and colour come from common.js.
"use strict";
const I = JSON.parse($("glass-inspection").textContent);
const VIEW = JSON.parse($("glass-view").textContent);

// A snapshot of the JSON ({shape, values: nested lists, null = not finite}) with its values in
// one row-major list and their min, max and mean (null counts as -inf: the masked scores).
function snapshot(a) {
  const values = Array.isArray(a.values) ? a.values.flat(Infinity) : [a.values];
  let min = Infinity, max = -Infinity, total = 0;
  for (const x of values) {
    const v = x === null ? -Infinity : x;
    min = Math.min(min, v); max = Math.max(max, v); total += v;
  }
  const mean = values.length ? total / values.length : 0;
  return { shape: a.shape, values, min: values.length ? min : 0, max: values.length ? max : 0, mean };
}

// The k most probable next tokens after every position, highest first (ties: smaller id first).
function topK(probs, k) {
  const V = probs.shape[1];
  const rows = [];
  for (let i = 0; i < probs.shape[0]; i++) {
    const row = probs.values.slice(i * V, (i + 1) * V);
    const ids = row.map((_, id) => id).sort((a, b) => row[b] - row[a] || a - b).slice(0, k);
    rows.push(ids.map((id) => ({ id, label: D.vocab_labels[id], p: row[id] })));
  }
  return rows;
}

// The page holds an inspection when the program ran the model on a prompt; the lab page of
// `glass inspect --history --html` (no prompt) has none, and shows only the lab and the loss.
const HAS_INSPECTION = Boolean(I.config);

// The inspection as the page draws it: labels, the initial selection, every snapshot flattened.
function readInspection() {
  const D = {
    title: VIEW.title, checkpoint: VIEW.checkpoint, meaning: VIEW.meaning || {}, loss: VIEW.loss,
    initial: { layer: Math.min(VIEW.layer || 0, I.config.n_layers - 1), head: Math.min(VIEW.head || 0, I.config.n_heads - 1) },
    config: I.config, tokens: I.tokens,
    // A BPE model's tokens are subwords: each position is one token, labelled with its text.
    bpe: I.tokenizer === "bpe",
    labels: (I.token_texts || I.chars).map(visibleText),
    vocab_labels: I.vocab.map((c, id) => id === 0 && I.tokenizer !== "bpe" ? "<unk>" : visibleText(c)),
    top_k: Math.min(VIEW.top_k || 5, I.vocab.length),
    snapshots: {}, order: [],
  };
  for (const [name, a] of Object.entries(I.snapshots)) { D.snapshots[name] = snapshot(a); D.order.push(name); }
  for (const name of ["logits", "probs"]) { D.snapshots[name] = snapshot(I[name]); D.order.push(name); }
  return D;
}

const D = HAS_INSPECTION ? readInspection() : null;
if (HAS_INSPECTION) D.topk = topK(D.snapshots.probs, D.top_k);
const C = HAS_INSPECTION ? D.config : null;
const n = HAS_INSPECTION ? D.tokens.length : 0;
const QHEAD = ["attn.q", "attn.rope_q", "attn.scores", "attn.softmax", "attn.mix"];
const KVHEAD = ["attn.k", "attn.v", "attn.rope_k"];
const state = { layer: HAS_INSPECTION ? D.initial.layer : 0, head: HAS_INSPECTION ? D.initial.head : 0, attn: "attn.softmax", snap: "attn.softmax" };

function fmtv(v) {
  if (v === null || v === undefined || v === -Infinity) return "-inf";
  if (v === Infinity) return "inf";
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
      bar.appendChild(make("span", "ch", t.id === 0 && !D.bpe ? "<unk>" : "'" + t.label + "'"));
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
  const L = VIEW.loss;
  if (!L || L.step.length === 0) {
    box.appendChild(make("p", "explain", "No training log (log.csv) in this checkpoint directory."));
    return;
  }
  box.innerHTML = lossChartSvg(L, { title: "", id: "loss-svg" });
  box.appendChild(make("div", "legend", "cross-entropy in nats per " + VIEW.unit + "; " + L.step.length + " logged steps"));
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

// Header and selectors, the views of the inspection.
function drawInspection() {
  $("meta").textContent = "checkpoint " + D.checkpoint + " · vocab " + C.vocab_size + " · d_model " + C.d_model + " · " + C.n_layers + " layers · " + C.n_heads + " query heads, " + C.n_kv_heads + " KV heads of dim " + C.head_dim + " · prompt of " + (D.bpe ? n + " BPE tokens (▁ = space, <0xNN> = a byte)" : n + " characters");
  // One chip per token: its text and its id.
  for (let i = 0; i < n; i++) {
    const t = make("span", "token", D.labels[i]);
    t.appendChild(make("small", "", String(D.tokens[i])));
    t.title = "position " + i + ", token id " + D.tokens[i] + (D.bpe ? ", text '" + I.token_texts[i] + "'" : "");
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
}

document.title = VIEW.title;
$("title").textContent = VIEW.title;
if (HAS_INSPECTION) {
  drawInspection();
} else {
  for (const id of ["controls-section", "attention-section", "snapshot-section", "topk-section"]) $(id).hidden = true;
  $("meta").textContent = "checkpoint " + VIEW.checkpoint;
}
drawLoss();
document.body.dataset.rendered = "yes";
