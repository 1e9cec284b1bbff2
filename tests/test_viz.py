"""The texts the Python side still writes about a trace (transformer/viewer.py); every
chart is drawn in the browser now (tests/test_browser.py)."""

import pytest

from transformer import viewer


@pytest.fixture(scope="module")
def trace(translator):
    return translator.trace("the black cat sleeps.")


def test_whatif_prefix_uses_one_based_steps(trace):
    assert viewer.whatif_prefix(trace, 1, 2) == [int(trace.topk_ids[0][2])]
    assert viewer.whatif_prefix(trace, 3, 1) == [*trace.tgt_ids[1:3], int(trace.topk_ids[2][1])]


def test_forced_label(translator, trace):
    assert viewer.forced_label(trace) is None
    alt = translator.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, 2, 1))
    word = viewer.display_token(alt.tgt_tokens[2])
    assert viewer.forced_label(alt) == f"step 2 forced to '{word}'"
    assert "▁" not in word


def test_notices_speak_in_tokens(translator):
    long = translator.trace("the cat " * 200)
    notes = " ".join(viewer.notices(long, translator.max_source_tokens))
    assert f"at most {translator.max_source_tokens} subword tokens" in notes
    assert f"{long.n_src_tokens_dropped} tokens dropped" in notes
    assert not any("Too long" in n for n in viewer.notices(translator.trace("the cat sleeps."),
                                                           translator.max_source_tokens))
    unk = " ".join(viewer.notices(translator.trace("😺😺 שלום"), translator.max_source_tokens))
    assert "meaningless" in unk
