// Minimal pairs: the sentence in the viewer (A) beside a second one (B) that differs in a
// word or two, at the store's step, view, layer and head, with what changed marked: the
// tokens of the two translations, the candidates at the step (with the change in
// probability) and the attention, as a difference map (B − A on the rows and columns the
// two sentences share).
//
// The server traces B once, on "Compare" (explorer/panels/pairs.py), in the viewer's own
// payload format; stepping and view changes redraw here with no request. The comparison
// belongs to A: a new sentence in the viewer clears it (store key `pair`). A curated pair is
// one click: the panel puts A in the viewer, then this view compares B. A link keeps B
// (url.js, pair=): on load, once A arrives, B is compared again.
//
// The alignment of the two sentences, their candidates and the difference map are drawn by
// pairs-diff.js. All text goes in as text (el(..., {text}) / textContent).

import { readTrace } from "./payload.js";
import { VIEWS, AXES, layout, headIndex, headName, maxOf } from "./attention.js";
import { drawHeatmap } from "./heatmap.js";
import { HeatFigure } from "./frame.js";
import { el, css, diverging, downloadPng, usePalette } from "./canvas.js";
import { Tooltip } from "./tooltip.js";
import { weight as weightText } from "./numbers.js";
import { readLink, readParam } from "./url.js";
import { align, drawCandidates, drawDifference, viewMatrix } from "./pairs-diff.js";
import { onEnter } from "./keys.js";
import { Frames, watchSize } from "./view-base.js";

/** This view's store key (store.js registerState) and its part of a link (url.js registerLink):
 * `pair=` keeps sentence B, unless comparing it failed. */
export const STATE = {
  // {status: "pending" | "done" | "error", text, trace (B, a payload.js Trace), error}
  sentence: { pair: null },
};
export const LINK = {
  param: "pair", keys: ["pair"], write: (s) => (s.pair && s.pair.status !== "error" ? s.pair.text : null),
};

// the alignment, for the tests that run it under Node.js (tests/test_panel_pairs.py)
export { align, alignSteps, alignView, differenceMap, substitute } from "./pairs-diff.js";

const DRAWN_BY = ["trace", "pair", "step", "view", "layer", "head", "hide", "theme"];
/** The difference map's legend: the diverging scale of the theme on screen, as a CSS gradient. */
function divergingCss() {
  usePalette();
  return `linear-gradient(to right, ${[-1, -0.5, 0, 0.5, 1].map((v) => css(diverging(v))).join(", ")})`;
}
// A link's pair, read as the page loads: this view mounts only when its section opens
// (Gradio builds a closed accordion's content then), and by that time the address may
// already have been rewritten for the sentence the link opened.
let linked = typeof window === "undefined" ? null : readParam("pair") && { a: readLink().text, b: readParam("pair") };

/** The comparison as the store holds it; the test handle's JSON shows it without B's arrays. */
function pairValue(fields) {
  return {
    ...fields,
    toJSON() {
      const tr = this.trace;
      return { status: this.status, text: this.text, error: this.error || null,
        trace: tr ? { srcText: tr.srcText, translation: tr.translation, src: tr.src, tgt: tr.tgt, steps: tr.steps }
          : null };
    },
  };
}

export class Pairs {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.frames = new Frames(() => this.render(this.store.get())); // schedule(): drawn once in the next frame
    this.curated = (server.data && server.data.pairs) || [];
    this.wanted = linked; // {a, b}: compare b once a is in the viewer (a curated click, a link)
    linked = null; // a link is followed once
    this.build(host);
    server.onValue((answer) => this.receive(answer));
    store.subscribe((s, changed) => {
      if (changed.has("trace")) this.newSentence(s);
      if (DRAWN_BY.some((k) => changed.has(k))) this.schedule();
    });
    if (store.get().trace) this.newSentence(store.get()); // the section opened after A arrived
    // a closed section has no width: draw when it opens (and again when the page resizes)
    watchSize(this.root, () => this.schedule());
    this.schedule();
  }

  // --- DOM --------------------------------------------------------------------------------
  build(host) {
    const f = (this.figs = {
      a: new HeatFigure("pair-a-plot", "attention of sentence A"),
      b: new HeatFigure("pair-b-plot", "attention of sentence B"),
      diff: new HeatFigure("pair-diff", "difference of attention, B minus A", { png: false }),
    });
    f.diff.legendColours = divergingCss;
    this.input = el("input", { id: "pair-text", type: "text", className: "pr-input", placeholder: "My sister is tall.",
      "aria-label": "Sentence B, to compare with the sentence in the viewer" });
    this.button = el("button", { id: "pair-btn", type: "button", className: "ax-action primary", text: "Compare",
      disabled: true });
    const side = (x) => el("div", { id: `pair-${x}`, className: "pr-side" }, [
      el("p", { className: "pr-sentence" },
        [el("strong", { text: `${x.toUpperCase()}: ` }), el("span", { id: `pair-${x}-text` })]),
      el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label", text: "Translation" }),
        el("div", { id: `pair-${x}-tgt`, className: "ax-chips" })]),
      el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label", text: "Source tokens" }),
        el("div", { id: `pair-${x}-src`, className: "ax-chips" })]),
      el("p", { id: `pair-${x}-step`, className: "ax-note" }),
      f[x].el,
    ]);
    this.root = el("div", { className: "ax-root pr-root" }, [
      el("p", { className: "ax-note",
        text: "Compare the sentence in the viewer (A) with a second one (B) that differs in a word or two. "
          + "Both are shown at the viewer's step, view, layer and head; "
          + "tokens that only one of them has are marked." }),
      el("div", { className: "pr-curated" }, [
        el("span", { className: "ax-label", text: "Try a pair" }),
        el("div", { id: "pairs-curated", className: "pr-list" }, this.curated.map((p, i) => el("button", {
          type: "button", className: "pr-pick", "data-pair": i, text: `${p.a}  /  ${p.b}`,
          title: "Put the first sentence in the viewer and compare the second" }))),
      ]),
      el("div", { className: "ax-controls" }, [
        el("label", { className: "ax-field pr-field" }, [el("span", { text: "Sentence B" }), this.input]),
        this.button]),
      el("p", { id: "pair-status", className: "ax-note", "aria-live": "polite" }),
      el("div", { id: "pair-hint", className: "ax-hint", hidden: true }, [
        el("span", { className: "ax-label", text: "What to look for" }),
        el("p", { id: "pair-hint-text", className: "ax-hint-text" })]),
      el("div", { id: "pair-shown", className: "pr-shown", hidden: true }, [
        el("div", { className: "pr-sides" }, [side("a"), side("b")]),
        el("div", { className: "pr-cands-box" }, [ // scrolls sideways on a phone
          el("table", { id: "pair-cands", className: "ax-lens-table pr-cands" },
            [el("caption"), el("thead"), el("tbody")])]),
        el("p", { id: "pair-diff-note", className: "ax-note" }),
        f.diff.el,
      ]),
    ]);
    host.replaceChildren(this.root);
    this.tip = new Tooltip("pairs-tooltip", this.root);
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
    this.hits = new Map();
    for (const [k, fig] of Object.entries(f)) {
      if (fig.png) {
        fig.png.addEventListener("click", () => downloadPng(fig.image(), `pair-${k}-step${this.store.get().step}.png`));
      }
      this.tip.bind(fig.canvas, (x, y) => { const hit = this.hits.get(k); return hit && hit(x, y); });
    }
    this.button.addEventListener("click", () => this.compare(this.input.value));
    onEnter(this.input, (text) => this.compare(text));
    this.input.addEventListener("input", () => this.controls(this.store.get()));
    this.el["pairs-curated"].addEventListener("click", (ev) => {
      const b = ev.target.closest && ev.target.closest("button[data-pair]");
      if (b) this.pick(Number(b.dataset.pair));
    });
  }

  // --- asking the server --------------------------------------------------------------------
  /** Trace B beside the viewer's sentence. */
  compare(text) {
    const s = this.store.get();
    if (!s.trace || (s.pair && s.pair.status === "pending")) return;
    this.store.set({ pair: pairValue({ status: "pending", text }) });
    this.server.ask({ sentenceId: s.sentenceId, text });
  }

  /** A curated pair: compare at once if its A is in the viewer, else have the panel put it there first. */
  pick(i) {
    const p = this.curated[i], s = this.store.get();
    if (!p) return;
    this.input.value = p.b;
    if (s.trace && s.trace.srcText === p.a) { this.compare(p.b); return; }
    this.wanted = { a: p.a, b: p.b };
    this.el["pair-status"].textContent = `Translating “${p.a}” in the viewer first…`;
    this.server.open({ pair: i });
  }

  /** The server's answer: {sentenceId, text, payload} or {sentenceId, text, error}. */
  async receive(a) {
    if (!a) return;
    const pending = () => {
      const now = this.store.get().pair;
      return now && now.status === "pending" && now.text === a.text;
    };
    if (!pending()) return; // an answer to an older question
    let value;
    try {
      value = a.error ? pairValue({ status: "error", text: a.text, error: a.error })
        : pairValue({ status: "done", text: a.text, trace: await readTrace(a.payload) });
    } catch {
      value = pairValue({ status: "error", text: a.text, error: "The server's answer could not be read." });
    }
    if (!pending()) return; // asked again while this answer was inflating
    this.store.answer("pair", a.sentenceId, value);
  }

  /** A new sentence in the viewer (the comparison was cleared with it): compare the B a
   * curated click or a link was waiting to compare, or offer the curated B of this A. A B
   * typed for another sentence goes; another version of the same sentence (What if?, a
   * beam hypothesis) keeps it. */
  newSentence(s) {
    const tr = s.trace, want = this.wanted, same = tr && tr.srcText === this.lastText;
    this.wanted = null;
    this.lastText = tr ? tr.srcText : null;
    if (!tr) return;
    const p = this.curated.find((x) => x.a === tr.srcText);
    if (want && want.a === tr.srcText) {
      this.input.value = want.b;
      this.compare(want.b);
    } else if (!same) this.input.value = p ? p.b : "";
    this.controls(this.store.get());
  }

  // --- drawing --------------------------------------------------------------------------------
  schedule() {
    this.frames.schedule();
  }

  controls(s) {
    const pending = s.pair && s.pair.status === "pending";
    this.button.disabled = !s.trace || pending || !this.input.value.trim();
    this.input.disabled = !s.trace;
    this.button.title = s.trace ? "" : "Translate a sentence first: it is A";
  }

  render(s) {
    this.controls(s);
    const p = s.pair, status = this.el["pair-status"], shown = this.el["pair-shown"];
    const done = p && p.status === "done" && s.trace;
    if (!p && !this.wanted) {
      status.textContent = s.trace ? "" : "Translate a sentence first: it is A; then type B and press Compare.";
    } else if (p && p.status === "pending") {
      status.textContent = `Tracing B: “${p.text.length > 80 ? `${p.text.slice(0, 80)}…` : p.text}”…`;
    } else if (p && p.status === "error") {
      status.textContent = `⚠️ ${p.error}`;
    } else if (done) {
      status.textContent = "";
    }
    status.classList.toggle("ax-error", !!(p && p.status === "error"));
    shown.hidden = !done;
    const curated = done && this.curated.find((x) => x.a === s.trace.srcText && x.b === p.text);
    this.el["pair-hint"].hidden = !curated;
    this.el["pair-hint-text"].textContent = curated ? curated.hint : "";
    if (!done) { this.clear(); return; }
    if (!this.root.clientWidth) return; // a closed section: drawn when it opens
    this.draw(s, s.trace, p.trace);
  }

  clear() {
    for (const fig of Object.values(this.figs)) fig.clear();
    this.hits.clear();
    for (const id of ["pair-a-tgt", "pair-b-tgt", "pair-a-src", "pair-b-src"]) this.el[id].replaceChildren();
    for (const part of this.el["pair-cands"].children) part.replaceChildren();
    this.drawnKey = null;
  }

  draw(s, A, B) {
    const view = s.view === "rollout" && !(A.rollout && B.rollout) ? "cross" : s.view;
    const tA = Math.min(s.step, A.steps), tB = Math.min(s.step, B.steps);
    // the tokens change only with the sentences; the rest with every step and setting
    if (this.drawnKey !== B) { this.tokens(A, B); this.drawnKey = B; }
    this.el["pair-a-text"].textContent = A.srcText;
    this.el["pair-b-text"].textContent = B.srcText;
    this.current("a", A, tA);
    this.current("b", B, tB);
    this.el["pair-a-step"].textContent = `Step ${tA} of ${A.steps}.`;
    this.el["pair-b-step"].textContent = s.step > B.steps
      ? `B's translation ended at step ${B.steps}: it shows its last step while A is at step ${s.step}.`
      : s.step === A.steps && B.steps > A.steps
        ? `Step ${tB} of ${B.steps}. B goes on for ${B.steps - A.steps} more step${B.steps - A.steps > 1 ? "s" : ""}; `
          + "the viewer's step stops at A's last one."
        : `Step ${tB} of ${B.steps}.`;
    const width = this.root.clientWidth, half = width >= 760 ? Math.floor((width - 16) / 2) : width;
    const head = headIndex(s.head), hi = view === "rollout" ? Math.max(maxOf(A.rollout), maxOf(B.rollout)) : 1;
    const side = (tr, t) => {
      const lay = layout(tr, { view, step: t, hide: s.hide });
      return { lay, matrix: viewMatrix(tr, view, s.layer - 1, head, lay) };
    };
    const a = side(A, tA), b = side(B, tB);
    const where = view === "rollout" ? "all layers, mean of heads" : `layer ${s.layer}, ${headName(s.head)}`;
    for (const [k, tr, t, x] of [["a", A, tA, a], ["b", B, tB, b]]) {
      const hit = drawHeatmap(this.figs[k], {
        title: `${k.toUpperCase()} · ${VIEWS[view]} · ${where} · step ${t} of ${tr.steps}`,
        xTitle: AXES[view][1], yTitle: AXES[view][0], rows: x.lay.rows, cols: x.lay.cols, matrix: x.matrix, hi,
        maxWidth: half, scaleTitle: view === "rollout" ? "relevance" : "weight",
        tip: (r, c) => this.cellTip(x.lay.rows[r], x.lay.cols[c], x.matrix[r * x.lay.cols.length + c], t,
          () => (view === "rollout" ? 0 : tr.zeroBound(view, s.layer - 1, head, x.lay.rows[r].index))),
      });
      this.hits.set(k, hit);
      this.mark(k, s, view, t);
    }
    drawCandidates(this.el["pair-cands"], A, B, tA, tB);
    this.hits.set("diff", drawDifference(this.figs.diff, this.el["pair-diff-note"], this.root.clientWidth,
      s, view, A, B, a, b, where));
    this.mark("diff", s, view, s.step);
  }

  /** The settings a drawing shows, as data-* attributes tests wait for (as the viewer's). */
  mark(k, s, view, t) {
    Object.assign(this.figs[k].el.dataset,
      { step: s.step, shownStep: t, view, layer: s.layer, head: s.head, hide: s.hide ? "1" : "0" });
  }

  /** `below()`: the largest weight this row shows as 0 (payload.js zeroBound). */
  cellTip(row, col, v, t, below) {
    if (row.future) return [`${row.tip} is not generated yet (now at step ${t})`];
    const lines = [`query: ${row.tip}`, `key: ${col.tip}`];
    lines.push(v !== v ? "masked: a decoder position cannot attend to later ones" : `value: ${weightText(v, below())}`);
    return lines;
  }

  /** Translation and source chips of both sentences, the tokens the other one lacks marked. */
  tokens(A, B) {
    const chips = (box, tokens, only, side) => box.replaceChildren(...tokens.map((tok, i) => {
      const chip = el("span", { className: "chip" });
      if (A.isSpecial(tok)) chip.classList.add("special");
      if (only.has(i)) { chip.classList.add("pr-diff"); chip.dataset.only = side; }
      chip.dataset.index = String(i);
      if (tok.startsWith("▁")) {
        chip.append(el("span", { className: "ws", text: "▁", "aria-hidden": "true" }), tok.slice(1));
      } else chip.textContent = tok;
      chip.title = `token ${i + 1}: ${tok}${only.has(i) ? ` (only in ${side.toUpperCase()})` : ""}`;
      return chip;
    }));
    const unmatched = (pairs, k) => new Set(pairs.filter((p) => p[1 - k] === null).map((p) => p[k]));
    const tgt = align(A.tgt, B.tgt), src = align(A.src, B.src);
    chips(this.el["pair-a-tgt"], A.tgt, unmatched(tgt, 0), "a");
    chips(this.el["pair-b-tgt"], B.tgt, unmatched(tgt, 1), "b");
    chips(this.el["pair-a-src"], A.src, unmatched(src, 0), "a");
    chips(this.el["pair-b-src"], B.src, unmatched(src, 1), "b");
  }

  /** The token each sentence emits at its shown step is the current chip. */
  current(k, tr, t) {
    for (const chip of this.el[`pair-${k}-tgt`].children) {
      chip.classList.toggle("current", Number(chip.dataset.index) === t);
    }
  }
}

export function mount(host, { store, server }) {
  return new Pairs(host, store, server);
}
