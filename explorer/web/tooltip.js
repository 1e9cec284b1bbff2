// Tooltips that name what is under the pointer, for every chart of every view.
//
// A mouse shows them on hover. A finger cannot hover, so a tap shows the tooltip of the
// point tapped and it stays until the next tap elsewhere or a scroll: on a phone every
// cell can be read. Each view has its own tooltip element (and id); placement lives here.

import { el } from "./canvas.js";

const MARGIN = 4, GAP_X = 14, GAP_Y = 16, SETTLE_MS = 300;

export class Tooltip {
  /** A hidden tooltip element with this id, appended to `parent` (default: the page body). */
  constructor(id, parent = document.body) {
    this.box = el("div", { id, className: "ax-tooltip", role: "tooltip", hidden: true });
    parent.append(this.box);
    this.targets = new WeakSet();
    this.tapped = false; // shown by a tap: it stays until the next touch elsewhere or a scroll
    this.shownAt = 0;
    // (a scroll that was already under way when the finger lifted does not count)
    window.addEventListener("scroll", () => {
      if (this.tapped && performance.now() - this.shownAt > SETTLE_MS) this.hide();
    }, { passive: true, capture: true });
    // a tapped tooltip stays until the finger touches anything else
    document.addEventListener("pointerdown", (ev) => {
      if (ev.pointerType !== "mouse" && !ev.composedPath().some((n) => this.targets.has(n))) this.hide();
    }, { capture: true });
  }

  /** Show `lines` near the viewport point (x, y): right of and below it, flipped to stay on screen. */
  show(lines, x, y, tapped = false) {
    const box = this.box;
    if (!lines || !lines.length) { this.hide(); return; }
    this.tapped = tapped;
    this.shownAt = performance.now();
    box.replaceChildren(...lines.map((l) => el("div", { text: l })));
    box.hidden = false;
    const left = Math.min(x + GAP_X, window.innerWidth - box.offsetWidth - MARGIN);
    const top = y + GAP_Y + box.offsetHeight > window.innerHeight ? y - box.offsetHeight - 8 : y + GAP_Y;
    box.style.left = `${Math.max(MARGIN, left)}px`;
    box.style.top = `${Math.max(MARGIN, top)}px`;
  }

  hide() {
    this.box.hidden = true;
  }

  /** Name what is under the pointer on `target`: `lines(x, y, ev)` gets the point in css px
   * of the target and returns the tooltip's lines, or null for nothing there. */
  bind(target, lines) {
    const at = (ev) => {
      const r = target.getBoundingClientRect();
      return lines(ev.clientX - r.left, ev.clientY - r.top, ev);
    };
    let pointer = "mouse"; // the kind of the last pointer that went down here
    this.targets.add(target);
    target.addEventListener("pointerdown", (ev) => { pointer = ev.pointerType; });
    target.addEventListener("pointermove", (ev) => {
      if (ev.pointerType === "mouse") this.show(at(ev), ev.clientX, ev.clientY);
    });
    target.addEventListener("pointerleave", (ev) => { if (ev.pointerType === "mouse") this.hide(); });
    // a tap (touch or pen) is a click that no mouse made
    target.addEventListener("click", (ev) => {
      if ((ev.pointerType || pointer) !== "mouse") this.show(at(ev), ev.clientX, ev.clientY, true);
    });
  }
}
