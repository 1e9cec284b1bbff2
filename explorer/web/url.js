// The address bar as a shareable link to exactly the view on screen.
//
// The fragment holds the sentence and the view settings, 1-based as on screen:
//   #text=I%20have%20a%20red%20car.&step=3&view=cross&layer=1&head=mean&hide=0
// (and &picture=lines when the main view draws lines instead of the map)
// and, for a version that is not the greedy one (What-if, a beam hypothesis), the forced
// target token ids and what forced them: &forced=12.845.7&origin=whatif. Opening such a
// link traces the same version again. A minimal pair adds its second sentence,
// &pair=My%20sister%20is%20tall., which pairs.js compares once the first one is in the
// viewer. "?text=..." also opens a sentence. While no sentence is shown (before the first
// Translate, after an error) the address carries none, so a reload never brings back an old
// sentence. The collapsible sections open on screen (viewer sections, panel accordions) go
// in as &open=lens.beam-panel, so a link opens them again. A multilingual model's link names
// the languages the sentence was read and written in, &src=eng_Latn&tgt=ita_Latn (the pickers
// beside the sentence); a model of one pair's never does.

const VIEW_KEYS = ["step", "view", "layer", "head", "hide", "picture"];

// What the views add to a link (views.js registers each view's LINK): origins whose version a
// link re-traces from its forced ids (What-if, a beam hypothesis), and params a view writes
// from the store (a minimal pair's B), after the view settings.
const ORIGINS = new Set();
const PARAMS = new Map(); // param -> (state) => string | null
const PARAM_KEYS = new Set(); // the store keys those params are written from

/** Add view `name`'s part of a link: {origin} and/or {param, keys, write(state)}, where `keys`
 * are the store keys `write` reads (the address is rewritten when one changes). */
export function registerLink(name, { origin = null, param = null, keys = [], write = null } = {}) {
  if (origin) ORIGINS.add(origin);
  if (param) {
    if (PARAMS.has(param) || [...VIEW_KEYS, "text", "forced", "origin", "open", "src", "tgt"].includes(param)) {
      throw new Error(`link param "${param}" of view "${name}" is taken`);
    }
    PARAMS.set(param, write);
    for (const k of keys) PARAM_KEYS.add(k);
  }
}

/** The link in `loc`: {text, forced: [ids], origin, src, tgt, settings: {step, view, ...}} or
 * null; `src`/`tgt` a language code or null (the server checks the code is the model's). The
 * fragment wins over the query. */
export function readLink(loc = window.location) {
  const hash = new URLSearchParams(loc.hash.replace(/^#/, ""));
  const params = hash.get("text") ? hash : new URLSearchParams(loc.search);
  const text = params.get("text");
  if (!text) return null;
  const forced = (params.get("forced") || "").split(".").filter((x) => /^\d+$/.test(x)).map(Number);
  const origin = ORIGINS.has(params.get("origin")) && forced.length ? params.get("origin") : null;
  const settings = {};
  for (const k of VIEW_KEYS) if (params.get(k) !== null) settings[k] = params.get(k);
  return { text, forced: origin ? forced : [], origin, settings, open: readOpen(params), src: readLang(params, "src"),
    tgt: readLang(params, "tgt") };
}

/** A language code of the link (`src=`, `tgt=`: letters, digits, "_" and "-"), or null. */
const readLang = (params, key) => (/^[\w-]{1,40}$/.test(params.get(key) || "") ? params.get(key) : null);

/** The section names of `open=` (letters, digits, "-" and "_", separated by "."). */
const readOpen = (params) => (params.get("open") || "").split(".").filter((x) => /^[\w-]+$/.test(x));

/** A view's own `param` in the link (a minimal pair's B, `pair=`), or null: read only where
 * the link has a sentence, from the same part (fragment or query) as the sentence. */
export function readParam(param, loc = window.location) {
  const link = readLink(loc), hash = new URLSearchParams(loc.hash.replace(/^#/, ""));
  return link ? (hash.get("text") ? hash : new URLSearchParams(loc.search)).get(param) || null : null;
}

/** The address for state `s`: the sentence and view settings, or no fragment at all. */
export function linkFor(s, loc = window.location) {
  const url = new URL(loc.href);
  url.searchParams.delete("text");
  const tr = s.trace;
  if (!tr) {
    url.hash = "";
    return url.href.replace(/#$/, "");
  }
  const frag = new URLSearchParams({ text: tr.srcText, step: s.step, view: s.view, layer: s.layer, head: s.head,
    hide: s.hide ? 1 : 0 });
  if (s.picture === "lines") frag.set("picture", "lines");
  if (tr.names && tr.names.multilingual) {
    frag.set("src", tr.names.srcLang);
    frag.set("tgt", tr.names.tgtLang);
  }
  if (tr.forcedPrefix.length && ORIGINS.has(s.origin)) {
    frag.set("forced", tr.forcedPrefix.join("."));
    frag.set("origin", s.origin);
  }
  for (const [param, write] of PARAMS) {
    const value = write(s);
    if (value) frag.set(param, value);
  }
  if (s.open && s.open.length) frag.set("open", s.open.join("."));
  url.hash = frag.toString();
  return url.href;
}

/** Keep the address bar in step with the store (replaceState: no history entry per click). */
export function syncAddress(store) {
  store.subscribe((s, changed) => {
    if (![...changed].some((k) => k === "trace" || k === "origin" || k === "open" || VIEW_KEYS.includes(k)
      || PARAM_KEYS.has(k))) return;
    const href = linkFor(s);
    if (href !== window.location.href) history.replaceState(history.state, "", href);
  });
}
