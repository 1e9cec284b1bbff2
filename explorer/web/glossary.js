// The explorer's glossary: one line for every technical word the page uses, and term(), which
// wraps such a word so that it explains itself.
//
//   term("head")                 // <span class="gl-term">head</span>, explained on hover, focus or tap
//   term("heads", "head")        // shown text, glossary key
//
// A title attribute is not enough: phones have no hover. So a term is focusable (role
// "button", aria-expanded) and one shared popup (role "tooltip") shows its definition on
// hover, on keyboard focus and on a tap; a second tap, a tap elsewhere or Escape puts it
// away. Screen readers get the definition as the term's description (aria-describedby on a
// hidden list of every definition, made once per page).
//
// In a section's heading (a <summary>, or the title button of a Gradio accordion) a click
// anywhere opens or closes the section, its words included: there a term is only a dotted
// word that explains itself on hover, and the heading gets one small "?" button
// (heading()) that shows the definitions of all its words, for touch and keyboard.
//
// Definitions that name a language or a special token are written from the names of the model
// on the page (names.js): the viewer hands them over with each trace (useNames), and the
// definitions shown from then on, and those screen readers get, say them.

import { el } from "./canvas.js";
import { OURS } from "./names.js";
import { onKey, pressable } from "./keys.js";

const and = (list) => (list.length > 1 ? `${list.slice(0, -1).join(", ")} and ${list[list.length - 1]}` : list[0]);

/** Every definition, one line each, in plain words: a string, or one made from the names (names.js). */
export const GLOSSARY = Object.freeze({
  token: (n) => "A piece of text the model reads or writes: a word or part of one (a subword). "
    + `▁ starts a new word; grey chips are the markers ${and([...new Set([n.sos, n.eos])])}.`,
  head: "One of several attention mechanisms working side by side in a layer; each learns its own way of looking.",
  layer: "One block of the model; the text passes through the layers one after another, each refining the last.",
  query: "The position that is looking: a row of the attention map.",
  key: "A position that can be looked at: a column of the attention map.",
  mask: "A rule that hides positions: the decoder may not look at tokens it has not written yet.",
  // a Marian model's decoder starts from its padding token
  sos: (n) => `${n.sos}${n.sos === n.pad ? " (the padding token, as the start)" : ", start of sequence"}: `
    + "the token the decoder reads first, before it has written anything.",
  eos: (n) => `${n.eos}, end of sequence: the token that marks the end of a sentence; writing it stops decoding.`,
  "logit lens": "What each decoder layer would say if it were the last one: its state read through the output layer.",
  rollout: "Attention followed through every layer at once: how much each source token feeds each step overall.",
  entropy: "How spread out a head's attention is: low means it looks at one token, high means it looks everywhere.",
  sink: (n) => `A token (often ${n.sos}, ${n.eos} or punctuation) that takes attention when a head has nothing `
    + "better to look at.",
  nats: "The unit of a natural-log difference: a drop of 0.69 nats in log-probability halves the probability.",
  "knock-out": "Silencing chosen heads (their output set to zero) and translating again, to see what they did.",
  beam: "Beam search keeps the k most likely partial translations at each step instead of only the best one.",
  "log-prob": "The logarithm of a probability: log-probabilities of successive tokens add up to the sentence's.",
  "cross-attention": (n) => `The decoder looking at the ${n.src} sentence: where each new ${n.tgt} token gets `
    + "its information.",
  "self-attention": (n) => "Tokens of one sentence looking at each other "
    + `(the encoder at the ${n.src}, the decoder at the ${n.tgt} so far).`,
  encoder: (n) => `The half of the model that reads the whole ${n.src} sentence at once.`,
  decoder: (n) => `The half of the model that writes the ${n.tgt}, one token at a time.`,
  prefix: (n) => `The ${n.tgt} tokens the decoder has already written when it chooses the next one.`,
  "alti+": (n) => `ALTI+ (Ferrando et al. 2022): each token's share of a step's output, ${n.src} and ${n.tgt} `
    + "alike, followed through every layer; the shares add up to 100%.",
  decoderlens: "DecoderLens (Langedijk et al. 2024): the decoder reading an earlier encoder layer's output, "
    + "to see what the encoder knew by then.",
});

const DEFS_ID = "gl-defs";
const TIP_ID = "gl-tip";
const defId = (key) => `gl-def-${key.replace(/[^a-z]+/g, "-")}`;
let popup = null, shownFor = null, shownAt = 0;
const SETTLE_MS = 400; // a tap focuses, then clicks: both belong to one gesture
// the headings whose click opens or closes a section: the viewer's <details>, Gradio's accordions
const HEADING = "summary, .label-wrap";

let names = OURS; // the names the definitions speak of: the model of the trace on the page

/** The definition of glossary entry `key` in the words of the names in use. */
export function define(key) {
  const d = GLOSSARY[key];
  return typeof d === "function" ? d(names) : d;
}

/** Speak of the languages and special tokens of `n` (names.js) from now on: the viewer calls it
 * with each new trace's names. The definitions screen readers get are written again. */
export function useNames(n) {
  if (!n || n === names) return;
  names = n;
  for (const key of Object.keys(GLOSSARY)) {
    const def = typeof document !== "undefined" && document.getElementById(defId(key));
    if (def) def.textContent = define(key);
  }
}

/** The hidden list of definitions (for aria-describedby) and the shared popup, made once. */
function ensurePage() {
  if (popup) return;
  document.body.append(el("div", { id: DEFS_ID, hidden: true },
    Object.keys(GLOSSARY).map((k) => el("span", { id: defId(k), text: define(k) }))));
  popup = el("div", { id: TIP_ID, className: "gl-tip", role: "tooltip", hidden: true });
  document.body.append(popup);
  const away = (ev) => { if (shownFor && !shownFor.contains(ev.target)) hide(); };
  document.addEventListener("pointerdown", away, true);
  onKey((ev) => { if (ev.key === "Escape") hide(); });
  // the popup is fixed: it goes when the page scrolls (not the scroll that brought the term in)
  window.addEventListener("scroll", () => { if (performance.now() - shownAt > SETTLE_MS) hide(); }, { passive: true });
}

/** Show the definition of `t` (a term element) under it, kept inside the viewport; `keys`:
 * the glossary entries to show (a heading's "?" shows every word of its heading). */
function show(t, keys = [t.dataset.term]) {
  ensurePage();
  if (shownFor && shownFor !== t) shownFor.setAttribute("aria-expanded", "false");
  if (shownFor !== t) shownAt = performance.now();
  shownFor = t;
  t.setAttribute("aria-expanded", "true");
  popup.replaceChildren(...keys.map((k) => el("div", {}, [el("strong", { text: `${k}: ` }), define(k)])));
  popup.hidden = false;
  const r = t.getBoundingClientRect(), w = popup.offsetWidth, h = popup.offsetHeight;
  const left = Math.max(4, Math.min(r.left, window.innerWidth - w - 4));
  const below = r.bottom + 6 + h <= window.innerHeight;
  popup.style.left = `${left}px`;
  popup.style.top = `${below ? r.bottom + 6 : Math.max(4, r.top - h - 6)}px`;
}

function hide(t = shownFor) {
  if (!t || t !== shownFor) return;
  t.setAttribute("aria-expanded", "false");
  shownFor = null;
  if (popup) popup.hidden = true;
}

/** `text` as a term that explains itself (glossary entry `key`, by default the text itself). */
export function term(text, key = text.toLowerCase()) {
  if (!GLOSSARY[key]) throw new Error(`no glossary entry ${key}`);
  const t = el("span", { className: "gl-term", tabindex: "0", role: "button", "aria-expanded": "false",
    "data-term": key, text });
  if (typeof document !== "undefined" && document.body) {
    ensurePage();
    t.setAttribute("aria-describedby", defId(key));
  }
  // a mouse shows it while over the word; a tap (or click, Enter, space) toggles it
  t.addEventListener("pointerenter", (ev) => { if (ev.pointerType === "mouse") show(t); });
  t.addEventListener("pointerleave", (ev) => { if (ev.pointerType === "mouse") hide(t); });
  t.addEventListener("focus", () => show(t));
  t.addEventListener("blur", () => hide(t));
  t.addEventListener("click", (ev) => {
    if (t.closest(HEADING)) return; // a heading's click opens its section (its "?" explains)
    ev.preventDefault(); // inside a <label>, a tap explains the word and does nothing else
    ev.stopPropagation();
    if (shownFor === t && performance.now() - shownAt > SETTLE_MS) hide(t); else show(t);
  });
  pressable(t, () => { if (shownFor === t) hide(t); else show(t); }); // space here does not start Play
  return t;
}

/** A run of text with some words as terms: words("Each ", ["head"], " looks") -> nodes. */
export function words(...parts) {
  return parts.map((p) => (Array.isArray(p) ? term(...p) : p));
}

/** The words of a heading as quiet terms (dotted, explained on hover, not focusable: a click
 * on them opens or closes the section) and the "?" button that explains them all. `label`:
 * what the "?" is placed in (a <summary>), or after (a Gradio accordion's title button,
 * which cannot hold a button). Returns the "?" (null when the heading has no term). */
export function heading(label, into = true) {
  const terms = [...label.querySelectorAll(".gl-term")];
  if (!terms.length) return null;
  const keys = [...new Set(terms.map((t) => t.dataset.term))];
  for (const t of terms) {
    for (const a of ["tabindex", "role", "aria-expanded"]) t.removeAttribute(a);
    t.classList.add("gl-quiet");
  }
  const ask = el("button", { type: "button", className: "gl-ask", text: "?", "aria-expanded": "false",
    "aria-label": `What ${keys.length > 1 ? "do" : "does"} ${keys.join(", ")} mean?` });
  if (typeof document !== "undefined" && document.body) {
    ensurePage();
    ask.setAttribute("aria-describedby", keys.map(defId).join(" "));
  }
  ask.addEventListener("click", (ev) => {
    ev.preventDefault(); // the "?" explains and does not open the section
    ev.stopPropagation();
    if (shownFor === ask && performance.now() - shownAt > SETTLE_MS) hide(ask); else show(ask, keys);
  });
  if (into) label.append(ask); else label.after(ask);
  return ask;
}

/** Make the words `pairs` ([[text, key]]) of a plain-text heading terms, in place: the first
 * whole-word match of each text, whatever its case. */
export function termsIn(node, pairs) {
  for (const [text, key] of pairs) {
    const re = new RegExp(`\\b${text.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")}\\b`, "i");
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      if (n.parentElement.closest(".gl-term")) continue;
      const m = re.exec(n.data);
      if (!m) continue;
      const rest = n.splitText(m.index);
      rest.data = rest.data.slice(m[0].length);
      rest.before(term(m[0], key));
      break;
    }
  }
}
