// The SAE feature browser (features.html): asks /api/features for the SAE, then
// /api/features/latent?latent=N and /api/features/prompt?prompt=T, and draws their JSON.
"use strict";

async function getJson(path) {
  const res = await fetch(path);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function row(table, cells) {
  const tr = make("tr");
  for (const c of cells) {
    const td = make("td");
    if (c instanceof Node) td.appendChild(c); else td.textContent = c;
    tr.appendChild(td);
  }
  table.appendChild(tr);
}

function bar(value, most) {
  const b = make("span", "bar");
  b.style.width = (most > 0 ? Math.round(200 * value / most) : 0) + "px";
  return b;
}

function latentLink(n, activation) {
  const a = make("span", "latent-link", n + (activation === undefined ? "" : " (" + activation.toFixed(2) + ")"));
  a.onclick = () => showLatent(n);
  return a;
}

async function showLatent(n) {
  $("latent").value = n;
  location.hash = "latent=" + n;
  $("latent-error").textContent = "";
  for (const id of ["contexts", "histogram", "effects"]) $(id).textContent = "";
  let j;
  try {
    j = await getJson("/api/features/latent?latent=" + n);
  } catch (e) {
    $("latent-error").textContent = e.message;
    $("summary").textContent = "";
    return;
  }
  $("summary").textContent = `latent ${j.latent} of ${j.n_latents} at ${j.point}: fires on ${j.fired} of ` +
      `${j.tokens} tokens (${(100 * j.density).toFixed(2)} %), max ${j.max_activation.toFixed(3)}, ` +
      `mean ${j.mean_activation.toFixed(3)} when it fires`;
  for (const c of j.contexts) {
    const ctx = make("span", "ctx");
    ctx.appendChild(document.createTextNode(visibleText(c.before)));
    ctx.appendChild(make("mark", "", visibleText(c.token)));
    ctx.appendChild(document.createTextNode(visibleText(c.after)));
    row($("contexts"), [c.activation.toFixed(3), ctx]);
  }
  if (!j.contexts.length) row($("contexts"), ["", "it never fires on this text"]);
  const bins = j.histogram.bins, max = j.histogram.max, most = Math.max(...bins);
  bins.forEach((count, b) => {
    if (most > 0)
      row($("histogram"), [`${(max * b / bins.length).toFixed(3)} – ${(max * (b + 1) / bins.length).toFixed(3)}`,
                           String(count), bar(count, most)]);
  });
  row($("effects"), ["promotes", j.promoted.map((t) => `${visibleText(t.token)} ${t.effect >= 0 ? "+" : ""}${t.effect.toFixed(3)}`).join("   ")]);
  row($("effects"), ["suppresses", j.suppressed.map((t) => `${visibleText(t.token)} ${t.effect.toFixed(3)}`).join("   ")]);
}

let promptTimer = null;
async function showPrompt() {
  const text = $("prompt").value;
  $("prompt-error").textContent = "";
  $("positions").textContent = "";
  if (!text) return;
  try {
    const j = await getJson("/api/features/prompt?top=5&prompt=" + encodeURIComponent(text));
    j.positions.forEach((p, t) => {
      const cell = make("span");
      for (const l of p.latents) cell.appendChild(latentLink(l.latent, l.activation));
      if (!p.latents.length) cell.textContent = "(none)";
      row($("positions"), [String(t), visibleText(p.token), cell]);
    });
  } catch (e) {
    $("prompt-error").textContent = e.message;
  }
}

async function start() {
  try {
    const j = await getJson("/api/features");
    $("meta").textContent = `${j.sae}: ${j.n_latents} latents, k ${j.k}, at ${j.point}; contexts from ${j.text}`;
    $("latent").max = j.n_latents - 1;
    const order = j.fired.map((c, i) => [c, i]).sort((a, b) => b[0] - a[0]).slice(0, 10);
    const most = $("most");
    most.appendChild(document.createTextNode("most frequent: "));
    for (const [, i] of order) most.appendChild(latentLink(i));
    const m = /latent=(\d+)/.exec(location.hash);
    showLatent(m ? Number(m[1]) : order.length ? order[0][1] : 0);
  } catch (e) {
    $("meta").textContent = e.message;
  }
}

$("show").onclick = () => showLatent(Number($("latent").value));
$("prompt").oninput = () => { clearTimeout(promptTimer); promptTimer = setTimeout(showPrompt, 150); };
start();
