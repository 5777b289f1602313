// The next-token panel of the live page (live.html, the "Next token" section): the sampler's
// controls (temperature, top-k, top-p, min-p, repetition penalty), the bars of the most probable
// next tokens after the chosen position, and streamed generation under the same settings. The
// distribution and the text come from the server's sampler (POST /api/next, /api/sample); the page
// computes none of it.
// $, visible, make come from common.js; live, tokenLabels and isBpe from live.js (loaded after
// this file: these functions run once the page has started).
"use strict";

// ---- next token -----------------------------------------------------------------------------

function samplingSettings() {
  return {
    temperature: Number($("temperature").value),
    top_k: Math.max(0, Math.floor(Number($("top-k").value) || 0)),
    top_p: Number($("top-p").value),
    min_p: Number($("min-p").value),
    repeat_penalty: Math.max(0.01, Number($("repeat-penalty").value) || 1),
    repeat_last_n: Math.max(0, Math.floor(Number($("repeat-last-n").value) || 0)),
  };
}

// The sampling settings as the API takes them (POST /api/sample and /api/next): top-k at most
// the vocabulary size, top-p above 0.
function samplingBody(s) {
  return {
    temperature: s.temperature, top_k: Math.min(s.top_k, live.info.config.vocab_size),
    top_p: s.top_p > 0 ? s.top_p : 0.05, min_p: s.min_p, repeat_penalty: s.repeat_penalty,
    repeat_last_n: s.repeat_last_n,
  };
}

// The distribution the character after the chosen position is drawn from under the settings,
// as the server's sampler computes it (POST /api/next: sample/sampler.hpp, the one /api/sample
// draws from): repetition penalty, temperature, top-k, softmax, top-p, min-p; the unknown id
// never.
async function drawNext() {
  const s = samplingSettings();
  $("temperature-value").textContent = s.temperature.toFixed(2) + (s.temperature === 0 ? " (greedy)" : "");
  $("top-p-value").textContent = s.top_p.toFixed(2);
  $("min-p-value").textContent = s.min_p.toFixed(2) + (s.min_p === 0 ? " (off)" : "");
  const R = live.result;
  if (!R) { $("next-bars").textContent = ""; return; }
  const n = R.tokens.length;
  const pos = live.pos >= 0 && live.pos < n ? live.pos : n - 1;
  const seq = ++live.nextSeq;
  let answer;
  try {
    const r = await fetch("api/next", {
      method: "POST", headers: { "Content-Type": "application/json" },
      // The tokens up to the position (a BPE prompt cut there might encode otherwise).
      body: JSON.stringify({ tokens: R.tokens.slice(0, pos + 1), ...samplingBody(s) }),
    });
    answer = await r.json();
    if (seq !== live.nextSeq) return;  // the settings or the position changed meanwhile
    if (!r.ok) throw new Error(answer.error);
  } catch (e) {
    if (seq !== live.nextSeq) return;
    $("next-bars").textContent = "";
    $("next-kept").textContent = "no distribution: " + e.message;
    return;
  }
  drawBars(R, pos, answer.probs);
}

// The 10 most probable next tokens after `pos` as bars (probs: one per vocabulary id).
function drawBars(R, pos, probs) {
  const box = $("next-bars");
  box.textContent = "";
  const labels = tokenLabels(R);
  const order = probs.map((_, id) => id).sort((a, b) => probs[b] - probs[a] || a - b);
  const kept = probs.filter((v) => v > 0).length;
  $("next-title").textContent = "Next token after position " + pos + " (…" + labels.slice(0, pos + 1).join("").slice(-24) + ")";
  $("next-kept").textContent = kept + " of " + (isBpe() ? probs.length : probs.length - 1) + " " + live.info.unit + " can be drawn; the 10 most probable:";
  for (const id of order.slice(0, 10)) {
    if (probs[id] <= 0) break;
    const bar = make("div", "next-bar");
    const label = visibleText(live.info.vocab[id]);
    bar.dataset.char = live.info.vocab[id];
    bar.dataset.p = probs[id].toFixed(4);
    bar.appendChild(make("span", "ch", "'" + label + "'"));
    const track = make("div", "track"), fill = make("div", "fill");
    fill.style.width = (100 * probs[id]).toFixed(1) + "%";
    track.appendChild(fill);
    bar.appendChild(track);
    bar.appendChild(make("span", "p", probs[id].toFixed(3)));
    bar.title = "P(next = '" + label + "') = " + probs[id].toFixed(5) + " (id " + id + ")";
    box.appendChild(bar);
  }
  document.body.dataset.nextShown = String(Number(document.body.dataset.nextShown || 0) + 1);
}

// ---- generation (streamed) ------------------------------------------------------------------

async function generate() {
  const out = $("generated");
  const s = samplingSettings();
  const body = {
    prompt: $("prompt").value, ...samplingBody(s), seed: Math.max(0, Math.floor(Number($("seed").value) || 0)),
    n: Math.max(1, Math.min(live.info.max_sample_tokens, Math.floor(Number($("n-chars").value) || 1))),
  };
  $("generate").disabled = true;
  out.textContent = "";
  out.appendChild(make("b", "", body.prompt));
  const text = document.createTextNode("");
  out.appendChild(text);
  try {
    const r = await fetch("api/sample", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (!r.ok) { const j = await r.json(); text.textContent = " [" + j.error + "]"; return; }
    const reader = r.body.getReader();
    const decoder = new TextDecoder();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text.textContent += decoder.decode(value, { stream: true });
    }
    text.textContent += decoder.decode();
    document.body.dataset.generated = String(Number(document.body.dataset.generated || 0) + 1);
  } catch (e) {
    text.textContent += " [" + e.message + "]";
  } finally {
    $("generate").disabled = false;
  }
}

// The sampler's settings from the page's address (#temperature=0.5&top_k=5&top_p=0.9&min_p=0.1&
// repeat_penalty=1.3), and the panel's controls wired: a change redraws the bars.
function setUpNextToken(hash) {
  if (hash.temperature !== undefined) $("temperature").value = hash.temperature;
  if (hash.top_k !== undefined) $("top-k").value = hash.top_k;
  if (hash.top_p !== undefined) $("top-p").value = hash.top_p;
  if (hash.min_p !== undefined) $("min-p").value = hash.min_p;
  if (hash.repeat_penalty !== undefined) $("repeat-penalty").value = hash.repeat_penalty;
  $("pos-select").addEventListener("change", (e) => { live.pos = Number(e.target.value); drawNext(); });
  for (const id of ["temperature", "top-k", "top-p", "min-p", "repeat-penalty", "repeat-last-n"]) $(id).addEventListener("input", drawNext);
  $("generate").addEventListener("click", generate);
  drawNext();
}
