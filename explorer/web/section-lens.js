// The viewer's "Logit lens" section: what each decoder layer would emit if it were the last
// (its output through the final norm and the output projection), top-5 per layer, as an HTML
// table (and as an image in the whole-view PNG, viewer-export.js). Drawn only while open.

import { quote } from "./attention.js";
import { el } from "./canvas.js";
import { term } from "./glossary.js";
import { share } from "./numbers.js";
import { section } from "./viewer-page.js";

export class LensSection {
  constructor() {
    this.table = el("table", { id: "logit-lens", className: "ax-lens-table" },
      [el("caption"), el("thead"), el("tbody")]);
    this.note = el("p", { id: "logit-lens-note", className: "ax-note" });
    this.box = el("div", { id: "logit-lens-box", className: "ax-lens" }, [this.table, this.note]);
    this.el = section("lens", [term("Logit lens", "logit lens"), ": what each ", term("layer"), " would say"],
      [this.box]);
  }

  clear() {
    for (const part of this.table.children) part.replaceChildren();
    delete this.table.dataset.step;
    this.note.textContent = "";
  }

  /** The lens at step index t (0-based); `asked`: the store's `lens` (lens.js), for a trace that
   * came without its lens. */
  draw(tr, t, asked = null) {
    const lens = tr.lens(t);
    this.box.hidden = !lens && !tr.lensLeftOut;
    if (!lens) {
      this.clear();
      // asked: by the page (lens.js); not asked: a notebook's viewer, which has no server
      this.note.textContent = !asked
        ? "This trace came without its logit lens (the model's vocabulary is large): in Python, "
          + "Translator.logit_lens(trace) adds it."
        : asked.status === "error" ? asked.error
          : "Computing the logit lens with the model… (its vocabulary is large, so the lens is "
            + "computed only when this section opens)";
      return;
    }
    const emitted = tr.tgt[t + 1];
    const [caption, thead, tbody] = this.table.children;
    caption.textContent = `Logit lens at step ${t + 1}: top-5 of each decoder layer`;
    thead.replaceChildren(el("tr", {},
      [el("th", { text: "layer" }), ...lens[0].map((_, i) => el("th", { text: `#${i + 1}` }))]));
    tbody.replaceChildren(...lens.map((cands, l) => el("tr", {}, [
      el("th", { text: `${l + 1}${l === lens.length - 1 ? " (output)" : ""}` }),
      ...cands.map((c) => el("td", {
        className: c.token === emitted ? "ax-emitted" : "", title: `layer ${l + 1}: ${c.token}, p = ${share(c.prob)}`,
      }, [el("span", { className: "ax-lens-tok", text: c.token }),
        el("span", { className: "ax-lens-p", text: share(c.prob) })])),
    ])));
    // first layer from which the emitted token is top-1 and stays top-1 (as analysis.logit_lens_first_layer)
    let first = null;
    for (let l = lens.length - 1; l >= 0 && lens[l][0].token === emitted; l--) first = l;
    this.note.textContent = first === null
      ? `${quote(emitted)} is not the top-1 of the last layer here (a forced step).`
      : first === 0 ? `${quote(emitted)} is already the top-1 after layer 1.`
        : `${quote(emitted)} becomes the top-1 at layer ${first + 1} and stays there.`;
    this.table.dataset.step = String(t + 1);
  }
}
