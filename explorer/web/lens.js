// The logit lens of a large vocabulary, on demand. A model whose target vocabulary is large
// (NLLB-200's 256k tokens) traces without its lens, which would be a third of the Translate
// time; its payload says `logit_lens_left_out` (payload.js `lensLeftOut`). This view has nothing
// to show: while the lens is wanted (the viewer's lens section is open, or a class's question is
// about the lens), it asks its panel (explorer/panels/lens.py) for the sentence on screen, once,
// and puts the answer into that trace (payload.js addLens). The store's `lens` says how far it
// got; the lens section (section-lens.js) draws from the trace, or says "computing" or the error.
// Its block is hidden and outside the closed sections, so it is mounted with the page.

import { Requests } from "./view-base.js";

/** This view's store keys (store.js registerState). */
export const STATE = {
  // the lens of the sentence: {status: "pending" | "done" | "error", error}, null before it is asked
  sentence: { lens: null },
};

/** Whether store state `s` wants the lens of its trace. */
export function wanted(s) {
  const q = s.classroom && s.classroom.question;
  return (s.open || []).includes("lens") || (!!q && q.kind === "layer");
}

export class LensFetch {
  constructor(store, server) {
    this.store = store;
    this.requests = new Requests(store, server);
    store.subscribe((s, changed) => {
      if (changed.has("open") || changed.has("classroom") || changed.has("trace")) this.ask(s);
    });
    this.ask(store.get());
  }

  ask(s) {
    const tr = s.trace;
    if (!tr || !tr.lensLeftOut || s.lens || !wanted(s)) return;
    this.store.set({ lens: { status: "pending" } });
    this.requests.ask("logit_lens", { action: "logit_lens" }).then((a) => this.receive(a));
  }

  /** The server's answer: {action, sentenceId, logit_lens, vocab} or {..., error}; null for a
   * sentence that has gone. */
  receive(a) {
    if (!a) return;
    if (!a.error) this.store.get().trace.addLens(a);
    this.store.answer("lens", a.sentenceId, a.error ? { status: "error", error: a.error } : { status: "done" });
  }
}

export function mount(host, { store, server }) {
  return new LensFetch(store, server);
}
