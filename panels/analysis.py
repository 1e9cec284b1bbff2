"""'Why did it say that?': head diagnostics, head knock-out and head importance (issue 8).

The server computes, the browser draws. The sentence's head diagnostics, logit lens and
rollout already travel in the viewer's payload; this panel adds what needs the model
again, one server call per button, and the test-set diagnostics of the checkpoint
(``head_stats.json``, read once at start-up and sent once with the page). The browser side
is ``transformer/web/analysis.js`` (maps, selection chips, results).

Named endpoints (also usable with ``gradio_client``)
----------------------------------------------------
``/knockout``: ``(text: str, heads: str) -> (translation: str, data: dict)``
    Decode ``text`` greedily again with ``heads`` silenced (their output zeroed before
    ``o_proj``). ``translation`` is the knocked-out model's translation; ``data`` is
    :func:`transformer.analysis.knockout`'s dict plus ``"text"``:
    ``{"text", "heads": [{"kind", "layer", "head"}], "original": {"translation", "tokens", "ids"},
    "knockout": {"translation", "tokens", "ids", "finished"}, "changed",
    "steps": {"token": [n], "p_original": [n], "p_knockout": [n], "top_knockout": [n],
    "logprob_original", "logprob_knockout"}}``: at each step of the original translation,
    the probability of the original token with every head and with ``heads`` silenced
    (teacher-forced on the original).
``/head_importance``: ``(text: str) -> data: dict``
    :func:`transformer.analysis.head_importance` plus ``"text"``: for every head of every
    kind, the drop in log-probability of the original greedy translation when that head
    alone is silenced: ``{"text", "translation", "tokens", "logprob", "heads", "layers": {kind: L},
    "importance": {kind: L x H}, "per_step": {kind: L x H x n}, "ranking": [10 largest]}``.

On bad input neither endpoint raises: ``translation`` is ``""`` and ``data`` is
``{"error": "<what is wrong>", "text": ...}`` (empty or over-long text, bad heads).

Heads format
------------
A head is ``kind:layer:head``, all 0-based, several separated by commas or spaces::

    "cross:0:3"                      # cross-attention, layer 1, head 4 (as the UI says it)
    "encoder:2:1, decoder_self:0:5"

``kind`` is ``encoder`` (encoder self-attention), ``decoder_self`` (decoder masked
self-attention) or ``cross`` (decoder-encoder attention); layers run 0..L-1 for that
stack and heads 0..h-1. The UI shows them 1-based ("cross-attention, layer 1, head 4").
The same format (or a list of ``{"kind", "layer", "head"}`` dicts) is accepted by
``transformer.analysis.knockout`` and the ``Translator``'s head masks.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from urllib.parse import quote

import gradio as gr

from transformer import analysis

log = logging.getLogger("app.analysis")
WEB = Path(__file__).resolve().parent.parent / "transformer" / "web"
GENERIC_ERROR = "Something went wrong on the server; the error has been logged. Please try another sentence."
HEADS_HELP = ("Heads are written kind:layer:head, 0-based, separated by commas, e.g. 'cross:0:3, encoder:2:1' "
              "(kinds: encoder, decoder_self, cross).")


def web_file(name: str) -> str:
    return (WEB / name).read_text(encoding="utf-8")


def load_test_stats(directory) -> dict | None:
    """The checkpoint's ``head_stats.json`` (diagnostics averaged over the test set, written by
    ``python -m transformer.analyze``), or None when it is absent or unreadable (logged:
    the panel then offers only this sentence's diagnostics)."""
    if directory is None:
        return None
    path = Path(directory) / "head_stats.json"
    if not path.is_file():
        return None
    try:
        stats = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    if not isinstance(stats, dict) or not isinstance(stats.get("kinds"), dict):
        log.warning("ignoring %s: not a head-stats file (no 'kinds')", path)
        return None
    return stats


class AnalysisPanel:
    """Knock-out, head importance and head diagnostics; callbacks are plain methods so the
    tests can call them without a browser."""

    def __init__(self, app) -> None:
        self.app = app
        self.test_stats = load_test_stats(getattr(app.tr, "directory", None))

    # --- callbacks ---------------------------------------------------------------------------
    def _text(self, text) -> str:
        if text is not None and not isinstance(text, str):
            raise ValueError("text must be a string")
        return self.app.check_text(text)  # empty / too long -> ValueError with the app's message

    def knockout(self, text: str | None, heads: str | None) -> tuple[str, dict]:
        """``/knockout``: see the module docstring."""
        try:
            text = self._text(text)
            try:
                parsed = analysis.parse_heads(heads if heads is not None else "", self.app.tr.cfg)
            except ValueError as exc:
                raise ValueError(f"{exc}. {HEADS_HELP}") from None
            if not parsed:
                raise ValueError("No heads selected: shift-click heads in the all-heads mosaic, the diagnostics or the "
                                 f"importance maps, then press Knock out. {HEADS_HELP}")
            data = analysis.knockout(self.app.tr, text, parsed)
        except ValueError as exc:
            return "", {"error": str(exc), "text": text if isinstance(text, str) else ""}
        except Exception:
            log.exception("knockout failed")
            return "", {"error": GENERIC_ERROR, "text": text if isinstance(text, str) else ""}
        return data["knockout"]["translation"], {"text": text, **data}

    def head_importance(self, text: str | None) -> dict:
        """``/head_importance``: see the module docstring."""
        try:
            text = self._text(text)
            data = analysis.head_importance(self.app.tr, text)
        except ValueError as exc:
            return {"error": str(exc), "text": text if isinstance(text, str) else ""}
        except Exception:
            log.exception("head importance failed")
            return {"error": GENERIC_ERROR, "text": text if isinstance(text, str) else ""}
        return {"text": text, **data}

    # --- layout -------------------------------------------------------------------------------
    def build(self) -> None:
        """Called inside the page's ``gr.Blocks`` context, after the viewer and What-if."""
        module = "gradio_api/file=" + quote(str(WEB / "analysis.js"))
        stats_json = json.dumps(self.test_stats, ensure_ascii=False).replace("<", "\\u003c") if self.test_stats else ""
        with gr.Accordion("Why did it say that? Head diagnostics, knock-out and importance", open=True):
            gr.Markdown(
                "Which heads matter for this translation? **Knock out** silences the selected heads (their output "
                "is zeroed) and decodes again; **Head importance** silences each head alone and measures how much "
                "less likely the original translation becomes. The logit lens (beside the candidates) and the "
                "*Rollout* view (in the attention menu) are in the viewer above.")
            gr.HTML(stats_json, html_template='<div class="ax-analysis-host"></div>', apply_default_css=False,
                    js_on_load=web_file("analysis-on-load.js"), elem_id="analysis-top", module_url=module, part="top")
            with gr.Row():
                ko_btn = gr.Button("Knock out the selected heads", variant="primary", elem_id="knockout-btn")
                imp_btn = gr.Button("Head importance for this sentence", elem_id="importance-btn")
            gr.HTML("", html_template='<div class="ax-analysis-host"></div>', apply_default_css=False,
                    js_on_load=web_file("analysis-on-load.js"), elem_id="analysis-results", module_url=module,
                    part="bottom")
            # the API's inputs and outputs; the browser fills and reads them (web/knockout-*.js ...)
            text_in = gr.Textbox(visible=False, label="text")
            heads_in = gr.Textbox(visible=False, label="heads (kind:layer:head, 0-based, comma-separated)")
            ko_translation = gr.Textbox(visible=False, label="translation with the heads knocked out")
            ko_data = gr.JSON(visible=False, label="knock-out per step")
            imp_data = gr.JSON(visible=False, label="head importance")
        ko_btn.click(self.knockout, [text_in, heads_in], [ko_translation, ko_data], js=web_file("knockout-inputs.js"),
                     api_name="knockout").then(None, [ko_translation, ko_data], None, js=web_file("knockout-show.js"),
                                                api_visibility="private")
        imp_btn.click(self.head_importance, [text_in], [imp_data], js=web_file("importance-inputs.js"),
                      api_name="head_importance").then(None, [imp_data], None, js=web_file("importance-show.js"),
                                                      api_visibility="private")
