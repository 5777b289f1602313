// The attention of one or more heads as lines between tokens, in the manner of BertViz (Vig 2019,
// "A Multiscale Visualization of Attention in the Transformer Model"): the prompt's characters on
// the left are the queries i, the same characters on the right the keys j; a line from i to j is
// as thick (and as opaque) as the weight attn.softmax[i, j]. Several heads are drawn over each
// other in their own colours. Hovering a query shows only its lines.
"use strict";

const LINES_NS = "http://www.w3.org/2000/svg";
// One colour per head (Tableau 10), repeated past ten heads.
const HEAD_COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

function headColour(h) { return HEAD_COLOURS[h % HEAD_COLOURS.length]; }

function linesElement(tag, attributes, text) {
  const e = document.createElementNS(LINES_NS, tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

// An <svg class="lines"> for `labels` (n visible characters) and `heads`: a list of
// {weights: n x n nested list (row i = query i), colour, name}. Lines lighter than `minWeight`
// (default 0.01) are left out: they would only grey the picture. options: {id, rowHeight,
// width, onFocus(i or -1)}.
function attentionLinesSvg(labels, heads, options) {
  const opt = options || {};
  const n = labels.length, rowH = opt.rowHeight || 18, width = opt.width || 380, textW = 58;
  const minWeight = opt.minWeight === undefined ? 0.01 : opt.minWeight;
  const height = n * rowH + 10;
  const svg = linesElement("svg", { class: "lines", width, height, viewBox: "0 0 " + width + " " + height });
  if (opt.id) svg.id = opt.id;
  const y = (i) => 5 + i * rowH + rowH / 2;
  const x0 = textW, x1 = width - textW;
  const group = linesElement("g", {});
  svg.appendChild(group);
  for (const head of heads) {
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const w = head.weights[i][j];
        if (!(w >= minWeight)) continue;
        const line = linesElement("line", {
          class: "attn-line", x1: x0, y1: y(i).toFixed(1), x2: x1, y2: y(j).toFixed(1),
          stroke: head.colour, "stroke-width": (0.6 + 5 * w).toFixed(2),
          "stroke-opacity": Math.min(1, 0.15 + 0.85 * w).toFixed(2),
          "data-i": i, "data-j": j, "data-w": w.toFixed(4),
        });
        line.appendChild(linesElement("title", {}, head.name + ": query " + i + " → key " + j + " = " + w.toFixed(4)));
        group.appendChild(line);
      }
    }
  }
  const focus = (i) => {
    svg.classList.toggle("focused", i >= 0);
    for (const line of group.children) line.classList.toggle("on", Number(line.dataset.i) === i);
    if (opt.onFocus) opt.onFocus(i);
  };
  for (let i = 0; i < n; i++) {
    const q = linesElement("text", { class: "q", x: x0 - 6, y: (y(i) + 4).toFixed(1), "text-anchor": "end", "data-i": i }, i + " " + labels[i]);
    q.addEventListener("mouseenter", () => focus(i));
    q.addEventListener("mouseleave", () => focus(-1));
    svg.appendChild(q);
    svg.appendChild(linesElement("text", { class: "k", x: x1 + 6, y: (y(i) + 4).toFixed(1), "text-anchor": "start" }, labels[i] + " " + i));
  }
  return svg;
}
