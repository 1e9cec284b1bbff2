// The example sentences and "What to look for": one click on an example puts it in the
// sentence box and translates it (the block's submit event: explorer/page.py run_example), and
// its hint shows, whole, while that sentence is the one in the text box. The hint belongs to
// its example: typing another sentence, or a trace of another sentence in the viewer, hides it.
//
// The view's data is the list of [sentence, hint] examples: the checkpoint's claims.json,
// through explorer/claims.py.
//
// An empty sentence box is sent empty, whatever its grey placeholder shows: the server answers
// with one line asking for a sentence (explorer/page.py check_text) and translates nothing.

import { el } from "./canvas.js";

/** This view's store key (store.js registerState): {text, sentence}, the example's "what to look
 * for" and the sentence it belongs to. */
export const STATE = { global: { hint: null } };

/** Put `text` in the Gradio sentence box (#src-text) as typing would, so Translate sends it. */
function fillSentenceBox(text) {
  const box = sentenceBox();
  if (!box) return;
  box.value = text;
  box.dispatchEvent(new Event("input", { bubbles: true }));
}

/** The sentence box's text area, once Gradio has drawn it. */
const sentenceBox = () => document.querySelector("#src-text textarea, #src-text input");

export class Hint {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    const examples = server.data || [];
    this.text = el("p", { className: "ax-hint-text" });
    this.box = el("div", { className: "ax-hint", hidden: true },
      [el("span", { className: "ax-label", text: "What to look for" }), this.text]);
    const buttons = examples.map(([sentence, hint], i) => {
      const b = el("button", { type: "button", className: "ax-example", "data-example": i, text: sentence });
      b.addEventListener("click", () => this.run(sentence, hint));
      return b;
    });
    host.replaceChildren(el("div", { className: "ax-examples" }, [
      el("span", { className: "ax-examples-label", text: "Examples:", title: "One click translates an example" }),
      el("div", { className: "ax-example-list" }, buttons)]), this.box);
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

  /** An example: into the box, its hint on show, and translated at once. */
  run(sentence, hint) {
    fillSentenceBox(sentence);
    this.store.set({ hint: { text: hint, sentence } });
    this.server.ask({ text: sentence });
  }

  drop() {
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
