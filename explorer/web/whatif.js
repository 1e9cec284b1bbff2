// What if? Force another candidate at the viewer's current step and decode the rest
// greedily (explorer/panels/whatif.py does it on the server). The candidate list follows
// the store's step; "Decode with this token" asks the server, "Explore that version" opens
// the result in the viewer. The result belongs to its sentence: a new one clears it.
// Another view may ask for a token outside the candidates (sources.js: a reference's token, with
// the reference's own tokens before it) through the store's `whatifForce`.

import { el } from "./canvas.js";
import { share } from "./numbers.js";

/** This view's store keys (store.js registerState) and its part of a link (url.js registerLink). */
export const STATE = {
  // {status: "pending" | "done" | "error", step, rank, token, original, translation, error}
  // what another view asks to force: {step, ids (target ids of steps 1..step), token}; taken at once
  sentence: { whatif: null, whatifForce: null },
};
export const LINK = { origin: "whatif" }; // a link to a What-if version re-traces it with its forced ids

export class WhatIf {
  constructor(host, store, server) {
    this.store = store;
    this.server = server;
    this.select = el("select", { "aria-label": "Candidate at the current step", disabled: true });
    this.decodeBtn = el("button", { id: "whatif-btn", type: "button", className: "ax-action",
      text: "Decode with this token", disabled: true });
    this.openBtn = el("button", { id: "open-whatif-btn", type: "button", className: "ax-action",
      text: "Explore that version", disabled: true });
    this.text = el("div", { id: "whatif-text", className: "ax-whatif-text", "aria-live": "polite" });
    host.replaceChildren(el("div", { className: "ax-root ax-whatif" }, [
      el("div", { className: "ax-controls" }, [
        el("label", { id: "candidate", className: "ax-field" },
          [el("span", { text: "Candidate at the current step" }), this.select]),
        this.decodeBtn, this.openBtn,
      ]),
      this.text,
    ]));
    // a token forced from another view (not one of the candidates) shows as the menu's choice
    // until the visitor picks a candidate
    this.showForced = false;
    this.select.addEventListener("change", () => {
      this.showForced = false;
      store.set({ candidate: Number(this.select.value) });
      this.render(store.get()); // the forced entry goes even when the candidate is the stored one
    });
    this.decodeBtn.addEventListener("click", () => this.decode());
    this.openBtn.addEventListener("click", () => server.open({ sentenceId: store.get().sentenceId }));
    server.onValue((answer) => this.receive(answer));
    store.subscribe((s, changed) => {
      if (changed.has("whatifForce") && s.whatifForce) this.force(s.whatifForce);
      else if (["trace", "step", "candidate", "whatif"].some((k) => changed.has(k))) this.render(s);
    });
    this.render(store.get());
    // asked before this section was first opened (its view mounts then): take it now
    if (store.get().whatifForce) this.force(store.get().whatifForce);
  }

  decode() {
    const s = this.store.get();
    if (!s.trace) return;
    this.store.set({ whatif: { status: "pending", step: s.step, rank: s.candidate } });
    this.server.ask({ sentenceId: s.sentenceId, step: s.step, rank: s.candidate });
  }

  /** Decode with `f.ids` forced at steps 1..f.step (any tokens of the vocabulary). */
  force(f) {
    const s = this.store.get();
    if (!s.trace) return;
    this.showForced = true;
    this.store.set({ whatifForce: null, whatif: { status: "pending", step: f.step, rank: null, token: f.token } });
    this.server.ask({ sentenceId: s.sentenceId, step: f.step, ids: f.ids });
  }

  /** The server's answer: {sentenceId, step, token, original, translation} or {sentenceId, error}. */
  receive(a) {
    if (!a) return;
    const s = this.store.get(), pending = s.whatif || {};
    const value = a.error ? { ...pending, status: "error", error: a.error } : { status: "done", ...a };
    this.store.answer("whatif", a.sentenceId, value);
  }

  render(s) {
    const tr = s.trace, w = s.whatif;
    const cands = tr ? tr.topk(s.step - 1) : [];
    // what another view forced at this step: its candidate, or an entry of its own when the
    // token is none of them (its rank is null)
    const mine = this.showForced && w && w.step === s.step;
    const forced = mine && (w.rank ?? null) === null ? w.token : null;
    this.select.replaceChildren(
      ...(forced === null ? [] : [el("option", { value: "forced", disabled: true, text: `forced: ${forced}` })]),
      ...cands.map((c, k) => el("option", { value: k, text: `${k + 1}. ${c.token}  (p = ${share(c.prob)})` })));
    const k = mine && forced === null ? w.rank : s.candidate;
    this.select.value = forced === null ? String(Math.min(k, Math.max(0, cands.length - 1))) : "forced";
    this.select.disabled = !tr;
    this.decodeBtn.disabled = !tr || (w && w.status === "pending");
    this.openBtn.disabled = !(w && w.status === "done");
    if (!w) { this.text.replaceChildren(); delete this.text.dataset.state; return; }
    this.text.dataset.state = w.status;
    if (w.status === "pending") {
      const what = w.rank === null ? `“${w.token}”` : `candidate ${w.rank + 1}`;
      this.text.replaceChildren(el("p", { className: "ax-note",
        text: `Decoding again with ${what} forced at step ${w.step}…` }));
    } else if (w.status === "error") {
      this.text.replaceChildren(el("p", { className: "ax-error", text: `⚠️ ${w.error}` }));
    } else {
      this.text.replaceChildren(
        el("p", {}, [el("strong", { text: "Original: " }), w.original]),
        el("p", {}, [el("strong", { text: `Step ${w.step} forced to “${w.token}”`
          + `${w.prefixForced ? " (after the reference's own words)" : ""}: ` }), w.translation]),
      );
    }
  }
}

export function mount(host, { store, server }) {
  return new WhatIf(host, store, server);
}
