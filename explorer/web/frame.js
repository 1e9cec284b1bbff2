// The frame every chart is drawn in: a caption (HTML, so a long title wraps instead of
// being cut), a scrolling box with the canvas, a PNG button, and an image of the whole
// figure for export.
//
// A heatmap figure adds two things a phone needs: its row labels are HTML in a column that
// stays put (position: sticky) while the map scrolls sideways under it, and its colour
// legend sits outside the scrolling box, so it is always on screen. Exported images draw
// the labels and the legend back in, so a PNG is complete on its own.
//
// Each figure holds exactly one <canvas>: tests and benchmarks find a chart as "#id canvas".

import { el, setup, composite, colorBar, TEXT, MUTED, BLUES_CSS, blue, fit, fontOf } from "./canvas.js";

export class Figure {
  /** `label` names the chart for screen readers and the PNG button. */
  constructor(id, label, { png = true, className = "" } = {}) {
    this.label = label;
    this.caption = el("figcaption", { className: "ax-title" });
    this.canvas = el("canvas", { role: "img", "aria-label": label });
    this.stage = el("div", { className: "ax-stage" }, [this.canvas]);
    this.scroll = el("div", { className: "ax-scroll" }, [this.stage]);
    this.png = png
      ? el("button", { type: "button", className: "ax-png", text: "PNG", title: `Download ${label} as PNG` }) : null;
    this.el = el("figure", { id, className: `ax-fig ${className}`.trim() }, [
      el("div", { className: "ax-fighead" }, [this.caption, ...(this.png ? [this.png] : [])]),
      this.scroll,
    ]);
  }

  setCaption(text) {
    this.caption.textContent = text;
  }

  /** Forget the last drawing: an empty canvas, no caption, no data-* settings. */
  clear() {
    this.canvas.width = this.canvas.height = 0;
    this.canvas.style.width = this.canvas.style.height = "0px";
    this.caption.textContent = "";
    for (const k of Object.keys(this.el.dataset)) delete this.el.dataset[k];
  }

  /** The figure as one canvas: its caption above the chart. */
  image(extra = []) {
    return composite([this.caption.textContent, ...extra], [this.canvas]);
  }
}

/** Rows that get a label: every `every`-th, and the current one, whose neighbours give way
 * so that no two labels are closer than `every` rows (long maps never overlap labels). */
export function labelledRows(rows, every) {
  const cur = rows.findIndex((r) => r.current);
  return rows.map((_, i) => i).filter((i) => i === cur || (i % every === 0 && (cur < 0 || Math.abs(i - cur) >= every)));
}

export class HeatFigure extends Figure {
  /** `beside`: the colour legend stands upright beside the map (the main view), not under it
   * (it goes under it again on a narrow screen, viewer.css). */
  constructor(id, label, { legend = true, beside = false, ...options } = {}) {
    super(id, label, { ...options, className: beside ? "ax-heat ax-beside" : "ax-heat" });
    this.rows = el("div", { className: "ax-rows", "aria-hidden": "true" });
    this.stage.prepend(this.rows);
    // the column labels as HTML, pinned under the visible rows, when a map is taller than its
    // room (setColumnLabels): the map then scrolls up and down under its labels
    this.cols = el("div", { className: "ax-cols", "aria-hidden": "true", hidden: true });
    this.scroll.append(this.cols);
    this.axes = el("span", { className: "ax-axes" });
    this.legendTitle = el("span", { className: "ax-legend-title" });
    this.legendLo = el("span", { className: "ax-legend-lo" });
    this.legendHi = el("span", { className: "ax-legend-hi" });
    const bar = el("span", { className: "ax-legend-bar" });
    this.legendBar = bar; // coloured at each drawing (setLegend), in the theme on screen then
    this.legendColours = () => BLUES_CSS; // the map's scale as a CSS gradient (a diverging map sets its own)
    this.legend = el("span", { className: "ax-legend", hidden: !legend, "aria-hidden": "true" },
      [this.legendTitle, this.legendLo, bar, this.legendHi]);
    if (beside) {
      const body = el("div", { className: "ax-heatbody" });
      this.el.replaceChild(body, this.scroll);
      body.append(this.scroll, this.legend);
      this.el.append(el("div", { className: "ax-figfoot" }, [this.axes]));
    } else this.el.append(el("div", { className: "ax-figfoot" }, [this.axes, this.legend]));
    this.drawn = null; // what the last drawing put where, for export: {rows, rowW, cell, top, hi, scaleTitle}
  }

  clear() {
    super.clear();
    this.rows.replaceChildren();
    this.axes.textContent = "";
    this.drawn = null;
  }

  /** Row labels as HTML, `px` css px high, beside the canvas grid that starts `top` px down,
   * `cell` px per row. */
  setRowLabels(rows, every, cell, top, width, px = 11) {
    this.rows.style.width = `${width}px`;
    this.rows.style.fontSize = `${px}px`;
    this.rows.replaceChildren(...labelledRows(rows, every).map((i) => {
      const r = rows[i];
      const span = Math.max(cell, px + 1);
      const label = el("div", { className: `ax-rowlabel${r.current ? " current" : ""}${r.future ? " future" : ""}`,
        text: r.label });
      Object.assign(label.style, { top: `${top + (i + 0.5) * cell - span / 2}px`, height: `${span}px`,
        lineHeight: `${span}px` });
      return label;
    }));
  }

  /** Pin the column labels (`labels`: [{text, x}] with x the column's centre in css px of the
   * stage) in a strip `height` px high and `width` wide under the scrolling rows, the box `room` px high, or
   * (`labels` null) give the labels back to the canvas and the box its natural height. */
  setColumnLabels(labels, height = 0, px = 11, room = 0, width = 0) {
    this.cols.hidden = !labels;
    this.scroll.classList.toggle("ax-pinned", !!labels);
    this.scroll.style.maxHeight = labels ? `${room}px` : "";
    if (!labels) { this.cols.replaceChildren(); return; }
    Object.assign(this.cols.style, { height: `${height}px`, width: `${width}px`, fontSize: `${px}px` });
    this.cols.replaceChildren(...labels.map(({ text, x }) => {
      const label = el("span", { className: "ax-collabel", text });
      Object.assign(label.style, { left: `${x}px`, width: `${height - 6}px` });
      return label;
    }));
  }

  setLegend(title, lo, hi) {
    this.legendBar.style.background = this.legendColours();
    this.legendTitle.textContent = title;
    this.legendLo.textContent = String(+lo.toFixed(2));
    this.legendHi.textContent = String(+hi.toFixed(2));
  }

  /** The figure as one canvas: caption, row labels, the grid, the axes and a colour bar. */
  image() {
    const d = this.drawn;
    if (!d) return super.image();
    const grid = this.canvas, scale = grid.width / (parseFloat(grid.style.width) || grid.width);
    const gw = grid.width / scale, gh = grid.height / scale;
    const out = document.createElement("canvas");
    const ctx = setup(out, d.rowW + gw + 80, Math.max(gh, 200));
    ctx.textAlign = "right";
    for (const i of labelledRows(d.rows, d.every)) {
      const r = d.rows[i];
      ctx.fillStyle = r.future ? MUTED : TEXT;
      ctx.font = r.current ? `bold ${fontOf(d.px)}` : fontOf(d.px);
      ctx.fillText(fit(ctx, r.label, d.rowW - 8), d.rowW - 6, d.top + (i + 0.5) * d.cell);
    }
    ctx.drawImage(grid, d.rowW, 0, gw, gh);
    colorBar(ctx, d.rowW + gw + 14, d.top + 20, Math.max(60, Math.min(gh - 40, 160)), (v) => blue(v / d.hi),
      0, d.hi, d.scaleTitle);
    return composite([this.caption.textContent, this.axes.textContent], [out]);
  }
}
