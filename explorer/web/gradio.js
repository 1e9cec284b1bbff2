// The explorer in the Gradio page: every view's block (a gr.HTML, explorer/blocks.py) runs the
// same few lines (gradio-on-load.js), which import this module and call connect(). All
// views of the page share one store, made by the first block that connects.
//
// A view talks to its Python panel through `server`:
//   server.data        what the panel sent once with the page (JSON), or null
//   server.onValue(fn, json = true)
//                      fn(answer) for every value the panel sends (parsed JSON, or the text
//                      itself with json false; null for ""), and at once for a value the
//                      block already holds when the view mounts
//   server.ask(data)   ask the panel to compute something: the block's "submit" event
//   server.open(data)  ask the panel to open something in the viewer: the block's "select" event
//   server.clear()     forget the block's value, so the same value later counts as new
//
// Test handle: window.__explorer is the one global the explorer sets, for browser tests:
//   window.__explorer.getState()  a plain snapshot of the store (store.js: snapshot())

import { createStore } from "./store.js";
import { VIEWS } from "./views.js";
import { currentTheme, watchTheme } from "./theme.js";
import { usePalette } from "./canvas.js";

let store = null;

const parse = (value, json = true) => {
  if (typeof value !== "string") return value ?? null;
  return value.trim() ? (json ? JSON.parse(value) : value) : null;
};

/** Mount the view `props.view` in `element`, wired to its block's props, trigger and watch. */
export function connect({ element, props, trigger, watch }) {
  if (!store) {
    store = createStore({ theme: currentTheme() });
    window.__explorer = { getState: () => store.snapshot() };
    // a new theme while the page is open (the system setting changed): the palette first, so
    // that every view redraws in it
    watchTheme((theme) => { usePalette(); store.set({ theme }); });
  }
  const server = {
    data: parse(props.data),
    onValue: (fn, json = true) => {
      watch("value", () => fn(parse(props.value, json)));
      if (parse(props.value, json) !== null) fn(parse(props.value, json));
    },
    ask: (data) => trigger("submit", data),
    open: (data) => trigger("select", data),
    clear: () => { props.value = ""; },
  };
  const view = VIEWS[props.view];
  if (!view) throw new Error(`no explorer view named ${props.view}`);
  return view.mount(element, { store, server });
}
