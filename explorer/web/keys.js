// Every key the page answers, in one place: the shortcuts' table (what the note under the
// picker lists) and the one keydown listener that hands each key to whoever asked for it.
//
//   onKey(handler)                 a page-wide shortcut: handler(ev) for every key, after the
//                                  element handlers below; return true when it took the key
//   onKey(handler, { early: true })  before anything else on the page sees the key (a Gradio
//                                  input that handles Enter itself)
//   onKeyIn(element, handler)      a key pressed inside `element` (its own input, a focusable
//                                  cell): the innermost element's handler runs first, and one
//                                  that returns true keeps the key from every other handler
//   pressable(element, fn)         Enter or space on a focused element runs fn, as a click does
//   onEnter(input, fn)             Enter in a text box runs fn(value)
//
// A handler that takes a key calls ev.preventDefault() itself when the browser must not act on
// it too (scroll the page, type a space).

// the shortcuts, as the note under the picker lists them (attn-picker.js); `present`: only in
// presentation mode. The handlers live with what they change: player.js (step, play),
// attn-picker.js (layer, head), present.js (leave)
export const SHORTCUTS = [
  { keys: "← →", does: "step" },
  { keys: "space", does: "plays" },
  { keys: "↑ ↓", does: "layer", present: true },
  { keys: "shift+← →", does: "head", present: true },
  { keys: "1–8", does: "head, 0 mean" },
  { keys: "Esc", does: "leaves", present: true },
];

/** The note that lists the shortcuts (in presentation mode, or not). */
export function keysNote(presenting) {
  const shown = SHORTCUTS.filter((k) => presenting || !k.present);
  return `Keys: ${shown.map((k) => `${k.keys} ${k.does}`).join(" · ")}`;
}

const early = [], page = [];
const within = new WeakMap(); // element -> [handler]
let listening = false;

function listen() {
  if (listening) return;
  listening = true;
  document.addEventListener("keydown", (ev) => { for (const h of early) if (h(ev) === true) return; }, true);
  document.addEventListener("keydown", (ev) => {
    for (let n = ev.target; n && n !== document; n = n.parentNode) {
      for (const h of within.get(n) || []) if (h(ev) === true) return;
    }
    for (const h of page) if (h(ev) === true) return;
  });
}

export function onKey(handler, { early: first = false } = {}) {
  listen();
  (first ? early : page).push(handler);
}

export function onKeyIn(element, handler) {
  listen();
  within.set(element, [...(within.get(element) || []), handler]);
}

export function pressable(element, fn) {
  onKeyIn(element, (ev) => {
    if (ev.key !== "Enter" && ev.key !== " ") return false;
    ev.preventDefault(); // space here presses: it does not scroll or start Play
    fn(ev);
    return true;
  });
}

export function onEnter(input, fn) {
  onKeyIn(input, (ev) => {
    if (ev.key !== "Enter") return false;
    ev.preventDefault();
    fn(input.value);
    return true;
  });
}
