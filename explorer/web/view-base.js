// What every browser view is built on, so a view only says what it draws and what it asks
// the server for:
//
//   nextFrame(fn) / cancelFrame(id)   the page's one way to wait for the next frame
//   new Frames(draw)                  .schedule(): draw() once in the next frame, however many
//                                     changes asked for it in between
//   watchSize(elements, fn)           fn() whenever one of `elements` changes size
//   watchOpen(element, fn)            fn(open) when `element` starts or stops being on screen:
//                                     a closed accordion or section hides it (no size), so a
//                                     view draws, and asks the server, only while it is open
//   new Requests(store, server)       one request on its way at a time, at most one waiting
//                                     (see the class)
//
// A view module exports mount(host, { store, server }) and, when it keeps state in the store,
// STATE (store.js registerState); views.js registers it in one line. Keys go through keys.js.

/** The page's one call of requestAnimationFrame. */
export function nextFrame(fn) {
  return requestAnimationFrame(fn);
}

export function cancelFrame(id) {
  cancelAnimationFrame(id);
}

/** draw() at most once a frame: schedule() as often as the store changes. */
export class Frames {
  constructor(draw) {
    this.draw = draw;
    this.id = null;
  }

  schedule() {
    if (this.id !== null) return;
    this.id = nextFrame(() => { this.id = null; this.draw(); });
  }

  cancel() {
    if (this.id !== null) cancelFrame(this.id);
    this.id = null;
  }
}

/** fn(entries) whenever one of `elements` changes size; returns the observer. */
export function watchSize(elements, fn) {
  const observer = new ResizeObserver(fn);
  for (const e of [elements].flat()) observer.observe(e);
  return observer;
}

/** Whether `element` is on screen: it has a box and a width (a closed accordion's content has neither). */
export function isShown(element) {
  return element.getClientRects().length > 0 && element.offsetWidth > 0;
}

/** fn(open) each time `element` is shown or hidden (and once, when first observed). */
export function watchOpen(element, fn) {
  let open = null;
  return watchSize(element, () => {
    const now = isShown(element);
    if (now !== open) { open = now; fn(now); }
  });
}

/**
 * A view's requests to its panel, one on its way at a time: the block's value carries one answer
 * at a time, and two asked in the same moment were seen to lose one.
 *
 * ask(key, fields, slot = key) sends {...fields, sentenceId, key} when nothing is on its way, else
 * keeps it waiting; a newer ask in the same slot (the same analysis at another step, say)
 * replaces the one waiting there, so each slot queues at most one. It returns a promise of the
 * panel's answer ({key, sentenceId, ...}), or of null when the sentence changed first (the answer
 * is dropped) or a newer ask replaced it. The answers of the sentence on screen are kept:
 * get(key) is {status: "pending" | "done" | "error", data | error}, or undefined before it is asked.
 */
export class Requests {
  constructor(store, server) {
    this.store = store;
    this.server = server;
    this.results = new Map(); // key -> {status, data | error}
    this.sentenceId = store.get().sentenceId;
    this.onWay = null; // {key, sentenceId, resolve}
    this.waiting = new Map(); // slot -> {key, fields, resolve}, in the order asked
    server.onValue((a) => this.receive(a));
  }

  get(key) {
    this.forgetIfNew();
    return this.results.get(key);
  }

  /** Whether a request is on its way or waiting. */
  get busy() {
    return !!this.onWay || this.waiting.size > 0;
  }

  ask(key, fields = {}, slot = key) {
    this.forgetIfNew();
    return new Promise((resolve) => {
      const replaced = this.waiting.get(slot);
      if (replaced) { this.results.delete(replaced.key); replaced.resolve(null); }
      this.waiting.delete(slot);
      this.results.set(key, { status: "pending" });
      this.waiting.set(slot, { key, fields, resolve });
      this.send();
    });
  }

  /** Set an answer the view found itself (a refusal it can tell without the server). */
  set(key, result) {
    this.forgetIfNew();
    this.results.set(key, result);
  }

  send() {
    if (this.onWay || !this.waiting.size) return;
    const [slot, { key, fields, resolve }] = this.waiting.entries().next().value;
    this.waiting.delete(slot);
    this.onWay = { key, resolve, sentenceId: this.store.get().sentenceId };
    this.server.ask({ ...fields, sentenceId: this.onWay.sentenceId, key });
  }

  /** A new sentence: its answers start empty, and what waits for the old one is dropped. */
  forgetIfNew() {
    const id = this.store.get().sentenceId;
    if (id === this.sentenceId) return;
    this.sentenceId = id;
    this.results = new Map();
    for (const w of this.waiting.values()) w.resolve(null);
    this.waiting.clear();
  }

  receive(a) {
    if (!a || !this.onWay || a.key !== this.onWay.key || a.sentenceId !== this.onWay.sentenceId) return;
    const { resolve } = this.onWay;
    this.onWay = null;
    this.forgetIfNew();
    if (a.sentenceId !== this.sentenceId) resolve(null); // asked for a sentence that has gone
    else {
      this.results.set(a.key, a.error ? { status: "error", error: a.error } : { status: "done", data: a });
      resolve(a);
    }
    this.send();
  }
}
