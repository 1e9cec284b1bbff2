// The main view's map: the attention of one view, layer and head (or the mean or max over
// heads) as a heatmap, rows the queries and columns the keys, or the rollout's source
// relevance. Its cells fill the space the main view gives it (viewer-main.js), so a short
// sentence gets big cells and a long one small ones, in the main view's type size. A click
// on a cell names it in the store (`cell`) for the panels that explain one cell.

import {
  VIEWS, AXES, headName, headIndex, attentionMatrix, analysisMatrix, maxOf, normaliseRows,
} from "./attention.js";
import { drawHeatmap } from "./heatmap.js";
import { HeatFigure } from "./frame.js";
import { share } from "./numbers.js";
import { words } from "./glossary.js";
import { namesOf } from "./names.js";

const ROLLOUT_TITLE = "Source relevance of each step: Chefer et al. 2021, "
  + "attention-only rules (all layers, mean of heads)";

export const label = "Map";

/** The one-line caption of the map, per view, in the names of the model's languages (names.js). */
export const CAPTIONS = {
  cross: (n) => words(`Where each new ${n.tgt} token (row, the `, ["query"],
    `) looks in the ${n.src} sentence (columns, the `, ["keys", "key"], ")."),
  decoder: (n) => words(`Which ${n.tgt} tokens written so far each step (row) looks at; later ones are hidden by the `,
    ["mask"], "."),
  encoder: (n) => words(`How each ${n.src} token (row) looks at every other one while the `, ["encoder"],
    " reads them all at once."),
  rollout: (n) => words(["Rollout", "rollout"], `: how much each ${n.src} token feeds each step, through every `,
    ["layer"], "."),
};

/** The caption while the map draws what moved the output (‖α·f(x)‖, the store's `moved`). */
export const MOVED_CAPTIONS = {
  cross: (n) => words(`How much each ${n.src} token (column) moved each new ${n.tgt} token's output (row): `
    + "its weight times the size of what it carries, ‖α·f(x)‖."),
  decoder: (n) => words(`How much each ${n.tgt} token so far (column) moved each step's output (row), ‖α·f(x)‖; `
    + "later ones are hidden by the ", ["mask"], "."),
  encoder: (n) => words(`How much each ${n.src} token (column) moved every one's output (row) in the `, ["encoder"],
    ", ‖α·f(x)‖."),
};

export class MapPicture {
  /** `ctx`: {store, tip, hits, cellTip, mark} of the viewer. */
  constructor(slot, ctx) {
    this.ctx = ctx;
    this.fig = new HeatFigure("attn-plot", "attention heatmap", { beside: true });
    this.fig.el.setAttribute("data-needs-trace", "");
    slot.append(this.fig.el);
    this.fig.canvas.addEventListener("click", (ev) => this.cellClick(ev));
    ctx.tip.bind(this.fig.canvas, (x, y) => {
      const hit = ctx.hits.get("attn-plot"), lines = hit && hit(x, y);
      return lines && (Array.isArray(lines) ? lines : lines.lines);
    });
  }

  clear() {
    this.fig.clear();
  }

  /** The caption over the map: what its cells are, the weights or, once they have come, what
   * moved the output (`s`: the store, for `moved`). */
  caption(view, s) {
    return (s && this.moved(s).maps && MOVED_CAPTIONS[view] ? MOVED_CAPTIONS : CAPTIONS)[view](namesOf(s && s.trace));
  }

  /** The cell size for `size` ({width, height, legend, font}): room for the legend beside the map. */
  spec(size) {
    // the smallest label a projector still carries: 14 px, or 1.6 % of the window's height
    const minFont = size.narrow ? 0 : Math.max(14, Math.ceil(0.016 * (window.innerHeight || 800)));
    const legend = size.narrow ? 0 : size.legend || 4 * size.font + 20;
    return { maxWidth: Math.max(240, size.width - legend), maxHeight: size.height,
      // cells shrink with the labels down to 1.5 times the smallest label, then the map scrolls
      // under pinned column labels
      font: size.font, minCell: size.narrow ? Math.max(14, size.font + 2) : Math.ceil(1.5 * minFont),
      maxCell: Math.round(4 * size.font), minFont, rowShare: this.rowShare(size), pinColumns: true };
  }

  /** The most of the width the row labels may take: a third of a phone's, more in presentation
   * mode, whose large labels would otherwise be cut (its map scrolls sideways instead). */
  rowShare(size) {
    if (!size.narrow) return 0.4;
    return size.presenting ? 0.5 : 0.3;
  }

  /** Rows as labelled on a phone: the step and what it writes ("12: go"), a number for a step to come. */
  static short(tr, rows) {
    return rows.map((r) => ({ ...r,
      label: r.future ? String(r.index + 1) : `${r.index + 1}: ${tr.tgt[r.index + 1]}` }));
  }

  /** The column a map wider than its box keeps in view (heatmap.js followColumn): for the
   * decoder's self-attention the current step's own, else the key the current row gives most
   * weight; -1 without a current row (the encoder's). */
  static followed(matrix, lay) {
    const cur = lay.rows.findIndex((r) => r.current), C = lay.cols.length;
    if (cur < 0) return -1;
    if (lay.causal) return lay.cols.findIndex((c) => c.index === lay.rows[cur].index);
    let best = 0;
    for (let c = 1; c < C; c++) if (matrix[cur * C + c] > matrix[cur * C + best]) best = c;
    return best;
  }

  draw(s, tr, lay, size) {
    // a phone's narrow label column: steps named by what they write (the tooltip says the rest);
    // a wider screen uses those too where its full labels would leave the columns too narrow
    const short = s.view !== "encoder" ? MapPicture.short(tr, lay.rows) : null;
    const shown = size.narrow && short ? { ...lay, rows: short, short: null } : { ...lay, short };
    if (s.view === "rollout") this.drawRollout(s, tr, shown, size); else this.drawAttention(s, tr, shown, size);
  }

  drawAttention(s, tr, lay, size) {
    const where = `layer ${s.layer}, ${headName(s.head)}`, head = headIndex(s.head);
    const stepPart = s.view === "encoder" ? ` (the same at every step; now step ${s.step})`
      : ` · step ${s.step} of ${tr.steps}`;
    const masked = (q, k) => lay.causal && k > q;
    const moved = this.moved(s);
    const matrix = moved.maps ? normaliseRows(attentionMatrix({ attn: moved.maps }, s.view, s.layer - 1, head, lay),
      lay.rows.length, lay.cols.length) : attentionMatrix(tr, s.view, s.layer - 1, head, lay);
    const hit = drawHeatmap(this.fig, {
      title: `${moved.title}${VIEWS[s.view]} · ${where}${stepPart}`, xTitle: AXES[s.view][1], yTitle: AXES[s.view][0],
      rows: lay.rows, shortRows: lay.short, cols: lay.cols, ...this.spec(size), matrix,
      followColumn: MapPicture.followed(matrix, lay), ...(moved.maps ? { scaleTitle: "share of row" } : {}),
      tip: (r, c) => this.ctx.cellTip(s, lay.rows[r], lay.cols[c], masked, s.layer - 1, head, where),
    });
    this.ctx.hits.set("attn-plot", hit);
    this.ctx.mark("attn-plot", s, { grid: JSON.stringify(hit.geometry), moved: moved.maps ? "1" : "" });
  }

  /** What the map shows under "What moved the output" (the store's `moved`, moved.js): the
   * norms ‖α·f(x)‖ of every head when they have come ({maps}, as the trace's `attn`), and the
   * title's first words, which say so (or that they are on their way). */
  moved(s) {
    if (!s.moved) return { maps: null, title: "" };
    const n = s.norms;
    if (n && n.status === "done") {
      return { maps: n.maps, title: "What moved the output: ‖α·f(x)‖, each row normalised to sum to 1 · " };
    }
    if (n && n.status === "error") return { maps: null, title: `(what moved the output: ${n.error}) ` };
    return { maps: null, title: "(computing what moved the output…) " };
  }

  /** The rollout view: source relevance of each generated step (future rows hidden). */
  drawRollout(s, tr, lay, size) {
    const K = tr.rollout.shape[1], matrix = analysisMatrix(tr.rollout, lay.rows, lay.cols);
    const hit = drawHeatmap(this.fig, {
      title: `${ROLLOUT_TITLE} · step ${s.step} of ${tr.steps}`, xTitle: AXES.rollout[1], yTitle: AXES.rollout[0],
      rows: lay.rows, shortRows: lay.short, cols: lay.cols, ...this.spec(size), matrix,
      followColumn: MapPicture.followed(matrix, lay), hi: maxOf(tr.rollout), scaleTitle: "relevance",
      tip: (r, c) => (lay.rows[r].future ? [`${lay.rows[r].tip} is not generated yet (now at step ${s.step})`]
        : [`${lay.rows[r].tip}`, `source: ${lay.cols[c].tip}`,
          `relevance: ${share(tr.rollout.data[lay.rows[r].index * K + lay.cols[c].index])} (row sums to 1)`,
          "Chefer et al. 2021, attention-only rules"]),
    });
    this.ctx.hits.set("attn-plot", hit);
    this.ctx.mark("attn-plot", s, { grid: JSON.stringify(hit.geometry), moved: "" });
  }

  /** A click (or tap) on an attention cell names it in the store (`cell`: 1-based trace
   * indices, with the view and step it was clicked at), for the panels that explain one
   * cell; rows not generated yet have nothing to explain. */
  cellClick(ev) {
    const store = this.ctx.store, s = store.get(), hit = this.ctx.hits.get("attn-plot");
    if (!s.trace || s.view === "rollout" || !hit || !hit.cellAt) return;
    const r = ev.currentTarget.getBoundingClientRect(), at = hit.cellAt(ev.clientX - r.left, ev.clientY - r.top);
    if (!at || at.row.future) return;
    store.set({ cell: { view: s.view, step: s.step, row: at.row.index + 1, col: at.col.index + 1 } });
  }
}
