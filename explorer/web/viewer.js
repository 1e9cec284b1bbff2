// The attention explorer's viewer: it shows the trace in the store and draws every view of
// it in the browser. Stepping, Play and every view setting only change the store; nothing
// here talks to the server except to open a shared link. The same module runs in the Gradio
// Space and in notebooks (explorer/notebook.py). All user and token text goes in with
// textContent.
//
//   mount(hostElement, { store, server })   // server: null in a notebook (see gradio.js)
//
// The server's value for this view is the payload of a new trace (explorer/payload.py), or
// "" when the sentence was refused (the viewer then empties).
//
// The viewer is made of parts, each in its own module: the page template (viewer-page.js),
// the step control and keys (player.js), the main view and its pictures (viewer-main.js,
// pictures.js), the closed sections, drawn only while open (section-views.js,
// section-lens.js, section-pe.js; which are open is the store's `open`, kept in the link),
// presentation mode (present.js) and the PNG of the whole view (viewer-export.js). This
// class only routes the store's changes to them.

import { readTrace } from "./payload.js";
import { quote, layout, validView, clearestStep } from "./attention.js";
import { downloadPng, el } from "./canvas.js";
import { Tooltip } from "./tooltip.js";
import { readLink, syncAddress } from "./url.js";
import { followAccordions } from "./sections.js";
import { share, weight as weightText } from "./numbers.js";
import { viewerPage } from "./viewer-page.js";
import { MainView } from "./viewer-main.js";
import { ViewsSection } from "./section-views.js";
import { LensSection } from "./section-lens.js";
import { PeSection } from "./section-pe.js";
import { Player } from "./player.js";
import { Presenter } from "./present.js";
import { downloadView } from "./viewer-export.js";
import { AttnPicker } from "./attn-picker.js";
import { useNames } from "./glossary.js";
import { nextFrame, watchSize } from "./view-base.js";

// every control that needs a sentence: enabled with one, disabled without
const CONTROLS = ".ax-controls button, .ax-controls select, .ax-controls input, .ax-maintools button";
// (`moved` and `norms` are moved.js's: the main map draws what moved the output when asked;
// `lens` is lens.js's: a large vocabulary's lens arrives after its trace)
const STEP_KEYS = ["step", "view", "layer", "head", "hide", "selection", "selecting", "selectable", "picture",
  "presenting", "theme", "moved", "norms", "lens"];

export class Viewer {
  constructor(host, store, server = null) {
    this.store = store;
    this.server = server;
    this.hits = new Map(); // figure id -> hit-test function of its last drawing
    this.build(host);
    this.bind(!!server);
    store.subscribe((s, changed) => this.update(s, changed));
    if (server) this.connect(server);
    this.update(store.get(), new Set(["trace"]));
  }

  // --- DOM --------------------------------------------------------------------------------
  build(host) {
    const ctx = { store: this.store, hits: this.hits, width: () => this.width(),
      cellTip: (...a) => this.cellTip(...a), mark: (id, s, extra) => this.mark(id, s, extra) };
    this.main = new MainView();
    this.views = new ViewsSection(ctx);
    this.lens = new LensSection();
    this.pe = new PeSection(ctx);
    this.picker = new AttnPicker();
    this.root = viewerPage(this.main, this.picker, [this.views.el, this.lens.el, this.pe.el]);
    host.replaceChildren(this.root);
    ctx.tip = this.tip = new Tooltip("viewer-tooltip", this.root);
    this.main.mount(ctx, !!this.server);
    this.figs = { "attn-plot": this.main.map.fig, topk: this.main.topk, ...this.views.figs, ...this.pe.figs };
    for (const fig of Object.values(this.figs)) fig.el.setAttribute("data-needs-trace", "");
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
    this.player = new Player(this.store, this.root, this.el);
    this.presenter = new Presenter(this.store, this.root, this.el["present-btn"]);
  }

  bind(global) {
    this.bindSections();
    this.player.bind(global);
    this.picker.bind(this.store, global);
    this.views.bind();
    this.pe.bind();
    const s = () => this.store.get();
    this.el["download-view-png"].addEventListener("click",
      () => downloadView(s(), this.figs, this.isOpen("lens"), this.main.pictures));
    for (const [id, fig] of Object.entries(this.figs)) {
      fig.png.addEventListener("click", () => downloadPng(fig.image(), `${id}-step${s().step}.png`));
      if (id === "attn-plot" || id === "topk") continue; // the main view binds its own
      this.tip.bind(fig.canvas, (x, y) => {
        const hit = this.hits.get(id), lines = hit && hit(x, y);
        return lines && (Array.isArray(lines) ? lines : lines.lines);
      });
    }
    let resize = null;
    const redraw = () => {
      clearTimeout(resize);
      // data-redraw on the root while one is due: the layout is not final yet (tests wait for it to go)
      this.root.dataset.redraw = "due";
      resize = setTimeout(() => { delete this.root.dataset.redraw; this.render(true); }, 150);
    };
    window.addEventListener("resize", redraw);
    // the picture's room changes without a window resize too: its column changes width (the
    // explanation opens beside it, presentation mode starts or ends), and what stands above it or
    // under it changes height after it was fitted (the page's blocks settle after the first
    // drawing, a notice or a longer translation arrives, the line over the picture comes or goes)
    let width = 0;
    watchSize([this.main.col, document.body, this.root.querySelector(".ax-stepbar")], () => {
      const w = this.main.col.clientWidth, wider = w && Math.abs(w - width) > 2;
      if (wider) width = w;
      if (wider || this.main.shifted(this.store.get())) redraw();
    });
  }

  isOpen(name) {
    return this.sections[name].open;
  }

  /** The sections follow the store's `open`; opening one draws what it holds. */
  bindSections() {
    this.sections = {};
    for (const d of this.root.querySelectorAll("details[data-section]")) {
      const name = d.dataset.section;
      this.sections[name] = d;
      d.addEventListener("toggle", () => {
        const open = this.store.get().open || [];
        if (d.open !== open.includes(name)) {
          this.store.set({ open: d.open ? [...open, name] : open.filter((x) => x !== name) });
        }
        if (d.open) this.render(true);
      });
    }
  }

  /** Open or close the sections as the store says. */
  showSections(s) {
    for (const [name, d] of Object.entries(this.sections)) {
      const open = (s.open || []).includes(name);
      if (d.open !== open) d.open = open;
    }
  }

  // --- the server: a new trace, or a shared link to open ---------------------------------
  connect(server) {
    syncAddress(this.store);
    followAccordions(this.store);
    // a link's own sentence is asked for before the page's opening example is drawn, which it replaces
    const link = readLink();
    if (link) this.store.set({ link, open: link.open });
    this.linked = !!link; // the first sentence drawn is the link's, not the page's opening example
    server.onValue((payload) => this.receive(payload));
    if (link) server.ask({ text: link.text, forced: link.forced, origin: link.origin, src: link.src, tgt: link.tgt });
  }

  /** A payload from the server (a new sentence), or null (refused: the viewer empties). A
   * new sentence in the Space opens on its focus (payload.py focus_head) at the step where that
   * head looks most clearly at a word, unless the visitor has moved away from the last one (the
   * focus then stays known, `kept`, so the line over the picture can say so). A shared link opens
   * the same way, then takes every setting it names; a What-if version opens at its forced step. */
  async receive(payload) {
    const store = this.store, n = (this.received = (this.received || 0) + 1);
    if (!payload) { store.setTrace(null); return; }
    // the opening example sent with the page (explorer/page.py) gives way to a link's sentence
    if (payload.first && store.get().link) return;
    const tr = await readTrace(payload);
    if (n !== this.received) return; // a newer answer came while this one was inflating
    const now = store.get(), link = now.link;
    const fromLink = link && link.text === tr.srcText;
    const view = validView(tr, { ...now, step: 1 });
    let focus = null;
    if (tr.origin === "whatif" && tr.forcedPrefix.length && !fromLink) view.step = tr.forcedPrefix.length;
    else if (this.server && tr.origin === "translate" && tr.focus) {
      // with a server only: a notebook shows its trace from step 1
      const f = tr.focus, c = clearestStep(tr, f.layer - 1, f.head - 1) || { step: 1, key: null, weight: null };
      const follows = fromLink || this.followsFocus(now);
      focus = { layer: f.layer, head: f.head, step: c.step, key: c.key, weight: c.weight, source: f.source,
        n: f.n_sentences, kept: !follows };
      if (follows) {
        Object.assign(view, { view: "cross", layer: f.layer, head: String(f.head), step: c.step,
          focused: { view: "cross", layer: f.layer, head: String(f.head) } });
      }
    }
    if (fromLink) {
      Object.assign(view, validView(tr, { ...view, ...link.settings }), { link: null,
        picture: link.settings.picture === "lines" ? "lines" : "map" });
    }
    store.setTrace(tr, tr.origin, { ...view, focus });
    if (tr.origin === "whatif" || tr.origin === "beam") {
      this.root.scrollIntoView({ behavior: "smooth", block: "start" });
    }
  }

  /** Whether the view settings are still the viewer's own choice: the defaults before any
   * sentence opened on a focus, else the focus it last opened on. */
  followsFocus(s) {
    const f = s.focused || { view: "cross", layer: 1, head: "mean" };
    return s.view === f.view && s.layer === f.layer && s.head === f.head;
  }

  // --- following the store -----------------------------------------------------------------
  update(s, changed) {
    if (changed.has("presenting") || changed.has("trace")) this.presenter.follow(s);
    if (changed.has("trace")) {
      if (s.trace) useNames(s.trace.names); // the glossary speaks of this trace's languages and tokens
      if (s.trace) this.showTrace(s); else this.clear();
    } else if (STEP_KEYS.some((k) => changed.has(k))) this.render(changed.has("presenting") || changed.has("theme"));
    else if ((changed.has("peLen") || changed.has("peFollow")) && this.isOpen("pe")) this.pe.draw(s, s.trace);
    if (changed.has("playing") || changed.has("speed") || changed.has("trace")) this.player.play(s);
    if (changed.has("open") || changed.has("trace")) this.showSections(s);
    if (changed.has("explain") || changed.has("open") || changed.has("trace")) {
      const before = document.documentElement.classList.contains("ax-explaining");
      // the picture's width changed
      if (this.main.followExplain(s) !== before) nextFrame(() => this.render(true));
    }
  }

  /** A new sentence: chips, menus and every figure. */
  showTrace(s) {
    const tr = s.trace, e = this.el;
    this.root.classList.remove("ax-is-empty");
    for (const c of this.root.querySelectorAll(CONTROLS)) {
      c.disabled = false;
    }
    this.chips(e["src-chips"], tr.src);
    this.chips(e["tgt-chips"], tr.tgt);
    this.views.showTrace(tr);
    this.picker.showTrace(tr);
    this.pe.showTrace(tr);
    e["step-slider"].max = String(tr.steps);
    this.forcedNote(tr, s.origin);
    // a closed section keeps nothing of the last sentence: it draws this one when it opens
    for (const d of Object.values(this.sections)) {
      if (!d.open) for (const fig of d.querySelectorAll("figure[id]")) if (this.figs[fig.id]) this.figs[fig.id].clear();
    }
    if (!this.isOpen("lens")) this.lens.clear();
    this.render(true);
    // a sentence asked for (not the example a first visit opens on): its picture in view
    this.shown = (this.shown || 0) + 1;
    if (this.shown > 1 || this.linked) this.main.bringIntoView(s);
  }

  forcedNote(tr, origin) {
    const forced = this.el["viewer-forced"], n = tr.forcedPrefix.length;
    forced.hidden = !n;
    if (n && origin === "beam") {
      forced.textContent = `Beam-search hypothesis: all ${n} tokens forced as beam search found them, `
        + "so every step below shows how the model reads this version.";
    } else if (n) {
      forced.textContent = `What-if version: step ${n} forced to ${quote(tr.tgt[n].replace(/▁/g, ""))}; `
        + "later steps decoded greedily.";
    }
  }

  clear() {
    const e = this.el;
    this.root.classList.add("ax-is-empty");
    for (const c of this.root.querySelectorAll(CONTROLS)) {
      c.disabled = true;
    }
    for (const id of ["src-chips", "tgt-chips", "prefix-chips", "step-text", "present-sentence"]) {
      e[id].replaceChildren();
    }
    for (const fig of Object.values(this.figs)) fig.clear();
    this.main.clear();
    this.pe.clear();
    this.hits.clear();
    e["step-label"].textContent = "Step – of –";
    this.lens.clear();
    e["viewer-forced"].hidden = true;
  }

  /** Everything that depends on the step and the view settings (and, when `full`, the
   * positional encoding, which does not). */
  render(full = false) {
    const s = this.store.get(), tr = s.trace;
    if (!tr) return;
    if (full) this.main.refit(); // the page's layout may have changed: the picture measures its room again
    this.player.follow(s, tr);
    this.views.follow(s, tr);
    this.picker.follow(s, tr);
    const t = s.step - 1;
    const prefix = this.el["prefix-chips"];
    this.chips(prefix, tr.tgt.slice(0, t + 2), t + 1);
    // one scrolling line on a phone: the newest token in view
    if (prefix.scrollWidth > prefix.clientWidth) prefix.scrollLeft = prefix.scrollWidth;
    this.stepText(tr, t);
    this.el["present-sentence"].textContent = `${tr.srcText}  →  ${tr.translation}`;
    this.main.draw(s, tr);
    // the closed sections are drawn when they open (bindSections)
    if (this.isOpen("lens")) this.lens.draw(tr, t, s.lens);
    if (this.isOpen("views")) this.views.draw(s, tr, layout(tr, s));
    if (full && this.isOpen("pe")) this.pe.draw(s, tr);
  }

  // --- drawing ----------------------------------------------------------------------------
  chips(box, tokens, current = -1) {
    const tr = this.store.get().trace;
    box.replaceChildren(...tokens.map((tok, i) => {
      const chip = el("span", { className: "chip" });
      if (tr.isSpecial(tok)) chip.classList.add("special");
      if (i === current) chip.classList.add("current");
      if (tok.startsWith("▁")) {
        chip.append(el("span", { className: "ws", text: "▁", "aria-hidden": "true" }), tok.slice(1));
      } else chip.textContent = tok;
      chip.title = `token ${i + 1}: ${tok}`;
      return chip;
    }));
  }

  stepText(tr, t) {
    const emitted = tr.tgt[t + 1], top = tr.topk(t)[0];
    const forced = t < tr.forcedPrefix.length;
    const how = forced
      ? (t === tr.forcedPrefix.length - 1 && this.store.get().origin !== "beam" ? "forced by What if?" : "forced")
      : top && top.token === emitted ? `top candidate, p = ${share(top.prob)}` : "chosen";
    this.el["step-text"].replaceChildren(
      el("strong", { text: `Step ${t + 1} of ${tr.steps}. ` }),
      `The decoder reads ${quote(tr.tgt[t])} (input ${t + 1}) and emits ${quote(emitted)} (${how}).`,
    );
  }

  /** The settings a drawing shows, as data-* attributes tests and benchmarks wait for. */
  mark(id, s, extra = {}) {
    Object.assign(this.el[id].dataset,
      { step: s.step, view: s.view, layer: s.layer, head: s.head, hide: s.hide ? "1" : "0", ...extra });
  }

  /** Tooltip lines of one attention cell of `layer` (0-based) and `head` (index, "mean" or "max"). */
  cellTip(s, row, col, masked, layer, head, where) {
    if (row.future) return [`${row.tip} is not generated yet (now at step ${s.step})`];
    const tr = s.trace, lines = [`query: ${row.tip}`, `key: ${col.tip}`];
    if (masked(row.index, col.index)) lines.push("masked: a decoder position cannot attend to later ones");
    else {
      lines.push(`weight: ${weightText(tr.weight(s.view, layer, head, row.index, col.index),
        tr.zeroBound(s.view, layer, head, row.index))}`);
    }
    lines.push(where);
    return lines;
  }

  width() {
    return Math.max(280, (this.root.clientWidth || 800) - 8);
  }
}

/** The viewer inside `host` (an element), showing `store`'s trace. */
export function mount(host, { store, server = null }) {
  return new Viewer(host, store, server);
}
