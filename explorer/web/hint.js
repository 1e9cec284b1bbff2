// "What to look for": the hint of an example sentence, shown while that sentence is the one
// in the text box (explorer/app.py puts the examples on the page). The hint belongs to its
// example: typing another sentence, or a trace of another sentence in the viewer, hides it.
//
// The block's value is the hint an example click set (plain text); the view's data is the
// list of [sentence, hint] examples, to know which sentence a hint belongs to.

import { el } from "./draw.js";

export class Hint {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    const examples = new Map((server.data || []).map(([sentence, hint]) => [hint, sentence]));
    this.text = el("p", { className: "ax-hint-text" });
    this.box = el("div", { className: "ax-hint", hidden: true }, [el("span", { className: "ax-label", text: "What to look for" }), this.text]);
    host.replaceChildren(this.box);
    server.onValue((hint) => store.set({ hint: hint ? { text: hint, sentence: examples.get(hint) } : null }), false);
    // the user types in the sentence box (#src-text, a Gradio textbox): a hint for another sentence goes
    document.addEventListener("input", (ev) => {
      const box = ev.target.closest && ev.target.closest("#src-text");
      const h = store.get().hint;
      if (box && h && ev.target.value.trim() !== h.sentence) this.drop();
    });
    store.subscribe((s, changed) => {
      if (changed.has("trace") && s.trace && s.hint && s.trace.srcText !== s.hint.sentence) this.drop();
      if (changed.has("hint")) this.render(s.hint);
    });
    this.render(store.get().hint);
  }

  /** Hide the hint, and forget it on the page too, so clicking the same example again shows it again. */
  drop() {
    this.server.clear();
    this.store.set({ hint: null });
  }

  render(hint) {
    this.box.hidden = !hint;
    this.text.textContent = hint ? hint.text : "";
  }
}

export function mount(host, { store, server }) {
  return new Hint(host, store, server);
}
