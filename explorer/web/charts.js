// The other charts, on <canvas>: next-token candidates (top-k bars), the three
// positional-encoding views, the knock-out's probabilities, and the logit-lens table as
// an image (on screen it is an HTML table). Titles are the figures' captions (frame.js).
// Each draw returns hit(x, y) -> [tooltip lines] | null.

import {
  FONT, HIGHLIGHT, TEXT, MUTED, CURRENT_BG, GUIDE, setup, measurer, paintMatrix, RDBU_LUT, diverging, fit, widest,
  tickEvery, colorBar, fontOf, wrap,
} from "./canvas.js";
import { share, signed } from "./numbers.js";

/** Values in [-1, 1] on the diverging map of the theme on screen. */
const signedScale = () => ({ lut: RDBU_LUT, lo: -1, hi: 1 });

/** Axis titles in the muted colour: `x` centred at point xAt, `y` turned upright at yAt. */
function axisTitles(ctx, x, xAt, y, yAt) {
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  ctx.fillText(x, ...xAt);
  ctx.save();
  ctx.translate(...yAt);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(y, 0, 0);
  ctx.restore();
}

/** Horizontal bars of the top-k candidates, labels `font` css px high; the emitted token is orange. */
export function drawTopk(canvas, { cands, emitted, width, font = 11 }) {
  const probe = measurer(fontOf(font));
  const labelW = widest(probe, cands.map((c) => c.token), 14 * font) + 12;
  const numW = Math.ceil(probe.measureText("< 0.001").width) + 8;
  const rowH = Math.round(font * 2), top = 6, barW = Math.max(80, Math.min(360, width - labelW - numW));
  const height = top + cands.length * rowH + Math.round(font * 2.4);
  const ctx = setup(canvas, labelW + barW + numW, height);
  ctx.font = fontOf(font);
  cands.forEach((c, i) => {
    const y = top + i * rowH;
    ctx.fillStyle = c.token === emitted ? HIGHLIGHT : "#4c78a8";
    ctx.fillRect(labelW, y + 3, Math.max(1, c.prob * barW), rowH - 6);
    ctx.fillStyle = TEXT;
    ctx.textAlign = "right";
    ctx.fillText(fit(ctx, c.token, labelW - 8), labelW - 6, y + rowH / 2);
    ctx.textAlign = "left";
    ctx.fillText(share(c.prob), labelW + c.prob * barW + 4, y + rowH / 2);
  });
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  ctx.fillText("probability", labelW + barW / 2, height - font * 0.8);
  return (x, y) => {
    const i = Math.floor((y - top) / rowH);
    if (i < 0 || i >= cands.length) return null;
    const c = cands[i];
    return [`candidate ${i + 1}: ${c.token}`, `p = ${share(c.prob)}`, c.token === emitted ? "emitted at this step" : ""]
      .filter(Boolean);
  };
}

const posLabel = (i, src) => (i < src.length ? `${i}: ${src[i]}` : String(i));

/** The positional-encoding table, positions x dimensions, sized to the panel width. */
export function drawPeHeat(canvas, { pe, n, src, follow, width }) {
  const d = pe.shape[1];
  const probe = measurer();
  const labels = Array.from({ length: n }, (_, i) => posLabel(i, src));
  const rowW = widest(probe, labels, 130) + 10;
  const left = 20 + rowW, top = 8;
  const cw = Math.max(1, Math.floor((width - left - 80) / d));
  const ch = Math.max(3, Math.min(16, Math.floor(320 / n)));
  const gw = d * cw, gh = n * ch;
  const w = left + gw + 72, h = top + gh + 44;
  const ctx = setup(canvas, w, h);
  paintMatrix(ctx, pe.data.subarray(0, n * d), n, d, left, top, cw, ch, signedScale());
  const every = tickEvery(ch);
  ctx.textAlign = "right";
  ctx.fillStyle = TEXT;
  labels.forEach((l, i) => {
    if (i % every === 0 || i === follow) ctx.fillText(fit(ctx, l, rowW - 8), left - 6, top + (i + 0.5) * ch);
  });
  ctx.textAlign = "center";
  for (let k = 0; k < d; k += Math.max(1, Math.ceil(40 / cw / 16)) * 16) {
    ctx.fillText(String(k), left + (k + 0.5) * cw, top + gh + 10);
  }
  axisTitles(ctx, "dimension (even: sin, odd: cos)", [left + gw / 2, h - 10],
    "position: source token", [9, top + gh / 2]);
  if (follow !== null && follow < n) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 2;
    ctx.strokeRect(left - 1, top + follow * ch, gw + 2, ch);
  }
  colorBar(ctx, left + gw + 14, top + 12, Math.max(60, Math.min(gh - 12, 160)), diverging, -1, 1, "value");
  return (x, y) => {
    const c = Math.floor((x - left) / cw), r = Math.floor((y - top) / ch);
    if (r < 0 || c < 0 || r >= n || c >= d) return null;
    return [`position ${labels[r]}`, `dimension ${c} (${c % 2 ? "cos" : "sin"})`,
      `value ${pe.data[r * d + c].toFixed(3)}`];
  };
}

/** PE·PEᵀ / (d_model/2) for the first n positions: each row has squared norm d_model/2,
 * so this is the cosine similarity of positions. Symmetric, so half is computed. */
export function peSimilarity(pe, n) {
  const d = pe.shape[1], sim = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let s = 0;
      for (let k = 0; k < d; k++) s += pe.data[i * d + k] * pe.data[j * d + k];
      sim[i * n + j] = sim[j * n + i] = s / (d / 2);
    }
  }
  return sim;
}

/** The similarity map, a square sized to its panel. */
export function drawPeSim(canvas, { pe, n, src, follow, width, sim = peSimilarity(pe, n) }) {
  const probe = measurer();
  const labels = Array.from({ length: n }, (_, i) => posLabel(i, src));
  const rowW = widest(probe, labels, 110) + 10;
  const left = 20 + rowW, top = 8, right = 72;
  // the square takes the panel's width (less labels and colour bar), capped so it stays on screen
  const side = Math.max(n * 2, Math.min(width - left - right, 460));
  const cell = side / n;
  const gs = cell * n;
  const w = left + gs + right, h = top + gs + 40;
  const ctx = setup(canvas, w, h);
  paintMatrix(ctx, sim, n, n, left, top, cell, cell, signedScale());
  const every = tickEvery(cell);
  ctx.fillStyle = TEXT;
  ctx.textAlign = "right";
  labels.forEach((l, i) => {
    if (i % every === 0) ctx.fillText(fit(ctx, l, rowW - 8), left - 6, top + (i + 0.5) * cell);
  });
  ctx.textAlign = "center";
  for (let i = 0; i < n; i += every) ctx.fillText(String(i), left + (i + 0.5) * cell, top + gs + 10);
  ctx.fillStyle = MUTED;
  ctx.fillText("position", left + gs / 2, h - 10);
  if (follow !== null && follow < n) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 2;
    ctx.strokeRect(left, top + follow * cell, gs, cell);
  }
  colorBar(ctx, left + gs + 14, top + 12, Math.max(60, Math.min(gs - 12, 160)), diverging, -1, 1, "cos");
  return (x, y) => {
    const c = Math.floor((x - left) / cell), r = Math.floor((y - top) / cell);
    if (r < 0 || c < 0 || r >= n || c >= n) return null;
    return [`position ${labels[r]}`, `position ${labels[c]}`, `similarity ${sim[r * n + c].toFixed(3)}`];
  };
}

const CURVE_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d"];

/** A few dimensions as curves over position. The legend is a row of its own above the plot. */
export function drawPeCurves(canvas, { pe, n, src, follow, width }) {
  const d = pe.shape[1];
  const dims = [...new Set([0, 1, 4, 10, d >> 3, d >> 2, d >> 1])].filter((k) => k < d).sort((a, b) => a - b);
  const w = Math.max(320, Math.min(width, 720));
  const legendH = 18 * Math.ceil(dims.length / Math.max(1, Math.floor((w - 60) / 110)));
  const left = 52, top = 8 + legendH + 6, ph = 200, pw = w - left - 16;
  const h = top + ph + 40;
  const ctx = setup(canvas, w, h);
  const perRow = Math.max(1, Math.floor((w - 60) / 110));
  dims.forEach((k, i) => {
    const lx = left + (i % perRow) * 110, ly = 16 + Math.floor(i / perRow) * 18;
    ctx.fillStyle = CURVE_COLOURS[i % CURVE_COLOURS.length];
    ctx.fillRect(lx, ly - 2, 14, 4);
    ctx.fillStyle = TEXT;
    ctx.textAlign = "left";
    ctx.fillText(`dim ${k} (${k % 2 ? "cos" : "sin"})`, lx + 18, ly);
  });
  const X = (p) => left + (n > 1 ? (p / (n - 1)) * pw : pw / 2), Y = (v) => top + ((1.15 - v) / 2.3) * ph;
  ctx.strokeStyle = GUIDE;
  ctx.lineWidth = 1;
  ctx.strokeRect(left + 0.5, top + 0.5, pw, ph);
  ctx.fillStyle = TEXT;
  ctx.textAlign = "right";
  for (const v of [-1, 0, 1]) ctx.fillText(String(v), left - 6, Y(v));
  ctx.textAlign = "center";
  const every = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(pw / 28))));
  for (let p = 0; p < n; p += every) ctx.fillText(String(p), X(p), top + ph + 10);
  if (follow !== null && follow < n) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(X(follow), top); ctx.lineTo(X(follow), top + ph); ctx.stroke();
  }
  dims.forEach((k, i) => {
    ctx.strokeStyle = CURVE_COLOURS[i % CURVE_COLOURS.length];
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (let p = 0; p < n; p++) ctx[p ? "lineTo" : "moveTo"](X(p), Y(pe.data[p * d + k]));
    ctx.stroke();
  });
  axisTitles(ctx, "position", [left + pw / 2, h - 10], "value", [12, top + ph / 2]);
  return (x, y) => {
    if (x < left || x > left + pw || y < top || y > top + ph) return null;
    const p = Math.max(0, Math.min(n - 1, Math.round(((x - left) / pw) * (n - 1))));
    return [`position ${posLabel(p, src)}`, ...dims.map((k) => `dim ${k}: ${pe.data[p * d + k].toFixed(3)}`)];
  };
}

/**
 * Knock-out, step by step: for each step of the original translation, the probability of
 * the original token under the full model (grey) and with the heads silenced (orange),
 * teacher-forced on the original translation. spec: {tokens, before, after, top (the
 * knocked-out model's top-1 per step), width}. Returns hit(x, y) -> [lines] | null.
 */
export function drawProbChange(canvas, { tokens, before, after, top: topTok, width }) {
  const n = tokens.length;
  const probe = measurer();
  const colH = widest(probe, tokens.map((t, i) => `${i + 1}: ${t}`), 120) + 12;
  const left = 40, top = 30, ph = 120;
  const slot = Math.max(22, Math.min(48, Math.floor((Math.max(240, width) - left - 16) / Math.max(1, n))));
  const w = Math.max(left + n * slot + 16, Math.min(width, 240));
  // the caption wraps to the width on screen (a phone's is narrow; the bars may scroll), so none of it is cut
  const captionW = Math.min(w, Math.max(200, width)) - 12;
  const caption = wrap(probe, "step: original token (orange label: the knocked-out model's top-1 differs)", captionW);
  const h = top + ph + colH + 8 + 14 * caption.length;
  const ctx = setup(canvas, w, h);
  ctx.fillStyle = "#9e9e9e";
  ctx.fillRect(left, 10, 12, 8);
  ctx.fillStyle = HIGHLIGHT;
  ctx.fillRect(left + 110, 10, 12, 8);
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText("full model", left + 16, 14);
  ctx.fillText("knocked out", left + 126, 14);
  const Y = (p) => top + (1 - p) * ph;
  ctx.strokeStyle = GUIDE;
  ctx.lineWidth = 1;
  ctx.textAlign = "right";
  for (const v of [0, 0.5, 1]) {
    ctx.beginPath(); ctx.moveTo(left, Y(v) + 0.5); ctx.lineTo(left + n * slot, Y(v) + 0.5); ctx.stroke();
    ctx.fillText(String(v), left - 4, Y(v));
  }
  const bw = Math.max(4, Math.floor((slot - 6) / 2));
  for (let i = 0; i < n; i++) {
    const x = left + i * slot + (slot - 2 * bw) / 2;
    ctx.fillStyle = "#9e9e9e";
    ctx.fillRect(x, Y(before[i]), bw, Math.max(1, before[i] * ph));
    ctx.fillStyle = HIGHLIGHT;
    ctx.fillRect(x + bw, Y(after[i]), bw, Math.max(1, after[i] * ph));
    ctx.save();
    ctx.translate(left + (i + 0.5) * slot, top + ph + 6);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.fillStyle = topTok && topTok[i] !== tokens[i] ? HIGHLIGHT : TEXT; // orange: the knocked-out top-1 differs
    ctx.fillText(fit(ctx, `${i + 1}: ${tokens[i]}`, colH - 8), 0, 0);
    ctx.restore();
  }
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  ctx.textAlign = "left";
  caption.forEach((line, i) => ctx.fillText(line, 6, top + ph + colH + 8 + 14 * i + 6));
  const hit = (x, y) => {
    const i = Math.floor((x - left) / slot);
    if (i < 0 || i >= n || y < top - 4 || y > top + ph + colH) return null;
    const lines = [`step ${i + 1}: original token ${tokens[i]}`, `full model: p = ${share(before[i])}`,
      `heads knocked out: p = ${share(after[i])} (${signed(after[i] - before[i])})`];
    if (topTok && topTok[i] !== tokens[i]) lines.push(`knocked-out model's top-1 here: ${topTok[i]}`);
    return lines;
  };
  hit.captionWidth = Math.ceil(Math.max(...caption.map((line) => probe.measureText(line).width))) + 6; // for tests
  return hit;
}

/** The logit-lens table as an image, for the whole-view PNG: one row per decoder layer,
 * its top-5 tokens and probabilities, the emitted token boxed. lens: [layer][rank] {token, prob}. */
export function drawLensTable(canvas, { lens, emitted, caption }) {
  const probe = measurer();
  const colW = Math.max(70, widest(probe, lens.flat().map((c) => `${c.token} 0.00`), 160) + 14);
  const rowH = 20, labelW = 90, top = 24;
  const w = labelW + lens[0].length * colW + 8, h = top + (lens.length + 1) * rowH + 6;
  const ctx = setup(canvas, w, h);
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.font = `bold ${FONT}`;
  ctx.fillText(fit(ctx, caption, w - 8), 4, 10);
  ctx.font = FONT;
  ctx.fillStyle = MUTED;
  ctx.fillText("layer", 4, top + rowH / 2);
  lens[0].forEach((_, i) => ctx.fillText(`#${i + 1}`, labelW + i * colW + 4, top + rowH / 2));
  lens.forEach((cands, l) => {
    const y = top + (l + 1) * rowH;
    ctx.fillStyle = TEXT;
    ctx.fillText(`${l + 1}${l === lens.length - 1 ? " (output)" : ""}`, 4, y + rowH / 2);
    cands.forEach((c, i) => {
      const x = labelW + i * colW;
      if (c.token === emitted) {
        ctx.fillStyle = CURRENT_BG;
        ctx.fillRect(x, y + 1, colW - 4, rowH - 2);
        ctx.strokeStyle = HIGHLIGHT;
        ctx.strokeRect(x + 0.5, y + 1.5, colW - 5, rowH - 3);
      }
      ctx.fillStyle = TEXT;
      ctx.fillText(fit(ctx, `${c.token} ${share(c.prob)}`, colW - 10), x + 4, y + rowH / 2);
    });
  });
}
