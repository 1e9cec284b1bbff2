"""Serving many visitors from one model: sentences that arrive together are traced together.

Why: on a 2-core Space, a trace of one short sentence spends most of its time in Python
(one decoder step at a time, a few dozen small tensor ops per step), not in arithmetic, and
Python runs one thread at a time. Tracing eight waiting sentences in one padded batch costs
about as much Python as tracing one, so under load the server keeps up instead of queueing.

``TraceBatcher`` owns one worker thread that runs the model. Callers (Gradio handlers, each
in its own thread) hand it a sentence and wait. The worker takes whatever is waiting, up
to ``max_batch`` sentences, without waiting for more: an idle server answers a lone visitor
at once, and a busy one batches the sentences that queued up during the previous batch.
Sentences of very different lengths are not padded together (a 120-token sentence would
make a 5-token one wait for 250 steps): they go in separate batches, shortest first. Nor are
sentences asked in different languages (a multilingual model): one batch shares one source
and one target language, as ``Translator.trace_batch`` takes them.

:func:`api_answer` is how every public endpoint (``gr.api``) answers when it cannot: one
shape for all, ``gr.Error`` with a message, which ``gradio_client`` raises as ``AppError``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

import gradio as gr

from transformer.core import stepping
from transformer.core.trace import Trace
from transformer.core.translator import Translator

from .errors import GENERIC_ERROR

T = TypeVar("T")
LOGGED_CHARS = 300  # of a refusal's message in the log: it can quote what the caller sent


def api_answer(log: logging.Logger, endpoint: str, compute: Callable[[], T]) -> T:
    """``compute()`` for the public endpoint ``endpoint`` (e.g. ``"/beam"``), or ``gr.Error``.

    Raising ``gr.Error`` is Gradio's way to tell a caller what went wrong: a Python caller
    gets ``gradio_client.exceptions.AppError`` with the message (even with ``show_error``
    off), the same for every endpoint, so one ``except`` handles them all. Bad input
    (``ValueError``) gets its own message and one log line; anything else is a bug: the
    generic message to the caller, the stack trace in the log. Gradio would print a stack
    trace for every ``gr.Error`` as well; ``print_exception=False`` leaves the log to this.
    """
    try:
        return compute()
    except ValueError as exc:
        log.info("%s refused: %s", endpoint, " ".join(str(exc).split())[:LOGGED_CHARS])
        raise gr.Error(str(exc), print_exception=False) from None
    except Exception:
        log.exception("%s failed", endpoint)
        raise gr.Error(GENERIC_ERROR, print_exception=False) from None


class TraceBatcher:
    """Thread-safe ``trace(text, src_lang, tgt_lang)`` that batches concurrent calls (see the
    module docstring).

    A sentence the model cannot read raises ``ValueError`` in its own caller before it is
    queued, so one visitor's bad input never fails another visitor's batch.
    """

    def __init__(self, translator: Translator, max_batch: int = 8, length_ratio: float = 2.0) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, got {max_batch}")
        self.translator = translator
        self.max_batch = max_batch
        self.length_ratio = length_ratio
        self.batch_sizes: deque[int] = deque(maxlen=1000)  # sizes of the latest batches (tests, logs)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker = threading.Thread(target=self._run, name="trace-batcher", daemon=True)
        self._worker.start()

    def trace(self, text: str, src_lang: str | None = None, tgt_lang: str | None = None) -> Trace:
        """The greedy trace of ``text``, as ``Translator.trace(text, src_lang=..., tgt_lang=...)``
        gives it (equal up to float rounding when it was batched with other sentences)."""
        stepping.check_languages(self.translator.cfg, src_lang, tgt_lang)  # a bad code: ValueError here
        n_src = len(self.translator.encode_source(text, src_lang).ids)  # raises ValueError/TypeError here
        done: Future = Future()
        self._queue.put((n_src, text, done, (src_lang, tgt_lang)))
        return done.result()

    def _run(self) -> None:
        while True:
            waiting = [self._queue.get()]
            while len(waiting) < self.max_batch:
                try:
                    waiting.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            for group in self._groups(waiting):
                self._trace_group(group)

    def _groups(self, items: list) -> list[list]:
        """One language pair per group; within a pair, shortest first, and a group's longest
        source is at most ``length_ratio`` times its shortest (plus a few tokens), so padding
        stays small."""
        items = sorted(items, key=lambda it: (str(it[3]), it[0]))  # None sorts as a string too
        groups: list[list] = []
        for it in items:
            if groups and groups[-1][0][3] == it[3] and it[0] <= groups[-1][0][0] * self.length_ratio + 4:
                groups[-1].append(it)
            else:
                groups.append([it])
        return groups

    def _trace_group(self, group: list) -> None:
        self.batch_sizes.append(len(group))
        # one pair per group (_groups); a language not asked for is the model's own
        langs = {k: v for k, v in zip(("src_lang", "tgt_lang"), group[0][3]) if v is not None}
        try:
            traces = self.translator.trace_batch([text for _, text, _, _ in group], **langs)
        except Exception:  # noqa: BLE001 - retry one by one, so each caller gets its own outcome
            for _, text, done, _ in group:
                try:
                    done.set_result(self.translator.trace(text, **langs))
                except Exception as exc:  # noqa: BLE001 - handed to the caller, who reports it
                    done.set_exception(exc)
            return
        for (_, _, done, _), trace in zip(group, traces):
            done.set_result(trace)
