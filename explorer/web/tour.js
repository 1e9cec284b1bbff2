// The guided tour: seven short steps through what the model did with the visitor's own
// sentence, each pointing at the part of the page it talks about (highlighted and scrolled
// into view). It is a view (views.js, the "tour" block of explorer/page.py) with no Python
// panel: it only reads the store.
//
// It is offered once: after a first-time visitor's first translation, "New here?" and a
// "No thanks" appear beside the "Take the tour" button (in its own block, so the offer
// covers nothing on the page), and localStorage (SEEN_KEY) remembers that it was offered,
// taken or skipped. The button starts the tour at any time once a sentence is translated.
// The bubble is fixed to the bottom of the viewport and fits a 390 px phone; the page gets
// room below (padding) so every target can scroll to the top, above the bubble. When the tour
// ends (Done, Skip, Esc) the page is given back as it was: the sections it opened close again
// and the page scrolls back to where the visitor was.
//
// A step is shown once the page has drawn what it needs (a section it opens draws a frame
// later): then its text is written from what is on screen (the mosaic's rows per layer differ
// between a laptop and a phone), and its target, or the part of it the text names, is
// scrolled into the space above the bubble before it is pointed at.
//
// Every text of the tour is in STEPS, here.

import { el } from "./canvas.js";
import { quote, headIndex } from "./attention.js";
import { words } from "./glossary.js";
import { tokenTerm } from "./names.js";
import { nextFrame } from "./view-base.js";
import { onKey } from "./keys.js";

export const SEEN_KEY = "explorer-tour-seen";
const word = (tok) => quote(tok.replace(/▁/g, ""));
const pct = (p) => `${Math.round(p * 100)}%`;

/** The source token step `t` (0-based) looks at most in cross-attention, `layer` 0-based and
 * `head` an index, "mean" or "max": [index, weight]. */
function strongest(tr, layer, head, t) {
  let best = [0, -1];
  for (let k = 0; k < tr.src.length; k++) {
    const w = tr.weight("cross", layer, head, t, k);
    if (w > best[1]) best = [k, w];
  }
  return best;
}

/** A special token's name in a text: a term that explains itself where the glossary has it. */
const marker = (n, tok) => (tokenTerm(n, tok) ? [tok, tokenTerm(n, tok)] : tok);

/** "the markers [SOS] and [EOS] around them", or "the marker </s> after them" where sources have no start token. */
const sourceMarkers = (n) => (n.srcSos
  ? ["the markers ", marker(n, n.srcSos), " and ", marker(n, n.srcEos), " around them"]
  : ["the marker ", marker(n, n.srcEos), " after them"]);

/** The tokens of `tokens` that are not markers ([SOS], [EOS], ...). */
const words_ = (tr, tokens) => tokens.filter((t) => !tr.isSpecial(t));

/** A step with several rows on the map for the steps that talk about it: the viewer's own
 * step when it already has a few, else one a little past the middle of the translation. */
const severalRows = (tr, s) => (s.step >= Math.min(3, tr.steps) ? s.step
  : Math.min(tr.steps, Math.max(3, Math.ceil(tr.steps * 0.6))));

/** Where the all-heads mosaic put its tiles (heatmap.js drawMosaic), once it is drawn at step `step`. */
function mosaicGrid(step) {
  const fig = document.getElementById("mosaic");
  return fig && fig.dataset.grid && fig.dataset.step === String(step) ? JSON.parse(fig.dataset.grid) : null;
}

const COUNTS = ["no", "one", "two", "three", "four"];
/** "one row of tiles per layer", or as many rows as a narrow screen wraps a layer's heads into. */
const tileRows = (bands) => `${COUNTS[bands] || bands} row${bands === 1 ? "" : "s"} of tiles per layer`;

/** "head 5 of layer 3" or "the mean of the heads of layer 3": the map's layer and head in words. */
const mapHead = (s) => (s.head === "mean" || s.head === "max" ? `the ${s.head} of the heads of layer ${s.layer}`
  : `head ${s.head} of layer ${s.layer}`);

/** The steps: a target (CSS selector), a viewer section to open first (its name in the store's
 * `open`), the view settings to show first (`show(tr, s)`, a store patch), what must be drawn
 * before the step shows (`ready(s)`), the part of the target the text names (`part(target, s)`:
 * a viewport rect, to scroll into view; by default the whole target), a title and the text,
 * made from the trace on screen (`tr`) and the store as it is then (`s`). */
export const STEPS = [
  {
    target: "#viewer .ax-tokens", title: "1. Tokens",
    text: (tr) => {
      const real = words_(tr, tr.src);
      return words(`The model does not read words: your sentence became ${real.length} `, ["tokens", "token"],
        `, from ${word(real[0] || tr.src[0])} to ${word(real[real.length - 1] || tr.src[0])}, `
          + "and the model adds ",
        ...sourceMarkers(tr.names),
        ". ▁ starts a new word; a chip without it continues the one before.");
    },
  },
  {
    target: "#src-chips", title: "2. The encoder reads everything at once",
    text: (tr) => words("The ", ["encoder"],
      ` reads all ${words_(tr, tr.src).length} ${tr.names.src} tokens together, in one pass through its `,
      `${tr.layers("encoder")} `, ["layers", "layer"],
      ": every token can look at every other one. It never changes after that."),
  },
  {
    target: "#prefix-chips", title: "3. The decoder writes one token at a time",
    // the text names step 1's token: the chips' row (one scrolling line on a phone) shows its start
    part: (target) => { target.scrollLeft = 0; return target.getBoundingClientRect(); },
    text: (tr) => words("The ", ["decoder"],
      ` wrote the ${tr.names.tgt} in ${tr.steps} steps. At each step it reads what it has written so far `,
      `(it started from ${tr.names.sos}) and adds one token: step 1 wrote ${word(tr.tgt[1])}. `
        + "Press ▶ or the → key to follow it."),
  },
  {
    target: "#attn-plot", title: "4. Cross-attention: where each new word looks",
    show: (tr, s) => ({ view: "cross", step: severalRows(tr, s) }),
    text: (tr, s) => {
      const t = s.step - 1, [k, w] = strongest(tr, s.layer - 1, headIndex(s.head), t);
      return words("This map is ", ["cross-attention"],
        `: one row per step, one column per ${tr.names.src} token. At step `,
        `${t + 1}, writing ${word(tr.tgt[t + 1])}, the model looked most at ${word(tr.src[k])} `
          + `(${pct(w)} of the attention of `,
        `${mapHead(s)}; the map shows it).`);
    },
  },
  {
    target: "#mosaic", open: "views", title: "5. Heads differ",
    show: (tr, s) => ({ view: "cross", step: severalRows(tr, s) }),
    ready: (s) => mosaicGrid(s.step) !== null,
    // the tiles of the map's layer, with their head numbers above them
    part: (target, s) => {
      const g = mosaicGrid(s.step), c = target.querySelector("canvas");
      if (!g || !c) return target.getBoundingClientRect();
      const top = c.getBoundingClientRect().top + g.top + (s.layer - 1) * g.bands * g.stepY;
      return { top: top - 16, bottom: top + (g.bands - 1) * g.stepY + g.tileH };
    },
    text: (tr, s) => {
      const t = s.step - 1, L = s.layer - 1, g = mosaicGrid(s.step);
      const peaks = Array.from({ length: tr.heads }, (_, h) => [h, ...strongest(tr, L, h, t)]);
      const sharp = peaks.reduce((a, b) => (b[2] > a[2] ? b : a)), flat = peaks.reduce((a, b) => (b[2] < a[2] ? b : a));
      return words(`Each layer has ${tr.heads} `, ["heads", "head"],
        ` that look in their own way: here, ${tileRows(g ? g.bands : 1)}, its number on the left. `,
        `The map above shows ${s.head === "mean" || s.head === "max" ? `the ${s.head} of` : "one of"} `
          + `the heads of layer ${L + 1}; `,
        `at step ${t + 1}, head ${sharp[0] + 1} of that layer puts ${pct(sharp[2])} on ${word(tr.src[sharp[1]])}, `,
        `while head ${flat[0] + 1} spreads out (at most ${pct(flat[2])} anywhere). Click a tile to open that head.`);
    },
  },
  {
    target: "#topk", title: "6. The candidates",
    show: (tr, s) => ({ step: severalRows(tr, s) }),
    text: (tr, s) => {
      const t = Math.min(s.step, tr.steps) - 1, [a, b] = tr.topk(t);
      return words(`At every step the model scores every word it knows. At step ${t + 1} it gave ${word(a.token)} `,
        `${pct(a.prob)}${b ? ` and ${word(b.token)} ${pct(b.prob)}` : ""}; `
          + "it writes the most likely one (greedy decoding). ",
        ["Beam search", "beam"], " below keeps several options open instead.");
    },
  },
  {
    target: "#why-tools", title: "7. Where to go next: why did it say that?",
    text: () => words("These tools ask the model again: What if? forces another candidate, ",
      ["knock-out", "knock-out"], " silences heads, head importance ranks them (in ", ["nats"],
      "), beam search shows the alternatives. In the viewer, the ",
      ["logit lens"], " and ", ["rollout"],
      " sections say more. Tap any dotted word, or the ? of a heading, for its meaning."),
  },
];

export class Tour {
  constructor(host, store) {
    this.store = store;
    this.i = -1;
    this.startBtn = el("button", { id: "tour-btn", type: "button", className: "ax-action", disabled: true,
      title: "Translate a sentence first", text: "Take the tour" });
    this.startBtn.addEventListener("click", () => this.start());
    this.offerText = el("span", { id: "tour-offer", className: "tour-offer", text: "New here?", hidden: true });
    this.noThanks = el("button", { id: "tour-no", type: "button", className: "ax-action", text: "No thanks",
      hidden: true });
    this.noThanks.addEventListener("click", () => this.end());
    host.replaceChildren(el("div", { className: "tour-host" }, [this.offerText, this.startBtn, this.noThanks]));
    this.title = el("strong", { id: "tour-title", className: "tour-title" });
    this.body = el("p", { id: "tour-text", className: "tour-text" });
    this.count = el("span", { id: "tour-count", className: "tour-count" });
    this.back = el("button", { id: "tour-back", type: "button", className: "ax-action", text: "Back" });
    this.next = el("button", { id: "tour-next", type: "button", className: "ax-action primary", text: "Next" });
    this.skip = el("button", { id: "tour-skip", type: "button", className: "ax-action", text: "Skip tour" });
    this.bubble = el("div", { id: "tour-bubble", className: "tour-bubble", role: "dialog",
      "aria-labelledby": "tour-title", hidden: true }, [
      this.title, this.body, el("div", { className: "tour-buttons" }, [this.count, this.skip, this.back, this.next])]);
    document.body.append(this.bubble);
    this.back.addEventListener("click", () => this.go(this.i - 1));
    this.next.addEventListener("click", () => (this.i < STEPS.length - 1 ? this.go(this.i + 1) : this.end()));
    this.skip.addEventListener("click", () => this.end());
    onKey((ev) => { if (ev.key === "Escape" && !this.bubble.hidden) this.end(); });
    store.subscribe((s, changed) => {
      if (!changed.has("trace")) return;
      this.startBtn.disabled = !s.trace;
      this.startBtn.title = s.trace ? "A short walk through what the model did with this sentence"
        : "Translate a sentence first";
      if (!s.trace) this.end(false);
      else if (this.i >= 0) this.go(this.i); // a new sentence: the same step, told again
      else if (!seen()) this.offer();
    });
  }

  /** The first translation of a first visit: ask once, beside the button. */
  offer() {
    remember();
    this.offering(true);
  }

  offering(on) {
    this.offerText.hidden = this.noThanks.hidden = !on;
    this.startBtn.classList.toggle("primary", on);
  }

  start() {
    if (!this.store.get().trace) return;
    remember();
    this.offering(false);
    // where the visitor was, and the sections the tour opens on its way (end() gives them back)
    if (this.i < 0) this.before = { y: window.scrollY, opened: new Set() };
    this.go(0);
  }

  /** Show step `i`: open its section, wait for what it needs to be drawn, tell its text and
   * point at its target, scrolled into view above the bubble. */
  async go(i) {
    let s = this.store.get();
    const tr = s.trace;
    if (!tr || i < 0 || i >= STEPS.length) return;
    const step = STEPS[i], asked = (this.asked = (this.asked || 0) + 1);
    this.i = i;
    if (step.open && !(s.open || []).includes(step.open)) {
      if (this.before) this.before.opened.add(step.open);
      this.store.set({ open: [...(s.open || []), step.open] });
    }
    if (step.show) this.store.set({ ...step.show(tr, this.store.get()), playing: false });
    this.unmark();
    // a section opened here draws on its toggle event: wait for it (a few frames at most)
    for (let f = 0; f < 30 && step.ready && !step.ready(this.store.get()); f++) await frameDone();
    await frameDone();
    if (asked !== this.asked || this.i !== i || this.store.get().trace !== tr) return; // another step since
    s = this.store.get(); // the text speaks of what is on screen now
    const target = document.querySelector(step.target);
    room(true);
    this.bubble.hidden = false;
    this.title.textContent = step.title;
    this.body.replaceChildren(...step.text(tr, s));
    this.count.textContent = `${i + 1} of ${STEPS.length}`;
    this.back.disabled = i === 0;
    this.next.textContent = i === STEPS.length - 1 ? "Done" : "Next";
    if (target) {
      target.classList.add("tour-target");
      this.target = target;
      this.reveal(target, step.part, s);
    }
    this.bubble.dataset.step = String(i + 1); // shown: its target is on screen
    this.next.focus({ preventScroll: true });
  }

  /** Scroll `target` to the top of the viewport, or further, until the part the text names
   * (`part`) is clear of the bubble (the bubble covers the bottom of a phone's screen). */
  reveal(target, part, s) {
    const MARGIN = 8;
    target.scrollIntoView({ block: "start", behavior: "instant" }); // (its scroll-margin: MARGIN)
    const r = target.getBoundingClientRect(), p = part ? part(target, s) : r, b = this.bubble.getBoundingClientRect();
    const covers = b.left < r.right && b.right > r.left;
    const room = (covers ? b.top : window.innerHeight) - MARGIN;
    if (p.bottom > room) {
      window.scrollBy({ top: Math.max(0, Math.min(p.top - MARGIN, p.bottom - room)), behavior: "instant" });
    }
  }

  unmark() {
    if (this.target) this.target.classList.remove("tour-target");
    this.target = null;
  }

  /** Close the tour (or the offer); it has been seen. A tour that ran gives the page back: the
   * sections it opened closed (those the visitor opened meanwhile stay open), the page where it
   * was scrolled to. */
  end(save = true) {
    if (save) remember();
    this.offering(false);
    this.unmark();
    this.i = -1;
    this.bubble.hidden = true;
    delete this.bubble.dataset.step;
    room(false);
    const before = this.before;
    this.before = null;
    if (!before) return;
    const open = this.store.get().open || [];
    if (open.some((name) => before.opened.has(name))) {
      this.store.set({ open: open.filter((name) => !before.opened.has(name)) });
    }
    // once the page has laid itself out without the tour's room and sections; a figure that
    // redraws meanwhile can leave the page too short for a frame (the browser then clamps the
    // scroll), so a scroll that did not hold is made again, a few frames at most
    const restore = (frames) => nextFrame(() => {
      window.scrollTo({ top: before.y, behavior: "instant" });
      if (Math.abs(window.scrollY - before.y) > 1 && frames > 1) restore(frames - 1);
    });
    restore(10);
  }
}

/** Room below the page while the tour runs, so that any target can scroll up above the
 * bubble (an inline style: the page's own stylesheet is Gradio's to scope). */
function room(on) {
  const page = document.querySelector(".gradio-container") || document.body;
  page.style.paddingBottom = on ? "70vh" : "";
}

const frameDone = () => new Promise((resolve) => nextFrame(() => resolve()));

function seen() {
  try { return localStorage.getItem(SEEN_KEY) === "1"; } catch { return true; } // no storage: never nag
}

function remember() {
  try { localStorage.setItem(SEEN_KEY, "1"); } catch { /* private mode: nothing to keep */ }
}

export function mount(host, { store }) {
  return new Tour(host, store);
}
