"""The texts the Python side still writes about a trace (explorer/texts.py); every chart
is drawn in the browser (tests/browser/)."""

import pytest

from explorer import texts as viewer
from tests.helpers import ROOT, load_script


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
    assert not any(
        "Too long" in n for n in viewer.notices(translator.trace("the cat sleeps."), translator.max_source_tokens)
    )
    unk = " ".join(viewer.notices(translator.trace("😺😺 שלום"), translator.max_source_tokens))
    assert "meaningless" in unk and "reads English only" in unk


@pytest.mark.parametrize(
    "text, language",
    [
        ("Il gatto dorme sul divano.", "Italian"),
        ("Ho una macchina rossa.", "Italian"),
        ("Ciao, come stai?", "Italian"),
        ("Mi piace il caffè.", "Italian"),
        ("Dov'è la stazione?", "Italian"),
        ("Je suis très content.", "French"),
        ("Ich habe einen Hund.", "German"),
        ("La casa es grande y bonita.", "Spanish"),
        ("I have a red car.", None),
        ("The book that I bought yesterday is very interesting.", None),
        ("Tom gave Mary a beautiful present for her birthday.", None),
        ("I don't like coffee.", None),
        ("My sister is tall.", None),
        ("Die Hard is a movie.", None),
        ("Hello!", None),
    ],
)
def test_language_guess_tells_neighbouring_languages_from_english(text, language):
    assert viewer.language_guess(text) == language


# --- typed text: markup and control characters out, and what is not words -----------------------


@pytest.mark.parametrize(
    "text, clean, taken",
    [
        ("I have a red car.", "I have a red car.", ""),
        ("3 < 5 and 7 > 2", "3 < 5 and 7 > 2", ""),  # comparisons are not tags
        ("The cat sleeps.  ", "The cat sleeps.  ", ""),  # nothing to take out: read exactly as typed
        ("<p>My sister is <b>tall</b>.</p>", "My sister is tall .", "markup (HTML tags)"),
        (
            "<script>alert(1)</script> The cat sleeps.",
            "The cat sleeps.",
            "markup (HTML tags)",
        ),  # code goes with its tags
        ("Tom &amp; Jerry &lt;b&gt;are&lt;/b&gt; friends.", "Tom & Jerry are friends.", "markup (HTML tags)"),
        ("<!-- a comment -->Hi there", "Hi there", "markup (HTML tags)"),
        ("\x1b[31mThe cat\x1b[0m sleeps.", "The cat sleeps.", "control characters"),
        ("The\x00 cat\x07 sleeps.\u202e", "The cat sleeps.", "control characters"),
        ("<i>The</i> cat\x1b[1m sleeps.", "The cat sleeps.", "markup (HTML tags) and control characters"),
    ],
)
def test_clean_input_takes_markup_and_control_characters_out_and_says_so(text, clean, taken):
    got, notice = viewer.clean_input(text)
    assert got == clean
    if taken:
        assert notice.startswith(f"Taken out before translating: {taken}.") and f"“{clean}”" in notice
    else:
        assert notice == ""


@pytest.mark.parametrize("text", ["<script>alert(1)</script>", "\x1b[31m\x1b[0m", "<br><hr/>  \x07"])
def test_clean_input_refuses_text_with_nothing_left_to_read(text):
    with pytest.raises(ValueError, match="no English sentence in it"):
        viewer.clean_input(text)


@pytest.mark.parametrize(
    "text",
    ["alert(1)", "1234 5678 9012", "%%% $$$ ###", "function f(x) { return x * 2; }", "https://example.com/a?b=c"],
)
def test_text_that_is_mostly_not_words_is_told_its_translation_is_meaningless(translator, text):
    assert viewer.word_share(text) < viewer.MOSTLY_NOT_WORDS
    notes = " ".join(viewer.notices(translator.trace(text), translator.max_source_tokens))
    assert "meaningless" in notes  # (the tiny test model may read it as [UNK] first, which says so too)


def test_no_english_sentence_of_the_test_set_is_told_it_is_not_words():
    import json

    path = ROOT / "data" / "tatoeba-en-it" / "test.jsonl"
    lines = [json.loads(line)["translation"]["en"] for line in path.open(encoding="utf-8")]
    assert len(lines) >= 100
    assert [t for t in lines if viewer.word_share(t) < viewer.MOSTLY_NOT_WORDS] == []
    assert viewer.word_share("It costs $5,000 in 2019.") >= viewer.MOSTLY_NOT_WORDS  # numbers in a sentence are fine


TEST_SCORES = {"bleu": 37.75, "chrf": 58.87, "n": 1000, "long": {"min_words": 15, "n": 14, "bleu": 6.15, "chrf": 27.68}}


def test_a_long_sentence_is_warned_with_the_measured_figure():
    fourteen = " ".join(["word"] * 14)
    assert viewer.long_sentence_notice(fourteen, TEST_SCORES) is None
    note = viewer.long_sentence_notice(fourteen + " more", TEST_SCORES)
    assert note.startswith("⚠️ A long sentence (15 words).")
    assert "on the 14 test sentences of 15 words or more it scores 6.2 BLEU (chrF 27.7)" in note
    assert "against 37.8 on the whole test set" in note
    # a checkpoint measured without the slice still warns, without a figure it does not have
    bare = viewer.long_sentence_notice(fourteen + " more", {"bleu": 37.75, "chrf": 58.87})
    assert bare.startswith("⚠️ A long sentence (15 words).") and "BLEU" not in bare
    assert viewer.long_sentence_notice(fourteen + " more", None) == bare
    # the threshold is the measured slice's
    assert viewer.long_sentence_notice("a b c d e", {**TEST_SCORES, "long": {**TEST_SCORES["long"], "min_words": 5}})


def test_the_app_warns_beside_a_long_translation(translator):
    long = translator.trace("the black cat sleeps on the red chair while my sister reads a long book today.")
    notes = viewer.notices(long, translator.max_source_tokens, test=TEST_SCORES)
    assert any(n.startswith("⚠️ A long sentence (16 words)") for n in notes), notes
    short = viewer.notices(translator.trace("the cat sleeps."), translator.max_source_tokens, test=TEST_SCORES)
    assert not any("long sentence" in n for n in short)


# --- junk: text most of whose words are not English --------------------------------------------

JUNK_NOTICE = "most words of this text are not English"  # the notice's own words
# keyboard mashing, random letters, repeated syllables, consonant runs, letters typed one by one
JUNK = [
    "asdkjh qwe zzz",
    "asdf jkl qwerty",
    "qwertyuiop asdfghjkl",
    "fjdksla fjdkslajf dkslaj",
    "xqv jrtpl wumzo gfe",
    "lalala bababa",
    "hahaha lololo",
    "bcdfg hjklm npqrst",
    "zzzzzz ggggg",
    "q w e r t y",
]


def english_side(path: str) -> list[str]:
    import json

    with (ROOT / path).open(encoding="utf-8") as f:
        return [json.loads(line)["translation"]["en"] for line in f]


def is_junk(text: str) -> bool:
    return viewer.not_english_share(text) > viewer.MOSTLY_NOT_ENGLISH


@pytest.mark.parametrize("path, n", [("data/tatoeba-en-it/test.jsonl", 1000), ("data/everyday/test.jsonl", 100)])
def test_at_most_one_english_sentence_in_a_hundred_is_taken_for_junk(path, n):
    lines = english_side(path)
    assert len(lines) == n
    flagged = [t for t in lines if is_junk(t)]
    assert len(flagged) <= 0.01 * n, flagged


def test_every_junk_string_is_caught():
    caught = [t for t in JUNK if is_junk(t)]
    assert caught == JUNK, sorted(set(JUNK) - set(caught))


@pytest.mark.parametrize(
    "text",
    [
        "Hi!",
        "OK.",
        "I'm fine.",
        "Tom met Mary in Boston.",
        "I have 3 cats.",
        "Hello, Tom.",
        "Hmm.",
        "That’s debatable.",  # a rare word with an ending, a typographic apostrophe
        "Send me an e-mail.",
        "I live in the U.S.",
        "Hi Zbigniew!",  # a name the list has never seen: half the words, not most
    ],
)
def test_short_real_english_is_not_taken_for_junk(translator, text):
    assert not is_junk(text)
    assert not any(JUNK_NOTICE in n for n in viewer.notices(translator.trace(text), translator.max_source_tokens))


@pytest.mark.parametrize("text", ["lalala bababa", "sdfgh klmnb"])  # letters the tiny test tokenizer knows
def test_junk_is_told_its_translation_is_meaningless(translator, text):
    notes = " ".join(viewer.notices(translator.trace(text), translator.max_source_tokens))
    assert JUNK_NOTICE in notes and "meaningless" in notes and "[UNK]" not in notes


@pytest.mark.parametrize("text", ["Il gatto dorme sul divano.", "Ciao, come stai?", "Dov'è la stazione?"])
def test_italian_keeps_its_own_notice(translator, text):
    assert is_junk(text)  # its words are not English either: the Italian notice has to come first
    notes = " ".join(viewer.notices(translator.trace(text), translator.max_source_tokens))
    assert "looks like Italian" in notes and JUNK_NOTICE not in notes


def test_the_word_list_keeps_words_seen_twice_and_no_stray_letters():
    build = load_script("data/build_english_words.py")
    words = build.word_list(["I saw Zbigniew's e-mail.", "I saw a U.S. e-mail from B 2 C.", "b c"], min_count=2)
    assert words == ["e-mail", "i", "saw"]  # seen once: a, zbigniew's, u.s, from; b and c are single letters
    assert {"a", "i", "cat", "e-mail", "u.s", "don't"} <= viewer.english_words()
    assert not {"b", "q", "zzz", "asdf", "qwerty"} & viewer.english_words()


@pytest.mark.parametrize("text", ["hahaha lololo", "Hahaha hahaha!", "ahahah lalala"])
def test_repeated_syllables_are_junk_even_where_the_word_list_holds_them(text):
    # "hahaha" is in the corpus's word list, but laughter and babble carry nothing to translate
    assert is_junk(text)


def test_laughter_and_babble_are_told_their_translation_is_meaningless(translator):
    notes = " ".join(viewer.notices(translator.trace("hahaha lololo"), translator.max_source_tokens))
    assert JUNK_NOTICE in notes and "meaningless" in notes
    # a sentence with a laugh in it is still a sentence
    assert not is_junk("Hahaha, that is very funny!")


# --- emoji: not read, but not held against the words around them --------------------------------


def test_emoji_do_not_make_an_english_sentence_meaningless(shipped):
    text = "😀🎉🍕 I love pizza 🍕🍕"
    notes = viewer.notices(shipped.trace(text), shipped.max_source_tokens, src_tok=shipped.src_tok)
    said = " ".join(notes)
    assert "meaningless" not in said and JUNK_NOTICE not in said, notes
    # the emoji themselves are said not to be read, once, naming them
    (emoji,) = [n for n in notes if "emoji" in n]
    assert all(e in emoji for e in "😀🎉🍕") and "[UNK]" in emoji
    # text of emoji alone, or with words of another script, is still meaningless
    for junk in ("😀🎉🍕", "😺😺 שלום"):
        assert "meaningless" in " ".join(
            viewer.notices(shipped.trace(junk), shipped.max_source_tokens, src_tok=shipped.src_tok)
        )


# --- a text cut at the token cap: words read and words dropped ----------------------------------


def test_a_text_cut_at_the_token_cap_says_how_many_words_were_read_and_dropped(shipped):
    cap = shipped.max_source_tokens
    base = "the cat sleeps on the red chair while my sister reads a long book about understanding history".split()
    text = " ".join(base[i % len(base)] for i in range(300))
    trace = shipped.trace(text)
    assert trace.truncated
    dropped = viewer.dropped_text(shipped.src_tok, text, cap)
    notes = viewer.notices(trace, cap, dropped, shipped.metrics.get("test"))
    # what the model read: the text up to the end of its last kept token
    end = shipped.src_tok.encode(text, add_special_tokens=False).offsets[cap - 1][1]
    read = len(text[:end].split())
    assert 60 < read < 120  # about 80 words of 300
    (cut,) = [n for n in notes if "Too long" in n]
    assert f"{read} of its 300 words were read and {300 - read} were dropped" in cut, cut
    # the long-sentence warning counts the words the model read, not the whole paste
    (long,) = [n for n in notes if "long sentence" in n]
    assert f"({read} words read)" in long and "300" not in long, long
