// Attention heatmaps on <canvas>: the main (query x key) map and the all-heads mosaic.
// Rows are queries, columns are keys. Cells have a fixed size (the map scrolls sideways on
// narrow screens instead of squeezing), long inputs thin out their tick labels, and each
// draw returns a hit-test function so the tooltip can name every cell.

import {
  FONT, TITLE_FONT, HIGHLIGHT, TEXT, MUTED, setup, measurer, paintMatrix, GAP_VALUE, blue, BLUES_LUT, RDBU_LUT,
  fit, widest, tickEvery, colorBar,
} from "./draw.js";

/** Cell size for n rows/columns: big for short sentences, small (labels thinned) for long ones. */
export function cellSize(n) {
  return n <= 16 ? 26 : n <= 32 ? 20 : n <= 64 ? 14 : 9;
}


/**
 * Draw one attention map.
 * spec: {title, xTitle, yTitle, rows: [{label, future, current}], cols: [{label}],
 *        matrix: Float32Array rows x cols (NaN = masked, -Infinity = not generated yet),
 *        tip(r, c) -> [lines], cell, hi (top of the colour scale, default 1), scaleTitle}
 * Returns hit(x, y) -> [lines] | null, in css pixels of the canvas.
 */
export function drawHeatmap(canvas, spec) {
  const { rows, cols, cell } = spec;
  const probe = measurer();
  const rowW = widest(probe, rows.map((r) => r.label), 230) + 22; // + room for the bold current row
  const colH = widest(probe, cols.map((c) => c.label), 120) + 10;
  const left = 20 + rowW, top = 30;
  const gw = cols.length * cell, gh = rows.length * cell;
  probe.font = TITLE_FONT;
  const width = Math.max(left + gw + 78, Math.ceil(probe.measureText(spec.title).width) + 12);
  const height = top + gh + colH + 24;
  const ctx = setup(canvas, width, height);

  ctx.font = TITLE_FONT;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText(fit(ctx, spec.title, width - 10), 4, 12);
  ctx.font = FONT;

  const hi = spec.hi || 1; // weights use 0..1; rollout maps pass their own maximum
  paintMatrix(ctx, spec.matrix, rows.length, cols.length, left, top, cell, cell, { hi });
  if (cell >= 12) { // thin white lines between cells; small cells stay solid
    ctx.strokeStyle = "#fff";
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let r = 1; r < rows.length; r++) { ctx.moveTo(left, top + r * cell + 0.5); ctx.lineTo(left + gw, top + r * cell + 0.5); }
    for (let c = 1; c < cols.length; c++) { ctx.moveTo(left + c * cell + 0.5, top); ctx.lineTo(left + c * cell + 0.5, top + gh); }
    ctx.stroke();
  }

  // row labels (queries), right-aligned; future rows are greyed and never show tokens
  const every = tickEvery(cell);
  ctx.textAlign = "right";
  rows.forEach((r, i) => {
    if (i % every && !r.current) return;
    ctx.fillStyle = r.future ? MUTED : TEXT;
    ctx.font = r.current ? `bold ${FONT}` : FONT;
    ctx.fillText(fit(ctx, r.label, rowW - 8), left - 6, top + (i + 0.5) * cell);
  });
  ctx.font = FONT;
  // column labels (keys), vertical, below the grid
  ctx.fillStyle = TEXT;
  cols.forEach((c, j) => {
    if (j % every) return;
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, top + gh + 6);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.fillText(fit(ctx, c.label, colH - 10), 0, 0);
    ctx.restore();
  });
  // axis titles
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  ctx.fillText(spec.xTitle, left + gw / 2, height - 9);
  ctx.save();
  ctx.translate(9, top + gh / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.fillText(spec.yTitle, 0, 0);
  ctx.restore();

  const cur = rows.findIndex((r) => r.current);
  if (cur >= 0) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 2;
    ctx.strokeRect(left - 1, top + cur * cell, gw + 2, cell);
  }
  const future = rows.findIndex((r) => r.future);
  if (future >= 0 && (rows.length - future) * cell >= 14) {
    ctx.fillStyle = MUTED;
    ctx.textAlign = "center";
    ctx.fillText("not generated yet", left + gw / 2, top + ((future + rows.length) / 2) * cell);
  }
  colorBar(ctx, left + gw + 14, top + 12, Math.min(gh - 12, 160) > 40 ? Math.min(gh - 12, 160) : 60, (v) => blue(v / hi), 0, hi,
    spec.scaleTitle || "weight");

  const hit = (x, y) => {
    const c = Math.floor((x - left) / cell), r = Math.floor((y - top) / cell);
    if (r < 0 || c < 0 || r >= rows.length || c >= cols.length) return null;
    return spec.tip(r, c);
  };
  hit.geometry = { left, top, cell, rows: rows.length, cols: cols.length }; // where the grid is, for tests and exports
  return hit;
}

/**
 * Every layer x head of one attention type as small tiles, painted as ONE image (tiles
 * separated by one blank cell), so even 3 x 8 tiles of 128 x 128 cost one drawImage.
 * spec: {title, layers: L, heads: H, rows, cols, matrix(l, h) -> Float32Array, tip(l, h, r, c),
 *        selected: {layer, head}, marked: Set of "layer:head" (heads picked for knock-out), maxWidth}
 * Returns hit(x, y) -> {layer, head, lines} | null.
 */
export function drawMosaic(canvas, spec) {
  const { rows, cols, layers: L, heads: H } = spec;
  const Q = rows.length, K = cols.length;
  const labelW = 58, top = 44;
  // cells shrink to fit the panel, but never below 3 px (then the mosaic scrolls sideways)
  const m = Math.max(3, Math.min(10, Math.floor((spec.maxWidth - labelW - 16) / Math.max(1, H * (K + 1)))));
  const gridR = L * (Q + 1) - 1, gridC = H * (K + 1) - 1;
  const width = labelW + gridC * m + 12, height = top + gridR * m + 8;
  const ctx = setup(canvas, width, height);
  const all = new Float32Array(gridR * gridC).fill(GAP_VALUE);
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const tile = spec.matrix(l, h), r0 = l * (Q + 1), c0 = h * (K + 1);
      for (let r = 0; r < Q; r++) all.set(tile.subarray(r * K, (r + 1) * K), (r0 + r) * gridC + c0);
    }
  }
  paintMatrix(ctx, all, gridR, gridC, labelW, top, m, m);
  ctx.font = TITLE_FONT;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText(fit(ctx, spec.title, width - 8), 4, 12);
  ctx.font = FONT;
  ctx.textAlign = "center";
  const tw = K * m, th = Q * m, step = (K + 1) * m, band = (Q + 1) * m;
  const short = ctx.measureText("head 88").width + 4 > step; // narrow tiles: "h1", "h2", ...
  for (let h = 0; h < H; h++) ctx.fillText(short ? `h${h + 1}` : `head ${h + 1}`, labelW + h * step + tw / 2, top - 10);
  const cur = rows.findIndex((r) => r.current);
  ctx.textAlign = "left";
  for (let l = 0; l < L; l++) {
    const y0 = top + l * band;
    ctx.fillStyle = TEXT;
    // the label is centred on its own band, from the same y0 as the tiles, so they always line up
    ctx.fillText(`layer ${l + 1}`, 4, y0 + th / 2);
    for (let h = 0; h < H; h++) {
      const x0 = labelW + h * step;
      if (cur >= 0) {
        ctx.strokeStyle = HIGHLIGHT;
        ctx.lineWidth = 1;
        ctx.strokeRect(x0 + 0.5, y0 + cur * m + 0.5, tw - 1, m);
      }
      if (spec.marked && spec.marked.has(`${l}:${h}`)) { // picked for knock-out: a dashed orange frame
        ctx.save();
        ctx.strokeStyle = HIGHLIGHT;
        ctx.setLineDash([4, 3]);
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 4, y0 - 4, tw + 8, th + 8);
        ctx.restore();
      }
      const sel = spec.selected;
      if (sel && sel.layer === l && (sel.head === String(h) || sel.head === "mean" || sel.head === "max")) {
        ctx.strokeStyle = sel.head === String(h) ? TEXT : "#9ab";
        ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 2, y0 - 2, tw + 4, th + 4);
      }
    }
  }
  const hit = (x, y) => {
    const h = Math.floor((x - labelW) / step), l = Math.floor((y - top) / band);
    if (h < 0 || l < 0 || h >= H || l >= L) return null;
    const c = Math.floor((x - labelW - h * step) / m), r = Math.floor((y - top - l * band) / m);
    if (r < 0 || c < 0 || r >= Q || c >= K) return null;
    return { layer: l, head: h, lines: spec.tip(l, h, r, c) };
  };
  hit.geometry = { left: labelW, top, tileW: tw, tileH: th, stepX: step, stepY: band }; // where tiles are, for tests
  return hit;
}

/**
 * A small (layers x heads) map of one number per head: head diagnostics and head importance.
 * spec: {title, values: [[number|null]] L x H, lo, hi, signed (diverging colours around 0),
 *        cell, tip(l, h) -> [lines], marked: Set of "layer:head", selected: {layer, head} | null}
 * null values are drawn grey (undefined for that head). Returns hit(x, y) -> {layer, head, lines} | null.
 */
export function drawHeadMap(canvas, spec) {
  const L = spec.values.length, H = L ? spec.values[0].length : 0, cell = spec.cell || 18;
  const left = 24, top = 34, gw = H * cell, gh = L * cell;
  const probe = measurer();
  probe.font = TITLE_FONT;
  const width = Math.max(left + gw + 8, Math.ceil(probe.measureText(spec.title).width) + 8);
  const height = top + gh + 22;
  const ctx = setup(canvas, width, height);
  ctx.font = TITLE_FONT;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText(spec.title, 4, 10);
  ctx.font = FONT;
  const { lo, hi } = spec;
  const flat = new Float32Array(L * H);
  spec.values.forEach((row, l) => row.forEach((v, h) => { flat[l * H + h] = v === null || v === undefined ? NaN : v; }));
  paintMatrix(ctx, flat, L, H, left, top, cell, cell, { lut: spec.signed ? RDBU_LUT : BLUES_LUT, lo, hi });
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  for (let h = 0; h < H; h++) ctx.fillText(String(h + 1), left + (h + 0.5) * cell, top - 7);
  ctx.textAlign = "right";
  for (let l = 0; l < L; l++) ctx.fillText(String(l + 1), left - 5, top + (l + 0.5) * cell);
  ctx.textAlign = "left";
  ctx.fillText(fit(ctx, `scale ${+lo.toFixed(2)} … ${+hi.toFixed(2)}`, width - 8), 4, top + gh + 11);
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const x = left + h * cell, y = top + l * cell;
      if (spec.marked && spec.marked.has(`${l}:${h}`)) {
        ctx.strokeStyle = HIGHLIGHT;
        ctx.lineWidth = 2;
        ctx.strokeRect(x + 1.5, y + 1.5, cell - 3, cell - 3);
      }
      if (spec.selected && spec.selected.layer === l && spec.selected.head === h) {
        ctx.strokeStyle = TEXT;
        ctx.lineWidth = 2;
        ctx.strokeRect(x - 1, y - 1, cell + 2, cell + 2);
      }
    }
  }
  const hit = (x, y) => {
    const h = Math.floor((x - left) / cell), l = Math.floor((y - top) / cell);
    if (l < 0 || h < 0 || l >= L || h >= H) return null;
    return { layer: l, head: h, lines: spec.tip(l, h) };
  };
  hit.geometry = { left, top, cell, rows: L, cols: H };
  return hit;
}

