// The live page of `glass serve` (live.html): the prompt box, attention heatmaps and line views,
// and the training curves and evaluations of a run that is still training; the next-token panel
// (the sampler's controls, the bars, streamed generation) is next_token.js. Everything comes from
// the server's JSON API (serve/server.hpp); nothing here reads a file.
// $, visible, make and colour come from common.js.
"use strict";

const live = {
  info: null,          // GET /api/info
  result: null,        // the last POST /api/inspect answer
  requested: "",       // the prompt of the last request sent
  seq: 0,              // requests sent (answers to older ones are dropped)
  nextSeq: 0,          // POST /api/next requests sent (likewise)
  layer: 0, head: 0, view: "heatmap", pos: -1,
  steps: [], evalRows: [], lastStep: -1,   // GET /api/log
  evals: [], probeChars: [],                // GET /api/evals
  followEvals: true,
};

async function getJson(path) {
  const r = await fetch(path, { cache: "no-store" });
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
  return j;
}

// ---- attention ------------------------------------------------------------------------------

// A heatmap table of one head: rows = queries, columns = keys; future keys (j > i) are masked.
// Cells are td.hm-cell with data-i, data-j, data-value (as on the static inspector page).
function attentionTable(id, labels, weights, info, describe) {
  const n = labels.length;
  const table = make("table", "heatmap");
  table.id = id;
  const head = make("tr");
  head.appendChild(make("th", "rowlabel", "i \\ j"));
  for (let j = 0; j < n; j++) head.appendChild(make("th", "collabel", labels[j]));
  table.appendChild(head);
  for (let i = 0; i < n; i++) {
    const tr = make("tr");
    tr.appendChild(make("th", "rowlabel", i + " " + labels[i]));
    for (let j = 0; j < n; j++) {
      const v = weights[i][j];
      const td = make("td", "hm-cell");
      if (j > i) td.classList.add("masked");
      else {
        td.style.background = colour(v, 0, 1, false);
        if (n <= 24) { td.textContent = v.toFixed(2); td.style.color = v > 0.55 ? "#fff" : "#333"; }
      }
      td.dataset.i = i; td.dataset.j = j; td.dataset.value = v.toFixed(4);
      td.title = describe(i, j, v);
      tr.appendChild(td);
    }
    table.appendChild(tr);
  }
  table.addEventListener("mouseover", (ev) => {
    const td = ev.target.closest("td.hm-cell");
    if (td && info) info.textContent = td.title;
  });
  return table;
}

// The labels of an /api/inspect answer's positions: one per token (a character, or a BPE
// token's text: "▁de", "<0x0A>").
function tokenLabels(R) { return (R.token_texts || R.chars).map(visibleText); }

// Whether the served model reads BPE tokens (else one token per character).
function isBpe() { return !!live.info && live.info.tokenizer === "bpe"; }

function drawAttention() {
  const R = live.result;
  const box = $("attn-heatmap"), linesBox = $("attn-lines");
  box.textContent = ""; linesBox.textContent = "";
  if (!R) return;
  const labels = tokenLabels(R);
  const C = live.info.config;
  const L = live.layer, H = live.head;
  const describe = (l, h) => (i, j, v) => "layer " + l + " head " + h + ": query " + i + " '" + labels[i] + "' → key " + j + " '" + labels[j] + "' = " + v.toFixed(4) + (j > i ? " (future: masked)" : "");
  const onFocus = (i) => {
    if (i < 0) return;
    const w = R.attention[L][H][i];
    const best = w.map((v, j) => [v, j]).sort((a, b) => b[0] - a[0]).slice(0, 3);
    $("attn-info").textContent = "query " + i + " '" + labels[i] + "' (layer " + L + ", head " + H + ") looks most at " + best.map(([v, j]) => j + " '" + labels[j] + "' " + v.toFixed(3)).join(", ");
  };
  if (live.view === "heatmap") {
    $("attn-title").textContent = "Attention: layer " + L + ", head " + H + " — (" + R.tokens.length + " × " + R.tokens.length + ")";
    box.appendChild(attentionTable("attention-heatmap", labels, R.attention[L][H], $("attn-info"), describe(L, H)));
    return;
  }
  const grid = make("div", "lines-grid");
  linesBox.appendChild(grid);
  const heads = (l, hs) => hs.map((h) => ({ weights: R.attention[l][h], colour: headColour(h), name: "layer " + l + " head " + h }));
  const allHeads = Array.from({ length: C.n_heads }, (_, h) => h);
  if (live.view === "lines-head") {
    $("attn-title").textContent = "Attention lines: layer " + L + ", head " + H;
    grid.appendChild(attentionLinesSvg(labels, heads(L, [H]), { id: "lines-svg", onFocus }));
  } else if (live.view === "lines-layer") {
    $("attn-title").textContent = "Attention lines: layer " + L + ", all " + C.n_heads + " heads";
    grid.appendChild(attentionLinesSvg(labels, heads(L, allHeads), { id: "lines-svg", onFocus }));
  } else {
    $("attn-title").textContent = "Attention lines: all " + C.n_layers + " layers, all heads";
    for (let l = 0; l < C.n_layers; l++) {
      const cell = make("div");
      cell.appendChild(attentionLinesSvg(labels, heads(l, allHeads), { id: "lines-svg-" + l, width: 260, rowHeight: 14 }));
      cell.appendChild(make("div", "legend", "layer " + l));
      grid.appendChild(cell);
    }
  }
  const legend = make("div", "legend");
  for (const h of (live.view === "lines-head" ? [H] : allHeads)) {
    const s = make("span", "", "■ head " + h + "  ");
    s.style.color = headColour(h);
    legend.appendChild(s);
  }
  linesBox.appendChild(legend);
}

// ---- the prompt -----------------------------------------------------------------------------

function drawPrompt() {
  const R = live.result;
  const tokens = $("prompt-tokens");
  tokens.textContent = "";
  if (!R) return;
  // One chip per token: its text and its id.
  const labels = tokenLabels(R);
  labels.forEach((label, i) => {
    const t = make("span", "token", label);
    t.appendChild(make("small", "", String(R.tokens[i])));
    t.title = "position " + i + ", token id " + R.tokens[i] + (R.token_texts ? ", text '" + R.token_texts[i] + "'" : "");
    tokens.appendChild(t);
  });
  const sel = $("pos-select");
  const keep = live.pos;
  sel.textContent = "";
  labels.forEach((label, i) => { const o = make("option", "", i + " '" + label + "'"); o.value = String(i); sel.appendChild(o); });
  live.pos = keep >= 0 && keep < labels.length ? keep : -1;
  sel.value = String(live.pos >= 0 ? live.pos : labels.length - 1);
  $("inspector-link").href = "inspector?prompt=" + encodeURIComponent(R.prompt) + "#layer=" + live.layer + "&head=" + live.head;
}

async function runPrompt() {
  const prompt = $("prompt").value;
  if (prompt === live.requested) return;
  live.requested = prompt;
  const seq = ++live.seq;
  if (prompt.length === 0) { $("prompt-error").textContent = "type a prompt"; return; }
  try {
    const r = await fetch("api/inspect", {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ prompt, top_k: 5 }),
    });
    const j = await r.json();
    if (seq !== live.seq) return;  // a newer request is on its way
    if (!r.ok) { $("prompt-error").textContent = j.error; return; }
    $("prompt-error").textContent = "";
    live.result = j;
    drawPrompt(); drawAttention(); drawNext();
    document.dispatchEvent(new CustomEvent("glass:prompt", { detail: j }));  // lab.js
    document.body.dataset.prompt = j.prompt;
    document.body.dataset.inspected = String(Number(document.body.dataset.inspected || 0) + 1);
  } catch (e) {
    if (seq === live.seq) $("prompt-error").textContent = "no answer from the server: " + e.message;
  }
}

let promptTimer = null;
function promptChanged() {
  clearTimeout(promptTimer);
  promptTimer = setTimeout(runPrompt, 120);  // one request per pause in typing
}

// ---- training -------------------------------------------------------------------------------

// A small line chart (360 x 150) of one series against the step; null values are skipped.
function miniChart(id, title, steps, values, colour) {
  const W = 360, H = 150, left = 56, right = 12, top = 22, bottom = 26;
  const pts = [];
  for (let i = 0; i < steps.length; i++) if (typeof values[i] === "number" && Number.isFinite(values[i])) pts.push([steps[i], values[i]]);
  let svg = '<svg xmlns="http://www.w3.org/2000/svg" id="' + id + '" width="' + W + '" height="' + H + '" font-family="sans-serif" font-size="11">' +
            '<rect width="' + W + '" height="' + H + '" fill="white"/><text x="' + left + '" y="14" font-weight="bold">' + lossEscape(title) + "</text>";
  if (pts.length === 0) return svg + '<text x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle" fill="#666">no data yet</text></svg>';
  let x0 = Math.min(...pts.map((p) => p[0])), x1 = Math.max(...pts.map((p) => p[0]));
  let y0 = Math.min(...pts.map((p) => p[1])), y1 = Math.max(...pts.map((p) => p[1]));
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  if (y1 === y0) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
  const px = (x) => (left + (x - x0) / (x1 - x0) * (W - left - right)).toFixed(1);
  const py = (y) => (top + (y1 - y) / (y1 - y0) * (H - top - bottom)).toFixed(1);
  const fmt = (v) => (Math.abs(v) >= 100 || v === 0 ? v.toFixed(0) : Math.abs(v) >= 0.01 ? v.toPrecision(3) : v.toExponential(1));
  svg += '<line x1="' + left + '" y1="' + (H - bottom) + '" x2="' + (W - right) + '" y2="' + (H - bottom) + '" stroke="#999"/>' +
         '<line x1="' + left + '" y1="' + top + '" x2="' + left + '" y2="' + (H - bottom) + '" stroke="#999"/>' +
         '<text x="' + (left - 4) + '" y="' + (top + 4) + '" text-anchor="end">' + fmt(y1) + "</text>" +
         '<text x="' + (left - 4) + '" y="' + (H - bottom) + '" text-anchor="end">' + fmt(y0) + "</text>" +
         '<text x="' + left + '" y="' + (H - 8) + '">' + x0 + "</text>" +
         '<text x="' + (W - right) + '" y="' + (H - 8) + '" text-anchor="end">step ' + x1 + "</text>" +
         '<polyline fill="none" stroke="' + colour + '" stroke-width="1.5" points="' + pts.map((p) => px(p[0]) + "," + py(p[1])).join(" ") + '"/></svg>';
  return svg;
}

// At most `max` evenly spaced rows (a long run has tens of thousands of steps).
function thin(rows, max) {
  if (rows.length <= max) return rows;
  const every = rows.length / max;
  const out = [];
  for (let i = 0; i < max; i++) out.push(rows[Math.floor(i * every)]);
  out.push(rows[rows.length - 1]);
  return out;
}

function drawTraining() {
  const steps = thin(live.steps, 1500), evals = live.evalRows;
  const info = $("train-info");
  if (steps.length === 0 && evals.length === 0) { info.textContent = "no training log yet"; return; }
  // The loss chart: the loss of every step (steps.csv) or, without it, the evaluations' train loss;
  // the validation loss at the evaluations.
  const byStep = new Map();
  const row = (s) => { if (!byStep.has(s)) byStep.set(s, { train: null, val: null }); return byStep.get(s); };
  for (const r of steps) row(r.step).train = r.loss;
  for (const r of evals) { if (steps.length === 0) row(r.step).train = r.train_loss; row(r.step).val = r.val_loss; }
  const xs = [...byStep.keys()].sort((a, b) => a - b);
  // Validation is measured only at evaluations: drawn as its own line through those points.
  const valSteps = xs.filter((s) => byStep.get(s).val !== null);
  const loss = { step: [], train: [], val: [] };
  for (const s of xs) {
    const r = byStep.get(s);
    loss.step.push(s); loss.train.push(r.train);
    loss.val.push(r.val !== null ? r.val : (valSteps.length && s > valSteps[0] && s < valSteps[valSteps.length - 1] ? interpolate(valSteps, s) : null));
  }
  $("loss-chart").innerHTML = lossChartSvg(loss, { title: "loss", id: "live-loss-svg" });
  const source = steps.length ? steps : evals;
  $("lr-chart").innerHTML = miniChart("lr-svg", "learning rate", source.map((r) => r.step), source.map((r) => r.lr), "#2ca02c");
  $("grad-chart").innerHTML = miniChart("grad-svg", steps.length ? "gradient norm (before clipping)" : "gradient norm (needs steps.csv)",
                                        steps.map((r) => r.step), steps.map((r) => r.grad_norm), "#9467bd");
  const last = steps.length ? steps[steps.length - 1] : null;
  info.textContent = (last ? "step " + last.step + ": loss " + Number(last.loss).toFixed(4) + (last.tokens_per_s ? ", " + Math.round(last.tokens_per_s) + " tokens/s" : "") + " · " : "") +
                     evals.length + " evaluation(s)" + (evals.length ? ", last val loss " + Number(evals[evals.length - 1].val_loss).toFixed(4) : "");
  document.body.dataset.steps = String(live.steps.length);
  document.body.dataset.evalRows = String(evals.length);
  function interpolate(at, s) {  // linear between the two evaluations around step s
    let k = 0;
    while (at[k + 1] < s) k++;
    const a = byStep.get(at[k]).val, b = byStep.get(at[k + 1]).val;
    return a + (b - a) * (s - at[k]) / (at[k + 1] - at[k]);
  }
}

function drawEvaluation() {
  const box = $("eval-heatmap");
  box.textContent = "";
  const slider = $("eval-slider");
  if (live.evals.length === 0) return;
  const k = Number(slider.value);
  const e = live.evals[k];
  const labels = (e.token_texts || live.probeChars).map(visibleText);
  const L = Math.min(live.layer, e.attention.length - 1), H = Math.min(live.head, e.attention[L].length - 1);
  $("eval-label").textContent = "evaluation " + (k + 1) + " of " + live.evals.length + ": step " + e.step +
      (e.val_loss !== null ? ", val loss " + e.val_loss.toFixed(4) : "") +
      (e.save === null ? " (recorded by glass train; that save was pruned)" : "") + " — layer " + L + ", head " + H;
  box.appendChild(attentionTable("eval-attention", labels, e.attention[L][H], $("attn-info"),
      (i, j, v) => "step " + e.step + ", layer " + L + " head " + H + ": query " + i + " '" + labels[i] + "' → key " + j + " '" + labels[j] + "' = " + v.toFixed(4)));
  $("eval-sample").textContent = "sample at step " + e.step + ":\n" + e.sample;
}

async function pollLog() {
  try {
    const j = await getJson("api/log?since=" + live.lastStep);
    if (j.steps.length) {
      live.steps.push(...j.steps);
      live.lastStep = j.steps[j.steps.length - 1].step;
    } else if (j.last_step < live.lastStep) {  // a new run replaced the log: start over
      live.steps = []; live.lastStep = -1;
    }
    live.evalRows = j.evals;
    drawTraining();
    document.dispatchEvent(new Event("glass:log"));  // lab.js
    if (j.evaluations > nextEvalIndex()) await pollEvals();
    if (live.info && j.step !== live.info.step) await refreshInfo();
  } catch (e) {
    $("status").textContent = "no answer from the server: " + e.message;
  }
}

// The index of the server's next evaluation after the ones received (the server keeps the
// first and the newest max_evaluations, so indices can jump).
function nextEvalIndex() {
  return live.evals.length ? live.evals[live.evals.length - 1].index + 1 : 0;
}

async function pollEvals() {
  const j = await getJson("api/evals?since=" + nextEvalIndex());
  live.probeChars = j.chars;
  if (j.evaluations.length === 0) return;
  live.evals.push(...j.evaluations);
  if (live.evals.length > j.max_evaluations + 1) live.evals.splice(1, live.evals.length - j.max_evaluations - 1);
  const slider = $("eval-slider");
  slider.disabled = false;
  slider.max = String(live.evals.length - 1);
  if (live.followEvals) slider.value = slider.max;
  drawEvaluation();
  document.body.dataset.evaluations = String(live.evals.length);
}

// ---- the model ------------------------------------------------------------------------------

async function refreshInfo() {
  const info = await getJson("api/info");
  const first = !live.info || !live.info.config;
  live.info = info;
  $("status").textContent = info.status || "";
  if (!info.loaded) { $("meta").textContent = "checkpoint " + info.checkpoint + " · no model yet"; return; }
  const C = info.config;
  // The vocabulary in glass train's words (train/loss_notes.hpp, vocabulary_words).
  $("meta").textContent = "checkpoint " + info.checkpoint + " · save " + info.save + (info.step != null ? " (step " + info.step + ")" : "") +
      " · vocabulary " + C.vocab_size + (info.tokenizer === "bpe" ? " BPE tokens (▁ = space, <0xNN> = a byte)" : " (" + (C.vocab_size - 1) + " characters + the unknown id 0)") + " · d_model " + C.d_model + " · " + C.n_layers + " layers · " + C.n_heads +
      " query heads, " + C.n_kv_heads + " KV heads of dim " + C.head_dim + " · " + info.context_note;
  // The page's words say what the model reads: characters, or a BPE model's tokens.
  for (const e of document.querySelectorAll(".unit-one")) e.textContent = info.unit_singular;
  for (const e of document.querySelectorAll(".units")) e.textContent = info.unit;
  document.dispatchEvent(new Event(first ? "glass:info" : "glass:save"));  // lab.js
  if (first) {
    for (let l = 0; l < C.n_layers; l++) { const o = make("option", "", "layer " + l); o.value = String(l); $("layer-select").appendChild(o); }
    for (let h = 0; h < C.n_heads; h++) { const o = make("option", "", "head " + h); o.value = String(h); $("head-select").appendChild(o); }
    live.layer = Math.min(live.layer, C.n_layers - 1); live.head = Math.min(live.head, C.n_heads - 1);
    $("layer-select").value = String(live.layer); $("head-select").value = String(live.head);
    $("top-k").max = String(C.vocab_size);
  } else if (live.result) {
    live.requested = "";  // a new save: the same prompt through the new weights
    runPrompt();
  }
}

// #layer=1&head=2&view=lines-layer&temperature=0.5&top_k=5&top_p=0.9&min_p=0.1&repeat_penalty=1.3&prompt=TEXT&type=TEXT&generate=N
function readHash() {
  const o = {};
  for (const part of location.hash.replace(/^#/, "").split("&")) {
    if (!part) continue;
    const at = part.indexOf("=");
    const key = decodeURIComponent(at < 0 ? part : part.slice(0, at));
    o[key] = at < 0 ? "" : decodeURIComponent(part.slice(at + 1));
  }
  return o;
}

// Types `text` into the prompt box one character at a time, as a person would.
function typeText(text, then) {
  const chars = [...text];
  let k = 0;
  const next = () => {
    if (k >= chars.length) { if (then) then(); return; }
    $("prompt").value += chars[k++];
    $("prompt").dispatchEvent(new Event("input"));
    setTimeout(next, 60);
  };
  next();
}

async function main() {
  const hash = readHash();
  const int = (v, d) => (v !== undefined && /^\d+$/.test(v) ? Number(v) : d);
  live.layer = int(hash.layer, 0); live.head = int(hash.head, 0);
  if (["heatmap", "lines-head", "lines-layer", "lines-all"].includes(hash.view)) live.view = hash.view;
  $("view-select").value = live.view;
  $("prompt").addEventListener("input", promptChanged);
  $("layer-select").addEventListener("change", (e) => { live.layer = Number(e.target.value); drawAttention(); drawEvaluation(); drawPrompt(); });
  $("head-select").addEventListener("change", (e) => { live.head = Number(e.target.value); drawAttention(); drawEvaluation(); drawPrompt(); });
  $("view-select").addEventListener("change", (e) => { live.view = e.target.value; drawAttention(); });
  $("eval-slider").addEventListener("input", () => {
    live.followEvals = Number($("eval-slider").value) === live.evals.length - 1;
    drawEvaluation();
  });
  setUpNextToken(hash);  // next_token.js
  for (;;) {  // the server may still be waiting for the first save
    try { await refreshInfo(); if (live.info.loaded) break; } catch (e) { $("status").textContent = e.message; }
    await new Promise((r) => setTimeout(r, 1000));
  }
  document.body.dataset.rendered = "yes";
  const afterPrompt = async () => {
    await runPrompt();
    if (hash.generate !== undefined) { $("n-chars").value = String(int(hash.generate, 200)); await generate(); }
  };
  if (hash.type !== undefined) {
    typeText(hash.type, () => { clearTimeout(promptTimer); afterPrompt(); });
  } else {
    $("prompt").value = hash.prompt !== undefined ? hash.prompt : (live.info.probe || "");
    afterPrompt();
  }
  await pollLog();
  setInterval(pollLog, 1000);
}

main();
