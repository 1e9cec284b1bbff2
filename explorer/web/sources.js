// Where did this word come from? (explorer/panels/sources.py computes): for the sentence in
// the viewer, how much of each step's word comes from the source and how much from the words
// the decoder has already written (ALTI+, Ferrando et al. 2022), what the decoder would write
// if the encoder stopped early (DecoderLens), and how the model scores a reference of your own.
//
//   Beside the viewer's step: a bar "source 72% · prefix 28%" and one row over the source and
//     prefix tokens, coloured by contribution; it follows the store's `step` with no request.
//   A map over all steps (steps x source + prefix tokens), the viewer's step marked, and a
//     layer choice: through all layers, through the first l, or one decoder layer alone.
//   DecoderLens: one row per encoder layer, the last the model's own translation.
//   Your own reference: scored token by token; where the model parts from it, "What if? with
//     this token" opens What if? (whatif.js, store key `whatifForce`) with it forced.
// ("What moved the output" under the main map has its own hidden view, moved.js: this one mounts
// only when its section first opens.)
//
// Detail on demand: nothing is asked on Translate. Opening the section asks for the
// contributions and DecoderLens of the sentence on screen (one request each); stepping redraws
// from them. Answers are kept per sentence (a new sentence forgets them). Drawing is in
// sources-draw.js; all text goes in with textContent.

import { quote } from "./attention.js";
import { el } from "./canvas.js";
import { HeatFigure } from "./frame.js";
import { term } from "./glossary.js";
import { namesOf, article } from "./names.js";
import { Tooltip } from "./tooltip.js";
import { onEnter } from "./keys.js";
import {
  drawMap, layerChoices, lensStatus, lensTable, matrices, percents, scoreStatus, scoreTable, shareBar, tokenRow,
} from "./sources-draw.js";
import { Frames, Requests, nextFrame, watchOpen } from "./view-base.js";

const WHATIF_PANEL = "whatif-panel";

export class Sources {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.frames = new Frames(() => this.update()); // schedule(): drawn once in the next frame
    this.open = false;
    this.requests = new Requests(store, server); // the answers of the sentence on screen, by action
    this.typed = false; // the visitor typed in the reference box: a test reference never overwrites it
    this.build(host);
    store.subscribe((s, changed) => {
      if (changed.has("trace") && s.trace) this.label(namesOf(s.trace));
      if (changed.has("sentenceId")) this.forget();
      if (["trace", "step", "theme", "sentenceId"].some((k) => changed.has(k))) this.schedule();
    });
    watchOpen(this.root, (open) => { this.open = open; this.schedule(); });
    this.schedule();
  }

  // --- DOM ----------------------------------------------------------------------------------
  build(host) {
    this.layer = el("select", { id: "src-layer", "aria-label": "Through which layers" });
    this.refBox = el("input", { id: "src-ref", type: "text", className: "at-input" });
    this.map = new HeatFigure("src-map", "where each step's word came from");
    const section = (id, title, intro, controls = []) => el("section", { id: `src-${id}`, className: "at-section",
      "data-state": "idle" }, [
      el("h4", {}, Array.isArray(title) ? title : [title]), el("p", { className: "ax-note", text: intro }),
      ...(controls.length ? [el("div", { className: "ax-controls" }, controls)] : []),
      el("p", { id: `src-${id}-status`, className: "ax-note", "aria-live": "polite" }),
      el("div", { id: `src-${id}-body`, className: "at-body" }),
    ]);
    this.root = el("div", { className: "at-root src-root", id: "src-root" }, [
      el("p", { id: "src-what", className: "at-what" }),
      section("alti", ["Source or ", term("prefix"), ": ", term("ALTI+", "alti+")], "", // its text: label()
      [el("label", { className: "ax-field" }, [el("span", { text: "through" }), this.layer])]),
      section("lens", [term("DecoderLens", "decoderlens"), ": if the encoder stopped early"],
        "What the decoder would write if it read the output of encoder layer l instead of the last one "
        + "(Langedijk et al. 2024). The last row reads the whole encoder: the model's translation."),
      section("score", "Your own reference",
        "Type a translation and score it: the model's probability of each of its tokens, the token's rank "
        + "(1: the model's own choice) and what the model would have written there.",
      [el("label", { className: "ax-field at-field" }, [el("span", { text: "Reference" }), this.refBox]),
        el("button", { id: "src-score-btn", type: "button", className: "ax-action primary", text: "Score" })]),
    ]);
    this.root.querySelector("#src-alti-body").append(el("div", { id: "src-step" }), this.map.el);
    this.altiIntro = this.root.querySelector("#src-alti > .ax-note");
    this.label(namesOf(this.store.get().trace));
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
    host.replaceChildren(this.root);
    this.tip = new Tooltip("sources-tooltip", this.root);
    this.tip.bind(this.map.canvas, (x, y) => this.mapHit && this.mapHit(x, y));
    this.layer.addEventListener("change", () => { this.drawn = null; this.schedule(); });
    this.el["src-score-btn"].addEventListener("click", () => this.score());
    onEnter(this.refBox, () => this.score());
    this.refBox.addEventListener("input", () => { this.typed = true; });
  }

  /** The texts that name the model's languages, in the names `n` of the trace on screen (names.js). */
  label(n) {
    this.altiIntro.textContent = `How much of this step's word comes from the ${n.src} sentence and how much `
      + `from the ${n.tgt} words already written (ALTI+, Ferrando et al. 2022): each token's share of the step's `
      + "output, through the attention blocks of every layer. Hover or tap a token for its number.";
    // an example reference where there is one to give: the opening example's, in Italian
    this.refBox.placeholder = n.tgtLang === "it" ? "e.g. Ho una macchina rossa."
      : `${article(n.tgt)} ${n.tgt} sentence`;
    this.refBox.setAttribute("aria-label", `Your reference translation (${n.tgt})`);
  }

  schedule() {
    this.frames.schedule();
  }

  /** A new sentence (or none): every answer of the old one goes, and its reference. */
  forget() {
    this.drawn = null;
    this.typed = false;
    this.refBox.value = "";
  }

  // --- requests -----------------------------------------------------------------------------
  /** Ask the panel for `action` on the sentence on screen (view-base.js Requests: one at a time). */
  ask(action, extra = {}) {
    this.requests.ask(action, { action, ...extra }).then((a) => {
      if (a && action === "contributions" && !a.error) {
        this.layerMenu(a);
        if (a.testReference && !this.typed && !this.refBox.value) this.refBox.value = a.testReference;
      }
      this.drawn = null;
      this.schedule();
    });
    this.schedule();
  }

  score() {
    const s = this.store.get(), text = this.refBox.value.trim();
    if (!s.trace) return;
    if (!text) {
      const tgt = namesOf(s.trace).tgt;
      this.requests.set("score", { status: "error", error: `Type a reference translation (${tgt}) to score.` });
      this.refBox.focus();
    } else this.ask("score", { reference: text });
    this.schedule();
  }

  /** "What if? with this token": What if? at that step, the reference's tokens up to it forced. */
  whatIf(t) {
    const r = this.requests.get("score"), s = this.store.get();
    if (!r || r.status !== "done" || !s.trace) return;
    const steps = r.data.steps, ids = steps.slice(0, t + 1).map((x) => x.id);
    const open = (s.open || []).filter((x) => x !== WHATIF_PANEL);
    this.store.set({ step: Math.min(t + 1, s.trace.steps), open: [...open, WHATIF_PANEL],
      whatifForce: { step: t + 1, ids, token: steps[t].token } });
    nextFrame(() => {
      const panel = document.getElementById(WHATIF_PANEL);
      if (panel) panel.scrollIntoView({ block: "start" });
    });
  }

  // --- following the store --------------------------------------------------------------------
  update() {
    const s = this.store.get(), tr = s.trace;
    this.el["src-what"].textContent = tr
      ? `Step ${s.step} of ${tr.steps}: reads ${quote(tr.tgt[s.step - 1])}, writes ${quote(tr.tgt[s.step])}.`
      : "Translate a sentence: this section shows where each word of its translation came from.";
    this.el["src-score-btn"].disabled = !tr;
    if (tr && this.open) {
      for (const action of ["contributions", "lens"]) if (!this.requests.get(action)) this.ask(action);
    }
    this.box("alti", "contributions", tr, (d) => this.drawAlti(s, d));
    this.box("lens", "lens", tr, (d) => {
      this.el["src-lens-status"].textContent = lensStatus(d);
      this.el["src-lens-body"].replaceChildren(el("div", { className: "at-scroll" }, [lensTable(d)]));
    });
    this.box("score", "score", tr, (d) => {
      this.el["src-score-status"].textContent = scoreStatus(d, namesOf(tr));
      this.el["src-score-body"].replaceChildren(el("div", { className: "at-scroll" },
        [scoreTable(d, (t) => this.whatIf(t))]));
    }, "Type a reference (a test-set sentence comes with its own) and press “Score”.");
  }

  /** One analysis's box in its state; `draw(data)` draws a done answer. */
  box(id, action, tr, draw, prompt = "Open this section to compute it.") {
    const box = this.el[`src-${id}`], status = this.el[`src-${id}-status`], body = this.el[`src-${id}-body`];
    const r = this.requests.get(action);
    const say = (state, text, error = false) => {
      box.dataset.state = state;
      status.textContent = text;
      status.className = error ? "ax-error" : "ax-note";
      if (id !== "alti") { body.replaceChildren(); return; }
      this.el["src-step"].replaceChildren(); // the map and the bar of an old answer go too
      this.map.clear();
      this.drawn = null;
    };
    if (!tr) { say("idle", "Translate a sentence first."); return; }
    if (!r) { say("idle", prompt); return; }
    if (r.status === "pending") { say("pending", "Computing with the model…"); return; }
    if (r.status === "error") { say("error", `⚠️ ${r.error}`, true); return; }
    box.dataset.state = "done";
    box.dataset.sentence = String(this.store.get().sentenceId);
    status.className = "ax-note";
    draw(r.data);
  }

  layerMenu(d) {
    const was = this.layer.value || "all", L = d.layers.source.length;
    const opts = layerChoices(L);
    this.layer.replaceChildren(...opts.map(([v, t]) => el("option", { value: v, text: t })));
    this.layer.value = opts.some(([v]) => v === was) ? was : "all";
  }

  /** The step's bar and row (every step), and the map (redrawn when the step, the layer, the
   * theme or the room change). */
  drawAlti(s, d) {
    const t = Math.min(s.step, d.output_tokens.length) - 1, m = matrices(d, this.layer.value || "all");
    const status = this.el["src-alti-status"];
    const through = this.layer.selectedOptions[0] ? this.layer.selectedOptions[0].textContent : "through all layers";
    status.textContent = `Step ${t + 1} writes ${quote(d.output_tokens[t])}: `
      + `${percents(m, t).source}% of it comes from the ${namesOf(s.trace).src} sentence, ${through}. `
      + "Colours: this step's largest contribution darkest.";
    const tip = (cell, lines) => this.tip.bind(cell, () => lines);
    this.el["src-step"].replaceChildren(shareBar(m, t),
      el("div", { className: "at-scroll" }, [tokenRow(d, m, t, tip)]));
    const narrow = (window.innerWidth || 1000) < 600;
    const width = Math.max(260, (this.root.clientWidth || 800) - 8);
    const sig = `${t}|${this.layer.value}|${s.theme}|${width}`;
    if (this.drawn === sig) return;
    this.drawn = sig;
    this.mapHit = drawMap(this.map, d, m, t, { font: narrow ? 11 : 13, width });
    this.map.el.dataset.step = String(t + 1);
    this.map.el.dataset.layer = this.layer.value || "all";
  }
}

export function mount(host, { store, server }) {
  return new Sources(host, store, server);
}
