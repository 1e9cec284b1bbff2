// Drawing helpers shared by every view: crisp canvases on any screen, the colour scales
// (for canvases and for HTML legends), label fitting and wrapping, PNG export, and the
// builders of HTML and SVG elements. Charts are drawn on <canvas> so they are fast, work
// offline and in notebooks, and export to PNG with labels included.

import { currentTheme, readPalette, hexRgb, watchTheme } from "./theme.js";

export const FONT = "11px 'DejaVu Sans', system-ui, sans-serif";
/** The charts' font at `px` css pixels (FONT is 11 px; the main view draws larger). */
export const fontOf = (px) => `${px}px 'DejaVu Sans', system-ui, sans-serif`;
export const TITLE_FONT = "bold 13px 'DejaVu Sans', system-ui, sans-serif";

// The colours of every drawing, from the page's palette (theme.css, read by theme.js). They
// are `let`: usePalette() sets them again when the page's theme has changed, and every drawing
// starts with it (setup), so a module that imports them reads the colours of the theme on
// screen now. Colour maps start from the background: a weight of 0 disappears into the page
// in either theme.
export let THEME = null; // "light" or "dark": the palette below
export let BACKGROUND, TEXT, MUTED, HIGHLIGHT, CURRENT_BG, MASKED, FUTURE, CELL_LINE, AXIS, GUIDE, TICK;
// sequential "Blues" for weights in [0, 1]; diverging red-background-blue for values in [-1, 1]
export let BLUES_LUT, RDBU_LUT;
/** The weight scale as a CSS gradient, left (low) to right (high), for HTML colour legends. */
export let BLUES_CSS;

// the theme the page is in, followed by watching for Gradio's class (theme.js watchTheme), so a
// drawing need not ask the page's styles each time: reading them after a view has changed the
// page would make the browser lay it out again before every drawing
let pageTheme = null;

/** Take the page's palette if its theme has changed since the last drawing (cheap otherwise). */
export function usePalette() {
  if (typeof getComputedStyle !== "function") return; // Node: the data modules' tests draw nothing
  if (pageTheme === null) {
    pageTheme = currentTheme();
    watchTheme((theme) => { pageTheme = theme; });
  }
  if (pageTheme === THEME) return;
  const p = readPalette();
  THEME = p.theme;
  ({ background: BACKGROUND, text: TEXT, muted: MUTED, highlight: HIGHLIGHT, currentBg: CURRENT_BG, masked: MASKED,
    future: FUTURE, cellLine: CELL_LINE, axis: AXIS, guide: GUIDE, tick: TICK } = p);
  BLUES_LUT = lut(p.sequential);
  RDBU_LUT = lut(p.diverging);
  BLUES_CSS = `linear-gradient(to right, ${
    p.sequential.map((c, i) => `${css(c)} ${(100 * i) / (p.sequential.length - 1)}%`).join(", ")})`;
}

/** Size a canvas to css pixels (w, h) at the screen's pixel ratio; returns a 2D context in css px. */
export function setup(canvas, w, h) {
  const dpr = Math.min(window.devicePixelRatio || 1, 2);
  canvas.width = Math.max(1, Math.round(w * dpr));
  canvas.height = Math.max(1, Math.round(h * dpr));
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  usePalette();
  ctx.fillStyle = BACKGROUND;
  ctx.fillRect(0, 0, w, h);
  ctx.font = FONT;
  ctx.textBaseline = "middle";
  return ctx;
}

export const css = (rgb) => `rgb(${rgb[0]},${rgb[1]},${rgb[2]})`;

function lerp(stops, t) {
  t = Math.min(1, Math.max(0, t));
  const x = t * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  return stops[i].map((c, k) => Math.round(c + (stops[i + 1][k] - c) * f));
}

function lut(stops) {
  const out = [];
  for (let i = 0; i < 256; i++) out.push(lerp(stops, i / 255));
  return out;
}

/** RGB triple for a weight in [0, 1]. */
export const blue = (w) => BLUES_LUT[Math.max(0, Math.min(255, Math.round(w * 255)))];
/** RGB triple for a value in [-1, 1] (negative red, positive blue). */
export const diverging = (v) => RDBU_LUT[Math.max(0, Math.min(255, Math.round((v + 1) * 127.5)))];

export { hexRgb };
usePalette(); // for the colours an HTML view takes before any canvas is drawn

/** A channel's linear light (WCAG 2's relative luminance, sRGB). */
const linear = (c) => (c <= 10.0164 ? c / 3294.6 : ((c / 255 + 0.055) / 1.055) ** 2.4);

/** Ink that reads on a cell of colour `rgb` (the same in both themes: the cell, not the page, is
 * behind it): white or black, whichever has the higher WCAG contrast ratio. One of the two always
 * reaches 4.58:1, the AA level for text; a brightness threshold, or a dark grey for black, leaves
 * some mid-tone cells below it. */
export function inkOn([r, g, b]) {
  const lum = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  return 1.05 / (lum + 0.05) >= (lum + 0.05) / 0.05 ? "#fff" : "#000";
}

// Sentinels inside value matrices: NaN = masked cell (MASKED), -Infinity = row not generated
// yet (FUTURE), +Infinity = gap between tiles (the background).
export const FUTURE_VALUE = -Infinity;
export const GAP_VALUE = Infinity;
const scratch = document.createElement("canvas");
const measure = document.createElement("canvas").getContext("2d");

/** A 2D context for measuring label widths without touching a visible canvas (in `font`). */
export function measurer(font = FONT) {
  measure.font = font;
  return measure;
}

/** Paint a rows x cols value matrix (row-major Float32Array) as one image, each value
 * cw x ch css px, colours from a 256-entry LUT over [lo, hi]. One putImageData and one
 * drawImage instead of rows*cols rectangles keeps even 126-token maps fast. */
export function paintMatrix(ctx, m, rows, cols, x, y, cw, ch, { lut = BLUES_LUT, lo = 0, hi = 1 } = {}) {
  if (!rows || !cols) return;
  const img = new ImageData(cols, rows), px = img.data, k = 255 / (hi - lo);
  const masked = hexRgb(MASKED), future = hexRgb(FUTURE), gap = hexRgb(BACKGROUND);
  for (let i = 0, p = 0; i < rows * cols; i++, p += 4) {
    const v = m[i];
    let rgb;
    if (v !== v) rgb = masked; // NaN
    else if (v === FUTURE_VALUE) rgb = future;
    else if (v === GAP_VALUE) rgb = gap;
    else {
      const j = ((v - lo) * k + 0.5) | 0;
      rgb = lut[j < 0 ? 0 : j > 255 ? 255 : j];
    }
    px[p] = rgb[0]; px[p + 1] = rgb[1]; px[p + 2] = rgb[2]; px[p + 3] = 255;
  }
  if (scratch.width !== cols || scratch.height !== rows) { scratch.width = cols; scratch.height = rows; }
  scratch.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(scratch, x, y, cols * cw, rows * ch);
}

/** Cut text to fit maxWidth px, with an ellipsis. */
export function fit(ctx, text, maxWidth) {
  if (ctx.measureText(text).width <= maxWidth) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(text.slice(0, mid) + "…").width <= maxWidth) lo = mid; else hi = mid - 1;
  }
  return text.slice(0, lo) + "…";
}

/** Break text into lines no wider than maxWidth px (a word longer than that gets its own line). */
export function wrap(ctx, text, maxWidth) {
  const lines = [];
  let line = "";
  for (const word of text.split(/\s+/)) {
    const next = line ? `${line} ${word}` : word;
    if (line && ctx.measureText(next).width > maxWidth) { lines.push(line); line = word; } else line = next;
  }
  if (line) lines.push(line);
  return lines;
}

export function widest(ctx, labels, cap) {
  let w = 0;
  for (const l of labels) w = Math.max(w, ctx.measureText(l).width);
  return Math.min(cap, Math.ceil(w));
}

/** Every how many ticks a label fits when ticks are `cell` px apart (long inputs thin out). */
export const tickEvery = (cell, minGap = 12) => Math.max(1, Math.ceil(minGap / cell));

/** A vertical colour bar with its own title above it, so it never covers an axis title. */
export function colorBar(ctx, x, y, h, colour, lo, hi, title) {
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText(title, x, y - 14);
  for (let i = 0; i < h; i++) {
    ctx.fillStyle = css(colour(hi - ((hi - lo) * i) / (h - 1)));
    ctx.fillRect(x, y + i, 12, 1);
  }
  ctx.strokeStyle = AXIS;
  ctx.strokeRect(x + 0.5, y + 0.5, 12, h);
  ctx.fillStyle = TEXT;
  for (const [v, f] of [[hi, 0], [(lo + hi) / 2, 0.5], [lo, 1]]) ctx.fillText(String(+v.toFixed(2)), x + 16, y + f * h);
}

/** Download a canvas as a PNG file. An image is drawn in the colours on screen, so one taken in
 * the dark theme says so in its name ("...-dark.png"): a slide or a paper may want the light one. */
export function downloadPng(canvas, name) {
  const a = document.createElement("a");
  a.href = canvas.toDataURL("image/png");
  a.download = THEME === "dark" ? name.replace(/(\.png)?$/, "-dark.png") : name;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/** Stack several canvases under a few lines of caption text (the first one bold, long
 * ones wrapped) into one image. */
export function composite(lines, canvases) {
  const pad = 12, lineH = 18;
  const parts = canvases.filter((c) => c && c.width > 1);
  const scale = (c) => c.width / (parseFloat(c.style.width) || c.width); // device px per css px
  const w = Math.max(480, ...parts.map((c) => c.width / scale(c))) + 2 * pad;
  const probe = measurer();
  const rows = lines.flatMap((l, i) => {
    probe.font = i === 0 ? TITLE_FONT : FONT;
    return wrap(probe, l, w - 2 * pad).map((text) => ({ text, font: probe.font }));
  });
  const h = pad + rows.length * lineH + parts.reduce((s, c) => s + c.height / scale(c) + pad, 0) + pad;
  const out = document.createElement("canvas");
  const ctx = setup(out, w, h);
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  rows.forEach((r, i) => {
    ctx.font = r.font;
    ctx.fillText(r.text, pad, pad + i * lineH + lineH / 2);
  });
  let y = pad + rows.length * lineH;
  for (const c of parts) {
    ctx.drawImage(c, pad, y, c.width / scale(c), c.height / scale(c));
    y += c.height / scale(c) + pad;
  }
  return out;
}

/** Element builder for HTML: text always goes through textContent, never innerHTML.
 * attrs: "text" (textContent), "className", anything else as an attribute (true: present). */
export function el(tag, attrs = {}, children = []) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "className") e.className = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) e.append(c);
  return e;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** Element builder for SVG (attributes only; text goes in with textContent by the caller). */
export function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

// Button icons as SVG paths (16 x 16), so they never depend on an emoji font being installed.
const ICONS = {
  prev: "M11 2 L4 8 L11 14 Z",
  next: "M5 2 L12 8 L5 14 Z",
  play: "M4 2 L13 8 L4 14 Z",
  pause: "M3 2 H6.5 V14 H3 Z M9.5 2 H13 V14 H9.5 Z",
};

/** An inline icon for a button (decorative: the button carries its own text or label). */
export function icon(name) {
  const e = svg("svg", { viewBox: "0 0 16 16", width: 12, height: 12, "aria-hidden": "true", class: "ax-icon" });
  e.append(svg("path", { d: ICONS[name], fill: "currentColor" }));
  return e;
}
