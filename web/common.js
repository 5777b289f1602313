// Helpers both pages use, the inspector page (index.html, script.js) and the live page of
// `glass serve` (live.html, live.js): an element by id, a character as a visible label, a new
// element, the colour of a value. At build time each page inlines this file before its own
// script (inspect/embed.cmake).
"use strict";
const $ = (id) => document.getElementById(id);

// A character as a visible label: space -> ␣, newline -> ⏎, tab -> ⇥, other control characters
// -> their Unicode control picture, characters that draw nothing on their own (combining marks,
// zero-width joiners, variation selectors) -> "U+200D" (as visible_char in
// inspect/text_cells.cpp).
function visible(c) {
  const code = c.codePointAt(0);
  if (c === " ") return "\u2423";
  if (c === "\n") return "\u23ce";
  if (c === "\t") return "\u21e5";
  if (code < 0x20) return String.fromCodePoint(0x2400 + code);
  if (code === 0x7f) return "\u2421";
  const invisible = (code >= 0x300 && code <= 0x36f) || (code >= 0x1ab0 && code <= 0x1aff) ||
      (code >= 0x1dc0 && code <= 0x1dff) || (code >= 0x20d0 && code <= 0x20ff) || (code >= 0xfe20 && code <= 0xfe2f) ||
      code === 0xad || (code >= 0x180b && code <= 0x180f) || (code >= 0x200b && code <= 0x200f) ||
      (code >= 0x202a && code <= 0x202e) || (code >= 0x2060 && code <= 0x2064) || code === 0xfeff ||
      (code >= 0xfe00 && code <= 0xfe0f) || (code >= 0xe0100 && code <= 0xe01ef);
  if (invisible) return "U+" + code.toString(16).toUpperCase().padStart(4, "0");
  return c;
}

// A token's text as a visible label: each character through visible(), so a character model's
// token looks as above and a BPE token keeps its "▁" for a space and "<0xNN>" for a byte
// ("▁de", "⏎", "<0x0A>"; as token_label in inspect/inspect.cpp).
function visibleText(text) {
  return Array.from(text, visible).join("");
}

// A new element `tag` with class `cls` (if any) and text `text` (if given).
function make(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

// Colour of a value: sequential (white -> blue) for [lo, hi] or diverging (blue - white - red).
function colour(v, lo, hi, diverging) {
  if (v === null) return "#d9d9d9";
  if (diverging) {
    const m = Math.max(Math.abs(lo), Math.abs(hi)) || 1;
    const t = Math.max(-1, Math.min(1, v / m));
    const a = [255, 255, 255], b = t < 0 ? [33, 102, 172] : [178, 24, 43];
    const u = Math.abs(t);
    return "rgb(" + a.map((x, i) => Math.round(x + (b[i] - x) * u)).join(",") + ")";
  }
  const t = hi > lo ? Math.max(0, Math.min(1, (v - lo) / (hi - lo))) : 0;
  const a = [255, 255, 255], b = [8, 48, 107];
  return "rgb(" + a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(",") + ")";
}
