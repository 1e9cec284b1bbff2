// The arithmetic of one attention row (explorer/panels/arithmetic.py computes it): for the
// view, layer and head of the viewer, and one row of its heatmap, the model's own numbers
// from the query to the head's output:
//
//   q (d_k numbers) · k_j  ->  ÷ √d_k  ->  mask  ->  softmax = the heatmap's row  ->  Σ_j w_j v_j
//
// The row is the viewer's step for the decoder views (or a row clicked in the heatmap), and
// a source token for the encoder (the first, or the one clicked). Mean and max over heads
// have no single row: the panel offers a head instead. A clicked heatmap cell (the store's
// `cell`, set by viewer.js) highlights that key's term.
//
// Detail on demand: the view asks the server only while its section is open, after the
// settings have rested a moment (longer while Play runs), and the store keeps every answer
// for the sentence (`arithmetic`, a SENTENCE_STATE key), so going back to a row is instant
// and a new sentence starts empty. All token text goes in with textContent.
//
// "Explain a row" (viewer-main.js, the store's `explain`) shows it beside the map: a drawer
// on a wide screen (app.css). A phone has no room beside it, and a sheet fixed over the screen
// would cover every other section: there the view itself moves into the page, right under the
// map (a dock after #attn-col), and its section keeps a note saying where it went. In the drawer
// and on a phone the table is compact (arithmetic.css), so that every column fits a 1366 px
// laptop's drawer; a phone keeps the key, the weight and the heatmap's weight in view.

import { VIEWS, VIEW_KIND, headName, quote } from "./attention.js";
import { el, setup, paintMatrix, RDBU_LUT } from "./canvas.js";
import { Tooltip } from "./tooltip.js";
import { weight as weightText } from "./numbers.js";
import { Frames, watchOpen } from "./view-base.js";

/** This view's store key (store.js registerState): the rows asked for the sentence, by
 * "view:layer:head:query": {status, ...attention-row/1 | error}. */
export const STATE = { sentence: { arithmetic: null } };

const WAIT_MS = 150; // settings must rest this long before a row is asked for
const PLAY_WAIT_MS = 700; // longer than a Play tick: no request per step while it plays
const STRIP_PX = 4; // css px per number of a vector strip
const STRIP_H = 14;
const TABLE_STRIP_W = 64; // css px a strip in the table takes at most (fewer px per number), so it fits a drawer
const DRAWN_BY = ["trace", "view", "layer", "head", "step", "cell", "arithmetic", "playing", "theme"];
const VIEW_BUTTONS = [["cross", "cross-attention"], ["decoder", "decoder self-attention"],
  ["encoder", "encoder self-attention"]];
const NARROW = 600; // below this window width the explanation goes under the map (viewer-main.js: the same)

/** The clicked cell, if it was clicked in this view and at this step (the store forgets it
 * at a new step). */
export function cellOf(s) {
  const c = s.cell;
  return c && c.view === s.view && c.step === s.step ? c : null;
}

/** The row the panel explains for state `s`: {view, layer, head, query, key} (1-based;
 * `key` names it in the store), or {why} when there is none to explain. */
export function rowOf(s) {
  if (!s.trace) return { why: "empty" };
  if (!VIEW_KIND[s.view]) return { why: "rollout" };
  if (s.head === "mean" || s.head === "max") return { why: "head" };
  const c = cellOf(s), head = Number(s.head);
  const query = c ? c.row : s.view === "encoder" ? 1 : s.step;
  return { view: s.view, layer: s.layer, head, query, key: `${s.view}:${s.layer}:${head}:${query}` };
}

const fmt = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : String(x));
/** exp(s − max), three figures: "0.000574", and "1.44e-5" rather than "0.0000144" (a narrower column) */
const figures = (x) => (x > 0 && x < 1e-3 ? x.toExponential(2) : x.toPrecision(3));
const maxAbs = (...arrays) => Math.max(1e-9, ...arrays.flat(2).map(Math.abs));

export class Arithmetic {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.frames = new Frames(() => this.update()); // schedule(): drawn once in the next frame
    this.open = false; // is the section open (the view has a size)?
    this.timer = null;
    this.drawn = null; // the entry the table shows, so a new highlight does not redraw it
    this.build(host);
    server.onValue((answer) => this.receive(answer));
    store.subscribe((s, changed) => {
      if (changed.has("explain") || changed.has("trace")) this.dock(s);
      // a new sentence empties the table at once, open or not: a closed section is not
      // redrawn, and its old rows must not be what it shows (or what a test reads) when it opens
      if (changed.has("sentenceId")) { this.cancel(); this.show(null, "", "empty"); }
      if (changed.has("theme")) this.drawn = null; // its strips again, in the new theme's colours
      if (DRAWN_BY.some((k) => changed.has(k))) this.schedule();
    });
    // a closed accordion hides the view (no size): open or closed is read from its size
    watchOpen(this.root, (open) => { this.open = open; this.schedule(); });
    window.addEventListener("resize", () => this.dock(store.get()));
    this.dock(store.get());
    this.schedule();
  }

  /** On a phone, while a row is explained, the view stands under the map, in the page;
   * otherwise it is in its section. Beside the map (the drawer) and on a phone its table is
   * compact (arithmetic.css). */
  dock(s) {
    const col = document.getElementById("attn-col"), phone = (window.innerWidth || 1000) < NARROW;
    this.root.classList.toggle("ar-phone", phone);
    this.root.classList.toggle("ar-compact", phone || !!(s.explain && s.trace));
    const docked = !!(s.explain && s.trace && col && phone);
    if (docked === this.docked) return;
    this.docked = docked;
    if (docked) {
      this.dockEl = this.dockEl || el("div", { id: "explain-dock", className: "ar-dock",
        "aria-label": "How this row of the map is made" });
      col.after(this.dockEl);
      this.dockEl.append(this.root);
      this.host.replaceChildren(el("p", { className: "ax-note", id: "arith-moved",
        text: "The explanation is under the map above while “Explain a row” is on." }));
    } else {
      this.host.replaceChildren(this.root);
      if (this.dockEl) this.dockEl.remove();
    }
  }

  build(host) {
    this.host = host;
    this.query = el("select", { id: "arith-query", "aria-label": "Query row" });
    this.query.addEventListener("change", () => this.pickQuery(Number(this.query.value)));
    this.root = el("div", { className: "ar-root", "data-state": "empty" }, [
      el("p", { id: "arith-what", className: "ar-what" }),
      el("div", { className: "ax-controls", id: "arith-controls" }, [
        el("label", { className: "ax-field", id: "arith-query-field" },
          [el("span", { id: "arith-query-label", text: "query" }), this.query]),
      ]),
      el("div", { id: "arith-choices", className: "ax-controls" }),
      el("p", { id: "arith-status", className: "ax-note", "aria-live": "polite" }),
      el("div", { id: "arith-body", className: "ar-scroll" }),
      el("p", { id: "arith-check", className: "ar-check" }),
    ]);
    host.replaceChildren(this.root);
    this.tip = new Tooltip("arith-tooltip", this.root);
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
  }

  /** Redraw once per animation frame at most, however many store changes come in. */
  schedule() {
    this.frames.schedule();
  }

  // --- requests --------------------------------------------------------------------------
  /** Ask for `want` once the settings have rested, if it is still wanted and still missing. */
  askSoon(want, playing) {
    clearTimeout(this.timer);
    this.root.dataset.asking = want.key; // a request is due: tests wait for the mark to go
    this.timer = setTimeout(() => {
      delete this.root.dataset.asking;
      const s = this.store.get(), now = rowOf(s), rows = s.arithmetic || {};
      if (!this.open || now.key !== want.key || rows[want.key]) return;
      this.store.set({ arithmetic: { ...rows, [want.key]: { status: "pending" } } });
      this.server.ask({ sentenceId: s.sentenceId, key: want.key, view: want.view, layer: want.layer, head: want.head,
        step: s.step, query: want.query });
    }, playing ? PLAY_WAIT_MS : WAIT_MS);
  }

  /** No request after all. */
  cancel() {
    clearTimeout(this.timer);
    delete this.root.dataset.asking;
  }

  /** The server's answer: {sentenceId, key, ...attention-row/1} or {sentenceId, key, error}. */
  receive(a) {
    if (!a || typeof a.key !== "string") return;
    const rows = this.store.get().arithmetic || {};
    const value = a.error ? { status: "error", error: a.error } : { status: "done", ...a };
    this.store.answer("arithmetic", a.sentenceId, { ...rows, [a.key]: value });
  }

  /** Explain another row: the cell's row changes, its key stays highlighted. */
  pickQuery(row) {
    const s = this.store.get(), c = cellOf(s);
    this.store.set({ cell: { view: s.view, step: s.step, row, col: c ? c.col : null } });
  }

  // --- following the store ---------------------------------------------------------------
  update() {
    if (!this.open) { this.cancel(); return; } // nothing is computed or drawn for a closed section
    const s = this.store.get(), want = rowOf(s);
    this.queryMenu(s, want);
    this.choices(s, want);
    if (want.why) {
      this.cancel();
      this.el["arith-what"].textContent = "";
      this.show(null, {
        empty: "Translate a sentence: this section shows how one row of its attention weights is made.",
        rollout: "Rollout combines every layer and averages the heads, so it has no single row to take apart. "
          + "Pick an attention view:",
        head: `${headName(s.head)} has no single row: pick one head to see its arithmetic.`,
      }[want.why], want.why);
      return;
    }
    this.el["arith-what"].textContent = this.title(s, want);
    const entry = (s.arithmetic || {})[want.key];
    if (!entry) {
      this.askSoon(want, s.playing);
      this.show(null, "Computing this row with the model…", "pending");
      return;
    }
    if (entry.status === "pending") { this.show(null, "Computing this row with the model…", "pending"); return; }
    if (entry.status === "error") { this.show(null, `⚠️ ${entry.error}`, "error"); return; }
    if (this.drawn !== entry) this.draw(s, want, entry);
    this.root.dataset.state = "done";
    this.highlight(cellOf(s));
  }

  /** Say `text` instead of a row (or above it); `state` marks the root for tests. */
  show(entry, text, state) {
    if (state) this.root.dataset.state = state;
    this.el["arith-status"].textContent = text || "";
    this.el["arith-status"].className = state === "error" ? "ax-error" : "ax-note";
    if (!entry) {
      this.drawn = null;
      this.el["arith-body"].replaceChildren();
      this.el["arith-check"].textContent = "";
      delete this.root.dataset.key;
    }
  }

  title(s, want) {
    const tr = s.trace, where = `${VIEWS[s.view]} · layer ${want.layer} · head ${want.head}`;
    if (s.view === "encoder") {
      return `${where} · query: source token ${want.query} ${quote(tr.src[want.query - 1] || "")}`;
    }
    const t = want.query - 1;
    return `${where} · query: step ${want.query}, which reads ${quote(tr.tgt[t] || "")} `
      + `and emits ${quote(tr.tgt[t + 1] || "")}`;
  }

  /** The query menu: source tokens for the encoder, the steps so far for the decoder views. */
  queryMenu(s, want) {
    const field = this.el["arith-query-field"], tr = s.trace;
    field.hidden = !!want.why;
    if (want.why) return;
    const enc = s.view === "encoder";
    const opts = enc ? tr.src.map((tok, i) => [i + 1, `${i + 1}: ${tok}`])
      : Array.from({ length: s.step }, (_, i) => [i + 1, `step ${i + 1}: ${tr.tgt[i]} → ${tr.tgt[i + 1]}`]);
    const sig = `${tr.srcText}|${s.view}|${opts.length}`;
    if (sig !== this.menuSig) {
      this.menuSig = sig;
      this.query.replaceChildren(...opts.map(([v, t]) => el("option", { value: v, text: t })));
    }
    this.el["arith-query-label"].textContent = enc ? "query: source token" : "query: step";
    this.query.value = String(want.query);
  }

  /** One-click ways out when there is no row: a head for mean/max, a view for rollout. */
  choices(s, want) {
    const box = this.el["arith-choices"], sig = `${want.why}|${s.trace ? s.trace.heads : 0}`;
    if (sig === this.choiceSig) return; // the same buttons: keep them (a press may be under way)
    this.choiceSig = sig;
    let buttons = [];
    if (want.why === "head") {
      buttons = Array.from({ length: s.trace.heads }, (_, h) => this.button(`head ${h + 1}`, { "data-head": h + 1 },
        () => this.store.set({ head: String(h + 1) })));
    } else if (want.why === "rollout") {
      buttons = VIEW_BUTTONS.map(([v, t]) => this.button(t, { "data-view": v }, () => this.store.set({ view: v })));
    }
    box.hidden = !buttons.length;
    box.replaceChildren(...buttons);
  }

  button(text, attrs, onClick) {
    const b = el("button", { type: "button", className: "ax-action", text, ...attrs });
    b.addEventListener("click", onClick);
    return b;
  }

  // --- the row ----------------------------------------------------------------------------
  /** The whole row: q, the table of keys, the output and the check against the heatmap. */
  draw(s, want, d) {
    const tr = s.trace, head = want.head - 1, q = want.query - 1;
    const heat = d.key_tokens.map((_, j) => tr.weight(s.view, want.layer - 1, head, q, j)); // what the heatmap paints
    const below = tr.zeroBound(s.view, want.layer - 1, head, q);
    const mq = maxAbs(d.q), mv = maxAbs(d.v, d.out);
    const vScale = `±${fmt(mv, 2)}`;
    const px = Math.max(1, Math.min(STRIP_PX, Math.floor(TABLE_STRIP_W / d.d_k))); // the table's strips
    const rows = d.key_tokens.map((tok, j) => {
      const masked = d.masked[j], w = d.weights[j];
      const tr_ = el("tr", { "data-key": j, "data-weight": w, "data-heat": heat[j],
        className: masked ? "ar-masked" : "" }, [
        el("th", { scope: "row", className: "ar-key", title: `key ${j + 1}: ${tok}` },
          [el("span", { className: "ar-num", text: `${j + 1}` }), ` ${tok}`]),
        el("td", { text: fmt(d.dots[j]) }),
        el("td", { text: fmt(d.scores[j]) }),
        el("td", { className: "ar-mask", text: masked ? d.mask_reasons[j] : "—" }),
        el("td", { text: masked ? "0" : figures(d.exp_scores[j]) }),
        el("td", { className: "ar-weight" }, [this.bar(w), el("span", { className: "ar-w", text: fmt(w, 4) })]),
        el("td", { className: "ar-heat", text: weightText(heat[j], below) }), // as the map's tooltip reads it
        el("td", {}, [this.strip(d.v[j], mv, `v${j + 1} (value of ${tok})`, px)]),
        el("td", {}, [this.strip(d.v[j].map((x) => w * x), mv, `w${j + 1}·v${j + 1}`, px)]),
      ]);
      tr_.addEventListener("click",
        () => this.store.set({ cell: { view: s.view, step: s.step, row: want.query, col: j + 1 } }));
      return tr_;
    });
    const table = el("table", { id: "arith-table", className: "ar-table" }, [
      el("thead", {}, [el("tr", {}, ["key j", "q·kⱼ", `÷ √${d.d_k}`, "mask", "exp(sⱼ − max)", "weight wⱼ = softmax",
        "heatmap", `vⱼ (${vScale})`, `wⱼ·vⱼ (${vScale})`]
        .map((t) => el("th", { scope: "col", text: t })))]),
      el("tbody", {}, rows),
      el("tfoot", {}, [el("tr", {}, [
        el("th", { scope: "row", text: "Σ" }), el("td"), el("td", { text: `max ${fmt(d.max_score)}` }), el("td"),
        el("td", { text: d.sum_exp.toPrecision(4) }), el("td", { text: fmt(d.weights.reduce((a, b) => a + b, 0), 4) }),
        el("td"), el("td"), el("td", { className: "ar-outcell" }, [this.strip(d.out, mv, "output Σ wⱼ·vⱼ", px)]),
      ])]),
    ]);
    this.el["arith-status"].className = "ax-note";
    this.el["arith-status"].textContent = `Each head works with d_k = ${d.d_k} numbers per token. `
      + `score_j = q·k_j / √${d.d_k} (√${d.d_k} = ${fmt(d.scale)}); `
      + "exp(score_j − max) over the keys that are not masked, divided by their sum Σ, gives w_j; "
      + "the head's output is Σ_j w_j v_j. Strips: one cell per number, red negative, blue positive. "
      + "Click a row (or a heatmap cell) to highlight a key.";
    this.el["arith-body"].replaceChildren(
      el("div", { className: "ar-vector" }, [
        el("span", { className: "ar-label", text: `q, the query of ${this.queryName(s, want)} (±${fmt(mq, 2)})` }),
        this.strip(d.q, mq, "q")]),
      table,
      el("div", { className: "ar-vector" }, [
        el("span", { className: "ar-label",
          text: `output = Σ wⱼ·vⱼ, this head's ${d.d_k} numbers for W_o (${vScale})` }),
        this.strip(d.out, mv, "output")]),
    );
    let diff = 0;
    d.weights.forEach((w, j) => { diff = Math.max(diff, Math.abs(w - heat[j])); });
    const check = this.el["arith-check"];
    check.dataset.maxDiff = String(diff);
    check.textContent = "Check: the softmax column equals the heatmap's row (its “heatmap” column) "
      + `to within ${diff.toExponential(1)}: the heatmap's weights travel rounded to 8 bits. `
      + `Against the model's recorded row the softmax differs by ${d.max_abs_diff_vs_trace.toExponential(1)}.`
      + (d.head_scale !== 1 ? ` This head is scaled by ${d.head_scale} before W_o.` : "");
    this.root.dataset.key = want.key;
    this.drawn = d;
    this.picked = undefined;
  }

  queryName(s, want) {
    const tr = s.trace;
    return s.view === "encoder" ? `source token ${want.query} ${quote(tr.src[want.query - 1])}`
      : `step ${want.query} (${quote(tr.tgt[want.query - 1])})`;
  }

  /** A weight as a bar (0..1 of the cell's width). */
  bar(w) {
    const b = el("span", { className: "ar-bar", "aria-hidden": "true" });
    b.style.width = `${Math.max(0, Math.min(1, w)) * 100}%`;
    return el("span", { className: "ar-bartrack" }, [b]);
  }

  /** A vector as a strip of coloured cells, `px` wide each, on a symmetric scale ±m; hover (or
   * tap) names a number. */
  strip(values, m, name, px = STRIP_PX) {
    const canvas = el("canvas", { className: "ar-strip", role: "img", "aria-label": name });
    const ctx = setup(canvas, values.length * px, STRIP_H);
    paintMatrix(ctx, Float32Array.from(values), 1, values.length, 0, 0, px, STRIP_H,
      { lut: RDBU_LUT, lo: -m, hi: m });
    this.tip.bind(canvas, (x) => {
      const i = Math.floor(x / px);
      return i >= 0 && i < values.length
        ? [`${name}, number ${i + 1} of ${values.length}: ${fmt(values[i], 4)}`] : null;
    });
    return canvas;
  }

  /** Highlight the clicked key's row and bring it into the panel's own scroll box. */
  highlight(cell) {
    const j = cell && cell.col ? cell.col - 1 : -1;
    if (j === this.picked) return;
    this.picked = j;
    const box = this.el["arith-body"];
    for (const r of box.querySelectorAll("tr.ar-picked")) r.classList.remove("ar-picked");
    const row = box.querySelector(`tbody tr[data-key="${j}"]`);
    this.root.dataset.picked = row ? String(j + 1) : "";
    if (!row) return;
    row.classList.add("ar-picked");
    // scroll the panel's box, not the page
    box.scrollTop += row.getBoundingClientRect().top - box.getBoundingClientRect().top - box.clientHeight / 2;
  }
}

export function mount(host, { store, server }) {
  return new Arithmetic(host, store, server);
}
