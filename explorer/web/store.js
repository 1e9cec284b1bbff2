// The explorer's one state store: everything the views show is a function of it, and every
// view changes the page only by changing it. Views subscribe and redraw what they show
// when keys they read have changed.
//
// Counting: step, layer and head count from 1 here, as people read them (and as the URL
// says); the head is "mean", "max" or "1".."H". The server's head format (0-based) is
// converted where a request leaves the browser.
//
// Panels follow the sentence by construction: a new trace in the viewer (Translate, a
// link, What-if, a beam hypothesis) or its removal (an error) starts a new `sentenceId`
// and resets every key of SENTENCE_STATE, so nothing computed for the old sentence can
// stay on screen. A beam hypothesis keeps the beam tree it was opened from. Answers the
// server sends back carry the sentenceId they were asked for, and `answer()` drops
// the ones that belong to a sentence that has gone.

import { KIND_VIEW } from "./attention.js";

/** Keys that belong to the sentence in the viewer, with the value a new sentence starts from:
 * the viewer's own here, each view's added by `registerState` (its `STATE.sentence`). */
export const SENTENCE_STATE = {
  // the heatmap cell last clicked, 1-based trace indices: {view, step, row, col}; it applies
  // only in the view it was clicked in, and a new step (STEP_STATE) forgets it too
  cell: null,
  // the head and step the sentence opened on, and why (viewer.js):
  // {layer, head, step, key, weight, source, n, ...} or null
  focus: null,
};

// sentence keys a new trace of one origin keeps (a beam hypothesis keeps the tree it came from)
const KEPT_BY_ORIGIN = {};
const OWNER = {}; // key -> the view that registered it, so two views never claim one key

/** Keys that belong to the step: a new step starts from these. */
export const STEP_STATE = Object.freeze({
  candidate: 1, // What-if rank (0 = most likely)
  cell: null, // the clicked cell
});

const INITIAL = {
  trace: null, // the decoded payload (payload.js Trace) in the viewer, or null
  origin: null, // what brought it: "translate", "link", or a view that opens versions (What-if, beam search)
  sentenceId: 0, // increases with every new trace or its removal
  step: 1,
  view: "cross",
  layer: 1,
  head: "mean",
  hide: false,
  picture: "map", // how the main view draws attention: "map" (heatmap.js) or "lines" (lines.js)
  presenting: false, // presentation mode: the main view alone, full screen, in large type (present.js)
  explain: false, // the arithmetic of attention beside the main view (viewer-main.js; its panel is arithmetic.js)
  // {view, layer, head} the viewer last opened a sentence on: while they stay, the next one opens on its own
  focused: null,
  playing: false,
  speed: 4, // Play, steps per second
  peLen: 12, // positional encoding: positions shown, and the one followed (0-based, as in the formula)
  peFollow: 0,
  // heads picked for knock-out (analysis.js), shared with the viewer's mosaic: [{kind, layer, head}],
  // 1-based, kept across sentences
  selection: [],
  selecting: false, // "select mode": a plain click on a head selects it
  selectable: false, // true once a view that can knock heads out is on the page
  link: null, // view settings of a shared link, applied when its sentence arrives
  open: [], // the collapsible sections the visitor opened (viewer sections, panel accordions): kept in the link
  // the page's colour theme, "light" or "dark" (theme.js): a view that colours in script redraws when it changes
  theme: "light",
  ...STEP_STATE,
  ...SENTENCE_STATE,
};

/** Add view `name`'s keys to every store made from now on (views.js calls it for each view
 * before the page makes its store). `state`: {sentence: {key: start value}} for keys that
 * belong to the sentence (a new one resets them), {global: {key: value}} for keys kept across
 * sentences, and `keptBy`: an origin whose new trace keeps this view's sentence keys. */
export function registerState(name, { sentence = {}, global = {}, keptBy = null } = {}) {
  for (const key of [...Object.keys(sentence), ...Object.keys(global)]) {
    if (own(INITIAL, key) && OWNER[key] !== name) {
      const owner = OWNER[key] ? `view "${OWNER[key]}"'s` : "the store's";
      throw new Error(`store key "${key}" of view "${name}" is already ${owner}`);
    }
    OWNER[key] = name;
  }
  Object.assign(SENTENCE_STATE, sentence);
  Object.assign(INITIAL, global, sentence);
  if (keptBy) (KEPT_BY_ORIGIN[keptBy] ||= []).push(...Object.keys(sentence));
}

const own = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

export class Store {
  constructor(initial = {}) {
    this.state = { ...INITIAL, ...initial };
    this.listeners = new Set();
  }

  get() {
    return this.state;
  }

  /** Call fn(state, changed) after every change; `changed` is the Set of keys that changed. */
  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Merge `patch` into the state and tell every subscriber which keys changed. */
  set(patch) {
    const s = this.state, changed = new Set();
    const next = own(patch, "step") && patch.step !== s.step && !own(patch, "candidate")
      ? { ...STEP_STATE, ...patch } : patch;
    for (const [k, v] of Object.entries(next)) {
      if (s[k] !== v) { s[k] = v; changed.add(k); }
    }
    if (changed.size) this.notify(changed);
  }

  notify(changed) {
    for (const fn of [...this.listeners]) {
      try { fn(this.state, changed); } catch (err) { console.error(err); }
    }
  }

  /** A new trace in the viewer (or null: the sentence is gone). `view` holds view settings
   * to apply with it (a shared link's, or the step a What-if version starts at). */
  setTrace(trace, origin = null, view = {}) {
    const s = this.state, fresh = { ...SENTENCE_STATE };
    if (trace) for (const key of KEPT_BY_ORIGIN[origin] || []) delete fresh[key];
    this.set({ ...fresh, trace, origin: trace ? origin : null, sentenceId: s.sentenceId + 1, step: 1, playing: false,
      ...(trace ? { peLen: trace.src.length, peFollow: 0 } : {}), ...view });
  }

  /** An answer from the server for `key` (a SENTENCE_STATE key), kept only if it was asked
   * for the sentence still in the viewer (`sentenceId` as it was when asked). Returns whether it was kept. */
  answer(key, sentenceId, value) {
    if (sentenceId !== this.state.sentenceId) return false;
    this.set({ [key]: value });
    return true;
  }

  // --- heads picked for knock-out, and the head open in the viewer (1-based {kind, layer, head}) ---
  /** Add `h` to the knock-out selection or remove it (toggle when `on` is not given). */
  toggleHead(h, on) {
    const key = (x) => `${x.kind}:${x.layer}:${x.head}`;
    const rest = this.state.selection.filter((x) => key(x) !== key(h));
    const add = on === undefined ? rest.length === this.state.selection.length : on;
    this.set({ selection: add ? [...rest, { kind: h.kind, layer: h.layer, head: h.head }] : rest });
  }

  /** Show head `h` in the viewer: its kind's view, its layer and head. */
  openHead(h) {
    this.set({ view: KIND_VIEW[h.kind], layer: h.layer, head: String(h.head) });
  }

  /** A plain copy of the state, for tests (window.__explorer.getState()). */
  snapshot() {
    const s = this.state, tr = s.trace;
    return JSON.parse(JSON.stringify({
      ...s,
      sentence: tr ? tr.srcText : null,
      trace: tr && {
        srcText: tr.srcText, translation: tr.translation, src: tr.src, tgt: tr.tgt, steps: tr.steps, heads: tr.heads,
        layers: { encoder: tr.layers("encoder"), decoder: tr.layers("decoder"), cross: tr.layers("cross") },
        origin: tr.origin, forcedPrefix: tr.forcedPrefix, headStats: tr.headStats, names: tr.names,
        lensLeftOut: tr.lensLeftOut,
      },
      forcedPrefix: tr ? tr.forcedPrefix : [],
    }, (key, value) => (value instanceof Map ? { keys: [...value.keys()] } : value))); // a view's Map: its keys
  }
}

export function createStore(initial) {
  return new Store(initial);
}
