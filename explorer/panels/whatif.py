"""What if? Force another candidate at the viewer's step and decode the rest greedily.

The browser side is ``explorer/web/whatif.js``: it lists the candidates of the current
step (from the payload) and asks for one; this panel decodes the sentence again with that
candidate forced and keeps the result (per visitor, in ``gr.State``) until the visitor
opens it in the viewer or the sentence changes.

A candidate is asked by its rank among the step's top-k (``rank``). "Where did this word come
from?" asks for a reference's token, which may be outside the top-k: it sends ``ids``, the
target ids to force at steps 1..step (the reference's own prefix and its token there), and the
answer names the token forced at ``step``.
"""

from __future__ import annotations

import logging

import gradio as gr

from transformer.core import stepping

from .. import texts
from ..errors import answer
from ..blocks import message, view_host
from .base import Asked, Panel

log = logging.getLogger("app.whatif")


class WhatIfPanel(Panel):
    view = "whatif"

    def build(self) -> None:
        with gr.Accordion("What if? Force another candidate at this step", open=False, elem_id="whatif-panel"):
            self.host = view_host(self.view, elem_id="whatif")
        self.alt_state = gr.State(None)

    def wire(self) -> None:
        app = self.app
        self.host.submit(self.decode, [app.trace_state], [self.alt_state, self.host], api_visibility="private")
        app.then_download(self.host.select(self.explore, [self.alt_state], app.outputs, api_visibility="private"))

    def sentence_outputs(self) -> list:
        return [self.alt_state]

    def sentence_changed(self, origin: str | None) -> dict:
        return {self.alt_state: None}  # a What-if of the old sentence cannot be explored any more

    # --- callbacks ------------------------------------------------------------------------
    def decode(self, trace, evt: Asked) -> dict:
        """Decode again with candidate ``evt.rank`` (0 = most likely) forced at ``evt.step``
        (1-based), or with ``evt.ids`` forced at steps 1..step (module docstring); the answer
        names the sentence it belongs to (``evt.sentenceId``)."""
        asked = evt.fields
        sentence = asked.get("sentenceId")

        def failed(msg: str) -> dict:
            return {self.alt_state: None, self.host: message({"sentenceId": sentence, "error": msg})}

        if trace is None:
            return failed("Translate a sentence first, then pick a candidate.")
        if asked.get("ids") is not None:
            return answer(log, "what-if", lambda: self.forced_ids(trace, asked.get("ids"), sentence), failed)
        return answer(
            log, "what-if", lambda: self.forced(trace, asked.get("step"), asked.get("rank"), sentence), failed
        )

    def forced(self, trace, step, rank, sentence) -> dict:
        try:
            step = min(max(1, int(step)), trace.steps)
            rank = min(max(0, int(rank)), len(trace.topk_tokens[step - 1]) - 1)
        except (TypeError, ValueError):
            raise ValueError("Pick a step and a candidate first.") from None
        alt = self.app.tr.trace(
            trace.src_text, forced_prefix=texts.whatif_prefix(trace, step, rank), **self.app.trace_languages(trace)
        )
        return self.reply(trace, alt, sentence, step, rank, trace.topk_tokens[step - 1][rank])

    def reply(self, trace, alt, sentence, step: int, rank: int | None, token: str, **extra) -> dict:
        """The forced version ``alt`` kept for "Explore that version", and what the page shows of it."""
        return {
            self.alt_state: alt,
            self.host: message(
                {
                    "sentenceId": sentence,
                    "step": step,
                    "rank": rank,
                    "token": texts.display_token(token),
                    "original": trace.translation,
                    "translation": alt.translation,
                    **extra,
                }
            ),
        }

    def forced_ids(self, trace, ids, sentence) -> dict:
        """Decode again with target ids ``ids`` forced at steps 1..len(ids) (any ids of the
        vocabulary, [EOS] only last), then greedily; the rank is the forced token's among the
        step's top-k, or None when it is not one of them."""
        cfg = self.app.tr.cfg
        if not (
            isinstance(ids, list)
            and 0 < len(ids) <= cfg.max_positions - 1
            and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < cfg.tgt_vocab_size for i in ids)
            and cfg.tgt_eos_id not in ids[:-1]
            and not set(stepping.never_emitted(cfg)) & set(ids)
        ):
            raise ValueError("Those tokens cannot be forced: pick a step of the scored reference again.")
        alt = self.app.tr.trace(trace.src_text, forced_prefix=ids, **self.app.trace_languages(trace))
        step = len(ids)
        top = trace.topk_ids[step - 1] if step <= trace.steps and list(trace.tgt_ids[1:step]) == ids[:-1] else []
        rank = next((k for k, i in enumerate(top) if int(i) == ids[-1]), None)
        token = self.app.tr.tgt_tok.id_to_token(ids[-1])
        return self.reply(trace, alt, sentence, step, rank, token, prefixForced=list(trace.tgt_ids[1:step]) != ids[:-1])

    def explore(self, alt) -> dict:
        """Open the What-if version in the viewer."""
        if alt is None:
            return {self.app.notice: "⚠️ Compute a What-if translation first."}
        return self.app.show(alt, origin="whatif")
