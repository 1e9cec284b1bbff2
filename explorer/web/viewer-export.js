// The whole view as one PNG: every chart on screen, the logit-lens table included, under a
// line with the sentence and one with the step and view. Only what is on screen goes in: a
// closed section's last drawing may be of another step. The main view's picture is the map
// or the lines, whichever is drawn; the file's name says which, with the view, layer, head
// and step, so two pictures of one sentence never share a name.

import { VIEWS, headName } from "./attention.js";
import { drawLensTable } from "./charts.js";
import { composite, downloadPng } from "./canvas.js";

/** The file name of the view's PNG: "attention-map-cross-layer2-head4-step8.png",
 * "attention-lines-decoder-layer1-mean-step3.png", "attention-map-rollout-step5.png". */
export function viewFileName(s, picture) {
  const moved = picture === "map" && s.view !== "rollout" && s.moved && s.norms && s.norms.status === "done";
  const head = /^\d+$/.test(String(s.head)) ? `head${s.head}` : s.head;
  const where = s.view === "rollout" ? "" : `-layer${s.layer}-${head}`;
  return `attention-${picture}${moved ? "-moved" : ""}-${s.view}${where}-step${s.step}.png`;
}

/** `figs`: the viewer's figures by id; `lensOpen`: whether the logit-lens section is open;
 * `pictures`: the main view's pictures (viewer-main.js), for the lines when they are drawn. */
export async function downloadView(s, figs, lensOpen, pictures = {}) {
  const tr = s.trace;
  if (!tr) return;
  const picture = s.picture === "lines" && pictures.lines ? "lines" : "map";
  const shown = (id) => figs[id] && !figs[id].el.hidden && figs[id].canvas.width > 1
    && !figs[id].el.closest("details:not([open])");
  const lens = lensOpen ? tr.lens(s.step - 1) : null, parts = [];
  if (picture === "lines") parts.push(await pictures.lines.image());
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
      + `${s.view === "rollout" ? "" : `, layer ${s.layer}, ${headName(s.head)}`}${s.hide ? ", specials hidden" : ""}`
      + `${picture === "lines" ? ", drawn as lines" : ""}`,
  ], parts);
  downloadPng(image, viewFileName(s, picture));
}
