// Attention heatmaps on <canvas>: the main (query x key) map, the all-heads mosaic and the
// small per-head maps of the analyses. Rows are queries, columns are keys. Cells keep a
// legible size (a map wider than the screen scrolls sideways under its fixed row labels),
// long inputs thin out their tick labels, and each draw returns a hit-test function so the
// tooltip can name every cell.

import {
  FONT, TITLE_FONT, HIGHLIGHT, TEXT, MUTED, CELL_LINE, TICK, setup, measurer, paintMatrix, GAP_VALUE, BLUES_LUT,
  RDBU_LUT, fit, widest, tickEvery, fontOf, inkOn,
} from "./canvas.js";

const MIN_CELL = 14; // the smallest cell that still fits every label of a short sentence
const GRID_TOP = 4; // px above the grid inside the canvas

/** Cell size for n rows/columns: big for short sentences, small (labels thinned) for long ones. */
export function cellSize(n) {
  return n <= 16 ? 26 : n <= 32 ? 20 : n <= 64 ? 14 : 9;
}

/**
 * Draw one attention map into a HeatFigure (frame.js).
 * spec: {title, xTitle, yTitle, rows: [{label, future, current}], cols: [{label}],
 *        matrix: Float32Array rows x cols (NaN = masked, -Infinity = not generated yet),
 *        tip(r, c) -> [lines], hi (top of the colour scale, default 1), scaleTitle,
 *        lo (bottom of the scale, default 0) and lut (canvas.js, default Blues: RDBU_LUT for signed maps),
 *        maxWidth (css px the figure may take before it scrolls), cell (optional),
 *        font (label size in css px, default 11: the main view passes a projector's size),
 *        maxHeight, minCell, maxCell (the main view: cells fill maxWidth x maxHeight within these),
 *        rowShare (the most of maxWidth the row labels may take, default 0.35),
 *        shortRows (the rows with shorter labels, drawn where the columns would not fit beside the
 *        full ones), followColumn (the column a map wider than its box scrolls into view)}
 * Returns hit(x, y) -> [lines] | null, in css pixels of the canvas; hit.cellAt(x, y) ->
 * {r, c, row, col} | null names the cell there; hit.geometry says where the grid is (for
 * tests and exports): `cell` is a row's height and `cellW` a column's width (the main view's
 * columns may be wider than its rows are high; other maps have square cells).
 */
export function drawHeatmap(fig, spec) {
  const { rows, cols } = spec;
  const px = spec.font || 11, font = fontOf(px);
  const probe = measurer(font);
  const maxWidth = spec.maxWidth || 800;
  // row labels take at most a third of a narrow figure (they are cut with an ellipsis)
  const rowW = Math.min(widest(probe, rows.map((r) => r.label), 21 * px) + 2 * px,
    Math.max(90, Math.round(maxWidth * (spec.rowShare || 0.35))));
  const natural = spec.cell || cellSize(Math.max(rows.length, cols.length));
  const fitting = Math.floor((maxWidth - rowW - 12) / Math.max(1, cols.length));
  // a long source: shorter row labels leave its columns room to stand upright side by side
  if (spec.shortRows && spec.maxHeight && fitting < Math.ceil(1.2 * (spec.minFont || px))) {
    return drawHeatmap(fig, { ...spec, rows: spec.shortRows, shortRows: null });
  }
  let cell = Math.max(Math.min(natural, MIN_CELL), Math.min(natural, fitting)); // shrink to fit, not below MIN_CELL
  let cellW = cell; // a column's width; `cell` is a row's height
  if (spec.maxHeight) {
    // the main view: cells as big as the width and height allow (a short sentence gets big
    // cells, a long one small ones), never below a readable size (then the map scrolls)
    const fitH = Math.floor(spec.maxHeight / Math.max(1, rows.length));
    cell = Math.max(spec.minCell || MIN_CELL, Math.min(spec.maxCell || 64, fitting, fitH));
    // a long translation: the height binds below 1.5x the label size, so the labels get smaller
    // (not below spec.minFont) and the cells stay 1.5x as high as a label, so a row stays legible; a
    // long source: the width binds below 1.2x, and the upright column labels get smaller too
    const smaller = Math.min(cell < 1.5 * px - 1 ? Math.floor((cell + 1) / 1.5) : px,
      fitting < Math.ceil(1.2 * px) ? Math.floor(fitting / 1.2) : px);
    if (spec.minFont && px > spec.minFont && smaller < px) {
      return drawHeatmap(fig, { ...spec, font: Math.max(spec.minFont, smaller), minFont: 0 });
    }
    // where the height binds (a laptop, a projector), columns widen into the width the page
    // gives the map, up to twice as wide as high, so the picture fills its column
    // (narrower than high where the width binds, down to 1.2 labels, their labels upright, or
    // to a label and 2 px where that keeps every column in the box)
    const narrowest = Math.max(px + 2, Math.min(fitting, Math.ceil(1.2 * px)));
    cellW = Math.min(2 * cell, Math.max(fitting, Math.min(cell, narrowest)));
  }
  const colH = widest(probe, cols.map((c) => c.label), 11 * px) + 10;
  const gw = cols.length * cellW, gh = rows.length * cell;
  // the main view's map taller than its room even at its smallest cells: its column labels are
  // pinned under the rows that show, and the rows scroll (the current one brought into view)
  const pinned = !!(spec.pinColumns && spec.maxHeight && gh > spec.maxHeight + 1);
  // room left of the first column for its label, which stands upright across its centre
  const left = Math.max(0, Math.ceil(0.7 * px - cellW / 2)), top = GRID_TOP;
  const width = left + gw + 8, height = GRID_TOP + gh + (pinned ? 4 : colH);
  const ctx = setup(fig.canvas, width, height);
  const hi = spec.hi || 1; // weights use 0..1; rollout maps pass their own maximum
  paintMatrix(ctx, spec.matrix, rows.length, cols.length, left, top, cellW, cell,
    { hi, lo: spec.lo || 0, lut: spec.lut });
  if (cell >= 12) gridLines(ctx, left, top, rows.length, cols.length, cellW, cell);
  const every = tickEvery(cell, px + 1);
  ctx.font = font;
  const colEvery = tickEvery(cellW, px + 1);
  if (!pinned) columnLabels(ctx, cols, colEvery, left, top + gh + 6, cellW, colH);
  // where the part of the grid in view will be centred: a map wider than its box follows a column
  const seen = maxWidth - rowW - 12, followed = left + (spec.followColumn + 0.5) * cellW;
  const middle = spec.followColumn >= 0 && gw > seen ? Math.min(Math.max(followed, seen / 2), gw - seen / 2) : gw / 2;
  markRows(ctx, rows, left, top, gw, cell, middle);

  fig.setCaption(spec.title);
  fig.setRowLabels(rows, every, cell, top, rowW, px);
  if (fig.setColumnLabels) {
    fig.setColumnLabels(pinned ? cols.map((c, j) => ({ text: c.label, x: rowW + left + (j + 0.5) * cellW }))
      .filter((_, j) => j % colEvery === 0) : null, colH, px, spec.maxHeight + colH, rowW + width);
    if (pinned) { // the current row in view, a third of the way down
      const cur = Math.max(0, rows.findIndex((r) => r.current));
      fig.scroll.scrollTop = Math.max(0, top + cur * cell - spec.maxHeight / 3);
    }
    if (spec.followColumn >= 0) followColumn(fig.scroll, rowW, left + (spec.followColumn + 0.5) * cellW);
  }
  fig.setLegend(spec.scaleTitle || "weight", spec.lo || 0, hi);
  fig.axes.textContent = `rows: ${spec.yTitle} · columns: ${spec.xTitle}`;
  fig.drawn = { rows, every, rowW, cell, top, hi, px, scaleTitle: spec.scaleTitle || "weight" };

  // the cell under a point, for the tooltip and for clicks on the map (hit.cellAt)
  const cellAt = (x, y) => {
    const c = Math.floor((x - left) / cellW), r = Math.floor((y - top) / cell);
    if (r < 0 || c < 0 || r >= rows.length || c >= cols.length) return null;
    return { r, c, row: rows[r], col: cols[c] };
  };
  const hit = (x, y) => {
    const at = cellAt(x, y);
    return at && spec.tip(at.r, at.c);
  };
  hit.cellAt = cellAt;
  hit.geometry = { left, top, cell, cellW, rows: rows.length, cols: cols.length, rowW, font: px, pinned };
  return hit;
}

/** A map wider than its box scrolls sideways (under its row labels, `rowW` wide, which stay
 * put) to the column whose centre is `x` css px into the canvas, so that column stands in the
 * middle of the part of the map in view. */
function followColumn(box, rowW, x) {
  const seen = box.clientWidth - rowW;
  if (box.scrollWidth > box.clientWidth + 1 && seen > 0) box.scrollLeft = Math.max(0, x - seen / 2);
}

/** Thin lines between cells in the background's colour (small cells stay solid); columns `cw`
 * wide, rows `ch` high. */
function gridLines(ctx, left, top, R, C, cw, ch) {
  ctx.strokeStyle = CELL_LINE;
  ctx.lineWidth = 1;
  ctx.beginPath();
  for (let r = 1; r < R; r++) {
    ctx.moveTo(left, top + r * ch + 0.5);
    ctx.lineTo(left + C * cw, top + r * ch + 0.5);
  }
  for (let c = 1; c < C; c++) {
    ctx.moveTo(left + c * cw + 0.5, top);
    ctx.lineTo(left + c * cw + 0.5, top + R * ch);
  }
  ctx.stroke();
}

/** Column labels (keys), vertical, below the grid, in the context's font; every `every`-th one.
 * A key not generated yet is greyed, as its row label is. */
function columnLabels(ctx, cols, every, left, y, cell, colH) {
  cols.forEach((c, j) => {
    if (j % every) return;
    ctx.fillStyle = c.future ? MUTED : TEXT;
    ctx.save();
    ctx.translate(left + (j + 0.5) * cell, y);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "right";
    ctx.fillText(fit(ctx, c.label, colH - 10), 0, 0);
    ctx.restore();
  });
}

/** The current step's row framed; "not generated yet" over the rows still to come, centred
 * `middle` px into the grid (its middle, or the middle of the part of a wide map in view). */
function markRows(ctx, rows, left, top, gw, cell, middle) {
  const cur = rows.findIndex((r) => r.current);
  if (cur >= 0) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 2;
    ctx.strokeRect(left + 1, top + cur * cell, gw - 2, cell);
  }
  const future = rows.findIndex((r) => r.future);
  if (future >= 0 && (rows.length - future) * cell >= 14 && ctx.measureText("not generated yet").width <= gw - 4) {
    ctx.fillStyle = MUTED;
    ctx.textAlign = "center";
    const half = ctx.measureText("not generated yet").width / 2 + 2;
    ctx.fillText("not generated yet", left + Math.min(Math.max(middle, half), gw - half),
      top + ((future + rows.length) / 2) * cell);
  }
}

/**
 * Every layer x head of one attention type as small tiles, painted as ONE image (tiles
 * separated by blank cells), so even 3 x 8 tiles of 128 x 128 cost one drawImage. When the
 * heads of a layer do not fit the width at 3 px a cell (a phone), they wrap into bands of
 * half as many, each band with its own head numbers, so every head is on screen.
 * spec: {layers: L, heads: H, rows, cols, matrix(l, h) -> Float32Array, tip(l, h, r, c),
 *        selected: {layer, head} (0-based; head may be "mean"/"max"), marked: Set of
 *        "layer:head" (0-based; heads picked for knock-out), maxWidth}
 * Returns hit(x, y) -> {layer, head, lines} | null, layer and head 0-based; hit.geometry puts
 * tile (l, h) at left + (h % perRow) * stepX, top + (l * bands + floor(h / perRow)) * stepY.
 */
export function drawMosaic(canvas, spec) {
  const { rows, cols, layers: L, heads: H } = spec;
  const Q = rows.length, K = cols.length;
  const narrow = spec.maxWidth < 480, labelW = narrow ? 30 : 58;
  const fitting = (n) => Math.floor((spec.maxWidth - labelW - 16) / Math.max(1, n * (K + 1)));
  let perRow = H;
  while (fitting(perRow) < 3 && perRow > 1) perRow = Math.ceil(perRow / 2);
  const m = Math.max(3, Math.min(10, fitting(perRow))), bands = Math.ceil(H / perRow);
  // above each band of a wrapped layer, blank cells for its head numbers; else one header line on top
  const lead = bands > 1 ? Math.ceil(16 / m) : 0, top = bands > 1 ? 0 : 22, bandRows = lead + Q + 1;
  const gridR = L * bands * bandRows - 1, gridC = perRow * (K + 1) - 1;
  const width = labelW + gridC * m + 12, height = top + gridR * m + 8;
  const ctx = setup(canvas, width, height);
  const all = new Float32Array(gridR * gridC).fill(GAP_VALUE);
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const tile = spec.matrix(l, h);
      const r0 = (l * bands + Math.floor(h / perRow)) * bandRows + lead, c0 = (h % perRow) * (K + 1);
      for (let r = 0; r < Q; r++) all.set(tile.subarray(r * K, (r + 1) * K), (r0 + r) * gridC + c0);
    }
  }
  paintMatrix(ctx, all, gridR, gridC, labelW, top, m, m);
  ctx.font = FONT;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "center";
  const tw = K * m, th = Q * m, stepX = (K + 1) * m, stepY = bandRows * m;
  const y0 = (l, b) => top + (l * bands + b) * stepY + lead * m;
  const short = ctx.measureText("head 88").width + 4 > stepX; // narrow tiles: "h1", "h2", ...
  const headLabel = (h) => (short ? `h${h + 1}` : `head ${h + 1}`);
  for (let h = 0; h < H; h++) {
    const x = labelW + (h % perRow) * stepX + tw / 2;
    if (bands === 1) ctx.fillText(headLabel(h), x, top - 10);
    else for (let l = 0; l < L; l++) ctx.fillText(headLabel(h), x, y0(l, Math.floor(h / perRow)) - 7);
  }
  const cur = rows.findIndex((r) => r.current);
  ctx.textAlign = "left";
  for (let l = 0; l < L; l++) {
    ctx.fillStyle = TEXT;
    // the label is centred on its layer's first band, from the same y0 as the tiles, so they always line up
    ctx.fillText(narrow ? `L${l + 1}` : `layer ${l + 1}`, 4, y0(l, 0) + th / 2);
    for (let h = 0; h < H; h++) {
      markTile(ctx, spec, l, h, labelW + (h % perRow) * stepX, y0(l, Math.floor(h / perRow)), tw, th, cur, m);
    }
  }
  const hit = (x, y) => {
    const g = Math.floor((y - top) / stepY), col = Math.floor((x - labelW) / stepX);
    const l = Math.floor(g / bands), h = (g % bands) * perRow + col;
    if (g < 0 || col < 0 || col >= perRow || l >= L || h >= H) return null;
    const c = Math.floor((x - labelW - col * stepX) / m), r = Math.floor((y - y0(l, g % bands)) / m);
    if (r < 0 || c < 0 || r >= Q || c >= K) return null;
    return { layer: l, head: h, lines: spec.tip(l, h, r, c) };
  };
  // where tiles are, for tests
  hit.geometry = { left: labelW, top: top + lead * m, tileW: tw, tileH: th, stepX, stepY, perRow, bands };
  return hit;
}

/** A tile's frames: the current row, a knock-out selection (dashed), the open head (solid). */
function markTile(ctx, spec, l, h, x0, y0, tw, th, cur, m) {
  if (cur >= 0) {
    ctx.strokeStyle = HIGHLIGHT;
    ctx.lineWidth = 1;
    ctx.strokeRect(x0 + 0.5, y0 + cur * m + 0.5, tw - 1, m);
  }
  if (spec.marked && spec.marked.has(`${l}:${h}`)) {
    ctx.save();
    ctx.strokeStyle = HIGHLIGHT;
    ctx.setLineDash([4, 3]);
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 - 4, y0 - 4, tw + 8, th + 8);
    ctx.restore();
  }
  const sel = spec.selected;
  if (sel && sel.layer === l && (sel.head === h || sel.head === "mean" || sel.head === "max")) {
    ctx.strokeStyle = sel.head === h ? TEXT : TICK;
    ctx.lineWidth = 2;
    ctx.strokeRect(x0 - 2, y0 - 2, tw + 4, th + 4);
  }
}

/** A head map's number as printed in its cell: two decimals, a zero without a sign. */
const cellNumber = (v) => (Math.abs(v) < 0.005 ? "0" : `${v < 0 ? "−" : ""}${Math.abs(v).toFixed(2)}`);

/**
 * A (layers x heads) map of one number per head: head diagnostics and head importance.
 * spec: {title, values: [[number|null]] L x H, lo, hi, signed (diverging colours around 0),
 *        cell, tip(l, h) -> [lines], marked: Set of "layer:head", selected: {layer, head} | null,
 *        numbers (print each value in its cell: the diagnostics' large maps), font (label px)}
 * (layer and head 0-based). null values are drawn grey (undefined for that head).
 * Returns hit(x, y) -> {layer, head, lines} | null, with hit.geometry where the grid is.
 */
export function drawHeadMap(canvas, spec) {
  const L = spec.values.length, H = L ? spec.values[0].length : 0, cell = spec.cell || 18;
  const px = spec.font || 11, left = spec.numbers ? 3 * px + 4 : 24, top = spec.numbers ? 2 * px + 24 : 34;
  const gw = H * cell, gh = L * cell;
  const probe = measurer();
  probe.font = TITLE_FONT;
  const width = Math.max(left + gw + 8, Math.ceil(probe.measureText(spec.title).width) + 8);
  const height = top + gh + 2 * px;
  const ctx = setup(canvas, width, height);
  ctx.font = TITLE_FONT;
  ctx.fillStyle = TEXT;
  ctx.textAlign = "left";
  ctx.fillText(spec.title, 4, 10);
  ctx.font = FONT;
  const { lo, hi } = spec;
  const flat = new Float32Array(L * H);
  spec.values.forEach((row, l) => row.forEach((v, h) => {
    flat[l * H + h] = v === null || v === undefined ? NaN : v;
  }));
  const lut = spec.signed ? RDBU_LUT : BLUES_LUT;
  paintMatrix(ctx, flat, L, H, left, top, cell, cell, { lut, lo, hi });
  ctx.font = fontOf(px);
  if (spec.numbers) {
    ctx.font = fontOf(Math.min(px, Math.floor(cell / 2.7))); // "0.52" fits its cell
    printValues(ctx, flat, L, H, left, top, cell, lut, lo, hi);
    ctx.font = fontOf(px);
  }
  ctx.fillStyle = MUTED;
  ctx.textAlign = "center";
  for (let h = 0; h < H; h++) {
    ctx.fillText(spec.numbers ? `h${h + 1}` : String(h + 1), left + (h + 0.5) * cell, top - px * 0.7);
  }
  ctx.textAlign = "right";
  for (let l = 0; l < L; l++) {
    ctx.fillText(spec.numbers ? `L${l + 1}` : String(l + 1), left - 5, top + (l + 0.5) * cell);
  }
  ctx.textAlign = "left";
  ctx.fillText(fit(ctx, `scale ${+lo.toFixed(2)} … ${+hi.toFixed(2)}`, width - 8), 4, top + gh + px);
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

/** Each value of a head map written in its cell, dark on light colours and white on dark ones. */
function printValues(ctx, flat, L, H, left, top, cell, lut, lo, hi) {
  ctx.textAlign = "center";
  for (let i = 0; i < L * H; i++) {
    const v = flat[i];
    if (v !== v) continue;
    ctx.fillStyle = inkOn(lut[Math.max(0, Math.min(255, Math.round(((v - lo) / (hi - lo)) * 255)))]);
    ctx.fillText(cellNumber(v), left + ((i % H) + 0.5) * cell, top + (Math.floor(i / H) + 0.5) * cell);
  }
}
