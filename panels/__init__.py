"""Extra panels of the attention explorer, each in its own file so ``app.py`` stays short.

A panel gets the :class:`app.App` (translator, shared components such as ``trace_state``
and ``viewer``, and ``App.show``) and builds its own Gradio blocks inside the page."""
