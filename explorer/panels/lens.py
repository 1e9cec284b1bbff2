"""The logit lens on demand: what the viewer's lens section asks for when its sentence was traced
without it.

A model with a large target vocabulary (over ``transformer.core.translator.LENS_IN_TRACE_MAX_VOCAB``:
M2M100's 128k, NLLB-200's 256k, mBART-50's 250k) traces without the logit lens, which would be a
third of its Translate time (benchmarks/published_sizes.py): its payload has no ``logit_lens`` and
says ``logit_lens_left_out``. When the lens section opens (or a class's question is about the
lens), the page's hidden lens block (``web/lens.js``) asks this panel, once per sentence, and merges
the answer into the trace it draws:

    {"logit_lens": {"ids": A (T, L_dec, 5), "probs": A (T, L_dec, 5)}, "vocab": {"id": "token"}}

in the payload's own encoding (``explorer.payload.encode_trace``); ``vocab`` names the lens's token
ids. The public endpoint ``/logit_lens`` (``src_ids``, ``tgt_ids``: a ``/translate`` answer's) gives
the same for an API caller; its ids are checked first, and a bad request is one line.
"""

from __future__ import annotations

import logging

import gradio as gr
import numpy as np

from transformer.core.decoding import logit_lens_of
from transformer.core.wire import encode_f32, encode_ids

from ..blocks import view_host
from ..serving import api_answer
from .base import Asked, Panel

log = logging.getLogger(__name__)

__all__ = ["LensPanel", "lens_payload"]


def _ids(value, name: str, size: int, limit: int) -> list[int]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise ValueError(f"{name} must be a list of token ids")
    if not 0 < len(value) <= limit:
        raise ValueError(f"{name} must hold 1 to {limit} ids, not {len(value)}")
    if any(not 0 <= i < size for i in value):
        raise ValueError(f"{name} holds an id outside the vocabulary of {size} tokens")
    return list(value)


def lens_payload(tr, src_ids, tgt_ids) -> dict:
    """The logit lens of the trace whose framed source is ``src_ids`` and whose ``tgt_ids`` are
    ``start y1 ... yT`` (a trace's ``src_ids`` / ``tgt_ids``), for ``tr`` (a Translator)."""
    cfg = tr.cfg
    src = _ids(src_ids, "src_ids", cfg.src_vocab_size, cfg.max_positions)
    tgt = _ids(tgt_ids, "tgt_ids", cfg.tgt_vocab_size, cfg.max_positions + 1)
    ids, probs = logit_lens_of(tr.model, src, tgt)  # (T, L, 5) each; it checks the decoder's start
    vocab = {str(i): tr.tgt_tok.id_to_token(i) for i in np.unique(ids).tolist()}
    return {"logit_lens": {"ids": encode_ids(ids), "probs": encode_f32(probs)}, "vocab": vocab}


class LensPanel(Panel):
    """The hidden block of ``web/lens.js`` and the ``/logit_lens`` endpoint."""

    view = "lens"

    def build(self) -> None:
        # hidden (viewer.css) and outside every closed section, so it is mounted with the page
        self.host = view_host(self.view, elem_id="lens-fetch")

    def wire(self) -> None:
        self.host.submit(self.request, [self.app.trace_state], [self.host], api_visibility="private")
        gr.api(self.logit_lens, api_name=self.app.api_name("logit_lens"))

    def request(self, trace, evt: Asked) -> str:
        """The lens of the viewer's sentence (``trace``, the session's)."""
        return self.analysis_request(trace, evt, ("logit_lens",), log)

    def run(self, trace, action: str, asked: dict) -> dict:
        return lens_payload(self.app.tr, trace.src_ids, trace.tgt_ids)

    def logit_lens(self, src_ids: list[int], tgt_ids: list[int]) -> dict:
        """``/logit_lens``: see the module docstring."""
        return api_answer(log, "/logit_lens", lambda: lens_payload(self.app.tr, src_ids, tgt_ids))
