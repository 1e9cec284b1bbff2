// The viewer's page template: what a first visit needs is always on show (the tokens, the
// step control, the prefix, and the main view of viewer-main.js: one attention picture with
// its caption and the candidates beside it); everything else sits in closed sections
// (section-*.js), drawn only while open. No behaviour here: viewer.js and its parts bind to
// these elements by id.

import { el, icon } from "./canvas.js";
import { heading, term } from "./glossary.js";
import { count } from "./numbers.js";

export const SPEEDS = [1, 2, 4, 8, 12];

/** A <label> with a text (or nodes) and a <select> of [value, text] options. */
export const select = (id, label, options = []) => el("label", { className: "ax-field" }, [
  el("span", {}, [].concat(label)),
  el("select", { id }, options.map(([v, t]) => el("option", { value: v, text: t }))),
]);

const chipRow = (label, id) => el("div", { className: "ax-tokrow" },
  [el("span", { className: "ax-label" }, [].concat(label)), el("div", { id, className: "ax-chips" })]);

/** A closed section named `name` (its name in the store's `open`): a <details> whose summary is `summary` (nodes). */
export function section(name, summary, children) {
  const head = el("summary", {}, summary);
  heading(head); // its glossary words open the section like the rest of it; its "?" explains them
  return el("details", { id: `sec-${name}`, className: "ax-fold", "data-section": name, "data-needs-trace": true }, [
    head, el("div", { className: "ax-fold-body" }, children)]);
}

function tokenRows() {
  return el("div", { className: "ax-tokens", "data-needs-trace": true }, [
    chipRow(["Source ", term("tokens", "token")], "src-chips"),
    chipRow(["Target ", term("tokens", "token")], "tgt-chips"),
  ]);
}

function stepControls() {
  const prev = el("button", { id: "prev-btn", type: "button", "aria-label": "Previous step",
    title: "Previous step (←)" }, [icon("prev")]);
  const next = el("button", { id: "next-btn", type: "button", "aria-label": "Next step",
    title: "Next step (→)" }, [icon("next")]);
  const play = el("button", { id: "play-btn", type: "button", title: "Play / pause (space)", "aria-pressed": "false" });
  const speed = select("play-speed", "speed", SPEEDS.map((s) => [s, `${count(s, "step")}/s`]));
  return el("div", { className: "ax-controls ax-stepbar" }, [
    prev, next, play, speed,
    el("input", { id: "step-slider", type: "range", min: 1, max: 1, value: 1, step: 1, "aria-label": "Step" }),
    el("span", { id: "step-label", className: "ax-steplabel", text: "Step – of –" }),
  ]);
}

/** Presentation mode and the PNG of the view: with the picture's own buttons (viewer-main.js). */
function viewButtons() {
  return [
    el("button", { id: "present-btn", type: "button", className: "ax-present-btn", "aria-pressed": "false",
      title: "Presentation mode: this picture alone, full screen, in large type (Esc leaves)", text: "Present" }),
    // "PNG" at every width, so the picture's buttons keep to one row on a laptop; the title and
    // the accessible name say the whole of it
    el("button", { id: "download-view-png", type: "button", className: "ax-download",
      title: "Download this view as a PNG image", "aria-label": "Download this view as a PNG image", text: "PNG" }),
  ];
}

/** The whole viewer: `main` is the main view (viewer-main.js), `picker` the kind, layer and head
 * controls (attn-picker.js), `sections` the closed sections' elements. On a wide screen the step
 * control, what the step does, the controls and the candidates stand in a rail left of the
 * picture, so the whole picture and everything that steers it fit one screen; on a tablet the
 * rail's parts stack above the picture and the candidates go under it; on a phone the picture
 * comes first, the step control right under it (held at the bottom of the screen), and the rest
 * under those (viewer.css). */
export function viewerPage(main, picker, sections) {
  main.tools.append(...viewButtons());
  return el("div", { className: "ax-root", tabindex: "-1" }, [
    el("p", { id: "viewer-empty", className: "ax-empty",
      text: "Translate a sentence to step through its decoding here." }),
    el("p", { id: "viewer-forced", className: "ax-forced", hidden: true }),
    el("p", { id: "present-sentence", className: "ax-present-sentence", "data-needs-trace": true }),
    el("div", { className: "ax-board" }, [
      el("div", { className: "ax-rail" }, [
        stepControls(),
        // what this step does
        el("div", { className: "ax-steprow", "data-needs-trace": true }, [
          el("p", { id: "step-text", className: "ax-steptext" }),
        ]),
        picker.el,
        main.side,
      ]),
      main.el,
    ]),
    // what is written so far (the picture's row labels say it too), then the sentence's tokens
    el("div", { className: "ax-tokrow ax-prefixrow", "data-needs-trace": true }, [
      el("span", { className: "ax-label", text: "Generated so far" }),
      el("div", { id: "prefix-chips", className: "ax-chips" })]),
    tokenRows(),
    el("div", { className: "ax-folds" }, sections),
  ]);
}
