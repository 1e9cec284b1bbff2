// The attention kind, layer and head right beside the picture, as bertviz puts its layer menu
// and head swatches above its own: a menu of kinds, one button per layer, and one swatch per
// head (in the Lines view's head colours, numbered) plus "mean" and "max". They only change the
// store's `view`, `layer` and `head`, so they stay in step with the menus of "More views", the
// mosaic and the address. Presentation mode keeps them, with keys: ↑ / ↓ the layer, shift + ←
// / → the head; 1–8 pick a head and 0 the mean anywhere on the page (not while typing).

import { VIEWS } from "./attention.js";
import { el } from "./canvas.js";
import { headColour } from "./lines.js";
import { keysNote, onKey } from "./keys.js";

// what uses the keys itself: typing, menus and sliders
const OWN_KEYS = "select, textarea, input:not([type=checkbox]):not([type=radio]):not([type=button]), "
  + "[contenteditable=''], [contenteditable='true']";

export class AttnPicker {
  constructor() {
    this.kind = el("select", { id: "kind-select", "aria-label": "Attention kind" },
      Object.entries(VIEWS).map(([v, t]) => el("option", { value: v, text: t })));
    this.layers = el("div", { id: "layer-buttons", className: "ap-buttons", role: "group", "aria-label": "Layer" });
    this.heads = el("div", { id: "head-buttons", className: "ap-buttons", role: "group", "aria-label": "Head" });
    this.keys = el("p", { id: "keys-note", className: "ap-keys", text: keysNote(false) });
    this.el = el("div", { id: "attn-picker", className: "ap-root", "data-needs-trace": true }, [
      el("div", { className: "ap-row" }, [this.kind]),
      el("div", { className: "ap-row" }, [el("span", { className: "ap-label", text: "Layer" }), this.layers]),
      el("div", { className: "ap-row" }, [el("span", { className: "ap-label", text: "Head" }), this.heads]),
      this.keys,
    ]);
  }

  bind(store, global) {
    this.store = store;
    this.kind.addEventListener("change", () => store.set({ view: this.kind.value }));
    this.layers.addEventListener("click", (ev) => {
      const b = ev.target.closest && ev.target.closest("button[data-layer]");
      if (b && !b.disabled) store.set({ layer: Number(b.dataset.layer) });
    });
    this.heads.addEventListener("click", (ev) => {
      const b = ev.target.closest && ev.target.closest("button[data-head]");
      if (b && !b.disabled) store.set({ head: b.dataset.head });
    });
    onKey((ev) => this.key(ev, global));
  }

  /** ↑ / ↓ and shift + ← / → in presentation mode; 1–8 and 0 anywhere outside text and menus. */
  key(ev, global) {
    const s = this.store.get(), tr = s.trace, t = ev.target;
    if (!tr || ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented || s.view === "rollout") return;
    if (!global && !this.el.parentNode.contains(t)) return;
    if (t.closest && t.closest(OWN_KEYS)) return;
    const L = tr.layers(s.view), H = tr.heads;
    let patch = null;
    if (/^[0-9]$/.test(ev.key)) {
      const n = Number(ev.key);
      if (n === 0) patch = { head: "mean" };
      else if (n <= H) patch = { head: String(n) };
    } else if (s.presenting && (ev.key === "ArrowUp" || ev.key === "ArrowDown")) {
      patch = { layer: Math.min(L, Math.max(1, s.layer + (ev.key === "ArrowUp" ? -1 : 1))) };
    } else if (s.presenting && ev.shiftKey && (ev.key === "ArrowLeft" || ev.key === "ArrowRight")) {
      // mean, max, 1..H in a ring, as the swatches stand
      const order = ["mean", "max", ...Array.from({ length: H }, (_, h) => String(h + 1))];
      const i = order.indexOf(s.head), d = ev.key === "ArrowLeft" ? -1 : 1;
      patch = { head: order[(i + d + order.length) % order.length] };
    }
    if (!patch) return;
    ev.preventDefault();
    this.store.set(patch);
  }

  /** A new sentence: its layers and heads. */
  showTrace(tr) {
    this.heads.replaceChildren(
      swatch("mean", "mean", "mean over heads"), swatch("max", "max", "max over heads"),
      ...Array.from({ length: tr.heads }, (_, h) => swatch(String(h + 1), String(h + 1), `head ${h + 1}`,
        headColour(h))));
    this.layerCount = 0;
  }

  /** The controls show the store's settings. */
  follow(s, tr) {
    const rollout = s.view === "rollout", L = tr.layers(rollout ? "cross" : s.view);
    this.kind.value = s.view;
    for (const o of this.kind.options) o.disabled = o.value === "rollout" && !tr.rollout;
    if (this.layerCount !== L) {
      this.layerCount = L;
      this.layers.replaceChildren(...Array.from({ length: L }, (_, l) => el("button", { type: "button",
        id: `layer-btn-${l + 1}`, className: "ap-btn", "data-layer": l + 1, "aria-pressed": "false",
        title: `layer ${l + 1}`, text: String(l + 1) })));
    }
    for (const b of this.layers.children) {
      b.setAttribute("aria-pressed", String(!rollout && Number(b.dataset.layer) === s.layer));
      b.disabled = rollout;
    }
    for (const b of this.heads.children) {
      b.setAttribute("aria-pressed", String(!rollout && b.dataset.head === s.head));
      b.disabled = rollout;
    }
    this.keys.textContent = keysNote(s.presenting);
  }
}

/** One head's swatch: a coloured square and its number (colour never carries the meaning alone). */
function swatch(head, text, title, colour = null) {
  const b = el("button", { type: "button", id: `head-btn-${head}`, className: "ap-btn ap-head", "data-head": head,
    "aria-pressed": "false", title, "aria-label": title }, [el("span", { text })]);
  if (colour) {
    b.classList.add("ap-swatch");
    b.style.setProperty("--ap-colour", colour);
  }
  return b;
}
