// The loss curve as an SVG line chart: train and validation loss against the optimizer step, and
// when the per-step log is given, the batch loss of every step (raw and smoothed), the learning
// rate, the ln V line (the loss of a uniform guess) and the best validation point.
// The one renderer of the chart, used by the inspector page (index.html) and by the trainer's
// DIR/loss.html (loss.html); no plotting library.
"use strict";

// A "nice" tick spacing near range / targetTicks: 1, 2 or 5 times a power of ten.
function lossNiceStep(range, targetTicks) {
  const raw = range / targetTicks;
  const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
  const r = raw / magnitude;
  return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * magnitude;
}

// The shortest readable label of a tick (no "-0", no float noise like 0.30000000000000004).
function lossTickLabel(v, step) {
  if (Math.abs(v) < step * 1e-9) v = 0;
  const decimals = step >= 1 ? 0 : Math.ceil(-Math.log10(step) - 1e-9);
  return v.toFixed(Math.max(decimals, 0));
}

// Text safe inside SVG/XML.
function lossEscape(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" })[c]);
}

// The exponential moving average of `values` (weight `beta` on the past), debiased as Adam's
// moments and TensorBoard's smoothing are: the first points are not pulled towards 0. Missing
// values (null) stay null and do not move the average.
function lossSmooth(values, beta) {
  const out = [];
  let avg = 0, weight = 0;
  for (const v of values) {
    if (typeof v !== "number" || !Number.isFinite(v)) { out.push(null); continue; }
    avg = beta * avg + (1 - beta) * v;
    weight = beta * weight + (1 - beta);
    out.push(avg / weight);
  }
  return out;
}

// A complete SVG document (720 x 440 px): title, axes with ticks at nice values, grid lines, the
// axis labels "step" and "loss (nats)", one polyline per series (broken at missing values, which
// are null), a marker per point when a series has at most 60 points, and a legend. With no point
// at all the chart says "no data yet".
//   loss: {step: [...], train: [...], val: [...]}, the rows of log.csv (val is null between evals),
//         and optionally
//         steps: {step: [...], loss: [...], lr: [...]}, the rows of steps.csv: drawn as the raw
//                batch loss (thin, pale), its moving average (beta 0.9) and the learning rate
//                (dashed, on a right-hand axis);
//         vocab_size: V, for a dashed line at ln V (the loss of a uniform guess);
//         the best (lowest) validation loss is marked with a diamond and its value.
//   options: {title, id} (id: the <svg> element's id)
function lossChartSvg(loss, options) {
  const W = 720, H = 440, left = 72, top = 52, bottom = 62;
  const perStep = loss.steps && Array.isArray(loss.steps.step) && loss.steps.step.length > 0;
  const right = perStep ? 72 : 24;
  const plotW = W - left - right, plotH = H - top - bottom;
  const finite = (x) => typeof x === "number" && Number.isFinite(x);
  // Each series: its own x values; `markers` draws a dot per point when there are few.
  const series = [];
  if (perStep) {
    const s = loss.steps;
    series.push({ label: "batch loss", steps: s.step, values: s.loss, colour: "#9ecae1", width: 1, markers: false });
    series.push({ label: "batch loss (smoothed)", steps: s.step, values: lossSmooth(s.loss, 0.9), colour: "#08519c", width: 2, markers: false });
  }
  series.push({ label: perStep ? "train (eval)" : "train", steps: loss.step, values: loss.train, colour: "#1f77b4", width: 2, markers: true });
  series.push({ label: "validation", steps: loss.step, values: loss.val, colour: "#d62728", width: 2, markers: true });
  if (perStep) series[2].colour = "#2ca02c";
  const ok = (s, i) => finite(s.steps[i]) && finite(s.values[i]);
  let xLo = Infinity, xHi = -Infinity, yLo = Infinity, yHi = -Infinity;
  for (const s of series) {
    for (let i = 0; i < s.steps.length; i++) {
      if (!ok(s, i)) continue;
      xLo = Math.min(xLo, s.steps[i]); xHi = Math.max(xHi, s.steps[i]);
      yLo = Math.min(yLo, s.values[i]); yHi = Math.max(yHi, s.values[i]);
    }
  }
  const lnV = finite(loss.vocab_size) && loss.vocab_size > 1 ? Math.log(loss.vocab_size) : null;
  if (lnV !== null && xLo <= xHi) { yLo = Math.min(yLo, lnV); yHi = Math.max(yHi, lnV); }
  const id = options.id ? ' id="' + lossEscape(options.id) + '"' : "";
  let svg = '<svg xmlns="http://www.w3.org/2000/svg"' + id + ' width="' + W + '" height="' + H +
            '" viewBox="0 0 ' + W + " " + H + '" font-family="sans-serif" font-size="12">\n' +
            '<rect x="0" y="0" width="' + W + '" height="' + H + '" fill="white"/>\n' +
            '<text x="' + (left + plotW / 2) + '" y="28" text-anchor="middle" font-size="16" font-weight="bold">' +
            lossEscape(options.title || "") + "</text>\n";
  if (!(xLo <= xHi)) {
    return svg + '<text x="' + W / 2 + '" y="' + H / 2 + '" text-anchor="middle" fill="#666">no data yet</text>\n</svg>\n';
  }

  // Axis ranges: x from the first to the last step; y padded by 5 % and widened to whole ticks.
  if (xHi === xLo) { xLo -= 1; xHi += 1; }
  if (yHi === yLo) { yLo -= 0.5; yHi += 0.5; }
  const xStep = lossNiceStep(xHi - xLo, 6);
  const pad = 0.05 * (yHi - yLo);
  const yStep = lossNiceStep(yHi - yLo + 2 * pad, 5);
  const y0 = Math.floor((yLo - pad) / yStep) * yStep, y1 = Math.ceil((yHi + pad) / yStep) * yStep;
  const px = (x) => (left + (x - xLo) / (xHi - xLo) * plotW).toFixed(1);
  const py = (y) => (top + (y1 - y) / (y1 - y0) * plotH).toFixed(1);
  const yTicks = [], xTicks = [];
  for (let y = y0; y <= y1 + yStep * 1e-6; y += yStep) yTicks.push(y);
  for (let x = Math.ceil(xLo / xStep - 1e-9) * xStep; x <= xHi + xStep * 1e-6; x += xStep) xTicks.push(x);

  // Grid, ticks and tick labels.
  svg += '<g stroke="#e0e0e0" stroke-width="1">\n';
  for (const y of yTicks) svg += '<line x1="' + left + '" y1="' + py(y) + '" x2="' + (left + plotW) + '" y2="' + py(y) + '"/>\n';
  for (const x of xTicks) svg += '<line x1="' + px(x) + '" y1="' + top + '" x2="' + px(x) + '" y2="' + (top + plotH) + '"/>\n';
  svg += '</g>\n<g fill="#333">\n';
  for (const y of yTicks) svg += '<text x="' + (left - 8) + '" y="' + (Number(py(y)) + 4).toFixed(1) + '" text-anchor="end">' + lossTickLabel(y, yStep) + "</text>\n";
  for (const x of xTicks) svg += '<text x="' + px(x) + '" y="' + (top + plotH + 18) + '" text-anchor="middle">' + lossTickLabel(x, xStep) + "</text>\n";
  svg += "</g>\n";

  // Axes and their labels.
  svg += '<rect x="' + left + '" y="' + top + '" width="' + plotW + '" height="' + plotH + '" fill="none" stroke="#333"/>\n' +
         '<text x="' + (left + plotW / 2) + '" y="' + (H - 16) + '" text-anchor="middle">step</text>\n' +
         '<text x="18" y="' + (top + plotH / 2) + '" text-anchor="middle" transform="rotate(-90 18 ' + (top + plotH / 2) + ')">loss (nats)</text>\n';

  // ln V: the loss of a uniform guess over the V characters, where a fresh model starts.
  const legend = [];
  if (lnV !== null) {
    svg += '<line x1="' + left + '" y1="' + py(lnV) + '" x2="' + (left + plotW) + '" y2="' + py(lnV) +
           '" stroke="#7f7f7f" stroke-width="1" stroke-dasharray="6 4"><title>ln ' + loss.vocab_size + " = " +
           lnV.toFixed(4) + ": the loss of a uniform guess</title></line>\n" +
           '<text x="' + (left + 6) + '" y="' + (Number(py(lnV)) - 5).toFixed(1) + '" fill="#555">ln V = ln ' +
           loss.vocab_size + " = " + lnV.toFixed(3) + "</text>\n";
    legend.push({ label: "ln V (uniform guess)", colour: "#7f7f7f", dash: "6 4" });
  }

  // The learning rate, on its own axis at the right (0 at the bottom).
  if (perStep) {
    const lr = loss.steps.lr || [];
    let lrHi = 0;
    for (const v of lr) if (finite(v)) lrHi = Math.max(lrHi, v);
    if (lrHi > 0) {
      const lrStep = lossNiceStep(lrHi, 4), lrTop = Math.ceil(lrHi / lrStep - 1e-9) * lrStep;
      const pl = (v) => (top + (1 - v / lrTop) * plotH).toFixed(1);
      const points = [];
      const every = Math.max(1, Math.floor(lr.length / 2000));
      for (let i = 0; i < lr.length; i += every) {
        if (finite(loss.steps.step[i]) && finite(lr[i])) points.push(px(loss.steps.step[i]) + "," + pl(lr[i]));
      }
      svg += '<polyline fill="none" stroke="#ff7f0e" stroke-width="1.5" stroke-dasharray="4 3" points="' + points.join(" ") + '"/>\n';
      svg += '<g fill="#ff7f0e">\n';
      for (let v = 0; v <= lrTop + lrStep * 1e-6; v += lrStep) {
        svg += '<text x="' + (left + plotW + 6) + '" y="' + (Number(pl(v)) + 4).toFixed(1) + '">' +
               lossTickLabel(v, lrStep) + "</text>\n";
      }
      svg += "</g>\n" +
             '<text x="' + (W - 10) + '" y="' + (top + plotH / 2) + '" text-anchor="middle" fill="#ff7f0e" transform="rotate(90 ' +
             (W - 10) + " " + (top + plotH / 2) + ')">learning rate</text>\n';
      legend.push({ label: "learning rate", colour: "#ff7f0e", dash: "4 3" });
    }
  }

  // The lines, broken at missing values, with markers when there are few points. The raw batch
  // loss of a long run is thinned to about 2000 points (the smoothed line uses every step).
  for (const s of series) {
    const segments = [[]];
    let count = 0;
    const every = s.markers ? 1 : Math.max(1, Math.floor(s.steps.length / 2000));
    for (let i = 0; i < s.steps.length; i++) {
      if (!ok(s, i)) {
        if (segments[segments.length - 1].length) segments.push([]);
        continue;
      }
      count++;
      if (i % every === 0 || i === s.steps.length - 1) segments[segments.length - 1].push(px(s.steps[i]) + "," + py(s.values[i]));
    }
    for (const points of segments) {
      if (points.length) svg += '<polyline fill="none" stroke="' + s.colour + '" stroke-width="' + s.width + '" points="' + points.join(" ") + '"/>\n';
    }
    if (s.markers && count <= 60) {
      svg += '<g fill="' + s.colour + '">\n';
      for (let i = 0; i < s.steps.length; i++) {
        if (ok(s, i)) {
          svg += '<circle cx="' + px(s.steps[i]) + '" cy="' + py(s.values[i]) + '" r="3"><title>' + s.label +
                 " loss at step " + s.steps[i] + ": " + s.values[i].toFixed(4) + "</title></circle>\n";
        }
      }
      svg += "</g>\n";
    }
    legend.push({ label: s.label, colour: s.colour, width: s.width });
  }

  // The best validation point: a diamond, with its value.
  const val = series[series.length - 1];
  let best = -1;
  for (let i = 0; i < val.steps.length; i++) if (ok(val, i) && (best < 0 || val.values[i] < val.values[best])) best = i;
  if (best >= 0 && perStep) {
    const bx = Number(px(val.steps[best])), by = Number(py(val.values[best]));
    const nearRight = bx > left + 0.85 * plotW;  // keep the label inside the plot
    svg += '<path d="M ' + bx + " " + (by - 7) + " L " + (bx + 7) + " " + by + " L " + bx + " " + (by + 7) + " L " + (bx - 7) + " " + by +
           ' Z" fill="#d62728" stroke="white"><title>best validation loss ' + val.values[best].toFixed(4) + " at step " +
           val.steps[best] + "</title></path>\n" +
           '<text x="' + (nearRight ? bx - 10 : bx) + '" y="' + (by + 20) + '" text-anchor="' + (nearRight ? "end" : "middle") +
           '" fill="#d62728">best ' + val.values[best].toFixed(3) + "</text>\n";
  }

  // Legend, top right inside the plot.
  const legendW = perStep ? 170 : 130, row = 20, lx = left + plotW - legendW - 10, ly = top + 10;
  svg += '<rect x="' + lx + '" y="' + ly + '" width="' + legendW + '" height="' + (row * legend.length + 8) +
         '" fill="white" fill-opacity="0.9" stroke="#999"/>\n';
  legend.forEach((s, k) => {
    const y = ly + 4 + row * (k + 0.5);
    svg += '<line x1="' + (lx + 8) + '" y1="' + y + '" x2="' + (lx + 32) + '" y2="' + y + '" stroke="' + s.colour + '" stroke-width="' + (s.width || 2) + '"' +
           (s.dash ? ' stroke-dasharray="' + s.dash + '"' : "") + "/>\n" +
           '<text x="' + (lx + 40) + '" y="' + (y + 4) + '">' + s.label + "</text>\n";
  });
  return svg + "</svg>\n";
}
