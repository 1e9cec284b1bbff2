// The whole view as one PNG: every chart on screen, the logit-lens table included, under a
// line with the sentence and one with the step and view. Only what is on screen goes in: a
// closed section's last drawing may be of another step.

import { VIEWS, headName } from "./attention.js";
import { drawLensTable } from "./charts.js";
import { composite, downloadPng } from "./canvas.js";

/** `figs`: the viewer's figures by id; `lensOpen`: whether the logit-lens section is open. */
export function downloadView(s, figs, lensOpen) {
  const tr = s.trace;
  if (!tr) return;
  const shown = (id) => figs[id] && !figs[id].el.hidden && figs[id].canvas.width > 1
    && !figs[id].el.closest("details:not([open])");
  const lens = lensOpen ? tr.lens(s.step - 1) : null, parts = [];
  for (const id of ["attn-plot", "enc-rollout", "mosaic", "topk"]) if (shown(id)) parts.push(figs[id].image());
  if (lens) {
    const table = document.createElement("canvas");
    drawLensTable(table, { lens, emitted: tr.tgt[s.step],
      caption: `Logit lens at step ${s.step}: top-5 of each decoder layer` });
    parts.push(table);
  }
  for (const id of ["pe-heat", "pe-sim", "pe-curves"]) if (shown(id)) parts.push(figs[id].image());
  const image = composite([
    `${tr.srcText}  →  ${tr.translation}`,
    `Step ${s.step} of ${tr.steps}: ${VIEWS[s.view]}`
      + `${s.view === "rollout" ? "" : `, layer ${s.layer}, ${headName(s.head)}`}${s.hide ? ", specials hidden" : ""}`,
  ], parts);
  downloadPng(image, `attention-view-step${s.step}.png`);
}
