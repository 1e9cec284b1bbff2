// Body of gr.HTML(js_on_load=...) for the #beam-view block (panels/beam.py). Gradio runs it
// once with `element`, `props` and `watch` in scope: it loads the beam-tree module from the
// app's static files and redraws whenever the server sends a new tree (the block's value).
import(new URL(props.module_url, document.baseURI).href).then((m) => {
  const tree = m.mount(element, { openSelector: "#beam-open-btn" });
  window.beamTree = tree; // read by beam-open-inputs.js and by tests
  tree.load(props.value);
  watch("value", () => tree.load(props.value));
});
