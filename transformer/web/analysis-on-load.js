// Body of gr.HTML(js_on_load=...) for the two blocks of the analysis panel (panels/analysis.py;
// Gradio runs it once with `element` and `props` in scope). props.part says which part this
// block holds; the top block's value is the checkpoint's test-set head stats (JSON or "").
import(new URL(props.module_url, document.baseURI).href).then((m) => m.mount(element, props.part, props.value));
