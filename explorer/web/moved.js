// What moved the output (the toggle under the main map, viewer-main.js; drawn by picture-map.js):
// ‖α·f(x)‖ of every head (Kobayashi et al. 2020) in place of the attention weight. This view
// has nothing to show: it asks its panel (explorer/panels/sources.py, action "norms") for the
// norms of the sentence on screen, once per sentence, while the toggle is on, and keeps them in
// the store. Its block is hidden and outside the closed sections, so it is mounted with the page
// (a closed section's view only mounts when it first opens).

import { Requests } from "./view-base.js";

/** This view's store keys (store.js registerState). */
export const STATE = {
  // the norms of the sentence: {status: "pending" | "done" | "error", maps: {view: {shape, data}}, error}
  sentence: { norms: null },
  // the main map draws ‖α·f(x)‖ (rows normalised) in place of the weight: kept across sentences
  global: { moved: false },
};

const NORM_VIEWS = { encoder: "encoder", decoder_self: "decoder", cross: "cross" }; // to_dict kind -> view

/** A nested (L, H, Q, K) list as the payload's arrays are: {shape, data: Float32Array}. */
export function packed(nested) {
  const shape = [];
  for (let a = nested; Array.isArray(a); a = a[0]) shape.push(a.length);
  return { shape, data: Float32Array.from(nested.flat(shape.length - 1)) };
}

export class Moved {
  constructor(store, server) {
    this.store = store;
    this.requests = new Requests(store, server);
    store.subscribe((s, changed) => {
      if (changed.has("moved") || changed.has("sentenceId")) this.ask(s);
    });
    this.ask(store.get());
  }

  /** The norms, once per sentence, while the toggle is on. */
  ask(s) {
    if (!s.moved || !s.trace || s.norms) return;
    this.store.set({ norms: { status: "pending" } });
    this.requests.ask("norms", { action: "norms" }).then((a) => this.receive(a));
  }

  /** The server's answer: {action: "norms", sentenceId, encoder, decoder_self, cross} or {..., error};
   * null for a sentence that has gone. */
  receive(a) {
    if (!a) return;
    const value = a.error ? { status: "error", error: a.error }
      : { status: "done", maps: Object.fromEntries(Object.entries(NORM_VIEWS).map(([k, v]) => [v, packed(a[k])])) };
    this.store.answer("norms", a.sentenceId, value);
  }
}

export function mount(host, { store, server }) {
  return new Moved(store, server);
}
