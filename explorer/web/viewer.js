// The attention explorer's viewer: it shows the trace in the store and draws every view of
// it in the browser. Stepping, Play, view/layer/head/mean/max and hide-specials only change
// the store; nothing here talks to the server except to open a shared link. The same module
// runs in the Gradio Space and in notebooks (explorer/notebook.py). All user and token text
// goes in with textContent.
//
//   mount(hostElement, { store, server })   // server: null in a notebook (see gradio.js)
//
// The server's value for this view is the payload of a new trace (explorer/payload.py), or
// "" when the sentence was refused (the viewer then empties).
//
// Layout: what a first visit needs is always on show (tokens, the step control, the prefix,
// the candidates and one attention map with a one-line caption). Everything else sits in
// closed <details> sections, "views" (the menus, rollout, every head), "lens" and "pe", drawn
// only while open, so a Translate paints just the first screen; which ones are open is the
// store's `open` (kept in the link, url.js).

import { readTrace } from "./payload.js";
import {
  VIEWS, AXES, VIEW_KIND, headName, headIndex, quote, layout, attentionMatrix, analysisMatrix, maxOf, validView,
} from "./attention.js";
import { drawHeatmap, drawMosaic } from "./heatmap.js";
import { drawTopk, drawPeHeat, drawPeSim, drawPeCurves, peSimilarity, drawLensTable } from "./charts.js";
import { downloadPng, composite, el, icon } from "./draw.js";
import { Figure, HeatFigure } from "./figure.js";
import { Tooltip } from "./tooltip.js";
import { readLink, syncAddress } from "./url.js";
import { term, words } from "./glossary.js";
import { followAccordions } from "./sections.js";

const ROLLOUT_TITLE = "Source relevance of each step: Chefer et al. 2021, attention-only rules (all layers, mean of heads)";
const ENC_ROLLOUT_TITLE = "Encoder rollout: Abnar & Zuidema 2020 (0.5·A + 0.5·I, mean of heads, through all layers)";
const SPEEDS = [1, 2, 4, 8, 12];
// the one-line caption of the main attention map, per view
const CAPTIONS = {
  cross: () => words("Where each new Italian token (row, the ", ["query"], ") looks in the English sentence (columns, the ", ["keys", "key"], ")."),
  decoder: () => words("Which Italian tokens written so far each step (row) looks at; later ones are hidden by the ", ["mask"], "."),
  encoder: () => words("How each English token (row) looks at every other one while the ", ["encoder"], " reads them all at once."),
  rollout: () => words(["Rollout", "rollout"], ": how much each English token feeds each step, through every ", ["layer"], "."),
};
const STEP_KEYS = ["step", "view", "layer", "head", "hide", "selection", "selecting", "selectable"];
// what uses the keys itself: arrows move in text, menus and sliders; space also presses
// buttons and links, opens <summary> and ticks checkboxes
const OWN_ARROWS = "select, textarea, input:not([type=checkbox]):not([type=radio]):not([type=button]), [contenteditable=''], [contenteditable='true']";
const OWN_SPACE = `${OWN_ARROWS}, button, a[href], summary, input, [role=button]`;

/** A <label> with a text (or nodes) and a <select> of [value, text] options. */
const select = (id, label, options = []) => el("label", { className: "ax-field" }, [
  el("span", {}, [].concat(label)),
  el("select", { id }, options.map(([v, t]) => el("option", { value: v, text: t }))),
]);
const chipRow = (label, id) => el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label" }, [].concat(label)), el("div", { id, className: "ax-chips" })]);

export class Viewer {
  constructor(host, store, server = null) {
    this.store = store;
    this.server = server;
    this.hits = new Map(); // figure id -> hit-test function of its last drawing
    this.timer = null;
    this.build(host);
    this.bindSections();
    this.bindControls();
    this.bindKeys(!!server);
    store.subscribe((s, changed) => this.update(s, changed));
    if (server) this.connect(server);
    this.update(store.get(), new Set(["trace"]));
  }

  // --- DOM --------------------------------------------------------------------------------
  build(host) {
    const f = (this.figs = {
      topk: new Figure("topk", "next-token candidates"),
      "attn-plot": new HeatFigure("attn-plot", "attention heatmap"),
      "enc-rollout": new HeatFigure("enc-rollout", "encoder rollout"),
      mosaic: new Figure("mosaic", "all heads"),
      "pe-heat": new Figure("pe-heat", "positional encoding table"),
      "pe-sim": new Figure("pe-sim", "position similarity"),
      "pe-curves": new Figure("pe-curves", "encoding curves"),
    });
    for (const fig of Object.values(f)) fig.el.setAttribute("data-needs-trace", "");
    this.root = el("div", { className: "ax-root", tabindex: "-1" }, [
      el("p", { id: "viewer-empty", className: "ax-empty", text: "Translate a sentence to step through its decoding here." }),
      el("p", { id: "viewer-forced", className: "ax-forced", hidden: true }),
      this.tokenRows(),
      this.stepControls(),
      el("div", { className: "ax-tokrow", "data-needs-trace": true }, [el("span", { className: "ax-label", text: "Generated so far" }), el("div", { id: "prefix-chips", className: "ax-chips" })]),
      el("p", { id: "step-text", className: "ax-steptext", "data-needs-trace": true }),
      // the candidates and the attention map side by side (stacked on narrow screens)
      el("div", { className: "ax-toprow", "data-needs-trace": true }, [f.topk.el,
        el("div", { id: "attn-col", className: "ax-attncol" }, [el("p", { id: "attn-caption", className: "ax-caption" }), f["attn-plot"].el])]),
      this.section("views", ["More attention views: encoder, decoder, ", term("rollout"), " and every ", term("head")], [
        this.viewControls(),
        el("p", { id: "attn-note", className: "ax-note" }, words("Rows are ", ["queries", "query"], ", columns are ", ["keys", "key"], ". The menus change the map above. Hover (or tap) a cell to name it; click a tile of the mosaic to open that head. Keys: ← → step, space plays.")),
        el("p", { id: "rollout-note", className: "ax-note", hidden: true }, words("Layer and head do not apply to ", ["rollout"], ": it combines every layer and averages the heads. Rows are target steps (each sums to 1 over the source), columns source tokens. Hover (or tap) a cell to read it.")),
        f["enc-rollout"].el,
        el("div", { id: "select-mode-row", className: "ax-controls", hidden: true }, [
          el("label", { className: "ax-field" }, [el("input", { id: "select-mode", type: "checkbox" }),
            el("span", {}, words("select mode: a click on a head adds it to (or removes it from) the ", ["knock-out"], " selection; shift-click does the same at any time"))]),
        ]),
        f.mosaic.el,
      ]),
      this.section("lens", [term("Logit lens", "logit lens"), ": what each ", term("layer"), " would say"], [this.lensBox()]),
      this.peSection(),
    ]);
    host.replaceChildren(this.root);
    this.tip = new Tooltip("viewer-tooltip", this.root);
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
  }

  tokenRows() {
    return el("div", { className: "ax-tokens", "data-needs-trace": true }, [
      chipRow(["Source ", term("tokens", "token")], "src-chips"),
      chipRow(["Target ", term("tokens", "token")], "tgt-chips"),
    ]);
  }

  stepControls() {
    const prev = el("button", { id: "prev-btn", type: "button", "aria-label": "Previous step", title: "Previous step (←)" }, [icon("prev")]);
    const next = el("button", { id: "next-btn", type: "button", "aria-label": "Next step", title: "Next step (→)" }, [icon("next")]);
    const play = el("button", { id: "play-btn", type: "button", title: "Play / pause (space)", "aria-pressed": "false" });
    const speed = select("play-speed", "speed", SPEEDS.map((s) => [s, `${s} steps/s`]));
    return el("div", { className: "ax-controls" }, [
      prev,
      el("input", { id: "step-slider", type: "range", min: 1, max: 1, value: 1, step: 1, "aria-label": "Step" }),
      next, play, speed,
      el("span", { id: "step-label", className: "ax-steplabel", text: "Step – of –" }),
      el("button", { id: "download-view-png", type: "button", className: "ax-download", text: "Download this view (PNG)" }),
    ]);
  }

  lensBox() {
    return el("div", { id: "logit-lens-box", className: "ax-lens" }, [
      el("table", { id: "logit-lens", className: "ax-lens-table" }, [el("caption"), el("thead"), el("tbody")]),
      el("p", { id: "logit-lens-note", className: "ax-note" }),
    ]);
  }

  viewControls() {
    return el("div", { className: "ax-controls" }, [
      select("view-select", "attention", Object.entries(VIEWS)),
      select("layer-select", term("layer")),
      select("head-select", term("head")),
      el("label", { className: "ax-field" }, [el("input", { id: "hide-specials", type: "checkbox" }),
        el("span", {}, words("hide ", ["[SOS]", "sos"], " ", ["[EOS]", "eos"], " [PAD] (weights not renormalised)"))]),
    ]);
  }

  /** A closed section named `name` (its name in the store's `open`): a <details> whose summary is `summary` (nodes). */
  section(name, summary, children) {
    return el("details", { id: `sec-${name}`, className: "ax-fold", "data-section": name, "data-needs-trace": true }, [
      el("summary", {}, summary), el("div", { className: "ax-fold-body" }, children)]);
  }

  peSection() {
    const f = this.figs;
    return this.section("pe", ["Positional encoding: how the model knows word order"], [
      el("div", { className: "ax-controls" }, [
        el("label", { className: "ax-field" }, [el("span", { text: "positions shown" }), el("input", { id: "pe-len", type: "range", min: 1, max: 16, value: 12 })]),
        el("label", { className: "ax-field" }, [el("span", { text: "position to follow" }), el("input", { id: "pe-pos", type: "range", min: 0, max: 11, value: 0 })]),
      ]),
      el("p", { id: "pe-text", className: "ax-note" }),
      f["pe-heat"].el,
      el("div", { className: "ax-perow" }, [f["pe-sim"].el, f["pe-curves"].el]),
    ]);
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
        if (d.open !== open.includes(name)) this.store.set({ open: d.open ? [...open, name] : open.filter((x) => x !== name) });
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

  /** Every control changes the store; render() follows the store. */
  bindControls() {
    const e = this.el, store = this.store, s = () => store.get();
    const step = (to) => store.set({ step: Math.min(Math.max(1, to), s().trace ? s().trace.steps : 1), playing: false });
    e["prev-btn"].addEventListener("click", () => step(s().step - 1));
    e["next-btn"].addEventListener("click", () => step(s().step + 1));
    e["step-slider"].addEventListener("input", () => step(Number(e["step-slider"].value)));
    e["play-btn"].addEventListener("click", () => this.togglePlay());
    e["play-speed"].addEventListener("change", () => store.set({ speed: Number(e["play-speed"].value) }));
    e["view-select"].addEventListener("change", () => store.set({ view: e["view-select"].value }));
    e["layer-select"].addEventListener("change", () => store.set({ layer: Number(e["layer-select"].value) }));
    e["head-select"].addEventListener("change", () => store.set({ head: e["head-select"].value }));
    e["hide-specials"].addEventListener("change", () => store.set({ hide: e["hide-specials"].checked }));
    e["select-mode"].addEventListener("change", () => store.set({ selecting: e["select-mode"].checked }));
    e["pe-len"].addEventListener("input", () => store.set({ peLen: Number(e["pe-len"].value), peFollow: Math.min(s().peFollow, Number(e["pe-len"].value) - 1) }));
    e["pe-pos"].addEventListener("input", () => store.set({ peFollow: Number(e["pe-pos"].value) }));
    e["download-view-png"].addEventListener("click", () => this.downloadView());
    for (const [id, fig] of Object.entries(this.figs)) {
      fig.png.addEventListener("click", () => downloadPng(fig.image(), `${id}-step${s().step}.png`));
      this.tip.bind(fig.canvas, (x, y) => {
        const hit = this.hits.get(id), lines = hit && hit(x, y);
        return lines && (Array.isArray(lines) ? lines : lines.lines);
      });
    }
    this.figs.mosaic.canvas.addEventListener("click", (ev) => this.mosaicClick(ev));
    this.figs["attn-plot"].canvas.addEventListener("click", (ev) => this.cellClick(ev));
    let resize = null;
    window.addEventListener("resize", () => { clearTimeout(resize); resize = setTimeout(() => this.render(true), 150); });
  }

  /** A click on a mosaic tile opens that head; with shift (or in select mode) it picks it for knock-out. */
  mosaicClick(ev) {
    const r = ev.currentTarget.getBoundingClientRect();
    const hit = this.hits.get("mosaic"), at = hit && hit(ev.clientX - r.left, ev.clientY - r.top);
    if (!at) return;
    const s = this.store.get(), kind = VIEW_KIND[s.view];
    const h = { kind, layer: at.layer + 1, head: at.head + 1 };
    if (s.selectable && kind && (ev.shiftKey || ev.ctrlKey || ev.metaKey || s.selecting)) this.store.toggleHead(h);
    else this.store.set({ layer: h.layer, head: String(h.head) });
  }

  /** A click (or tap) on an attention cell names it in the store (`cell`: 1-based trace
   * indices, with the view and step it was clicked at), for the panels that explain one
   * cell; rows not generated yet have nothing to explain. */
  cellClick(ev) {
    const s = this.store.get(), hit = this.hits.get("attn-plot");
    if (!s.trace || s.view === "rollout" || !hit || !hit.cellAt) return;
    const r = ev.currentTarget.getBoundingClientRect(), at = hit.cellAt(ev.clientX - r.left, ev.clientY - r.top);
    if (!at || at.row.future) return;
    this.store.set({ cell: { view: s.view, step: s.step, row: at.row.index + 1, col: at.col.index + 1 } });
  }

  /** ←/→ step and space plays, unless focus is on something that uses those keys itself
   * (OWN_ARROWS, OWN_SPACE): space on a focused button presses it, on a checkbox ticks it;
   * arrows on a focused slider move it. In the Space the keys work anywhere on the page;
   * in a notebook only inside the viewer. */
  bindKeys(global) {
    document.addEventListener("keydown", (ev) => {
      const t = ev.target;
      if (!this.store.get().trace || ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
      if (!global && !this.root.contains(t)) return;
      const owns = (sel) => t.closest && t.closest(sel);
      if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
        if (owns(OWN_ARROWS)) return;
        ev.preventDefault();
        const s = this.store.get();
        this.store.set({ step: Math.min(Math.max(1, s.step + (ev.key === "ArrowLeft" ? -1 : 1)), s.trace.steps), playing: false });
      } else if (ev.key === " " || ev.key === "Spacebar") {
        if (owns(OWN_SPACE)) return;
        ev.preventDefault();
        this.togglePlay();
      }
    });
  }

  // --- the server: a new trace, or a shared link to open ---------------------------------
  connect(server) {
    syncAddress(this.store);
    followAccordions(this.store);
    server.onValue((payload) => this.receive(payload));
    const link = readLink();
    if (link) {
      this.store.set({ link, open: link.open });
      server.ask({ text: link.text, forced: link.forced, origin: link.origin });
    }
  }

  /** A payload from the server (a new sentence), or null (refused: the viewer empties). */
  async receive(payload) {
    const store = this.store, n = (this.received = (this.received || 0) + 1);
    if (!payload) { store.setTrace(null); return; }
    const tr = await readTrace(payload);
    if (n !== this.received) return; // a newer answer came while this one was inflating
    const link = store.get().link;
    const fromLink = link && link.text === tr.srcText; // a shared link: reopen exactly that view
    // the settings this trace can show: the link's, or the current ones from step 1
    const view = validView(tr, fromLink ? link.settings : { ...store.get(), step: 1 });
    if (fromLink) view.link = null;
    else if (tr.origin === "whatif" && tr.forcedPrefix.length) view.step = tr.forcedPrefix.length; // the forced step
    store.setTrace(tr, tr.origin, view);
    if (tr.origin === "whatif" || tr.origin === "beam") this.root.scrollIntoView({ behavior: "smooth", block: "start" });
  }

  // --- Play ---------------------------------------------------------------------------------
  togglePlay() {
    const s = this.store.get();
    if (!s.trace) return;
    this.store.set(s.playing ? { playing: false } : { playing: true, step: s.step >= s.trace.steps ? 1 : s.step });
  }

  /** Run or stop the Play timer as the store says; it advances one step per tick. */
  play(s) {
    clearInterval(this.timer);
    this.timer = null;
    const btn = this.el["play-btn"];
    btn.replaceChildren(icon(s.playing ? "pause" : "play"), s.playing ? " Pause" : " Play");
    btn.setAttribute("aria-pressed", String(s.playing));
    if (!s.playing) return;
    this.timer = setInterval(() => {
      const now = this.store.get();
      if (!now.trace || now.step >= now.trace.steps) this.store.set({ playing: false });
      else this.store.set({ step: now.step + 1, playing: true });
    }, 1000 / s.speed);
  }

  // --- following the store -----------------------------------------------------------------
  update(s, changed) {
    if (changed.has("trace")) {
      if (s.trace) this.showTrace(s); else this.clear();
    } else if (STEP_KEYS.some((k) => changed.has(k))) this.render(false);
    else if ((changed.has("peLen") || changed.has("peFollow")) && this.isOpen("pe")) this.renderPe();
    if (changed.has("playing") || changed.has("speed") || changed.has("trace")) this.play(s);
    if (changed.has("open") || changed.has("trace")) this.showSections(s);
  }

  /** A new sentence: chips, menus and every figure. */
  showTrace(s) {
    const tr = s.trace, e = this.el;
    this.root.classList.remove("ax-is-empty");
    for (const c of this.root.querySelectorAll(".ax-controls button, .ax-controls select, .ax-controls input")) c.disabled = false;
    this.chips(e["src-chips"], tr.src);
    this.chips(e["tgt-chips"], tr.tgt);
    e["head-select"].replaceChildren(...[["mean", "mean over heads"], ["max", "max over heads"]]
      .concat(Array.from({ length: tr.heads }, (_, h) => [String(h + 1), `head ${h + 1}`]))
      .map(([v, t]) => el("option", { value: v, text: t })));
    e["layer-select"].replaceChildren();
    e["step-slider"].max = String(tr.steps);
    e["pe-len"].max = String(tr.pe.shape[0]);
    e["play-speed"].value = String(s.speed);
    this.forcedNote(tr, s.origin);
    // a closed section keeps nothing of the last sentence: it draws this one when it opens
    for (const d of Object.values(this.sections)) {
      if (!d.open) for (const fig of d.querySelectorAll("figure[id]")) if (this.figs[fig.id]) this.figs[fig.id].clear();
    }
    if (!this.isOpen("lens")) this.clearLens();
    this.render(true);
  }

  forcedNote(tr, origin) {
    const forced = this.el["viewer-forced"], n = tr.forcedPrefix.length;
    forced.hidden = !n;
    if (n && origin === "beam") {
      forced.textContent = `Beam-search hypothesis: all ${n} tokens forced as beam search found them, so every step below shows how the model reads this version.`;
    } else if (n) {
      forced.textContent = `What-if version: step ${n} forced to ${quote(tr.tgt[n].replace(/▁/g, ""))}; later steps decoded greedily.`;
    }
  }

  clear() {
    const e = this.el;
    this.root.classList.add("ax-is-empty");
    for (const c of this.root.querySelectorAll(".ax-controls button, .ax-controls select, .ax-controls input")) c.disabled = true;
    for (const id of ["src-chips", "tgt-chips", "prefix-chips", "step-text", "pe-text"]) e[id].replaceChildren();
    for (const fig of Object.values(this.figs)) fig.clear();
    this.hits.clear();
    e["step-label"].textContent = "Step – of –";
    this.clearLens();
    e["viewer-forced"].hidden = true;
    e["attn-caption"].replaceChildren();
  }

  clearLens() {
    const e = this.el;
    for (const part of e["logit-lens"].children) part.replaceChildren();
    delete e["logit-lens"].dataset.step;
    e["logit-lens-note"].textContent = "";
  }

  /** Everything that depends on the step and the view settings (and, when `full`, the
   * positional encoding, which does not). */
  render(full = false) {
    const s = this.store.get(), tr = s.trace;
    if (!tr) return;
    this.controls(s, tr);
    const t = s.step - 1;
    this.chips(this.el["prefix-chips"], tr.tgt.slice(0, t + 2), t + 1);
    this.stepText(tr, t);
    this.drawTopk(tr, t);
    const lay = layout(tr, s);
    this.el["attn-caption"].replaceChildren(...CAPTIONS[s.view]());
    if (s.view === "rollout") this.drawRollout(s, tr, lay); else this.drawAttention(s, tr, lay);
    // the closed sections are drawn when they open (bindSections)
    if (this.isOpen("lens")) this.drawLens(tr, t);
    if (this.isOpen("views")) {
      this.drawEncoderRollout(s, tr);
      this.drawMosaic(s, tr, lay);
    }
    if (full && this.isOpen("pe")) this.renderPe();
  }

  /** The controls show the store's settings. */
  controls(s, tr) {
    const e = this.el, rollout = s.view === "rollout";
    e["step-slider"].value = String(s.step);
    e["step-label"].textContent = `Step ${s.step} of ${tr.steps}`;
    e["prev-btn"].disabled = s.step <= 1;
    e["next-btn"].disabled = s.step >= tr.steps;
    e["view-select"].value = s.view;
    for (const o of e["view-select"].options) o.disabled = o.value === "rollout" && !tr.rollout;
    e["layer-select"].disabled = e["head-select"].disabled = rollout; // they do not apply (see #rollout-note)
    e["layer-select"].title = e["head-select"].title = rollout ? "Rollout combines every layer and averages the heads" : "";
    e["rollout-note"].hidden = !rollout;
    e["attn-note"].hidden = rollout; // it speaks of heads and the mosaic, which rollout does not have
    const L = tr.layers(rollout ? "cross" : s.view);
    if (e["layer-select"].options.length !== L) {
      e["layer-select"].replaceChildren(...Array.from({ length: L }, (_, l) => el("option", { value: l + 1, text: `layer ${l + 1}` })));
    }
    e["layer-select"].value = String(s.layer);
    e["head-select"].value = s.head;
    e["hide-specials"].checked = s.hide;
    e["select-mode"].checked = s.selecting;
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
    const how = forced ? (t === tr.forcedPrefix.length - 1 && this.store.get().origin !== "beam" ? "forced by What if?" : "forced")
      : top && top.token === emitted ? `top candidate, p=${top.prob.toFixed(2)}` : "chosen";
    this.el["step-text"].replaceChildren(
      el("strong", { text: `Step ${t + 1} of ${tr.steps}. ` }),
      `The decoder reads ${quote(tr.tgt[t])} (input ${t + 1}) and emits ${quote(emitted)} (${how}).`,
    );
  }

  drawTopk(tr, t) {
    const fig = this.figs.topk;
    fig.setCaption("Next-token candidates (top-k probabilities)");
    this.hits.set("topk", drawTopk(fig.canvas, { cands: tr.topk(t), emitted: tr.tgt[t + 1], width: this.width() }));
    fig.el.dataset.step = String(t + 1);
  }

  /** Logit lens at step index t: what each decoder layer would emit if it were the last
   * (its output through the final norm and the output projection), top-5 per layer. */
  drawLens(tr, t) {
    const table = this.el["logit-lens"], lens = tr.lens(t);
    this.el["logit-lens-box"].hidden = !lens;
    if (!lens) return;
    const emitted = tr.tgt[t + 1];
    const [caption, thead, tbody] = table.children;
    caption.textContent = `Logit lens at step ${t + 1}: top-5 of each decoder layer`;
    thead.replaceChildren(el("tr", {}, [el("th", { text: "layer" }), ...lens[0].map((_, i) => el("th", { text: `#${i + 1}` }))]));
    tbody.replaceChildren(...lens.map((cands, l) => el("tr", {}, [
      el("th", { text: `${l + 1}${l === lens.length - 1 ? " (output)" : ""}` }),
      ...cands.map((c) => el("td", {
        className: c.token === emitted ? "ax-emitted" : "", title: `layer ${l + 1}: ${c.token}, p = ${c.prob.toFixed(4)}`,
      }, [el("span", { className: "ax-lens-tok", text: c.token }), el("span", { className: "ax-lens-p", text: c.prob.toFixed(2) })])),
    ])));
    // first layer from which the emitted token is top-1 and stays top-1 (as analysis.logit_lens_first_layer)
    let first = null;
    for (let l = lens.length - 1; l >= 0 && lens[l][0].token === emitted; l--) first = l;
    this.el["logit-lens-note"].textContent = first === null
      ? `${quote(emitted)} is not the top-1 of the last layer here (a forced step).`
      : first === 0 ? `${quote(emitted)} is already the top-1 after layer 1.`
        : `${quote(emitted)} becomes the top-1 at layer ${first + 1} and stays there.`;
    table.dataset.step = String(t + 1);
  }

  /** The settings a drawing shows, as data-* attributes tests and benchmarks wait for. */
  mark(id, s, extra = {}) {
    Object.assign(this.figs[id].el.dataset, { step: s.step, view: s.view, layer: s.layer, head: s.head, hide: s.hide ? "1" : "0", ...extra });
  }

  drawAttention(s, tr, lay) {
    const where = `layer ${s.layer}, ${headName(s.head)}`, head = headIndex(s.head);
    const stepPart = s.view === "encoder" ? ` (the same at every step; now step ${s.step})` : ` · step ${s.step} of ${tr.steps}`;
    const masked = (q, k) => lay.causal && k > q;
    const hit = drawHeatmap(this.figs["attn-plot"], {
      title: `${VIEWS[s.view]} · ${where}${stepPart}`, xTitle: AXES[s.view][1], yTitle: AXES[s.view][0],
      rows: lay.rows, cols: lay.cols, maxWidth: this.attnWidth(),
      matrix: attentionMatrix(tr, s.view, s.layer - 1, head, lay),
      tip: (r, c) => this.cellTip(s, lay.rows[r], lay.cols[c], masked, () => tr.weight(s.view, s.layer - 1, head, lay.rows[r].index, lay.cols[c].index), where),
    });
    this.hits.set("attn-plot", hit);
    this.mark("attn-plot", s, { grid: JSON.stringify(hit.geometry) });
  }

  /** The rollout view: source relevance of each generated step (future rows hidden). */
  drawRollout(s, tr, lay) {
    const K = tr.rollout.shape[1];
    const hit = drawHeatmap(this.figs["attn-plot"], {
      title: `${ROLLOUT_TITLE} · step ${s.step} of ${tr.steps}`, xTitle: AXES.rollout[1], yTitle: AXES.rollout[0],
      rows: lay.rows, cols: lay.cols, maxWidth: this.attnWidth(), matrix: analysisMatrix(tr.rollout, lay.rows, lay.cols),
      hi: maxOf(tr.rollout), scaleTitle: "relevance",
      tip: (r, c) => (lay.rows[r].future ? [`${lay.rows[r].tip} is not generated yet (now at step ${s.step})`]
        : [`${lay.rows[r].tip}`, `source: ${lay.cols[c].tip}`, `relevance: ${tr.rollout.data[lay.rows[r].index * K + lay.cols[c].index].toFixed(3)} (row sums to 1)`,
          "Chefer et al. 2021, attention-only rules"]),
    });
    this.hits.set("attn-plot", hit);
    this.mark("attn-plot", s, { grid: JSON.stringify(hit.geometry) });
  }

  /** Encoder rollout (S x S), shown beside the source relevance in the rollout view only. */
  drawEncoderRollout(s, tr) {
    const fig = this.figs["enc-rollout"];
    fig.el.hidden = s.view !== "rollout" || !tr.encoderRollout;
    if (fig.el.hidden) return;
    const { rows: axis } = layout(tr, { view: "encoder", step: s.step, hide: s.hide });
    const S = tr.encoderRollout.shape[1];
    const hit = drawHeatmap(fig, {
      title: ENC_ROLLOUT_TITLE, xTitle: "flows from source token", yTitle: "top-layer source position", rows: axis, cols: axis,
      matrix: analysisMatrix(tr.encoderRollout, axis, axis), hi: maxOf(tr.encoderRollout), scaleTitle: "share", maxWidth: this.width(),
      tip: (r, c) => [`position: ${axis[r].tip}`, `from: ${axis[c].tip}`,
        `share: ${tr.encoderRollout.data[axis[r].index * S + axis[c].index].toFixed(3)} (row sums to 1)`],
    });
    this.hits.set("enc-rollout", hit);
    fig.el.dataset.step = String(s.step);
  }

  /** Tooltip lines of one attention cell. */
  cellTip(s, row, col, masked, weight, where) {
    if (row.future) return [`${row.tip} is not generated yet (now at step ${s.step})`];
    const lines = [`query: ${row.tip}`, `key: ${col.tip}`];
    if (masked(row.index, col.index)) lines.push("masked: a decoder position cannot attend to later ones");
    else lines.push(`weight: ${weight().toFixed(3)}`);
    lines.push(where);
    return lines;
  }

  drawMosaic(s, tr, lay) {
    const fig = this.figs.mosaic;
    fig.el.hidden = s.view === "rollout"; // rollout has no heads
    this.el["select-mode-row"].hidden = !s.selectable || fig.el.hidden;
    if (fig.el.hidden) { this.mark("mosaic", s); return; }
    const kind = VIEW_KIND[s.view];
    const marked = new Set(s.selection.filter((h) => h.kind === kind).map((h) => `${h.layer - 1}:${h.head - 1}`));
    const how = s.selectable ? "click to open, shift-click to select for knock-out" : "click to open";
    const masked = (q, k) => lay.causal && k > q;
    const head = headIndex(s.head);
    fig.setCaption(`All heads: ${VIEWS[s.view]}${s.view === "encoder" ? "" : ` · step ${s.step}`}`);
    const hit = drawMosaic(fig.canvas, {
      layers: tr.layers(s.view), heads: tr.heads, rows: lay.rows, cols: lay.cols, maxWidth: this.width(),
      selected: { layer: s.layer - 1, head }, marked,
      matrix: (l, h) => attentionMatrix(tr, s.view, l, h, lay),
      tip: (l, h, r, c) => this.cellTip(s, lay.rows[r], lay.cols[c], masked, () => tr.weight(s.view, l, h, lay.rows[r].index, lay.cols[c].index),
        `layer ${l + 1}, head ${h + 1}${marked.has(`${l}:${h}`) ? " · selected for knock-out" : ""} (${how})`),
    });
    this.hits.set("mosaic", hit);
    this.mark("mosaic", s, { grid: JSON.stringify(hit.geometry) });
  }

  renderPe() {
    const s = this.store.get(), tr = s.trace;
    if (!tr) return;
    const e = this.el, width = this.width();
    const n = Math.min(Math.max(1, s.peLen), tr.pe.shape[0]), follow = Math.min(Math.max(0, s.peFollow), n - 1);
    e["pe-len"].value = String(n);
    e["pe-pos"].max = String(n - 1);
    e["pe-pos"].value = String(follow);
    e["pe-text"].textContent = follow < tr.src.length
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
      this.hits.set(id, fn(this.figs[id].canvas, { ...args, width: w }));
      this.figs[id].el.dataset.step = String(s.step);
    }
  }

  width() {
    return Math.max(280, (this.root.clientWidth || 800) - 8);
  }

  /** The main map's width: its column beside the candidates (the whole width when stacked). */
  attnWidth() {
    return Math.max(280, (this.el["attn-col"].clientWidth || this.width()) - 8);
  }

  /** The whole view as one PNG: every chart on screen, the logit-lens table included. */
  downloadView() {
    const s = this.store.get(), tr = s.trace;
    if (!tr) return;
    // only what is on screen: a closed section's last drawing may be of another step
    const f = this.figs, shown = (id) => !f[id].el.hidden && f[id].canvas.width > 1 && !f[id].el.closest("details:not([open])");
    const lens = this.isOpen("lens") ? tr.lens(s.step - 1) : null, parts = [];
    for (const id of ["attn-plot", "enc-rollout", "mosaic", "topk"]) if (shown(id)) parts.push(f[id].image());
    if (lens) {
      const table = document.createElement("canvas");
      drawLensTable(table, { lens, emitted: tr.tgt[s.step], caption: this.el["logit-lens"].children[0].textContent });
      parts.push(table);
    }
    for (const id of ["pe-heat", "pe-sim", "pe-curves"]) if (shown(id)) parts.push(f[id].image());
    const image = composite([
      `${tr.srcText}  →  ${tr.translation}`,
      `Step ${s.step} of ${tr.steps}: ${VIEWS[s.view]}${s.view === "rollout" ? "" : `, layer ${s.layer}, ${headName(s.head)}`}${s.hide ? ", specials hidden" : ""}`,
    ], parts);
    downloadPng(image, `attention-view-step${s.step}.png`);
  }
}

/** The viewer inside `host` (an element), showing `store`'s trace. */
export function mount(host, { store, server = null }) {
  return new Viewer(host, store, server);
}
