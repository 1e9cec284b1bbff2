"""The attention explorer: a Gradio app that translates a sentence and shows what the
Transformer (the ``transformer`` package) did while it translated.

The server computes, the browser draws. Python runs the model once per request and sends
a compact trace (:mod:`explorer.payload`); ES modules in ``explorer/web/`` draw every view
from it, so stepping and view changes never call the server.

One home per view: a view is one Python panel (``explorer/panels/``, when it needs the
server) plus one JS module (``explorer/web/``), each listed in one registry
(``explorer/panels/__init__.py`` and ``explorer/web/views.js``); all views share one
browser store (``explorer/web/store.js``). ``app.py`` at the top of the repository is the
entry point a Space runs; :mod:`explorer.page` builds the page. Importing this package does
not import Gradio: notebooks use :mod:`explorer.notebook` without it.
"""
