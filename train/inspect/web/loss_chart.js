// The loss curve as an SVG line chart: train and validation loss against the optimizer step.
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

// A complete SVG document (720 x 440 px): title, axes with ticks at nice values, grid lines, the
// axis labels "step" and "loss (nats)", one polyline per series (broken at missing values, which
// are null), a marker per point when a series has at most 60 points, and a legend. With no point
// at all the chart says "no data yet".
//   loss: {step: [...], train: [...], val: [...]}, the rows of log.csv (val is null between evals)
//   options: {title, id} (id: the <svg> element's id)
function lossChartSvg(loss, options) {
  const W = 720, H = 440, left = 72, right = 24, top = 52, bottom = 62;
  const plotW = W - left - right, plotH = H - top - bottom;
  const series = [
    { label: "train", values: loss.train, colour: "#1f77b4" },
    { label: "validation", values: loss.val, colour: "#d62728" },
  ];
  const steps = loss.step;
  const finite = (x) => typeof x === "number" && Number.isFinite(x);
  const ok = (s, i) => finite(steps[i]) && finite(s.values[i]);
  let xLo = Infinity, xHi = -Infinity, yLo = Infinity, yHi = -Infinity;
  for (const s of series) {
    for (let i = 0; i < steps.length; i++) {
      if (!ok(s, i)) continue;
      xLo = Math.min(xLo, steps[i]); xHi = Math.max(xHi, steps[i]);
      yLo = Math.min(yLo, s.values[i]); yHi = Math.max(yHi, s.values[i]);
    }
  }
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

  // The lines, broken at missing values, with markers when there are few points.
  for (const s of series) {
    const segments = [[]];
    let count = 0;
    for (let i = 0; i < steps.length; i++) {
      if (!ok(s, i)) {
        if (segments[segments.length - 1].length) segments.push([]);
        continue;
      }
      count++;
      segments[segments.length - 1].push(px(steps[i]) + "," + py(s.values[i]));
    }
    for (const points of segments) {
      if (points.length) svg += '<polyline fill="none" stroke="' + s.colour + '" stroke-width="2" points="' + points.join(" ") + '"/>\n';
    }
    if (count <= 60) {
      svg += '<g fill="' + s.colour + '">\n';
      for (let i = 0; i < steps.length; i++) {
        if (ok(s, i)) {
          svg += '<circle cx="' + px(steps[i]) + '" cy="' + py(s.values[i]) + '" r="3"><title>' + s.label +
                 " loss at step " + steps[i] + ": " + s.values[i].toFixed(4) + "</title></circle>\n";
        }
      }
      svg += "</g>\n";
    }
  }

  // Legend, top right inside the plot.
  const legendW = 130, row = 20, lx = left + plotW - legendW - 10, ly = top + 10;
  svg += '<rect x="' + lx + '" y="' + ly + '" width="' + legendW + '" height="' + (row * series.length + 8) +
         '" fill="white" fill-opacity="0.9" stroke="#999"/>\n';
  series.forEach((s, k) => {
    const y = ly + 4 + row * (k + 0.5);
    svg += '<line x1="' + (lx + 8) + '" y1="' + y + '" x2="' + (lx + 32) + '" y2="' + y + '" stroke="' + s.colour + '" stroke-width="2"/>\n' +
           '<text x="' + (lx + 40) + '" y="' + (y + 4) + '">' + s.label + "</text>\n";
  });
  return svg + "</svg>\n";
}
