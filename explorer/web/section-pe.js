// The viewer's "Positional encoding" section: the sinusoidal table, PE·PEᵀ and a few
// dimensions as curves, with the number of positions shown and the one followed (the store's
// peLen and peFollow). It depends on the sentence only through its length; drawn while open.

import { quote } from "./attention.js";
import { drawPeHeat, drawPeSim, drawPeCurves, peSimilarity } from "./charts.js";
import { el } from "./canvas.js";
import { Figure } from "./frame.js";
import { section } from "./viewer-page.js";

export class PeSection {
  /** `ctx`: {store, hits, width()} of the viewer. */
  constructor(ctx) {
    this.ctx = ctx;
    this.figs = { "pe-heat": new Figure("pe-heat", "positional encoding table"),
      "pe-sim": new Figure("pe-sim", "position similarity"), "pe-curves": new Figure("pe-curves", "encoding curves") };
    this.len = el("input", { id: "pe-len", type: "range", min: 1, max: 16, value: 12 });
    this.pos = el("input", { id: "pe-pos", type: "range", min: 0, max: 11, value: 0 });
    this.text = el("p", { id: "pe-text", className: "ax-note" });
    this.el = section("pe", ["Positional encoding: how word order gets in"], [
      el("div", { className: "ax-controls" }, [
        el("label", { className: "ax-field" }, [el("span", { text: "positions shown" }), this.len]),
        el("label", { className: "ax-field" }, [el("span", { text: "position to follow" }), this.pos]),
      ]),
      this.text,
      this.figs["pe-heat"].el,
      el("div", { className: "ax-perow" }, [this.figs["pe-sim"].el, this.figs["pe-curves"].el]),
    ]);
  }

  bind() {
    const store = this.ctx.store;
    this.len.addEventListener("input", () => store.set({ peLen: Number(this.len.value),
      peFollow: Math.min(store.get().peFollow, Number(this.len.value) - 1) }));
    this.pos.addEventListener("input", () => store.set({ peFollow: Number(this.pos.value) }));
  }

  showTrace(tr) {
    this.len.max = String(tr.pe.shape[0]);
  }

  clear() {
    this.text.textContent = "";
  }

  draw(s, tr) {
    const width = this.ctx.width();
    const n = Math.min(Math.max(1, s.peLen), tr.pe.shape[0]), follow = Math.min(Math.max(0, s.peFollow), n - 1);
    this.len.value = String(n);
    this.pos.max = String(n - 1);
    this.pos.value = String(follow);
    this.text.textContent = follow < tr.src.length
      ? `Position ${follow} holds source token ${quote(tr.src[follow])}. Positions count from 0, as in the formula.`
      : `Position ${follow} is past the end of this sentence (${tr.src.length} source tokens).`;
    if (!this.simCache || this.simCache.trace !== tr || this.simCache.n !== n) {
      this.simCache = { trace: tr, n, sim: peSimilarity(tr.pe, n) }; // only when the length changes
    }
    const args = { pe: tr.pe, n, src: tr.src, follow, sim: this.simCache.sim };
    const half = width >= 900 ? Math.floor(width / 2) - 12 : width;
    const d = tr.pe.shape[1];
    for (const [id, fn, w, title] of [
      ["pe-heat", drawPeHeat, width, `Positional encoding: the model's buffer, ${n} positions × ${d} dimensions`],
      ["pe-sim", drawPeSim, half, "PE·PEᵀ / (d_model/2): how positions relate"],
      ["pe-curves", drawPeCurves, half, "Dimensions of the encoding as curves over position"]]) {
      this.figs[id].setCaption(title);
      this.ctx.hits.set(id, fn(this.figs[id].canvas, { ...args, width: w }));
      this.figs[id].el.dataset.step = String(s.step);
    }
  }
}
