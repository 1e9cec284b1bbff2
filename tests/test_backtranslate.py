"""Back-translation: collecting monolingual text with its hygiene, the three ways of making
synthetic sources, the folder it writes, and the CLI's one-line errors."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import torch

from tests.helpers import PAIRS, tiny_config, write_jsonl
from transformer.training.synthetic import (
    METHODS,
    BacktranslateError,
    backtranslate,
    fingerprint,
    held_out,
    noise_words,
    normalize,
    read_fingerprints,
    read_testsets,
    sample_decode,
    select_monolingual,
    synthetic_pairs,
    write_fingerprints,
)
from transformer.cli.backtranslate import main
from transformer.core.checkpoint import save_checkpoint
from transformer.core.decoding import max_new_tokens
from transformer.core.model import build_model


def write_lines(path: Path, lines) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")


@pytest.fixture
def testsets(tmp_path) -> Path:
    """A miniature of OPUS-MT-testsets' tatoeba/testsets folder."""
    root = tmp_path / "testsets"
    # the pair's own evaluation files, two releases
    write_lines(root / "eng-ita" / "tatoeba-test-v1.eng", ["the cat sleeps.", "a held-out sentence."])
    write_lines(root / "eng-ita" / "tatoeba-test-v1.ita", ["il gatto dorme.", "una frase tenuta da parte."])
    write_lines(root / "eng-ita" / "tatoeba-test-v2.ita", ["un'altra frase di valutazione."])
    write_lines(root / "eng-ita" / "tatoeba-test-v2.ita.labels", ["ita"])
    # other pairs: their Italian sides are the monolingual text
    write_lines(
        root / "fra-ita" / "tatoeba-test-v1.ita", ["vedo il gatto.", "una frase tenuta da parte.", "oggi  piove."]
    )
    write_lines(root / "fra-ita" / "tatoeba-test-v1.fra", ["je vois le chat."])
    write_lines(root / "ita-deu" / "tatoeba-test-v1.ita", ["oggi piove.", "il cane corre nel parco."])
    write_lines(root / "ita-deu" / "tatoeba-test-v1.ita.labels", ["ita"])
    write_lines(root / "eng-fra" / "tatoeba-test-v1.eng", ["not italian at all."])
    return root


def test_read_testsets_splits_evaluation_from_monolingual(testsets):
    text = read_testsets(testsets, "en", "it")
    assert text.evaluation == {
        "the cat sleeps.",
        "a held-out sentence.",
        "il gatto dorme.",
        "una frase tenuta da parte.",
        "un'altra frase di valutazione.",
    }
    # file order, duplicates (after folding spaces) once, .labels files and other languages ignored
    assert text.monolingual == [
        "vedo il gatto.",
        "una frase tenuta da parte.",
        "oggi piove.",
        "il cane corre nel parco.",
    ]


def test_read_testsets_errors(tmp_path, testsets):
    with pytest.raises(BacktranslateError, match="no such folder"):
        read_testsets(tmp_path / "nope", "en", "it")
    with pytest.raises(BacktranslateError, match="no eng-spa evaluation files"):
        read_testsets(testsets, "en", "es")


def test_held_out_keeps_training_sentences_and_adds_the_splits(testsets):
    text = read_testsets(testsets, "en", "it")
    train = [("the cat sleeps.", "il gatto dorme.")]  # an evaluation pair that is also a training pair
    blocked = held_out(text.evaluation, train, [[("my dog.", "il mio cane.")]])
    assert "il gatto dorme." not in blocked and "the cat sleeps." not in blocked
    assert {"una frase tenuta da parte.", "a held-out sentence.", "my dog.", "il mio cane."} <= blocked


def test_select_monolingual_drops_held_out_known_long_and_repeated():
    chosen = select_monolingual(["a.", "b.", "a.", "c.", "x" * 301], blocked={"b."}, known={"c."})
    assert chosen == ["a."]


def test_normalize_and_fingerprint_are_stable(tmp_path):
    assert normalize("  Cafe\u0301  è\tqui ") == "Café è qui"
    assert fingerprint("Café è qui") == fingerprint(" Cafe\u0301 è  qui")
    write_fingerprints(tmp_path / "f.txt", ["uno.", "due.", "uno."])
    assert read_fingerprints(tmp_path / "f.txt") == {fingerprint("uno."), fingerprint("due.")}


def test_noise_words_drops_blanks_and_shuffles_locally():
    rng = random.Random(0)
    words = [f"w{i}" for i in range(200)]
    noised = noise_words(" ".join(words), rng).split()
    assert 0 < len(noised) < 200 and "<blank>" in noised
    kept = [w for w in noised if w != "<blank>"]
    assert kept != sorted(kept, key=lambda w: int(w[1:]))  # shuffled...
    assert all(abs(int(w[1:]) - words.index(w)) < 200 for w in kept)
    positions = [int(w[1:]) for w in kept]  # ...but only locally: no word moves far ahead of its neighbours
    assert all(b > a - 10 for a, b in zip(positions, positions[1:]))
    assert noise_words("solo", random.Random(1), p_drop=1.0) == "solo"  # never empty


def test_noise_words_moves_a_word_at_most_k_swap_places():
    """Lample et al.'s bound, and the noise reaches it: with nothing dropped, each word ends
    at most ``k_swap`` places from where it was, and some word moves that far."""
    words = [f"w{i}" for i in range(300)]
    for k in (1, 3):
        moved = noise_words(" ".join(words), random.Random(k), p_drop=0.0, p_blank=0.0, k_swap=k).split()
        shifts = [abs(int(w[1:]) - i) for i, w in enumerate(moved)]
        assert sorted(moved) == sorted(words) and max(shifts) == k, (k, max(shifts))


@pytest.fixture(scope="module")
def reverse_translator(tmp_path_factory, tokenizers_pair):
    """A random-weight it->en model: what back-translation runs with."""
    from transformer import load_translator

    en_tok, it_tok = tokenizers_pair
    torch.manual_seed(1)
    cfg = tiny_config(it_tok, en_tok, src_lang="it", tgt_lang="en")
    path = save_checkpoint(tmp_path_factory.mktemp("rev") / "rev", build_model(cfg), it_tok, en_tok)
    return load_translator(path)


def test_sample_decode_draws_from_the_model(reverse_translator):
    tr = reverse_translator
    src = torch.tensor([tr.encode_source("il gatto dorme.").ids] * 4)
    a = sample_decode(tr.model, src, torch.Generator().manual_seed(0))
    b = sample_decode(tr.model, src, torch.Generator().manual_seed(0))
    assert a == b  # seeded
    assert len({tuple(x) for x in a}) > 1  # the same source, different draws
    limit = max_new_tokens(tr.model, src.shape[1])
    for ids in a:
        assert ids and (ids[-1] == tr.cfg.tgt_eos_id or len(ids) == limit) and len(ids) <= limit
        assert tr.cfg.tgt_eos_id not in ids[:-1]


@pytest.mark.parametrize("method", METHODS)
def test_backtranslate_every_method_is_in_order_and_reproducible(reverse_translator, method):
    sentences = [it for _, it in PAIRS[:7]]
    calls = []
    a = backtranslate(reverse_translator, sentences, method, seed=3, progress=lambda d, t: calls.append((d, t)))
    assert len(a) == len(sentences) and calls[-1] == (7, 7)
    assert a == backtranslate(reverse_translator, sentences, method, seed=3)
    if method == "beam":  # beam search is deterministic whatever the seed; ordering must not matter
        assert backtranslate(reverse_translator, sentences[::-1], method)[::-1] == a
    with pytest.raises(BacktranslateError, match="unknown method"):
        backtranslate(reverse_translator, sentences, "greedy")


def test_synthetic_pairs_never_hold_a_held_out_source():
    pairs = synthetic_pairs(["uno.", "due.", "tre."], ["one.", " ", "a test sentence."], {"a test sentence."})
    assert pairs == [("one.", "uno.")]


def test_cli_writes_the_folder_and_the_fingerprints(tmp_path, testsets, reverse_translator, capsys):
    data = tmp_path / "corpus"
    data.mkdir()
    write_jsonl(data / "train.jsonl", [("the cat sleeps.", "il gatto dorme."), ("i see the cat.", "vedo il gatto.")])
    write_jsonl(data / "validation.jsonl", [("it is raining today.", "oggi piove.")])
    write_jsonl(data / "test.jsonl", [("we are happy.", "siamo felici.")])
    out = tmp_path / "bt"
    assert (
        main(
            [
                "--testsets",
                str(testsets),
                "--checkpoint",
                str(reverse_translator.directory),
                "--dataset",
                str(data),
                "--out",
                str(out),
                "--method",
                "sample",
                "--heldout",
                str(tmp_path / "held.txt"),
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows = [json.loads(line) for line in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    # "vedo il gatto." is already a training target, "oggi piove." a validation sentence,
    # "una frase tenuta da parte." an evaluation sentence: only one is left
    assert [r["translation"]["it"] for r in rows] == ["il cane corre nel parco."]
    assert summary["sentences"] == 1 and summary["pairs"] == len(rows)
    assert all(r["origin"] == "bt:sample" and set(r["translation"]) == {"en", "it"} for r in rows)
    held = read_fingerprints(tmp_path / "held.txt")
    assert fingerprint("una frase tenuta da parte.") in held and fingerprint("oggi piove.") in held
    assert fingerprint("il gatto dorme.") not in held  # in train: not held out


def test_cli_bad_input_is_one_line(tmp_path, testsets, reverse_translator, capsys):
    def error(*argv) -> str:
        with pytest.raises(SystemExit) as exc:
            main(list(argv))
        assert exc.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1, lines
        return lines[0]

    ckpt = str(reverse_translator.directory)
    assert "no such folder" in error("--testsets", str(tmp_path / "nope"), "--checkpoint", ckpt, "--out", str(tmp_path))
    assert "--limit" in error("--testsets", str(testsets), "--checkpoint", ckpt, "--out", str(tmp_path), "--limit", "0")
    assert "error:" in error(
        "--testsets", str(testsets), "--checkpoint", str(tmp_path / "missing"), "--out", str(tmp_path / "o")
    )


def test_sampling_from_the_top_one_is_greedy_decoding(reverse_translator):
    from transformer.core.decoding import greedy_decode

    tr = reverse_translator
    a, b = (tr.encode_source(t).ids for t in ("vedo il gatto e il cane.", "oggi piove."))
    src = torch.tensor([a, b + [tr.cfg.src_pad_id] * (len(a) - len(b))])  # a padded batch
    sampled = sample_decode(tr.model, src, torch.Generator().manual_seed(5), top_k=1)
    assert sampled == greedy_decode(tr.model, src).ids
