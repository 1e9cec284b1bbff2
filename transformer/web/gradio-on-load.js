// Body of gr.HTML(js_on_load=...) for the #viewer block in app.py (Gradio runs it once, with
// `element`, `props` and `watch` in scope). It loads the viewer module from the app's static
// files and redraws whenever the server sends a new payload (the component's value).
import(new URL(props.module_url, document.baseURI).href).then((m) => {
  const viewer = m.mount(element, {
    syncUrl: true,
    globalKeys: true,
    candidateSelector: "#candidate select",
  });
  window.attentionExplorer = viewer; // used by whatif-inputs.js and by tests
  viewer.load(props.value);
  watch("value", () => viewer.load(props.value));
});
