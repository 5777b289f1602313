// The interpretability lab of the live page (live.html): ask the model *why*.
//   - the logit lens (nostalgebraist 2020): the residual stream after each block read through the
//     final RMSNorm and the output matrix, as if that block were the last (POST /api/lens);
//   - head ablation: click heads to knock them out and compare the next-token distribution with
//     and without them (POST /api/ablate, zero or mean ablation);
//   - the head scores recorded at each save (GET /api/interp, the saves' interp.json) drawn over
//     the steps under the validation loss, to see when a head forms.
// The numbers all come from the server (interp/ on the reference path), as lab reports: the JSON
// `glass inspect --json` writes too. The views are drawn by lab_views.js (the one renderer, also
// of the page `glass inspect --html` writes); this file asks the server and wires the controls.
// It listens to the events live.js sends: "glass:prompt" (a new answer of /api/inspect for the
// prompt typed), "glass:info" (the model is known), "glass:save" (a new save is served) and
// "glass:log" (the training log was read again).
// $, make, colour come from common.js, headColour from lines.js, live, getJson and readHash from
// live.js, the views from lab_views.js (loaded before this file).
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

// The grid of lab_views.js: a row per residual-stream point, a column per position.
function drawLens() {
  if (lab.lens) drawLensTable($("lens-grid"), lab.lens);
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

// The next-token bars of lab_views.js: normal (blue) above ablated (orange).
function drawAblation() {
  const A = lab.ablation;
  if (!A) return;
  drawAblationBars($("ablation-bars"), A);
  const summary = ablationSummary(A);
  $("ablation-title").textContent = summary.title + (A.ablation.heads.length ? "" : " (click heads above)");
  $("ablation-kl").textContent = summary.kl;
}

// ---- head scores over the saves -------------------------------------------------------------

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
  drawScoreCharts(box, recorded, loss);  // lab_views.js
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
