// The attention explorer's viewer: it receives one payload per sentence and draws every
// view in the browser. Stepping, Play, view/layer/head/mean/max and hide-specials never
// talk to the server. The same module runs in the Gradio Space and in notebooks
// (transformer/notebook.py). All user and token text goes in with textContent.
//
//   const viewer = mount(hostElement, { syncUrl: true, globalKeys: true, candidateSelector: "#candidate select" });
//   viewer.load(payload);   // an attention-explorer-payload/2 object, or null to clear

import { Trace } from "./payload.js";
import { drawHeatmap, drawMosaic, cellSize } from "./heatmap.js";
import { drawTopk, drawPeHeat, drawPeSim, drawPeCurves, peSimilarity } from "./charts.js";
import { downloadPng, composite, FUTURE_VALUE, el } from "./draw.js";

export const VIEWS = {
  cross: "Cross-attention", decoder: "Decoder self-attention", encoder: "Encoder self-attention",
  rollout: "Rollout: source relevance",
};
const AXES = {
  encoder: ["query: source token", "key: source token"],
  decoder: ["query: decoding step", "key: decoder input token"],
  cross: ["query: decoding step", "key: source token"],
  rollout: ["target step", "source token"],
};
/** Attention kind of a view, as the analyses name it (head masks, head stats). */
export const VIEW_KIND = { encoder: "encoder", decoder: "decoder_self", cross: "cross" };
export const KIND_VIEW = { encoder: "encoder", decoder_self: "decoder", cross: "cross" };
export const KIND_NAMES = { encoder: "encoder self-attention", decoder_self: "decoder self-attention", cross: "cross-attention" };
/** A head as people read it (1-based): "cross-attention, layer 1, head 4". */
export const headLabel = (h) => `${KIND_NAMES[h.kind]}, layer ${h.layer + 1}, head ${h.head + 1}`;
/** A head as the server reads it (0-based): "cross:0:3" (format in panels/analysis.py). */
export const headKey = (h) => `${h.kind}:${h.layer}:${h.head}`;
const ROLLOUT_TITLE = "Source relevance of each step: Chefer et al. 2021, attention-only rules (all layers, mean of heads)";
const ENC_ROLLOUT_TITLE = "Encoder rollout: Abnar & Zuidema 2020 (0.5·A + 0.5·I, mean of heads, through all layers)";
const SPEEDS = [1, 2, 4, 8, 12];


const headName = (head) => (head === "mean" ? "mean over heads" : head === "max" ? "max over heads" : `head ${Number(head) + 1}`);
const quote = (tok) => `“${tok}”`;
const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

/** Read view settings from the URL: the fragment (#text=...&step=3) wins over the query (?text=...). */
export function urlSettings(loc = window.location) {
  const hash = new URLSearchParams(loc.hash.replace(/^#/, ""));
  return hash.get("text") ? hash : new URLSearchParams(loc.search);
}

export class Viewer {
  constructor(host, { syncUrl = false, globalKeys = false, candidateSelector = null } = {}) {
    this.host = host;
    this.syncUrl = syncUrl;
    this.trace = null;
    this.state = { step: 1, view: "cross", layer: 0, head: "mean", hide: false, speed: 4, peLen: 12, peFollow: 0 };
    this.hits = new Map(); // canvas -> hit-test function of its last drawing
    this.timer = null;
    this.pendingUrl = syncUrl ? urlSettings() : null;
    this.selection = new Map(); // heads picked for knock-out: headKey -> {kind, layer, head}
    this.selectable = false; // turned on by a page that can knock heads out (web/analysis.js)
    this.listeners = new Set();
    this.build();
    this.candidateSelector = candidateSelector;
    this.bindKeys(globalKeys);
    this.clear();
  }

  // --- DOM --------------------------------------------------------------------------------
  build() {
    const $ = (id) => this.root.querySelector(`#${id}`);
    const fig = (id, label) => el("figure", { id, className: "ax-fig", "data-needs-trace": true }, [
      el("div", { className: "ax-scroll" }, [el("canvas", { "aria-label": label, role: "img" })]),
      el("button", { type: "button", className: "ax-png", text: "PNG", title: `Download ${label} as PNG` }),
    ]);
    const select = (id, label, options = []) => el("label", { className: "ax-field" }, [
      el("span", { text: label }),
      el("select", { id }, options.map(([v, t]) => el("option", { value: v, text: t }))),
    ]);
    this.root = el("div", { className: "ax-root", tabindex: "-1" }, [
      el("p", { id: "viewer-empty", className: "ax-empty", text: "Translate a sentence to step through its decoding here." }),
      el("p", { id: "viewer-forced", className: "ax-forced", hidden: true }),
      el("div", { className: "ax-tokens", "data-needs-trace": true }, [
        el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label", text: "Source tokens" }), el("div", { id: "src-chips", className: "ax-chips" })]),
        el("div", { className: "ax-tokrow" }, [el("span", { className: "ax-label", text: "Target tokens" }), el("div", { id: "tgt-chips", className: "ax-chips" })]),
        el("p", { className: "ax-note", text: "Each chip is one subword token. ▁ marks a token that starts a new word; a chip without it continues the word before. Grey chips are the markers [SOS] (start) and [EOS] (end)." }),
      ]),
      el("div", { className: "ax-controls" }, [
        el("button", { id: "prev-btn", type: "button", text: "◀", "aria-label": "Previous step", title: "Previous step (←)" }),
        el("input", { id: "step-slider", type: "range", min: 1, max: 1, value: 1, step: 1, "aria-label": "Step" }),
        el("button", { id: "next-btn", type: "button", text: "▶", "aria-label": "Next step", title: "Next step (→)" }),
        el("button", { id: "play-btn", type: "button", text: "▶ Play", title: "Play / pause (space)" }),
        select("play-speed", "speed", SPEEDS.map((s) => [s, `${s} steps/s`])),
        el("span", { id: "step-label", className: "ax-steplabel", text: "Step – of –" }),
      ]),
      el("div", { className: "ax-tokrow", "data-needs-trace": true }, [el("span", { className: "ax-label", text: "Generated so far" }), el("div", { id: "prefix-chips", className: "ax-chips" })]),
      el("p", { id: "step-text", className: "ax-steptext", "data-needs-trace": true }),
      el("div", { className: "ax-toprow", "data-needs-trace": true }, [
        fig("topk", "next-token candidates"),
        el("div", { id: "logit-lens-box", className: "ax-lens" }, [
          el("table", { id: "logit-lens", className: "ax-lens-table" }, [el("caption"), el("thead"), el("tbody")]),
          el("p", { id: "logit-lens-note", className: "ax-note" }),
        ]),
      ]),
      el("div", { className: "ax-controls" }, [
        select("view-select", "attention", Object.entries(VIEWS)),
        select("layer-select", "layer"),
        select("head-select", "head"),
        el("label", { className: "ax-field" }, [el("input", { id: "hide-specials", type: "checkbox" }), el("span", { text: "hide [SOS] [EOS] [PAD] (weights not renormalised)" })]),
      ]),
      el("p", { className: "ax-note", "data-needs-trace": true, text: "Rows are queries, columns are keys. Hover a cell to name it; click a tile of the mosaic to open that head. Keys: ← → step, space plays." }),
      el("p", { id: "rollout-note", className: "ax-note", hidden: true, text: "Layer and head do not apply to rollout: it combines every layer and averages the heads. Rows are target steps (each sums to 1 over the source), columns source tokens." }),
      fig("attn-plot", "attention heatmap"),
      fig("enc-rollout", "encoder rollout"),
      el("div", { id: "select-mode-row", className: "ax-controls", hidden: true }, [
        el("label", { className: "ax-field" }, [el("input", { id: "select-mode", type: "checkbox" }),
          el("span", { text: "select mode: a click on a head adds it to (or removes it from) the knock-out selection; shift-click does the same at any time" })]),
      ]),
      fig("mosaic", "all heads"),
      el("details", { className: "ax-pe", "data-needs-trace": true, open: true }, [
        el("summary", { text: "Positional encoding" }),
        el("div", { className: "ax-controls" }, [
          el("label", { className: "ax-field" }, [el("span", { text: "positions shown" }), el("input", { id: "pe-len", type: "range", min: 1, max: 16, value: 12 })]),
          el("label", { className: "ax-field" }, [el("span", { text: "position to follow" }), el("input", { id: "pe-pos", type: "range", min: 0, max: 11, value: 0 })]),
        ]),
        el("p", { id: "pe-text", className: "ax-note" }),
        fig("pe-heat", "positional encoding table"),
        el("div", { className: "ax-perow" }, [fig("pe-sim", "position similarity"), fig("pe-curves", "encoding curves")]),
      ]),
      el("div", { className: "ax-controls" }, [
        el("button", { id: "download-view-png", type: "button", text: "Download this view (PNG)" }),
      ]),
      el("div", { id: "viewer-tooltip", className: "ax-tooltip", role: "tooltip", hidden: true }),
    ]);
    this.host.replaceChildren(this.root);
    this.el = {};
    for (const id of ["viewer-empty", "viewer-forced", "src-chips", "tgt-chips", "prev-btn", "step-slider", "next-btn",
      "play-btn", "play-speed", "step-label", "prefix-chips", "step-text", "topk", "view-select", "layer-select",
      "head-select", "hide-specials", "attn-plot", "mosaic", "pe-len", "pe-pos", "pe-text", "pe-heat", "pe-sim",
      "pe-curves", "download-view-png", "viewer-tooltip", "enc-rollout", "rollout-note", "logit-lens", "logit-lens-box",
      "logit-lens-note", "select-mode", "select-mode-row"]) this.el[id] = $(id);
    const e = this.el;
    e["play-speed"].value = String(this.state.speed);
    e["prev-btn"].addEventListener("click", () => this.move(-1));
    e["next-btn"].addEventListener("click", () => this.move(+1));
    e["step-slider"].addEventListener("input", () => this.set({ step: Number(e["step-slider"].value) }));
    e["play-btn"].addEventListener("click", () => this.togglePlay());
    e["play-speed"].addEventListener("change", () => { this.state.speed = Number(e["play-speed"].value); if (this.timer) this.play(); });
    e["view-select"].addEventListener("change", () => this.set({ view: e["view-select"].value }));
    e["layer-select"].addEventListener("change", () => this.set({ layer: Number(e["layer-select"].value) }));
    e["head-select"].addEventListener("change", () => this.set({ head: e["head-select"].value }));
    e["hide-specials"].addEventListener("change", () => this.set({ hide: e["hide-specials"].checked }));
    e["pe-len"].addEventListener("input", () => this.setPe({ peLen: Number(e["pe-len"].value) }));
    e["pe-pos"].addEventListener("input", () => this.setPe({ peFollow: Number(e["pe-pos"].value) }));
    e["download-view-png"].addEventListener("click", () => this.downloadView());
    for (const id of ["topk", "attn-plot", "enc-rollout", "mosaic", "pe-heat", "pe-sim", "pe-curves"]) {
      const figure = e[id], canvas = figure.querySelector("canvas");
      figure.querySelector(".ax-png").addEventListener("click", () => downloadPng(canvas, `${id}-step${this.state.step}.png`));
      canvas.addEventListener("pointermove", (ev) => this.hover(canvas, ev));
      canvas.addEventListener("pointerleave", () => { e["viewer-tooltip"].hidden = true; });
    }
    e.mosaic.querySelector("canvas").addEventListener("click", (ev) => {
      const hit = this.hitAt(e.mosaic.querySelector("canvas"), ev);
      if (!hit || hit.layer === undefined) return;
      const kind = VIEW_KIND[this.state.view];
      if (this.selectable && kind && (ev.shiftKey || ev.ctrlKey || ev.metaKey || e["select-mode"].checked)) {
        this.toggleHead({ kind, layer: hit.layer, head: hit.head });
      } else this.set({ layer: hit.layer, head: String(hit.head) });
    });
    this.root.addEventListener("pointerdown", () => { Viewer.active = this; });
    let resize = null;
    window.addEventListener("resize", () => { clearTimeout(resize); resize = setTimeout(() => this.render(true), 150); });
  }

  /** The What-if candidate list: a native <select> in a separate Gradio block (#candidate), looked
   * up on use because that block may mount after this one. */
  get candidate() {
    return this.candidateSelector ? document.querySelector(this.candidateSelector) : null;
  }

  bindKeys(global) {
    // ←/→ step and space plays, unless focus is in something that uses those keys itself
    document.addEventListener("keydown", (ev) => {
      if (!this.trace || ev.altKey || ev.ctrlKey || ev.metaKey) return;
      const t = ev.target;
      const inside = this.root.contains(t);
      if (!(global ? Viewer.active === this || !Viewer.active : inside)) return;
      if (t.closest && t.closest("textarea, select, [contenteditable=''], [contenteditable='true']")) return;
      const tag = t.tagName === "INPUT" ? (t.type || "text") : t.tagName;
      if (tag !== "range" && tag !== "checkbox" && t.tagName === "INPUT") return; // text-like inputs
      if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
        if (tag === "range") return; // the focused slider moves itself and fires "input"
        ev.preventDefault();
        this.move(ev.key === "ArrowLeft" ? -1 : +1);
      } else if (ev.key === " " || ev.key === "Spacebar") {
        if ((tag === "BUTTON" && !inside) || tag === "checkbox") return; // let space press it
        ev.preventDefault();
        this.togglePlay();
      }
    });
    Viewer.active = Viewer.active || this;
  }

  // --- events and head selection (used by the analysis panel, web/analysis.js) ----------------
  /** Call fn(type, viewer) on "load" (new sentence or cleared), "render" and "selection". */
  on(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  emit(type) {
    for (const fn of this.listeners) {
      try { fn(type, this); } catch (err) { console.error(err); }
    }
  }

  /** Let mosaic clicks pick heads for knock-out (the Space does; a notebook has no server). */
  enableSelection() {
    this.selectable = true;
    this.el["select-mode-row"].hidden = false;
  }

  selectedHeads() {
    return [...this.selection.values()];
  }

  toggleHead(h, on = !this.selection.has(headKey(h))) {
    if (on) this.selection.set(headKey(h), { kind: h.kind, layer: h.layer, head: h.head });
    else this.selection.delete(headKey(h));
    if (this.trace) this.drawMosaic();
    this.emit("selection");
  }

  clearSelection() {
    this.selection.clear();
    if (this.trace) this.drawMosaic();
    this.emit("selection");
  }

  /** Show one head in the main view: its kind's view, its layer and head. */
  openHead(h) {
    this.set({ view: KIND_VIEW[h.kind], layer: h.layer, head: String(h.head) });
  }

  // --- state ------------------------------------------------------------------------------
  /** Clamp every setting to what the loaded trace has: the one place layer/head/step are checked. */
  normalise() {
    const s = this.state, tr = this.trace;
    if (!VIEWS[s.view]) s.view = "cross";
    if (!tr) return;
    if (s.view === "rollout" && !tr.rollout) s.view = "cross"; // a payload without analyses
    s.step = clamp(Math.round(Number(s.step)) || 1, 1, tr.steps);
    // rollout has no layer: keep the one of the attention views, clamped as for cross
    s.layer = clamp(Math.floor(Number(s.layer)) || 0, 0, tr.layers(s.view === "rollout" ? "cross" : s.view) - 1);
    if (s.head !== "mean" && s.head !== "max") {
      const h = parseInt(s.head, 10);
      s.head = Number.isFinite(h) ? String(clamp(h, 0, tr.heads - 1)) : "mean";
    }
    s.hide = s.hide === true || s.hide === "1" || s.hide === "true";
    const P = tr.pe.shape[0];
    s.peLen = clamp(Math.round(s.peLen) || 1, 1, P);
    s.peFollow = clamp(Math.round(s.peFollow) || 0, 0, s.peLen - 1);
  }

  set(patch) {
    if (Object.prototype.hasOwnProperty.call(patch, "step") && this.timer && patch.step !== this.state.step + 1) this.stop();
    Object.assign(this.state, patch);
    this.render();
  }

  setPe(patch) {
    Object.assign(this.state, patch);
    this.normalise();
    this.renderPe();
  }

  move(delta) {
    this.set({ step: this.state.step + delta });
  }

  // --- play -------------------------------------------------------------------------------
  togglePlay() {
    if (this.timer) this.stop(); else this.play();
  }

  play() {
    if (!this.trace) return;
    clearInterval(this.timer);
    if (this.state.step >= this.trace.steps) { this.state.step = 1; this.render(); }
    this.timer = setInterval(() => {
      if (!this.trace || this.state.step >= this.trace.steps) { this.stop(); return; }
      Object.assign(this.state, { step: this.state.step + 1 });
      this.render();
    }, 1000 / this.state.speed);
    this.el["play-btn"].textContent = "⏸ Pause";
    this.el["play-btn"].setAttribute("aria-pressed", "true");
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    this.el["play-btn"].textContent = "▶ Play";
    this.el["play-btn"].setAttribute("aria-pressed", "false");
  }

  // --- loading ----------------------------------------------------------------------------
  /** Show a new sentence (payload object or JSON string), or clear the viewer with null/"". */
  load(payload) {
    if (typeof payload === "string") payload = payload.trim() ? JSON.parse(payload) : null;
    if (!payload) { this.clear(); this.emit("load"); return; }
    this.stop();
    const tr = new Trace(payload);
    this.trace = tr;
    Object.assign(this.state, { step: 1, peLen: tr.src.length, peFollow: 0 });
    const url = this.pendingUrl;
    if (url && url.get("text") === tr.srcText) { // a shared link: reopen exactly that view
      for (const k of ["step", "view", "layer", "head", "hide"]) if (url.get(k) !== null) this.state[k] = url.get(k);
    }
    this.pendingUrl = null; // only the first sentence after page load comes from the link
    if (payload.origin === "whatif" && tr.forcedPrefix.length) this.state.step = tr.forcedPrefix.length;
    this.root.classList.remove("ax-is-empty");
    for (const c of this.root.querySelectorAll(".ax-controls button, .ax-controls select, .ax-controls input")) c.disabled = false;
    this.chips(this.el["src-chips"], tr.src);
    this.chips(this.el["tgt-chips"], tr.tgt);
    const head = this.el["head-select"];
    head.replaceChildren(...[["mean", "mean over heads"], ["max", "max over heads"]]
      .concat(Array.from({ length: tr.heads }, (_, h) => [String(h), `head ${h + 1}`]))
      .map(([v, t]) => el("option", { value: v, text: t })));
    this.el["step-slider"].max = String(tr.steps);
    this.el["pe-len"].max = String(tr.pe.shape[0]);
    const forced = this.el["viewer-forced"];
    if (tr.forcedPrefix.length && payload.origin === "beam") { // a beam hypothesis, opened from the beam tree
      forced.textContent = `Beam-search hypothesis: all ${tr.forcedPrefix.length} tokens forced as beam search found them, ` +
        "so every step below shows how the model reads this version.";
      forced.hidden = false;
    } else if (tr.forcedPrefix.length) {
      const n = tr.forcedPrefix.length;
      forced.textContent = `What-if version: step ${n} forced to ${quote(tr.tgt[n].replace(/▁/g, ""))}; later steps decoded greedily.`;
      forced.hidden = false;
    } else forced.hidden = true;
    this.render(true);
    if (payload.origin === "whatif" || payload.origin === "beam") this.root.scrollIntoView({ behavior: "smooth", block: "start" });
    this.emit("load");
  }

  clear() {
    this.stop();
    this.trace = null;
    this.root.classList.add("ax-is-empty");
    for (const c of this.root.querySelectorAll(".ax-controls button, .ax-controls select, .ax-controls input")) c.disabled = true;
    for (const id of ["src-chips", "tgt-chips", "prefix-chips", "step-text", "pe-text"]) this.el[id].replaceChildren();
    for (const id of ["topk", "attn-plot", "enc-rollout", "mosaic", "pe-heat", "pe-sim", "pe-curves"]) {
      const f = this.el[id];
      for (const k of ["step", "view", "layer", "head", "hide"]) delete f.dataset[k];
      const c = f.querySelector("canvas");
      c.width = c.height = 0;
      c.style.width = c.style.height = "0px";
    }
    this.el["step-label"].textContent = "Step – of –";
    for (const part of this.el["logit-lens"].children) part.replaceChildren();
    delete this.el["logit-lens"].dataset.step;
    this.el["logit-lens-note"].textContent = "";
    this.el["viewer-forced"].hidden = true;
    const cand = this.candidate;
    if (cand) { cand.replaceChildren(); cand.disabled = true; }
  }

  // --- drawing ----------------------------------------------------------------------------
  chips(box, tokens, current = -1) {
    box.replaceChildren(...tokens.map((tok, i) => {
      const chip = el("span", { className: "chip" });
      if (this.trace.isSpecial(tok)) chip.classList.add("special");
      if (i === current) chip.classList.add("current");
      if (tok.startsWith("▁")) {
        chip.append(el("span", { className: "ws", text: "▁", "aria-hidden": "true" }), tok.slice(1));
      } else chip.textContent = tok;
      chip.title = `token ${i + 1}: ${tok}`;
      return chip;
    }));
  }

  /** Rows and columns of the current view, after hide-specials, with labels and tooltips. */
  layout() {
    const tr = this.trace, s = this.state, t = s.step - 1;
    const keep = (tokens) => tokens.map((tok, i) => i).filter((i) => !(s.hide && tr.isSpecial(tokens[i])));
    const srcCol = (i) => ({ index: i, label: tr.src[i], tip: `source token ${i + 1} ${quote(tr.src[i])}` });
    if (s.view === "encoder") {
      const idx = keep(tr.src);
      return { rows: idx.map(srcCol), cols: idx.map(srcCol), causal: false };
    }
    const rows = Array.from({ length: tr.steps }, (_, i) => (i <= t
      ? { index: i, label: `${i + 1}: ${tr.tgt[i]} → ${tr.tgt[i + 1]}`, current: i === t,
        tip: `step ${i + 1} (reads ${quote(tr.tgt[i])}, emits ${quote(tr.tgt[i + 1])})` }
      : { index: i, label: `${i + 1}: not generated yet`, future: true, tip: `step ${i + 1}` }));
    if (s.view === "cross" || s.view === "rollout") return { rows, cols: keep(tr.src).map(srcCol), causal: false };
    // decoder self-attention: keys are the decoder inputs; later inputs are not known yet at this step
    const cols = keep(tr.tgt.slice(0, tr.steps)).map((j) => (j <= t
      ? { index: j, label: tr.tgt[j], tip: `decoder input ${j + 1} ${quote(tr.tgt[j])}` }
      : { index: j, label: "·", tip: `decoder input ${j + 1} (not generated yet)` }));
    return { rows, cols, causal: true };
  }

  /** The shown rows x cols of one (layer, head) as a Float32Array; head may be "mean"/"max".
   * NaN marks masked cells (a causal key after its query), -Infinity rows not generated yet. */
  matrix(view, layer, head, rows, cols, causal) {
    const { shape: [, H, Q, K], data } = this.trace.attn[view];
    const R = rows.length, C = cols.length, out = new Float32Array(R * C);
    const colIdx = Int32Array.from(cols, (c) => c.index);
    const base = layer * H * Q * K, hs = head === "mean" || head === "max" ? null : Number(head);
    for (let r = 0; r < R; r++) {
      const q = rows[r].index, o = r * C;
      if (rows[r].future) { out.fill(FUTURE_VALUE, o, o + C); continue; }
      for (let c = 0; c < C; c++) {
        const k = colIdx[c];
        if (causal && k > q) { out[o + c] = NaN; continue; }
        if (hs !== null) { out[o + c] = data[base + hs * Q * K + q * K + k]; continue; }
        let acc = head === "mean" ? 0 : -Infinity;
        for (let h = 0, p = base + q * K + k; h < H; h++, p += Q * K) acc = head === "mean" ? acc + data[p] : Math.max(acc, data[p]);
        out[o + c] = head === "mean" ? acc / H : acc;
      }
    }
    return out;
  }

  render(full = false) {
    const tr = this.trace;
    if (!tr) return;
    this.normalise();
    const s = this.state, e = this.el, t = s.step - 1;
    e["step-slider"].value = String(s.step);
    e["step-label"].textContent = `Step ${s.step} of ${tr.steps}`;
    e["prev-btn"].disabled = s.step <= 1;
    e["next-btn"].disabled = s.step >= tr.steps;
    e["view-select"].value = s.view;
    for (const o of e["view-select"].options) o.disabled = o.value === "rollout" && !tr.rollout;
    const rollout = s.view === "rollout";
    e["layer-select"].disabled = e["head-select"].disabled = rollout; // they do not apply (see #rollout-note)
    e["layer-select"].title = e["head-select"].title = rollout ? "Rollout combines every layer and averages the heads" : "";
    e["rollout-note"].hidden = !rollout;
    const L = tr.layers(rollout ? "cross" : s.view);
    if (e["layer-select"].options.length !== L) {
      e["layer-select"].replaceChildren(...Array.from({ length: L }, (_, l) => el("option", { value: l, text: `layer ${l + 1}` })));
    }
    e["layer-select"].value = String(s.layer);
    e["head-select"].value = s.head;
    e["hide-specials"].checked = s.hide;

    this.chips(e["prefix-chips"], tr.tgt.slice(0, t + 2), t + 1);
    this.stepText(t);
    const cands = tr.topk(t);
    this.hits.set(e.topk.querySelector("canvas"), drawTopk(e.topk.querySelector("canvas"), { cands, emitted: tr.tgt[t + 1], width: this.width() }));
    this.drawLens(t);
    this.drawAttention();
    this.drawEncoderRollout();
    this.drawMosaic();
    const cand = this.candidate;
    if (cand) {
      cand.replaceChildren(...cands.map((c, k) => el("option", { value: k, text: `${k + 1}. ${c.token}  (p=${c.prob.toFixed(2)})` })));
      cand.value = String(Math.min(1, cands.length - 1));
      cand.disabled = false;
    }
    if (full) this.renderPe();
    this.writeUrl();
    this.emit("render");
  }

  /** Logit lens at step index t: what each decoder layer would emit if it were the last
   * (its output through the final norm and the output projection), top-5 per layer. */
  drawLens(t) {
    const tr = this.trace, table = this.el["logit-lens"], box = this.el["logit-lens-box"];
    const lens = tr.lens(t);
    box.hidden = !lens;
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

  stepText(t) {
    const tr = this.trace, box = this.el["step-text"];
    const emitted = tr.tgt[t + 1], top = tr.topk(t)[0];
    const forced = t < tr.forcedPrefix.length;
    const how = forced ? (t === tr.forcedPrefix.length - 1 ? "forced by What if?" : "as in the original decoding")
      : top && top.token === emitted ? `top candidate, p=${top.prob.toFixed(2)}` : "chosen";
    box.replaceChildren(
      el("strong", { text: `Step ${t + 1} of ${tr.steps}. ` }),
      `The decoder reads ${quote(tr.tgt[t])} (input ${t + 1}) and emits ${quote(emitted)} (${how}).`,
    );
  }

  /** Rows x cols of a (Q, K) analysis matrix (rollout), future rows hidden; its largest value. */
  analysisMatrix({ shape: [, K], data }, rows, cols) {
    const out = new Float32Array(rows.length * cols.length);
    let hi = 0;
    rows.forEach((r, i) => {
      const o = i * cols.length;
      if (r.future) { out.fill(FUTURE_VALUE, o, o + cols.length); return; }
      cols.forEach((c, j) => { const v = data[r.index * K + c.index]; out[o + j] = v; hi = Math.max(hi, v); });
    });
    return { matrix: out, hi };
  }

  /** The scale of a rollout map: the sentence's largest value, so stepping never rescales. */
  static maxOf(a) {
    let hi = 0;
    for (const v of a.data) hi = Math.max(hi, v);
    return hi > 0 ? hi : 1;
  }

  drawAttention() {
    const tr = this.trace, s = this.state, fig = this.el["attn-plot"], canvas = fig.querySelector("canvas");
    if (s.view === "rollout") { this.drawRollout(); return; }
    const { rows, cols, causal } = this.layout();
    const masked = (q, k) => causal && k > q;
    const where = `layer ${s.layer + 1}, ${headName(s.head)}`;
    const stepPart = s.view === "encoder" ? ` (the same at every step; now step ${s.step})` : ` · step ${s.step} of ${tr.steps}`;
    const hit = drawHeatmap(canvas, {
      title: `${VIEWS[s.view]} · ${where}${stepPart}`,
      xTitle: AXES[s.view][1], yTitle: AXES[s.view][0], rows, cols,
      cell: cellSize(Math.max(rows.length, cols.length)),
      matrix: this.matrix(s.view, s.layer, s.head, rows, cols, causal),
      tip: (r, c) => this.tip(rows[r], cols[c], masked, () => tr.weight(s.view, s.layer, s.head, rows[r].index, cols[c].index), where),
    });
    this.hits.set(canvas, hit);
    Object.assign(fig.dataset, { step: s.step, view: s.view, layer: s.layer, head: s.head, hide: s.hide ? "1" : "0" });
  }

  /** The rollout view: source relevance of each generated step (future rows hidden). */
  drawRollout() {
    const tr = this.trace, s = this.state, fig = this.el["attn-plot"], canvas = fig.querySelector("canvas");
    const { rows, cols } = this.layout();
    const { matrix } = this.analysisMatrix(tr.rollout, rows, cols);
    const K = tr.rollout.shape[1];
    const hit = drawHeatmap(canvas, {
      title: `${ROLLOUT_TITLE} · step ${s.step} of ${tr.steps}`,
      xTitle: AXES.rollout[1], yTitle: AXES.rollout[0], rows, cols, matrix, hi: Viewer.maxOf(tr.rollout), scaleTitle: "relevance",
      cell: cellSize(Math.max(rows.length, cols.length)),
      tip: (r, c) => (rows[r].future ? [`${rows[r].tip} is not generated yet (now at step ${s.step})`]
        : [`${rows[r].tip}`, `source: ${cols[c].tip}`, `relevance: ${tr.rollout.data[rows[r].index * K + cols[c].index].toFixed(3)} (row sums to 1)`,
          "Chefer et al. 2021, attention-only rules"]),
    });
    this.hits.set(canvas, hit);
    Object.assign(fig.dataset, { step: s.step, view: s.view, layer: s.layer, head: s.head, hide: s.hide ? "1" : "0" });
  }

  /** Encoder rollout (S x S), shown beside the source relevance in the rollout view only. */
  drawEncoderRollout() {
    const tr = this.trace, s = this.state, fig = this.el["enc-rollout"], canvas = fig.querySelector("canvas");
    fig.hidden = s.view !== "rollout" || !tr.encoderRollout;
    if (fig.hidden) return;
    const keep = tr.src.map((_, i) => i).filter((i) => !(s.hide && tr.isSpecial(tr.src[i])));
    const axis = keep.map((i) => ({ index: i, label: tr.src[i], tip: `source token ${i + 1} ${quote(tr.src[i])}` }));
    const { matrix } = this.analysisMatrix(tr.encoderRollout, axis, axis);
    const S = tr.encoderRollout.shape[1];
    this.hits.set(canvas, drawHeatmap(canvas, {
      title: ENC_ROLLOUT_TITLE, xTitle: "flows from source token", yTitle: "top-layer source position", rows: axis, cols: axis,
      matrix, hi: Viewer.maxOf(tr.encoderRollout), scaleTitle: "share", cell: cellSize(axis.length),
      tip: (r, c) => [`position: ${axis[r].tip}`, `from: ${axis[c].tip}`,
        `share: ${tr.encoderRollout.data[axis[r].index * S + axis[c].index].toFixed(3)} (row sums to 1)`],
    }));
    fig.dataset.step = String(s.step);
  }

  tip(row, col, masked, weight, where) {
    if (row.future) return [`${row.tip} is not generated yet (now at step ${this.state.step})`];
    const lines = [`query: ${row.tip}`, `key: ${col.tip}`];
    if (masked(row.index, col.index)) lines.push("masked: a decoder position cannot attend to later ones");
    else lines.push(`weight: ${weight().toFixed(3)}`);
    lines.push(where);
    return lines;
  }

  drawMosaic() {
    const tr = this.trace, s = this.state, fig = this.el.mosaic, canvas = fig.querySelector("canvas");
    fig.hidden = s.view === "rollout"; // rollout has no heads
    this.el["select-mode-row"].hidden = !this.selectable || fig.hidden;
    if (fig.hidden) { Object.assign(fig.dataset, { step: s.step, view: s.view, hide: s.hide ? "1" : "0" }); return; }
    const { rows, cols, causal } = this.layout();
    const kind = VIEW_KIND[s.view];
    const marked = new Set(this.selectedHeads().filter((h) => h.kind === kind).map((h) => `${h.layer}:${h.head}`));
    const how = this.selectable ? "click to open, shift-click to select for knock-out" : "click to open";
    const masked = (q, k) => causal && k > q;
    const hit = drawMosaic(canvas, {
      title: `All heads: ${VIEWS[s.view]}${s.view === "encoder" ? "" : ` · step ${s.step}`}`,
      layers: tr.layers(s.view), heads: tr.heads, rows, cols, maxWidth: this.width(), selected: { layer: s.layer, head: s.head }, marked,
      matrix: (l, h) => this.matrix(s.view, l, String(h), rows, cols, causal),
      tip: (l, h, r, c) => this.tip(rows[r], cols[c], masked, () => tr.weight(s.view, l, h, rows[r].index, cols[c].index),
        `layer ${l + 1}, head ${h + 1}${marked.has(`${l}:${h}`) ? " · selected for knock-out" : ""} (${how})`),
    });
    this.hits.set(canvas, (x, y) => { const h = hit(x, y); return h && h.lines; });
    this.mosaicHit = hit;
    Object.assign(fig.dataset, { step: s.step, view: s.view, hide: s.hide ? "1" : "0" });
  }

  renderPe() {
    const tr = this.trace;
    if (!tr) return;
    this.normalise();
    const s = this.state, e = this.el, width = this.width();
    e["pe-len"].value = String(s.peLen);
    e["pe-pos"].max = String(s.peLen - 1);
    e["pe-pos"].value = String(s.peFollow);
    e["pe-text"].textContent = s.peFollow < tr.src.length
      ? `Position ${s.peFollow} holds source token ${quote(tr.src[s.peFollow])}. Positions count from 0, as in the formula.`
      : `Position ${s.peFollow} is past the end of this sentence (${tr.src.length} source tokens).`;
    if (!this.simCache || this.simCache.trace !== tr || this.simCache.n !== s.peLen) {
      this.simCache = { trace: tr, n: s.peLen, sim: peSimilarity(tr.pe, s.peLen) }; // only when the length changes
    }
    const args = { pe: tr.pe, n: s.peLen, src: tr.src, follow: s.peFollow, sim: this.simCache.sim };
    const half = width >= 900 ? Math.floor(width / 2) - 12 : width;
    for (const [id, fn, w] of [["pe-heat", drawPeHeat, width], ["pe-sim", drawPeSim, half], ["pe-curves", drawPeCurves, half]]) {
      const canvas = e[id].querySelector("canvas");
      this.hits.set(canvas, fn(canvas, { ...args, width: w }));
      e[id].dataset.step = String(s.step);
    }
  }

  width() {
    return Math.max(300, (this.root.clientWidth || 800) - 8);
  }

  // --- tooltip, URL, export -----------------------------------------------------------------
  hitAt(canvas, ev) {
    const r = canvas.getBoundingClientRect();
    if (canvas === this.el.mosaic.querySelector("canvas")) return this.mosaicHit && this.mosaicHit(ev.clientX - r.left, ev.clientY - r.top);
    const fn = this.hits.get(canvas);
    return fn ? fn(ev.clientX - r.left, ev.clientY - r.top) : null;
  }

  hover(canvas, ev) {
    const tipBox = this.el["viewer-tooltip"];
    const r = canvas.getBoundingClientRect();
    const fn = this.hits.get(canvas);
    const lines = fn && fn(ev.clientX - r.left, ev.clientY - r.top);
    if (!lines || !lines.length) { tipBox.hidden = true; return; }
    tipBox.replaceChildren(...lines.map((l) => el("div", { text: l })));
    tipBox.hidden = false;
    const x = Math.min(ev.clientX + 14, window.innerWidth - tipBox.offsetWidth - 4);
    const y = ev.clientY + 16 + tipBox.offsetHeight > window.innerHeight ? ev.clientY - tipBox.offsetHeight - 8 : ev.clientY + 16;
    tipBox.style.left = `${Math.max(4, x)}px`;
    tipBox.style.top = `${Math.max(4, y)}px`;
  }

  /** Keep the fragment in step with the view, so the address bar is a shareable link. */
  writeUrl() {
    if (!this.syncUrl || !this.trace) return;
    const s = this.state;
    const frag = new URLSearchParams({ text: this.trace.srcText, step: s.step, view: s.view, layer: s.layer, head: s.head, hide: s.hide ? 1 : 0 });
    const url = new URL(window.location.href);
    url.searchParams.delete("text");
    url.hash = frag.toString();
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  }

  downloadView() {
    if (!this.trace) return;
    const tr = this.trace, s = this.state;
    const canvases = ["attn-plot", "enc-rollout", "mosaic", "topk", "pe-heat", "pe-sim", "pe-curves"]
      .filter((id) => !this.el[id].hidden).map((id) => this.el[id].querySelector("canvas"));
    const image = composite([
      `${tr.srcText}  →  ${tr.translation}`,
      `Step ${s.step} of ${tr.steps}: ${VIEWS[s.view]}${s.view === "rollout" ? "" : `, layer ${s.layer + 1}, ${headName(s.head)}`}${s.hide ? ", specials hidden" : ""}`,
    ], canvases);
    downloadPng(image, `attention-view-step${s.step}.png`);
  }
}

/** Build a viewer inside `host` (an element). */
export function mount(host, options) {
  return new Viewer(host, options);
}
