// The viewer's "More views" section: the menus of view, layer and head (they change
// the main picture), hide-specials, the encoder rollout beside the rollout view, select mode
// for knock-out, and the all-heads mosaic. The figures are drawn only while it is open.

import { VIEWS, VIEW_KIND, headIndex, layout, attentionMatrix, analysisMatrix, maxOf } from "./attention.js";
import { drawHeatmap, drawMosaic } from "./heatmap.js";
import { el } from "./canvas.js";
import { Figure, HeatFigure } from "./frame.js";
import { term, words } from "./glossary.js";
import { share } from "./numbers.js";
import { OURS, tokenTerm } from "./names.js";
import { section, select } from "./viewer-page.js";

/** The hide switch's words: "hide [SOS] [EOS] [PAD] ...", the special tokens of the model on screen (names.js). */
const hideWords = (n) => words("hide ",
  ...n.markers.flatMap((tok) => [tokenTerm(n, tok) ? [tok, tokenTerm(n, tok)] : tok, " "]),
  "(weights not renormalised)");

const ENC_ROLLOUT_TITLE = "Encoder rollout: Abnar & Zuidema 2020 (0.5·A + 0.5·I, mean of heads, through all layers)";

export class ViewsSection {
  /** `ctx`: {store, tip, hits, width(), cellTip(s, row, col, masked, weight, where), mark(id, s)} of the viewer. */
  constructor(ctx) {
    this.ctx = ctx;
    this.figs = { "enc-rollout": new HeatFigure("enc-rollout", "encoder rollout"),
      mosaic: new Figure("mosaic", "all heads") };
    this.el = section("views", ["More views: encoder, decoder, ", term("rollout"), ", ", term("heads", "head")], [
      el("div", { className: "ax-controls" }, [
        select("view-select", "attention", Object.entries(VIEWS)),
        select("layer-select", term("layer")),
        select("head-select", term("head")),
        el("label", { className: "ax-field" }, [el("input", { id: "hide-specials", type: "checkbox" }),
          el("span", { id: "hide-specials-label" }, hideWords(OURS))]),
      ]),
      el("p", { id: "attn-note", className: "ax-note" }, words("Rows are ", ["queries", "query"], ", columns are ",
        ["keys", "key"], ". The menus change the picture above. Hover (or tap) a cell to name it; "
        + "click a tile of the mosaic to open that head. Keys: ← → step, space plays.")),
      el("p", { id: "rollout-note", className: "ax-note", hidden: true }, words("Layer and head do not apply to ",
        ["rollout"], ": it combines every layer and averages the heads. "
        + "Rows are target steps (each sums to 1 over the source), columns source tokens. "
        + "Hover (or tap) a cell to read it.")),
      this.figs["enc-rollout"].el,
      el("div", { id: "select-mode-row", className: "ax-controls", hidden: true }, [
        el("label", { className: "ax-field" }, [el("input", { id: "select-mode", type: "checkbox" }),
          el("span", {}, words("select mode: a click on a head adds it to (or removes it from) the ", ["knock-out"],
            " selection; shift-click does the same at any time"))]),
      ]),
      this.figs.mosaic.el,
    ]);
    const $ = (id) => this.el.querySelector(`#${id}`);
    this.controls = { view: $("view-select"), layer: $("layer-select"), head: $("head-select"),
      hide: $("hide-specials"), hideLabel: $("hide-specials-label"), selecting: $("select-mode"),
      attnNote: $("attn-note"), rolloutNote: $("rollout-note"),
      selectRow: $("select-mode-row") };
  }

  bind() {
    const { store } = this.ctx, c = this.controls;
    c.view.addEventListener("change", () => store.set({ view: c.view.value }));
    c.layer.addEventListener("change", () => store.set({ layer: Number(c.layer.value) }));
    c.head.addEventListener("change", () => store.set({ head: c.head.value }));
    c.hide.addEventListener("change", () => store.set({ hide: c.hide.checked }));
    c.selecting.addEventListener("change", () => store.set({ selecting: c.selecting.checked }));
    this.figs.mosaic.canvas.addEventListener("click", (ev) => this.mosaicClick(ev));
  }

  /** A new sentence: its heads in the menu. */
  showTrace(tr) {
    this.controls.hideLabel.replaceChildren(...hideWords(tr.names));
    this.controls.head.replaceChildren(...[["mean", "mean over heads"], ["max", "max over heads"]]
      .concat(Array.from({ length: tr.heads }, (_, h) => [String(h + 1), `head ${h + 1}`]))
      .map(([v, t]) => el("option", { value: v, text: t })));
    this.controls.layer.replaceChildren();
  }

  /** The menus show the store's settings (whether the section is open or not). */
  follow(s, tr) {
    const c = this.controls, rollout = s.view === "rollout";
    c.view.value = s.view;
    for (const o of c.view.options) o.disabled = o.value === "rollout" && !tr.rollout;
    c.layer.disabled = c.head.disabled = rollout; // they do not apply (see #rollout-note)
    c.layer.title = c.head.title = rollout ? "Rollout combines every layer and averages the heads" : "";
    c.rolloutNote.hidden = !rollout;
    c.attnNote.hidden = rollout; // it speaks of heads and the mosaic, which rollout does not have
    const L = tr.layers(rollout ? "cross" : s.view);
    if (c.layer.options.length !== L) {
      c.layer.replaceChildren(...Array.from({ length: L },
        (_, l) => el("option", { value: l + 1, text: `layer ${l + 1}` })));
    }
    c.layer.value = String(s.layer);
    c.head.value = s.head;
    c.hide.checked = s.hide;
    c.selecting.checked = s.selecting;
  }

  draw(s, tr, lay) {
    this.drawEncoderRollout(s, tr);
    this.drawMosaic(s, tr, lay);
  }

  /** A click on a mosaic tile opens that head; with shift (or in select mode) it picks it for knock-out. */
  mosaicClick(ev) {
    const r = ev.currentTarget.getBoundingClientRect();
    const hit = this.ctx.hits.get("mosaic"), at = hit && hit(ev.clientX - r.left, ev.clientY - r.top);
    if (!at) return;
    const store = this.ctx.store, s = store.get(), kind = VIEW_KIND[s.view];
    const h = { kind, layer: at.layer + 1, head: at.head + 1 };
    if (s.selectable && kind && (ev.shiftKey || ev.ctrlKey || ev.metaKey || s.selecting)) store.toggleHead(h);
    else store.set({ layer: h.layer, head: String(h.head) });
  }

  /** Encoder rollout (S x S), shown beside the source relevance in the rollout view only. */
  drawEncoderRollout(s, tr) {
    const fig = this.figs["enc-rollout"];
    fig.el.hidden = s.view !== "rollout" || !tr.encoderRollout;
    if (fig.el.hidden) return;
    const { rows: axis } = layout(tr, { view: "encoder", step: s.step, hide: s.hide });
    const S = tr.encoderRollout.shape[1];
    const hit = drawHeatmap(fig, {
      title: ENC_ROLLOUT_TITLE, xTitle: "flows from source token", yTitle: "top-layer source position",
      rows: axis, cols: axis, matrix: analysisMatrix(tr.encoderRollout, axis, axis), hi: maxOf(tr.encoderRollout),
      scaleTitle: "share", maxWidth: this.ctx.width(),
      tip: (r, c) => [`position: ${axis[r].tip}`, `from: ${axis[c].tip}`,
        `share: ${share(tr.encoderRollout.data[axis[r].index * S + axis[c].index])} (row sums to 1)`],
    });
    this.ctx.hits.set("enc-rollout", hit);
    fig.el.dataset.step = String(s.step);
  }

  drawMosaic(s, tr, lay) {
    const fig = this.figs.mosaic, { hits, cellTip, mark } = this.ctx;
    fig.el.hidden = s.view === "rollout"; // rollout has no heads
    this.controls.selectRow.hidden = !s.selectable || fig.el.hidden;
    if (fig.el.hidden) { mark("mosaic", s); return; }
    const kind = VIEW_KIND[s.view];
    const marked = new Set(s.selection.filter((h) => h.kind === kind).map((h) => `${h.layer - 1}:${h.head - 1}`));
    const how = s.selectable ? "click to open, shift-click to select for knock-out" : "click to open";
    const masked = (q, k) => lay.causal && k > q;
    fig.setCaption(`All heads: ${VIEWS[s.view]}${s.view === "encoder" ? "" : ` · step ${s.step}`}`);
    const hit = drawMosaic(fig.canvas, {
      layers: tr.layers(s.view), heads: tr.heads, rows: lay.rows, cols: lay.cols, maxWidth: this.ctx.width(),
      selected: { layer: s.layer - 1, head: headIndex(s.head) }, marked,
      matrix: (l, h) => attentionMatrix(tr, s.view, l, h, lay),
      tip: (l, h, r, c) => cellTip(s, lay.rows[r], lay.cols[c], masked, l, h,
        `layer ${l + 1}, head ${h + 1}${marked.has(`${l}:${h}`) ? " · selected for knock-out" : ""} (${how})`),
    });
    hits.set("mosaic", hit);
    mark("mosaic", s, { grid: JSON.stringify(hit.geometry) });
  }
}
