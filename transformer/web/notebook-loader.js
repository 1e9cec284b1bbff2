// Inline module of a notebook output (transformer/notebook.py). Notebook outputs cannot
// load files next to the package, so the viewer's modules arrive as text in a JSON block
// next to this script; each becomes a blob: URL, with its "./x.js" imports pointed at
// the blob URLs of its dependencies. Then the same viewer as the Space is mounted.
for (const node of document.querySelectorAll('script[type="application/json"][data-attention-explorer]:not([data-mounted])')) {
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
  import(url("viewer.js")).then((m) => {
    const viewer = m.mount(node.previousElementSibling, { syncUrl: false, globalKeys: false });
    viewer.load(data.payload);
  });
}
