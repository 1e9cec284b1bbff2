"""More training data: extra corpora beside the main one, tagged synthetic sources, the
punctuation-splitting tokenizer, and the run's end-time forecast."""

from __future__ import annotations

import json
import re

import pytest

from tests.helpers import PAIRS, tiny_main, write_jsonl
from transformer.training.data import load_extra_train, noised_source
from transformer.core.tokenizer import SYNTHETIC_TAG, UNK, train_tokenizer
from transformer.training.progress import forecast
from transformer.training.setup import load_run_data, run_tags_synthetic


def write_rows(path, rows):
    with path.open("w", encoding="utf-8") as f:
        for i, (en, it, origin) in enumerate(rows):
            row = {"id": str(i), "translation": {"en": en, "it": it}}
            if origin is not None:
                row["origin"] = origin
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


@pytest.fixture
def bt_dir(tmp_path):
    d = tmp_path / "bt"
    d.mkdir()
    write_rows(
        d / "train.jsonl",
        [
            ("a synthetic one.", "uno.", "bt:sample"),
            ("a real one.", "due.", "direct"),
            ("no origin.", "tre.", None),
            ("beam.", "quattro.", "bt:beam"),
            ("", "vuoto.", "bt"),
        ],
    )
    write_jsonl(d / "validation.jsonl", [("never used.", "mai usata.")])
    return d


def test_extra_train_tags_only_synthetic_sources(bt_dir):
    plain = load_extra_train(str(bt_dir), "en", "it")
    assert plain == [
        ("a synthetic one.", "uno."),
        ("a real one.", "due."),
        ("no origin.", "tre."),
        ("beam.", "quattro."),
    ]  # the empty source is dropped
    tagged = load_extra_train(str(bt_dir), "en", "it", tag=SYNTHETIC_TAG)
    assert tagged == [
        ("[BT] a synthetic one.", "uno."),
        ("a real one.", "due."),
        ("no origin.", "tre."),
        ("[BT] beam.", "quattro."),
    ]


FORWARD = "the cat sleeps on the big red sofa in the small house near the old lake."


@pytest.fixture
def ft_dir(tmp_path):
    """Forward-translated rows (real English, a model's Italian) beside a real and a back-translated one."""
    d = tmp_path / "ft"
    d.mkdir()
    write_rows(
        d / "train.jsonl",
        [
            (FORWARD, "il gatto dorme.", "ft:beam"),
            (FORWARD, "il gatto dorme ancora.", "ft:beam"),
            ("a real one.", "due.", None),
            ("beam.", "quattro.", "bt:beam"),
        ],
    )
    return d


def test_noise_forward_noises_only_forward_translated_sources(ft_dir):
    """Only the ``ft`` sources change, the same way for the same sentence and seed (so every
    process and every rebuild agrees), another way for another seed; the [BT] tag still
    goes on back-translated sources."""
    plain = load_extra_train(str(ft_dir), "en", "it", tag=SYNTHETIC_TAG)
    noised = load_extra_train(str(ft_dir), "en", "it", tag=SYNTHETIC_TAG, noise_seed=0)
    assert noised[2:] == plain[2:] == [("a real one.", "due."), ("[BT] beam.", "quattro.")]
    assert [it for _, it in noised] == [it for _, it in plain]
    (a, _), (b, _) = noised[:2]
    assert a == b == noised_source(FORWARD, 0) != FORWARD  # per sentence, not per row
    assert noised_source(FORWARD, 1) != a and noised_source(FORWARD, 0) == a
    # every word left is a word of the sentence or the blank
    kept = [w for w in a.split() if w != UNK]
    assert set(kept) <= set(FORWARD.split()) and len(a.split()) <= len(FORWARD.split())


def test_tag_origins_tags_forward_translations_read_the_other_way_round(ft_dir):
    """An it->en run on en->it forward translations: their Italian, now the source, is the
    model-written side, so ``tag_origins=("ft",)`` tags those sources and leaves the
    back-translated row (whose source, now, is real Italian) alone; both prefixes tag both."""
    reverse = load_extra_train(str(ft_dir), "it", "en", tag=SYNTHETIC_TAG, tag_origins=("ft",))
    assert reverse == [
        ("[BT] il gatto dorme.", FORWARD),
        ("[BT] il gatto dorme ancora.", FORWARD),
        ("due.", "a real one."),
        ("quattro.", "beam."),
    ]
    both = load_extra_train(str(ft_dir), "it", "en", tag=SYNTHETIC_TAG, tag_origins=("ft", "bt"))
    assert [src.startswith("[BT] ") for src, _ in both] == [True, True, False, True]
    default = load_extra_train(str(ft_dir), "it", "en", tag=SYNTHETIC_TAG)  # bt only
    assert [src.startswith("[BT] ") for src, _ in default] == [False, False, False, True]


def test_run_data_appends_extra_train_but_keeps_its_own_validation(data_dir, bt_dir):
    data = load_run_data(str(data_dir), "en", "it", extra_train=(str(bt_dir),), tag=SYNTHETIC_TAG, max_train_pairs=5)
    assert len(data.train) == 5 + 4 and data.train[5] == ("[BT] a synthetic one.", "uno.")
    assert ("never used.", "mai usata.") not in data.validation and len(data.validation) == 6


def test_split_punctuation_separates_words_from_punctuation():
    texts = [en for en, _ in PAIRS] + [it for _, it in PAIRS] + ["l'amico di tom.", "e-mail!"] * 3
    glued = train_tokenizer(texts, 150, min_frequency=1)
    split = train_tokenizer(texts, 150, min_frequency=1, split_punctuation=True)
    text = "the car is small."
    assert split.encode(text).tokens[-1] == "." and glued.encode(text).tokens[-1] != "."
    assert "▁l'" in "".join(split.encode("l'amico di tom.").tokens)  # the apostrophe stays in the word
    for t in ("open the window, please.", "dov'è la stazione?", "l'amico di tom.", "e-mail!"):
        assert split.decode(split.encode(t).ids) == t


def test_forecast_says_when_the_budget_cuts_the_run():
    f = forecast(elapsed=600, epochs_done=2, epochs=10, seconds_per_epoch=300, max_minutes=None)
    assert (f.seconds_left, f.last_epoch, f.cut_by_budget) == (2400, 10, False)
    f = forecast(elapsed=600, epochs_done=2, epochs=10, seconds_per_epoch=300, max_minutes=40, finish_seconds=60)
    # 2400 - 600 - 60 = 1740 s of room: epochs 3 to 7 finish, the budget cuts epoch 8
    assert (f.seconds_left, f.last_epoch, f.cut_by_budget) == (1800, 8, True)
    f = forecast(elapsed=600, epochs_done=2, epochs=4, seconds_per_epoch=300, max_minutes=40)
    assert not f.cut_by_budget and f.seconds_left == 600


@pytest.mark.slow
def test_train_cli_tags_punctuates_forecasts_and_resumes(data_dir, bt_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        tiny_main(
            data_dir, out, "--extra-train", str(bt_dir), "--tag-synthetic", "--split-punctuation", "--epochs", "2"
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "(synthetic sources tagged)" in err and "forecast:" in err
    assert run_tags_synthetic(out)
    tok = json.loads((out / "best" / "tokenizer.json").read_text(encoding="utf-8"))
    assert SYNTHETIC_TAG in {t["content"] for t in tok["added_tokens"]}
    # --resume reads the tag from the run's tokenizer, not from the flags
    assert tiny_main(data_dir, out, "--extra-train", str(bt_dir), "--resume", "--epochs", "3") == 0
    assert "(synthetic sources tagged)" in capsys.readouterr().err
    assert not run_tags_synthetic(tmp_path / "nothing-here")


def test_no_forecast_after_the_budget_cut_the_run(data_dir, tmp_path, capsys):
    """A forecast follows each whole epoch; an epoch the budget cut short is the run's last,
    so nothing after it says when the run will end."""
    assert tiny_main(data_dir, tmp_path / "run", "--epochs", "3", "--max-minutes", "0.0001") == 0
    err = capsys.readouterr().err
    # how many batches fit in 6 ms depends on the CPU; that the budget cut epoch 1 does not
    assert re.search(r"time budget of 0\.0001 minutes spent; stopped after \d+ of \d+ batches of epoch 1\n", err)
    assert "epoch(s) here" not in err
    assert tiny_main(data_dir, tmp_path / "whole", "--epochs", "2") == 0
    assert capsys.readouterr().err.count("(from 1 epoch(s) here)") == 1  # after epoch 1, not after the last


def test_train_cli_missing_extra_train_is_one_line(data_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        tiny_main(data_dir, tmp_path / "run", "--extra-train", str(tmp_path / "nope"))
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: --extra-train {tmp_path / 'nope'}: no such file or directory"
    ]
