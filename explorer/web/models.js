// The model switch, on the page when the app serves more than one model (explorer/models.py):
// one button per model, the one on screen pressed. Each model has its own page; switching goes
// to the other's page with this page's link (url.js: the sentence, step, view, layer, head,
// picture and open sections), so the other model opens on the same sentence where this one
// was, its view settings kept wherever they exist there (a layer it lacks falls back as a link's
// does). A What-if or beam version is not carried over: its forced token ids are this model's
// vocabulary, so the other model shows its own greedy translation.
//
// The view's data: {models: [{label, path, current}]}.

import { el } from "./canvas.js";
import { linkFor } from "./url.js";

/** This page's link without what belongs to this model's vocabulary (forced ids, their origin). */
export function carriedLink(s, loc = window.location) {
  const hash = new URLSearchParams(new URL(linkFor(s, loc)).hash.replace(/^#/, ""));
  hash.delete("forced");
  hash.delete("origin");
  return hash.toString();
}

export function mount(host, { store, server }) {
  const models = (server.data && server.data.models) || [];
  const buttons = models.map((m, i) => {
    const title = m.current ? "The model on screen" : `Open this sentence in ${m.label}`;
    const b = el("button", { type: "button", className: "ax-model", "data-model": i, text: m.label,
      "aria-pressed": String(!!m.current), title });
    if (!m.current) {
      b.addEventListener("click", () => {
        const link = carriedLink(store.get());
        window.location.assign(new URL(m.path, window.location.href).pathname + (link ? `#${link}` : ""));
      });
    }
    return b;
  });
  host.replaceChildren(el("div", { className: "ax-models", role: "group", "aria-label": "Model" },
    [el("span", { className: "ax-models-label", text: "Model:" }), ...buttons]));
}
