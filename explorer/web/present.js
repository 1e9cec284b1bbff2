// Presentation mode, for a teacher at a projector: the viewer shows only the sentence, the
// step control and the main view's picture, full screen, in large type (viewer-main.js sizes
// it from the screen). The keys keep working: ← → step, space plays; Esc (or the button)
// leaves. The store's `presenting` says whether it is on; where the browser refuses full
// screen (an iframe, a notebook), the viewer still fills the window.

import { onKey } from "./keys.js";

export class Presenter {
  constructor(store, root, button) {
    this.store = store;
    this.root = root;
    this.button = button;
    button.addEventListener("click", () => this.toggle());
    document.addEventListener("fullscreenchange", () => {
      if (!document.fullscreenElement && this.store.get().presenting && this.wasFull) {
        this.store.set({ presenting: false });
      }
      this.wasFull = !!document.fullscreenElement;
    });
    onKey((ev) => {
      if (ev.key === "Escape" && this.store.get().presenting) this.store.set({ presenting: false });
    });
  }

  toggle() {
    const s = this.store.get();
    if (s.trace || s.presenting) this.store.set({ presenting: !s.presenting });
  }

  /** Enter or leave as the store says. */
  follow(s) {
    const on = !!(s.presenting && s.trace);
    this.root.classList.toggle("ax-presenting", on);
    this.button.setAttribute("aria-pressed", String(on));
    this.button.textContent = on ? "Leave presentation" : "Present";
    document.documentElement.classList.toggle("ax-presenting-page", on);
    if (on && !document.fullscreenElement && this.root.requestFullscreen) {
      this.root.requestFullscreen().catch(() => {}); // refused: the window-filling layout stays
    } else if (!on && document.fullscreenElement === this.root) {
      document.exitFullscreen().catch(() => {});
    }
    if (on) this.root.focus({ preventScroll: true });
  }
}
