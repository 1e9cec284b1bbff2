"""The trace batcher: concurrent callers share batches and get what they would get alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from explorer.serving import TraceBatcher
from transformer import load_translator


@pytest.fixture(scope="module")
def nllb_translator(nllb_like):
    """The small converted NLLB-200 model: a multilingual one."""
    return load_translator(nllb_like)


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
    items = [(n, str(n), None, (None, None)) for n in (5, 40, 6, 9, 41, 120)]
    groups = [[n for n, _, _, _ in g] for g in batcher._groups(items)]
    assert groups == [[5, 6, 9], [40, 41], [120]]


def test_languages_are_never_batched_together(translator):
    batcher = TraceBatcher(translator, max_batch=8)
    pairs = [("en", "fr"), ("en", "de"), ("en", "fr"), (None, None), ("en", "de"), ("en", "fr")]
    items = [(5 + i, str(i), None, langs) for i, langs in enumerate(pairs)]
    groups = [[langs for _, _, _, langs in g] for g in batcher._groups(items)]
    assert sorted(len(g) for g in groups) == [1, 2, 3]
    assert all(len(set(g)) == 1 for g in groups), groups


def test_each_language_pair_is_one_trace_batch_call(nllb_translator, monkeypatch):
    """Sentences in two target languages, queued together: two trace_batch calls, each with
    its own languages, and each caller gets the trace of its own language."""
    tr = nllb_translator
    codes = [c for c in tr.cfg.lang_ids if c != tr.cfg.src_lang][:2]
    batcher = TraceBatcher(tr, max_batch=8)
    started, release = threading.Event(), threading.Event()
    calls, real = [], tr.trace_batch

    def held(texts, **langs):
        calls.append((len(texts), langs.get("tgt_lang")))
        if not started.is_set():
            started.set()
            release.wait(30)
        return real(texts, **langs)

    monkeypatch.setattr(tr, "trace_batch", held)
    first = threading.Thread(target=batcher.trace, args=("the cat.",))
    first.start()
    assert started.wait(30)
    got: dict = {}
    asked = [("a dog.", codes[0]), ("the house.", codes[1]), ("a red cat.", codes[0])]

    def visit(text, lang):
        got[text] = batcher.trace(text, tgt_lang=lang)

    rest = [threading.Thread(target=visit, args=a) for a in asked]
    for th in rest:
        th.start()
    while batcher._queue.qsize() < 3:
        threading.Event().wait(0.01)
    release.set()
    for th in [first, *rest]:
        th.join(timeout=60)
    assert sorted(calls[1:]) == sorted([(2, codes[0]), (1, codes[1])]), calls
    for text, lang in asked:
        assert got[text].tgt_lang == lang and got[text].tgt_ids[1] == tr.cfg.lang_ids[lang]


def test_a_bad_language_is_refused_before_it_is_queued(nllb_translator):
    batcher = TraceBatcher(nllb_translator)
    with pytest.raises(ValueError, match="unknown language 'xx_Zzzz'"):
        batcher.trace("the cat.", tgt_lang="xx_Zzzz")
    assert batcher._queue.qsize() == 0
