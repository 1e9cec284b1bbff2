// Inline module of a notebook output (explorer/notebook.py). Notebook outputs cannot load
// files next to the package, so the viewer's modules arrive as text in a JSON block next to
// this script; each becomes a blob: URL, with its "./x.js" imports pointed at the blob URLs
// of its dependencies. Then the same viewer as the Space is mounted, on a store of its own
// and with no server.
for (const node of document.querySelectorAll(
  'script[type="application/json"][data-attention-explorer]:not([data-mounted])')) {
  node.dataset.mounted = "1";
  const data = JSON.parse(node.textContent);
  const urls = {};
  const url = (name) => {
    if (!urls[name]) {
      const src = data.modules[name].replace(/from\s+"\.\/([\w.-]+\.js)"/g, (_, dep) => `from "${url(dep)}"`);
      urls[name] = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
    }
    return urls[name];
  };
  Promise.all([import(url("viewer.js")), import(url("store.js"))]).then(([viewer, { createStore }]) => {
    viewer.mount(node.previousElementSibling, { store: createStore(), server: null }).receive(data.payload);
  });
}
