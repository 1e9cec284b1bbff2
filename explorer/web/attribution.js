// Why this word? (explorer/panels/attribution.py computes): for the viewer's step, what each
// decoder component adds to the word it emits, in three analyses.
//
//   Direct logit attribution: the word's logit (or its difference with the runner-up or a
//     candidate) as a sum of one term per head, FFN block and the embedding; two layers x
//     heads grids (decoder self- and cross-attention) and a row of blocks. A head cell opens
//     that head in the viewer (store.openHead, as the analysis maps do).
//   Activation patching: sentence A (the viewer's) with one component's output taken from B
//     (the minimal pairs' B when there is one, else typed here); layers x heads maps of the
//     fraction of the A-versus-B difference each moves; at a step where A and B write the same
//     word, the share of A's lead of that word over its runner-up each takes away (the answer's
//     metric "runner-up"). A cell shows that head's attention row at the step in A and in B.
//   Gradient attribution: input x gradient and integrated gradients per source token (and
//     per decoder input) beside the step's attention row, with Spearman's rho.
//
// Detail on demand: nothing is asked on Translate. A button asks for the viewer's step; from
// then on, while the section is open, that analysis follows the step (after the settings
// rest, never during Play). Answers are kept per sentence in this view (a new sentence
// forgets them), so going back to a step is instant. The answers are drawn by
// attribution-draw.js. All text goes in with textContent.

import { quote } from "./attention.js";
import { el } from "./canvas.js";
import { share } from "./numbers.js";
import {
  dlaBody, dlaStatus, patchMaps, patchRows, patchStatus, saliencyBody, saliencyStatus,
} from "./attribution-draw.js";
import { onEnter } from "./keys.js";
import { Frames, Requests, watchOpen } from "./view-base.js";

export { nats, plain } from "./attribution-draw.js";

const WAIT_MS = 200; // settings must rest this long before a followed analysis is asked again
const N_STEPS = [8, 16, 32, 64];

/** A short stand-in for sentence B in a request's key (the panel echoes keys of at most 300
 * characters): FNV-1a of the text, with its length. */
function textKey(text) {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return `${text.length}.${h.toString(36)}`;
}

/** The attention row each analysis of saliency compares with: the viewer's own head when it
 * shows one of the decoder's attentions, else the last layer's mean (the panel's default). */
export function attentionOf(s) {
  const decoderView = s.view === "cross" || s.view === "decoder";
  const numbered = s.head !== "mean" && s.head !== "max";
  return { layer: decoderView ? s.layer : null, head: decoderView && numbered ? Number(s.head) : "mean" };
}

export class Attribution {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.open = false;
    this.frames = new Frames(() => this.update()); // schedule(): drawn once in the next frame
    this.requests = new Requests(store, server); // answers by key, for the sentence on screen
    this.follow = new Set(); // the analyses asked for on this sentence: they follow the step
    this.picked = null; // the patching cell clicked: {kind, layer, head} 1-based
    this.timers = {};
    this.sigs = new Map(); // action -> what its drawing depends on besides its answer
    this.build(host);
    store.subscribe((s, changed) => {
      if (changed.has("sentenceId")) this.forget();
      if (changed.has("pair")) this.pairChanged(s);
      this.schedule();
    });
    watchOpen(this.root, (open) => { this.open = open; this.schedule(); });
    this.pairChanged(store.get());
    this.schedule();
  }

  // --- DOM ----------------------------------------------------------------------------------
  build(host) {
    this.versus = el("select", { id: "attr-versus", "aria-label": "What to split" });
    // the hint reads as a hint ("e.g.", in grey italics: attribution.css), not as a typed sentence
    this.inputB = el("input", { id: "attr-patch-b", type: "text", className: "at-input",
      placeholder: "e.g. Tom gave John a beautiful present.",
      "aria-label": "Sentence B, whose outputs are patched into the viewer's sentence" });
    // what is wrong with B, said under it (where B is typed), not only in the section's status
    this.msgB = el("span", { id: "attr-patch-b-msg", className: "at-msg ax-error", role: "alert", hidden: true });
    this.nSteps = el("select", { id: "attr-sal-n", "aria-label": "Integration steps" },
      N_STEPS.map((n) => el("option", { value: n, text: `${n} steps`, selected: n === 16 })));
    const button = (id, text, primary = false) => el("button", { id, type: "button",
      className: `ax-action${primary ? " primary" : ""}`, text });
    const section = (id, title, intro, controls) => el("section", { id: `attr-${id}`, className: "at-section",
      "data-state": "idle" }, [
      el("h4", { text: title }), el("p", { className: "ax-note", text: intro }),
      el("div", { className: "ax-controls" }, controls),
      el("p", { id: `attr-${id}-status`, className: "ax-note", "aria-live": "polite" }),
      el("div", { id: `attr-${id}-body`, className: "at-body" }),
    ]);
    this.root = el("div", { className: "at-root", id: "attr-root" }, [
      el("p", { id: "attr-what", className: "at-what" }),
      section("dla", "Direct logit attribution",
        "What each head, feed-forward block and the embedding adds to the word's logit "
        + "(in nats): the decoder's residual stream is a sum of their outputs, so the terms add up to the logit.",
      [button("attr-go", "Why this word?", true),
        el("label", { className: "ax-field" }, [el("span", { text: "split" }), this.versus])]),
      section("patch", "Activation patching: the viewer's sentence (A) against B",
        "Run A with one component's output taken from B, one component at a time: "
        + "how much of the A-versus-B difference between their two words does each move? "
        + "Where both write the same word: how much of A's lead over its runner-up does each take away?",
      [el("label", { className: "ax-field at-field" }, [el("span", { text: "Sentence B" }), this.inputB]),
        button("attr-patch-btn", "Patch A with B"), this.msgB]),
      section("sal", "Gradient attribution beside attention",
        "Which source tokens does the word's log-probability depend on? "
        + "Input × gradient and integrated gradients, per token, beside the attention the step paid.",
      [el("label", { className: "ax-field" }, [el("span", { text: "integration" }), this.nSteps]),
        button("attr-sal-btn", "Compute")]),
    ]);
    host.replaceChildren(this.root);
    this.el = {};
    for (const e of this.root.querySelectorAll("[id]")) this.el[e.id] = e;
    this.el["attr-go"].addEventListener("click", () => this.press("attribution"));
    this.el["attr-patch-btn"].addEventListener("click", () => this.press("patching"));
    this.el["attr-sal-btn"].addEventListener("click", () => this.press("saliency"));
    onEnter(this.inputB, () => this.press("patching"));
    for (const c of [this.versus, this.nSteps]) c.addEventListener("change", () => this.schedule());
    this.inputB.addEventListener("input", () => { this.autoB = false; this.sayB(""); this.schedule(); });
  }

  schedule() {
    this.frames.schedule();
  }

  /** A new sentence (or none): every answer of the old one goes. */
  forget() {
    this.follow = new Set();
    this.picked = null;
    for (const t of Object.values(this.timers)) clearTimeout(t);
    this.versusSig = null;
  }

  /** The minimal pairs' B fills the input, unless the visitor typed their own. */
  pairChanged(s) {
    const p = s.pair;
    if (p && p.status === "done" && p.trace && (this.autoB !== false || !this.inputB.value.trim())) {
      this.inputB.value = p.trace.srcText || p.text;
      this.autoB = true;
      this.sayB("");
    }
  }

  // --- requests -----------------------------------------------------------------------------
  /** What `action` would ask for at state `s`: {key, request} or {why} when it cannot. */
  want(s, action) {
    if (!s.trace) return { why: "Translate a sentence first." };
    const step = s.step;
    if (action === "attribution") {
      const versus = this.versus.value || "";
      return { key: `attribution:${step}:${versus}`, request: { step, versus } };
    }
    if (action === "patching") {
      const textB = this.inputB.value.trim();
      if (!textB) return { why: "Type a sentence B (or compare one in “Minimal pairs”), then press “Patch A with B”." };
      return { key: `patching:${step}:${textKey(textB)}`, request: { step, textB } };
    }
    const a = attentionOf(s), n = Number(this.nSteps.value);
    return { key: `saliency:${step}:${n}:${a.layer}:${a.head}`, request: { step, nSteps: n, ...a } };
  }

  press(action) {
    const s = this.store.get(), w = this.want(s, action);
    if (w.why && action === "patching" && s.trace) {
      this.sayB("Type sentence B here first: a sentence like A that makes the model write another word.");
      this.inputB.focus();
    }
    if (w.why) { this.schedule(); return; }
    this.follow.add(action);
    const r = this.requests.get(w.key);
    if (!r || r.status === "error") this.ask(action, w);
    this.schedule();
  }

  /** Say what is wrong with sentence B under its box (marked invalid), or nothing ("" clears it). */
  sayB(text) {
    this.msgB.textContent = text;
    this.msgB.hidden = !text;
    if (text) {
      this.inputB.setAttribute("aria-invalid", "true");
      this.inputB.setAttribute("aria-describedby", this.msgB.id);
    } else {
      this.inputB.removeAttribute("aria-invalid");
      this.inputB.removeAttribute("aria-describedby");
    }
  }

  /** Ask for `action` (view-base.js Requests: one request on its way; each analysis keeps at most
   * one waiting, its latest step). */
  ask(action, w) {
    this.requests.ask(w.key, { action, ...w.request }, action).then(() => this.schedule());
  }

  /** A followed analysis is asked for a new step once the settings rest (never during Play). */
  askSoon(action, key) {
    clearTimeout(this.timers[action]);
    this.timers[action] = setTimeout(() => {
      const s = this.store.get(), w = this.want(s, action);
      if (!this.open || s.playing || w.key !== key || this.requests.get(key)) return;
      this.ask(action, w);
      this.schedule();
    }, WAIT_MS);
  }

  // --- following the store --------------------------------------------------------------------
  update() {
    const s = this.store.get(), tr = s.trace;
    this.el["attr-what"].textContent = tr
      ? `Step ${s.step} of ${tr.steps}: reads ${quote(tr.tgt[s.step - 1])}, emits ${quote(tr.tgt[s.step])}.`
      : "Translate a sentence: this section shows what each part of the decoder adds to the word a step emits.";
    this.versusMenu(s);
    for (const c of [this.el["attr-go"], this.el["attr-patch-btn"], this.el["attr-sal-btn"]]) c.disabled = !tr;
    this.section(s, "attribution", "dla", "Press “Why this word?” to split this step's logit.", (d) => this.drawDla(d));
    this.section(s, "patching", "patch", "Press “Patch A with B” to patch this step.", (d) => this.drawPatch(s, d));
    this.section(s, "saliency", "sal", "Press “Compute” for this step's gradient attribution.",
      (d) => this.drawSaliency(d));
  }

  /** One analysis's box in its state; `draw(data)` draws a new answer. */
  section(s, action, id, prompt, draw) {
    const box = this.el[`attr-${id}`], status = this.el[`attr-${id}-status`], body = this.el[`attr-${id}-body`];
    const w = this.want(s, action), r = w.why ? null : this.requests.get(w.key);
    const say = (state, text, error = false) => {
      box.dataset.state = state;
      status.textContent = text;
      status.className = error ? "ax-error" : "ax-note";
      if (state !== "done") { body.replaceChildren(); delete box.dataset.key; delete box.dataset.sentence; }
    };
    if (w.why) { say("idle", w.why); return; }
    if (!r) {
      if (this.follow.has(action) && this.open && !s.playing) {
        this.askSoon(action, w.key);
        say("pending", "Computing with the model…");
      } else say("idle", prompt);
      return;
    }
    if (r.status === "pending") { say("pending", "Computing with the model…"); return; }
    if (r.status === "error") { say("error", `⚠️ ${r.error}`, true); return; }
    if (box.dataset.key !== w.key || box.dataset.sentence !== String(s.sentenceId) || this.stale(action, s)) {
      box.dataset.state = "done";
      status.className = "ax-note";
      draw(r.data);
      box.dataset.key = w.key;
      box.dataset.sentence = String(s.sentenceId);
    }
    this.mark(s);
  }

  /** Whether a drawn analysis depends on store keys that moved (the open head, B's trace, the
   * theme its cells are coloured in). */
  stale(action, s) {
    const own = action === "patching" ? `${s.pair && s.pair.status}|${JSON.stringify(this.picked)}` : "";
    const sig = `${s.theme}|${own}`;
    const old = this.sigs.get(action);
    this.sigs.set(action, sig);
    return old !== sig;
  }

  /** "logit", "vs runner-up" and one "vs" per candidate the viewer lists at this step. */
  versusMenu(s) {
    const tr = s.trace, sig = tr ? `${s.sentenceId}:${s.step}` : "";
    if (sig === this.versusSig) return;
    this.versusSig = sig;
    const was = this.versus.value;
    const opts = [["", "the logit"], ["runner-up", "against the runner-up"]];
    if (tr && tr.topkTokens) {
      for (const c of tr.topk(s.step - 1)) {
        if (c.token !== tr.tgt[s.step]) opts.push([c.token, `against ${quote(c.token)} (p ${share(c.prob)})`]);
      }
    }
    this.versus.replaceChildren(...opts.map(([v, t]) => el("option", { value: v, text: t })));
    this.versus.value = opts.some(([v]) => v === was) ? was : "";
  }

  // --- drawing (attribution-draw.js) ----------------------------------------------------------
  drawDla(d) {
    this.el["attr-dla-status"].textContent = dlaStatus(d);
    this.el["attr-dla-body"].replaceChildren(...dlaBody(d, (h) => this.store.openHead(h)));
  }

  drawPatch(s, d) {
    this.el["attr-patch-status"].textContent = patchStatus(d);
    const pick = (h) => { this.picked = h; this.store.openHead(this.picked); this.schedule(); };
    this.el["attr-patch-body"].replaceChildren(patchMaps(d, pick), patchRows(s, d, this.picked));
  }

  drawSaliency(d) {
    this.el["attr-sal-status"].textContent = saliencyStatus(d);
    this.el["attr-sal-body"].replaceChildren(...saliencyBody(d));
  }

  /** Frame the cells of the head the viewer shows (and the patching cell picked). */
  mark(s) {
    const kind = s.view === "cross" ? "cross" : s.view === "decoder" ? "decoder_self" : null;
    const open = kind && s.head !== "mean" && s.head !== "max" ? `${kind}:${s.layer}:${s.head}` : "";
    const p = this.picked ? `${this.picked.kind}:${this.picked.layer}:${this.picked.head}` : "";
    for (const td of this.root.querySelectorAll("td[data-kind]")) {
      const k = `${td.dataset.kind}:${td.dataset.layer}:${td.dataset.head}`;
      td.classList.toggle("at-open", k === open);
      td.classList.toggle("at-picked", td.closest("#attr-patch-body") !== null && k === p);
    }
  }
}

export function mount(host, { store, server }) {
  return new Attribution(host, store, server);
}
