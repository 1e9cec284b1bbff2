// The viewer's step control: ◀ / ▶, the slider, Play and its speed, and the keys (← → step,
// space plays). Every control only changes the store's `step`, `playing` and `speed`; the
// Play timer runs while the store says `playing` and advances one step per tick.

import { icon } from "./canvas.js";
import { onKey } from "./keys.js";

// what uses the keys itself: arrows move in text, menus and sliders; space also presses
// buttons and links, opens <summary> and ticks checkboxes
const OWN_ARROWS = "select, textarea, input:not([type=checkbox]):not([type=radio]):not([type=button]), "
  + "[contenteditable=''], [contenteditable='true']";
const OWN_SPACE = `${OWN_ARROWS}, button, a[href], summary, input, [role=button]`;

export class Player {
  /** `root`: the viewer's element (keys count only inside it unless `global`), `el`: its elements by id. */
  constructor(store, root, el) {
    this.store = store;
    this.root = root;
    this.el = el;
    this.timer = null;
  }

  /** Move to step `to`, kept inside the sentence, and stop Play. */
  go(to) {
    const s = this.store.get();
    this.store.set({ step: Math.min(Math.max(1, to), s.trace ? s.trace.steps : 1), playing: false });
  }

  bind(global) {
    const e = this.el, s = () => this.store.get();
    e["prev-btn"].addEventListener("click", () => this.go(s().step - 1));
    e["next-btn"].addEventListener("click", () => this.go(s().step + 1));
    e["step-slider"].addEventListener("input", () => this.go(Number(e["step-slider"].value)));
    e["play-btn"].addEventListener("click", () => this.toggle());
    e["play-speed"].addEventListener("change", () => this.store.set({ speed: Number(e["play-speed"].value) }));
    this.bindKeys(global);
  }

  /** ←/→ step and space plays, unless focus is on something that uses those keys itself
   * (OWN_ARROWS, OWN_SPACE): space on a focused button presses it, on a checkbox ticks it;
   * arrows on a focused slider move it. In the Space the keys work anywhere on the page;
   * in a notebook only inside the viewer. */
  bindKeys(global) {
    onKey((ev) => {
      const t = ev.target;
      if (!this.store.get().trace || ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
      if (!global && !this.root.contains(t)) return;
      const owns = (sel) => t.closest && t.closest(sel);
      if (ev.key === "ArrowLeft" || ev.key === "ArrowRight") {
        if (owns(OWN_ARROWS) || ev.shiftKey) return; // shift + arrows change the head (attn-picker.js)
        ev.preventDefault();
        this.go(this.store.get().step + (ev.key === "ArrowLeft" ? -1 : 1));
      } else if (ev.key === " " || ev.key === "Spacebar") {
        if (owns(OWN_SPACE)) return;
        ev.preventDefault();
        this.toggle();
      }
    });
  }

  toggle() {
    const s = this.store.get();
    if (!s.trace) return;
    this.store.set(s.playing ? { playing: false } : { playing: true, step: s.step >= s.trace.steps ? 1 : s.step });
  }

  /** The controls show the store's step. */
  follow(s, tr) {
    const e = this.el;
    e["step-slider"].value = String(s.step);
    e["step-label"].textContent = `Step ${s.step} of ${tr.steps}`;
    e["prev-btn"].disabled = s.step <= 1;
    e["next-btn"].disabled = s.step >= tr.steps;
  }

  /** Run or stop the Play timer as the store says. */
  play(s) {
    clearInterval(this.timer);
    this.timer = null;
    const btn = this.el["play-btn"];
    btn.replaceChildren(icon(s.playing ? "pause" : "play"), s.playing ? " Pause" : " Play");
    btn.setAttribute("aria-pressed", String(s.playing));
    this.el["play-speed"].value = String(s.speed);
    if (!s.playing) return;
    this.timer = setInterval(() => {
      const now = this.store.get();
      if (!now.trace || now.step >= now.trace.steps) this.store.set({ playing: false });
      else this.store.set({ step: now.step + 1, playing: true });
    }, 1000 / s.speed);
  }
}
