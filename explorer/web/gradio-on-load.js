// js_on_load of every explorer block (explorer/blocks.py): Gradio runs it once per block with
// `element`, `props`, `trigger` and `watch` in scope. It loads the explorer's module from the
// app's static files and mounts the block's view (gradio.js).
import(new URL(props.module_url, document.baseURI).href).then((m) => m.connect({ element, props, trigger, watch }));
