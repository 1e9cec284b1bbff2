// "Why did it say that?" (explorer/panels/analysis.py): head diagnostics maps, the
// knock-out selection, and the knock-out and head-importance results.
//
// The diagnostics show one measure at a time (a menu picks it), large, one layers × heads map
// per kind of attention with each head's value written in its cell, for this sentence or for
// the whole test set.
//
// The server computes, the browser draws: the sentence's head diagnostics arrive in the
// viewer's payload, the test-set diagnostics once with the page (this view's data), and a
// knock-out or head importance comes back from one server call each. The selection lives
// in the store, shared with the viewer's mosaic. Results belong to their sentence: a new
// one clears them. All text goes in with textContent.

import { drawHeadMap } from "./heatmap.js";
import { drawProbChange } from "./charts.js";
import { headLabel, KIND_VIEW, headIndex } from "./attention.js";
import { el } from "./canvas.js";
import { Figure } from "./frame.js";
import { Tooltip } from "./tooltip.js";
import { words } from "./glossary.js";
import { share } from "./numbers.js";
import { OURS, namesOf, spoken } from "./names.js";

/** This view's store keys (store.js registerState); the knock-out selection is the store's own. */
export const STATE = {
  sentence: {
    knockout: null, // {status, ...the /knockout data}
    importance: null, // {status, ...the /head_importance data}
  },
};

const KINDS = ["encoder", "decoder_self", "cross"];
const TITLES = { encoder: "Encoder self-attention", decoder_self: "Decoder self-attention", cross: "Cross-attention" };
// measure -> [title, lo, hi, signed, what it says]; a kind without a measure gets no map for it. A
// title or text that names a language or a special token is made from the names (names.js) by `said`.
const MEASURES = {
  entropy: ["entropy (0 sharp, 1 uniform)", 0, 1, false,
    "How spread out each head's attention is: 0 puts all of it on one token, 1 spreads it evenly."],
  confidence: ["confidence (mean max weight)", 0, 1, false,
    "The largest weight of a row, on average: near 1, the head picks one token."],
  sink: [(n) => `sink share (${n.sos} ${n.eos} punct.)`, 0, 1, false,
    (n) => `How much of the attention goes to ${n.sos}, ${n.eos} and punctuation, `
    + "where a head parks it when it has nothing better to look at."],
  prev: ["previous-token share", 0, 1, false,
    "How much of the attention goes to the token just before (self-attention only)."],
  same: ["same-token share", 0, 1, false,
    "How much of the attention goes to the token itself (in the decoder: the one just read)."],
  next: ["next-token share", 0, 1, false, "How much of the attention goes to the token just after (encoder only)."],
  monotonicity: ["monotonicity (rank corr.)", -1, 1, true,
    (n) => `Whether the steps read the ${n.src} left to right (1) or right to left (−1): cross-attention only.`],
};
/** A measure's title or text in the names `n`. */
const said = (text, n) => (typeof text === "function" ? text(n) : text);
const DIAG_CELL = [30, 52]; // the smallest and largest cell of a diagnostics map, in css px
// the importance maps label their rows and columns in 13 px type; where a cell can be 33 px
// (2.7 times 12 px type: heatmap.js drawHeadMap) each head's drop is written in its cell, and
// a phone, without that room, reads it on a tap (the tooltip)
const IMP_CELL = [33, 46], IMP_FONT = 13;

/** A measure in a tooltip: a share as a person reads it, a negative one with its minus. */
const fmt = (v) => (v === null || v === undefined ? "undefined here" : v < 0 ? `−${share(-v)}` : share(v));
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

export class Analysis {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.testStats = server.data && server.data.kinds ? server.data : null; // head_stats.json of the checkpoint
    this.source = "sentence"; // which diagnostics are shown
    this.measure = "entropy"; // and which measure of them
    this.hits = new WeakMap(); // canvas -> hit(x, y) of its last drawing (maps are redrawn as new canvases)
    this.build(host);
    store.set({ selectable: true }); // the viewer's mosaic may now pick heads for knock-out
    server.onValue((answer) => this.receive(answer));
    store.subscribe((s, changed) => this.update(s, changed));
    this.update(store.get(), new Set(["trace", "selection", "knockout", "importance"]));
  }

  build(host) {
    const source = el("select", { id: "diag-source", "aria-label": "Diagnostics of" }, [
      el("option", { value: "sentence", text: "this sentence" }),
      el("option", { value: "test",
        text: this.testStats ? `whole test set (${this.testStats.n_sentences} sentences)` : "whole test set" }),
    ]);
    source.addEventListener("change", () => { this.source = source.value; this.drawDiagnostics(this.store.get()); });
    const measure = el("select", { id: "diag-measure", "aria-label": "Measure" },
      Object.entries(MEASURES).map(([m, [title]]) => el("option", { value: m, text: said(title, OURS) })));
    measure.addEventListener("change", () => { this.measure = measure.value; this.drawDiagnostics(this.store.get()); });
    this.koBtn = el("button", { id: "knockout-btn", type: "button", className: "ax-action primary",
      text: "Knock out the selected heads" });
    this.impBtn = el("button", { id: "importance-btn", type: "button", className: "ax-action",
      text: "Head importance for this sentence" });
    this.koBtn.addEventListener("click", () => this.knockOut());
    this.impBtn.addEventListener("click", () => this.askImportance());
    const root = el("div", { className: "ax-root ax-analysis" }, [
      el("section", { id: "head-diagnostics", className: "ax-section" }, [
        el("div", { className: "ax-controls" }, [
          el("strong", { text: "Head diagnostics" }),
          el("label", { className: "ax-field" }, [el("span", { text: "measure" }), measure]),
          el("label", { className: "ax-field", id: "diag-source-field", hidden: !this.testStats },
            [el("span", { text: "of" }), source]),
        ]),
        el("p", { id: "diag-about", className: "ax-diag-about" }),
        el("p", { className: "ax-note" }, words("One map per kind of attention for the measure picked (", ["entropy"],
          ", ", ["sink", "sink"], " share, ...): rows are ",
          ["layers", "layer"], ", columns ", ["heads", "head"], ". Hover (or tap) a head to read its habit "
          + "(e.g. “previous-token head”) and its other measures; click it to open it in the viewer above; "
          + "shift-click (or select mode) adds it to the ", ["knock-out"], " selection.")),
        el("p", { id: "diag-empty", className: "ax-note", text: "Translate a sentence to see what its heads do." }),
        el("div", { id: "diag-maps" }),
      ]),
      el("section", { className: "ax-section" }, [
        el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label", text: "Heads to knock out" }),
          el("div", { id: "ko-selection", className: "ax-chips" })]),
        el("div", { className: "ax-controls" }, [this.koBtn, this.impBtn]),
        el("p", { className: "ax-note" }, words(["Knock-out", "knock-out"],
          " silences the selected heads and translates again; head importance is the drop in ",
          ["log-prob"], " of this translation, in ", ["nats"], ", when one head alone is silenced.")),
        el("p", { id: "ko-why", className: "ax-note" }),
      ]),
      el("div", { id: "ko-result", className: "ax-section", "aria-live": "polite" }),
      el("div", { id: "head-importance", className: "ax-section", "aria-live": "polite" }),
    ]);
    host.replaceChildren(root);
    this.tip = new Tooltip("analysis-tooltip", root);
    this.el = {};
    for (const e of root.querySelectorAll("[id]")) this.el[e.id] = e;
  }

  update(s, changed) {
    const open = JSON.stringify(KINDS.map((k) => this.openHeadOf(s, k)));
    const moved = open !== this.lastOpen; // the head open in the viewer frames its cell in the maps
    this.lastOpen = open;
    const recolour = changed.has("theme"); // every map again, in the new theme's colours
    if (changed.has("trace") && s.trace) { // the measures' names in the words of this trace's model
      for (const o of this.el["diag-measure"].options) o.textContent = said(MEASURES[o.value][0], s.trace.names);
    }
    if (changed.has("trace") || changed.has("selection") || moved || recolour) this.drawDiagnostics(s);
    if (changed.has("trace") || changed.has("selection") || changed.has("knockout") || changed.has("importance")) {
      this.drawSelection(s);
    }
    if (changed.has("knockout") || recolour) this.drawKnockout(s);
    if (changed.has("importance") || changed.has("selection") || moved || recolour) this.drawImportance(s);
  }

  // --- requests --------------------------------------------------------------------------
  knockOut() {
    const s = this.store.get();
    if (!s.trace || !s.selection.length) return;
    this.store.set({ knockout: { status: "pending", heads: s.selection } });
    // the server counts layers and heads from 0
    this.server.ask({ action: "knockout", sentenceId: s.sentenceId,
      heads: s.selection.map((h) => ({ kind: h.kind, layer: h.layer - 1, head: h.head - 1 })) });
  }

  askImportance() {
    const s = this.store.get();
    if (!s.trace) return;
    this.store.set({ importance: { status: "pending" } });
    this.server.ask({ action: "importance", sentenceId: s.sentenceId });
  }

  /** The server's answer: {action, sentenceId, ...data} or {action, sentenceId, error}. */
  receive(a) {
    if (!a || !a.action) return;
    const key = a.action === "knockout" ? "knockout" : "importance";
    this.store.answer(key, a.sentenceId, { ...a, status: a.error ? "error" : "done" });
  }

  // --- maps and their clicks ---------------------------------------------------------------
  /** The head shown in the main view as 0-based {layer, head}, if it shows one head of `kind`. */
  openHeadOf(s, kind) {
    if (!s.trace || KIND_VIEW[kind] !== s.view || s.head === "mean" || s.head === "max") return null;
    return { layer: s.layer - 1, head: headIndex(s.head) };
  }

  markedOf(s, kind) {
    return new Set(s.selection.filter((h) => h.kind === kind).map((h) => `${h.layer - 1}:${h.head - 1}`));
  }

  /** A map's tooltip and clicks: `onClick(head, event)` gets the 1-based head under the pointer. */
  bindMap(canvas, kind, onClick) {
    const at = (x, y) => { const fn = this.hits.get(canvas); return fn ? fn(x, y) : null; };
    this.tip.bind(canvas, (x, y) => { const hit = at(x, y); return hit && hit.lines; });
    canvas.addEventListener("click", (ev) => {
      const r = canvas.getBoundingClientRect(), hit = at(ev.clientX - r.left, ev.clientY - r.top);
      if (hit && kind) onClick({ kind, layer: hit.layer + 1, head: hit.head + 1 }, ev);
    });
  }

  /** One map per kind of attention for the measure picked, as large as the panel allows. */
  drawDiagnostics(s) {
    const stats = this.source === "test" && this.testStats ? this.testStats : s.trace && s.trace.headStats;
    this.el["diag-empty"].hidden = !!stats;
    const maps = this.el["diag-maps"], m = this.measure, about = said(MEASURES[m][4], namesOf(s.trace));
    this.el["diag-about"].textContent = about;
    if (!stats) { maps.replaceChildren(); return; }
    const what = stats === this.testStats ? `the whole test set (${stats.n_sentences} sentences)` : "this sentence";
    const kinds = KINDS.filter((k) => stats.kinds[k] && Array.isArray(stats.kinds[k][m]));
    const H = kinds.length ? stats.kinds[kinds[0]][m][0].length : 1;
    const room = Math.max(240, (maps.clientWidth || 900) - 8);
    // side by side when they fit at a readable size
    const across = room >= 3 * (H * DIAG_CELL[0] + 60) ? kinds.length : 1;
    const cell = Math.max(DIAG_CELL[0], Math.min(DIAG_CELL[1], Math.floor((room / Math.max(1, across) - 60) / H)));
    maps.replaceChildren(...kinds.map((kind) => el("div", { className: "ax-diag-kind", "data-kind": kind },
      [this.diagnosticsMap(s, kind, stats.kinds[kind], m, cell, what)])));
    maps.dataset.source = stats === this.testStats ? "test" : "sentence";
    maps.dataset.measure = m;
    this.el["diag-about"].textContent = `${about} Values of ${what}.`;
  }

  /** The layers x heads map of measure `m` for one kind, each value in its cell. */
  diagnosticsMap(s, kind, k, m, cell, what) {
    const n = namesOf(s.trace), [, lo, hi, signed] = MEASURES[m], title = said(MEASURES[m][0], n);
    const canvas = el("canvas", { "data-kind": kind, "data-measure": m, role: "img",
      "aria-label": `${TITLES[kind]}: ${title}` });
    const hit = drawHeadMap(canvas, {
      title: TITLES[kind], values: k[m], lo, hi, signed, cell, numbers: true, font: 13,
      marked: this.markedOf(s, kind), selected: this.openHeadOf(s, kind),
      tip: (l, h) => [
        `${headLabel({ kind, layer: l + 1, head: h + 1 })}: ${k.habit ? spoken(k.habit[l][h], n) : "?"}`,
        `${title}: ${fmt(k[m][l][h])} (${what})`,
        ...Object.keys(MEASURES).filter((o) => o !== m && Array.isArray(k[o]))
          .map((o) => `${said(MEASURES[o][0], n)}: ${fmt(k[o][l][h])}`),
        "click: open in the viewer · shift-click: select for knock-out",
      ],
    });
    this.hits.set(canvas, hit);
    canvas.dataset.grid = JSON.stringify(hit.geometry);
    this.bindMap(canvas, kind, (h, ev) => {
      const now = this.store.get();
      if (ev.shiftKey || ev.ctrlKey || ev.metaKey || now.selecting) this.store.toggleHead(h);
      this.store.openHead(h);
    });
    return canvas;
  }

  /** The selection chips, and the buttons: enabled only when they can do something. */
  drawSelection(s) {
    const box = this.el["ko-selection"], heads = s.selection;
    const busy = (x) => x && x.status === "pending";
    this.koBtn.disabled = !s.trace || !heads.length || busy(s.knockout);
    this.impBtn.disabled = !s.trace || busy(s.importance);
    this.el["ko-why"].textContent = !s.trace ? "Translate a sentence first."
      : !heads.length ? "Pick heads to knock out: shift-click them in the all-heads mosaic, the diagnostics "
        + "or the importance maps (or tick “select mode” above the mosaic)."
        : "";
    if (!heads.length) {
      box.replaceChildren(el("span", { className: "ax-note", text: "none yet" }));
      return;
    }
    box.replaceChildren(...heads.map((h) => {
      const x = el("button", { type: "button", className: "ax-chip-x", "aria-label": `remove ${headLabel(h)}`,
        text: "×" });
      x.addEventListener("click", () => this.store.toggleHead(h, false));
      return el("span", { className: "chip ax-head-chip", "data-head": `${h.kind}:${h.layer}:${h.head}`,
        title: headLabel(h) }, [`${headLabel(h)} `, x]);
    }), (() => {
      const b = el("button", { type: "button", className: "ax-chip-clear", text: "clear" });
      b.addEventListener("click", () => this.store.set({ selection: [] }));
      return b;
    })());
  }

  /** A result box in its state: pending (a note), error (the message), or cleared. Returns
   * true when the result itself should be drawn. */
  status(box, r, pendingText) {
    if (!r) { box.replaceChildren(); delete box.dataset.state; return false; }
    box.dataset.state = r.status;
    if (r.status === "pending") box.replaceChildren(el("p", { className: "ax-note", text: pendingText }));
    if (r.status === "error") box.replaceChildren(el("p", { className: "ax-error", text: `⚠️ ${r.error}` }));
    return r.status === "done";
  }

  drawKnockout(s) {
    const box = this.el["ko-result"], r = s.knockout;
    const n = r && r.heads ? r.heads.length : 0;
    if (!this.status(box, r, `Knocking out ${plural(n, "head")} and decoding again…`)) return;
    // the server counts from 0
    const names = r.heads.map((h) => headLabel({ kind: h.kind, layer: h.layer + 1, head: h.head + 1 }));
    const same = !r.changed;
    const fig = new Figure("ko-chart", "probability of the original token at each step", { png: false });
    fig.setCaption("p(original token) at each step: full model vs. heads knocked out");
    box.replaceChildren(
      el("p", {}, [el("strong", { text: `Knocked out ${plural(names.length, "head")}: ` }), names.join("; ")]),
      el("div", { className: "ax-ko-pair" }, [
        el("div", { className: "ax-ko-col" }, [el("div", { className: "ax-label", text: "Original" }),
          el("div", { id: "ko-original", className: "ax-ko-text", text: r.original.translation })]),
        el("div", { className: "ax-ko-col" }, [
          el("div", { className: "ax-label",
            text: same ? "With those heads silenced (unchanged)" : "With those heads silenced" }),
          el("div", { id: "ko-translation", className: `ax-ko-text${same ? "" : " ax-changed"}`,
            text: r.knockout.translation })]),
      ]),
      el("p", { className: "ax-note",
        text: `log p(original translation): ${r.steps.logprob_original.toFixed(2)} with every head, `
          + `${r.steps.logprob_knockout.toFixed(2)} with these heads silenced `
          + "(teacher-forced on the original; greedy decoding gave the text above)." }),
      fig.el,
    );
    const hit = drawProbChange(fig.canvas, {
      tokens: r.steps.token, before: r.steps.p_original, after: r.steps.p_knockout,
      top: r.steps.top_knockout, width: Math.max(240, box.clientWidth - 8) });
    fig.canvas.dataset.captionWidth = String(hit.captionWidth);
    this.hits.set(fig.canvas, (x, y) => { const lines = hit(x, y); return lines && { lines }; });
    this.bindMap(fig.canvas, null, () => {});
  }

  drawImportance(s) {
    const box = this.el["head-importance"], r = s.importance;
    if (!this.status(box, r, "Silencing each head in turn (one batched pass)…")) return;
    let m = 0; // one colour scale for the three kinds, symmetric around 0, so they compare
    for (const k of KINDS) for (const row of r.importance[k]) for (const v of row) m = Math.max(m, Math.abs(v));
    m = m || 1;
    const H = r.importance[KINDS[0]][0].length, room = Math.max(200, (box.clientWidth || 900) - 8);
    const across = room >= 3 * (H * IMP_CELL[0] + 60) ? KINDS.length : 1; // side by side when they fit
    const fit = Math.floor((room / across - 60) / H), numbers = fit >= IMP_CELL[0];
    const cell = numbers ? Math.min(IMP_CELL[1], fit) : Math.max(18, Math.min(30, Math.floor((room - 32) / H)));
    const maps = KINDS.map((kind) => {
      const canvas = el("canvas", { "data-kind": kind, role: "img", "aria-label": `${TITLES[kind]}: head importance` });
      const hit = drawHeadMap(canvas, {
        title: TITLES[kind], values: r.importance[kind], lo: -m, hi: m, signed: true, cell, numbers, font: IMP_FONT,
        marked: this.markedOf(s, kind), selected: this.openHeadOf(s, kind),
        tip: (l, h) => {
          const d = r.importance[kind][l][h];
          return [headLabel({ kind, layer: l + 1, head: h + 1 }), `drop in log p(translation): ${d.toFixed(3)} nats`,
            d > 0 ? "the model needs this head for this translation" : "silencing it does not hurt this translation",
            "click: open in the viewer and select for knock-out"];
        },
      });
      this.hits.set(canvas, hit);
      canvas.dataset.grid = JSON.stringify(hit.geometry);
      this.bindMap(canvas, kind, (h) => { this.store.toggleHead(h, true); this.store.openHead(h); });
      return canvas;
    });
    const ranking = r.ranking.slice(0, 5)
      .map((x) => `${headLabel({ kind: x.kind, layer: x.layer + 1, head: x.head + 1 })} (${x.drop.toFixed(2)})`)
      .join("; ");
    box.replaceChildren(
      el("p", {}, [el("strong", { text: "Head importance for this sentence: " }),
        `the drop in log-probability of “${r.translation}” when one head alone is silenced `
          + "(nats; blue = the head helps, red = the translation gets more likely without it)."]),
      el("div", { className: "ax-maps" }, maps),
      el("p", { className: "ax-note",
        text: `Largest drops: ${ranking}. Click a head to open it above and add it to the knock-out selection.` }),
    );
  }
}

export function mount(host, { store, server }) {
  return new Analysis(host, store, server);
}
