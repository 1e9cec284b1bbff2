// js= of the page-load event (app.py): a shared link keeps its sentence in the fragment
// (#text=...&step=3...), which never reaches the server, so hand it to the Python callback.
(text) => new URLSearchParams(window.location.hash.replace(/^#/, "")).get("text") || text || ""
