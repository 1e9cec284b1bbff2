// The page's collapsible panels in the store's `open`, beside the viewer's own sections, so a
// link opens them again (url.js) and nothing else needs to know how Gradio draws them.
//
// Every panel of explorer/panels sits in its own gr.Accordion (closed until asked for); one
// with an elem_id is a <div id=... class="gr-accordion"> whose first button (.label-wrap)
// opens and closes it and carries the class "open" while it is open. Gradio builds a closed
// accordion's content when it first opens and keeps it after, so a panel's state survives
// closing it.
//
// The accordions' titles are Gradio's plain text: the glossary words in them become terms
// here (PANEL_TERMS), in the heading style of glossary.js (a click opens the panel, the "?"
// beside the title explains the words).

import { heading, termsIn } from "./glossary.js";
import { nextFrame } from "./view-base.js";

const ACCORDION = ".gr-accordion[id]";
// panel -> [text in its title, glossary key]
const PANEL_TERMS = {
  "analysis-panel": [["head", "head"], ["knock-out", "knock-out"]],
  "attribution-panel": [["head", "head"]],
  "beam-panel": [["beam search", "beam"], ["decoder", "decoder"]],
};
const labelOf = (acc) => acc.querySelector(":scope > .label-wrap");
const isOpen = (acc) => !!labelOf(acc) && labelOf(acc).classList.contains("open");

/** Keep the page's accordions and the store's `open` in step, both ways. */
export function followAccordions(store) {
  // a visitor opens or closes one: the store hears it (after Gradio has toggled it)
  document.addEventListener("click", (ev) => {
    const label = ev.target.closest && ev.target.closest(".label-wrap");
    const acc = label && label.parentElement && label.parentElement.matches(ACCORDION) ? label.parentElement : null;
    if (!acc) return;
    nextFrame(() => {
      const open = store.get().open || [], on = isOpen(acc);
      if (on !== open.includes(acc.id)) store.set({ open: on ? [...open, acc.id] : open.filter((x) => x !== acc.id) });
    });
  }, true);
  // the store names one (a link): open it, once it is on the page
  const apply = () => {
    for (const name of store.get().open || []) {
      const acc = document.getElementById(name);
      if (acc && acc.matches(ACCORDION) && !isOpen(acc)) labelOf(acc).click();
    }
  };
  store.subscribe((s, changed) => { if (changed.has("open") || changed.has("trace")) apply(); });
  // the page may still be building its blocks
  for (const ms of [0, 500, 2000]) setTimeout(() => { apply(); glossTitles(); }, ms);
}

/** The glossary words of the panels' titles as terms, once each title is on the page. */
function glossTitles() {
  for (const [id, pairs] of Object.entries(PANEL_TERMS)) {
    const acc = document.getElementById(id), label = acc && labelOf(acc);
    if (!label || label.dataset.glossed) continue;
    label.dataset.glossed = "1";
    termsIn(label.querySelector(":scope > span") || label, pairs);
    const ask = heading(label, false); // a button cannot hold the "?": it follows the title
    if (ask) ask.classList.add("gl-ask-title");
  }
}
