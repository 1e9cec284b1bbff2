// Body of gr.HTML(js_on_load=...) for the #epoch-view block (panels/beam.py): loads the
// epochs module, which follows the main viewer and asks the server (through the hidden
// #epoch-load-btn) for the snapshots' traces of the viewer's sentence when it needs them.
import(new URL(props.module_url, document.baseURI).href).then((m) => {
  const epochs = m.mount(element, { loadSelector: "#epoch-load-btn" });
  window.epochExplorer = epochs; // used by tests
  epochs.receive(props.value);
  watch("value", () => epochs.receive(props.value));
});
