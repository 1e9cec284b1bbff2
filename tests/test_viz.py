"""The texts the Python side still writes about a trace (explorer/texts.py); every chart
is drawn in the browser (tests/test_browser.py)."""

import pytest

from explorer import texts as viewer


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
    assert "meaningless" in unk and "reads English only" in unk


@pytest.mark.parametrize("text, language", [
    ("Il gatto dorme sul divano.", "Italian"), ("Ho una macchina rossa.", "Italian"), ("Ciao, come stai?", "Italian"),
    ("Mi piace il caffè.", "Italian"), ("Dov'è la stazione?", "Italian"), ("Je suis très content.", "French"),
    ("Ich habe einen Hund.", "German"), ("La casa es grande y bonita.", "Spanish"),
    ("I have a red car.", None), ("The book that I bought yesterday is very interesting.", None),
    ("Tom gave Mary a beautiful present for her birthday.", None), ("I don't like coffee.", None),
    ("My sister is tall.", None), ("Die Hard is a movie.", None), ("Hello!", None)])
def test_language_guess_tells_neighbouring_languages_from_english(text, language):
    assert viewer.language_guess(text) == language
