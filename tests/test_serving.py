"""The trace batcher: concurrent callers share batches and get what they would get alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from explorer.serving import TraceBatcher


def test_concurrent_callers_are_batched_and_get_their_own_trace(translator):
    batcher = TraceBatcher(translator, max_batch=4)
    texts = [
        "the black cat sleeps.",
        "a dog.",
        "the red house.",
        "the cat and the dog.",
        "the old cat.",
        "a small red house is near the dog.",
    ]
    gate = threading.Event()
    got: dict[str, object] = {}

    def visit(text):
        gate.wait()
        got[text] = batcher.trace(text)

    # all six released at once: whatever queues up while a batch runs goes in the next one
    threads = [threading.Thread(target=visit, args=(t,)) for t in texts]
    for th in threads:
        th.start()
    gate.set()
    for th in threads:
        th.join(timeout=60)
    assert set(got) == set(texts)
    assert sum(batcher.batch_sizes) == len(texts) and max(batcher.batch_sizes) <= 4
    for text in texts:
        alone = translator.trace(text)
        assert got[text].translation == alone.translation and got[text].src_text == text
        np.testing.assert_allclose(got[text].cross_attn, alone.cross_attn, atol=1e-5)


def test_batches_form_when_calls_wait(translator, monkeypatch):
    batcher = TraceBatcher(translator, max_batch=8)
    started, release = threading.Event(), threading.Event()
    real = translator.trace_batch

    def slow_first(texts):
        if not started.is_set():
            started.set()
            release.wait(30)
        return real(texts)

    monkeypatch.setattr(translator, "trace_batch", slow_first)
    first = threading.Thread(target=batcher.trace, args=("the cat.",))
    first.start()
    assert started.wait(30)
    rest = [threading.Thread(target=batcher.trace, args=(t,)) for t in ("a dog.", "the house.", "a red cat.")]
    for th in rest:
        th.start()
    while batcher._queue.qsize() < 3:  # all three wait behind the held batch
        threading.Event().wait(0.01)
    release.set()
    for th in [first, *rest]:
        th.join(timeout=60)
    assert list(batcher.batch_sizes) == [1, 3]


def test_bad_input_fails_only_its_caller(translator, monkeypatch):
    batcher = TraceBatcher(translator, max_batch=4)
    with pytest.raises(ValueError, match="empty"):
        batcher.trace("   ")
    with pytest.raises(TypeError):
        batcher.trace(None)
    # a batch that fails as a whole is retried one by one: each caller gets its own outcome
    monkeypatch.setattr(translator, "trace_batch", lambda texts: 1 / 0)
    assert batcher.trace("the cat.").translation == translator.trace("the cat.").translation
    with pytest.raises(ValueError):
        TraceBatcher(translator, max_batch=0)


def test_lengths_far_apart_are_not_padded_together(translator):
    batcher = TraceBatcher(translator, max_batch=8)
    items = [(n, str(n), None) for n in (5, 40, 6, 9, 41, 120)]
    groups = [[n for n, _, _ in g] for g in batcher._groups(items)]
    assert groups == [[5, 6, 9], [40, 41], [120]]
