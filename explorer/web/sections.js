// The page's collapsible panels in the store's `open`, beside the viewer's own sections, so a
// link opens them again (url.js) and nothing else needs to know how Gradio draws them.
//
// Every panel of explorer/panels sits in its own gr.Accordion (closed until asked for); one
// with an elem_id is a <div id=... class="gr-accordion"> whose first button (.label-wrap)
// opens and closes it and carries the class "open" while it is open. Gradio builds a closed
// accordion's content when it first opens and keeps it after, so a panel's state survives
// closing it.

const ACCORDION = ".gr-accordion[id]";
const labelOf = (acc) => acc.querySelector(":scope > .label-wrap");
const isOpen = (acc) => !!labelOf(acc) && labelOf(acc).classList.contains("open");

/** Keep the page's accordions and the store's `open` in step, both ways. */
export function followAccordions(store) {
  // a visitor opens or closes one: the store hears it (after Gradio has toggled it)
  document.addEventListener("click", (ev) => {
    const label = ev.target.closest && ev.target.closest(".label-wrap");
    const acc = label && label.parentElement && label.parentElement.matches(ACCORDION) ? label.parentElement : null;
    if (!acc) return;
    requestAnimationFrame(() => {
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
  for (const ms of [0, 500, 2000]) setTimeout(apply, ms); // the page may still be building its blocks
}
