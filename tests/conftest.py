"""Fixtures the tests share: a tiny parallel corpus, a random-weight checkpoint, and the
shipped model (the plain helpers they are made with are in tests/helpers.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from tests.helpers import (
    PAIRS,
    SHIPPED,
    marian_config,
    single_thread,
    tatoeba_pairs,
    tiny_config,
    train_marian,
    train_spm,
    write_jsonl,
    write_marian_tokenizer,
)
from explorer.launch import NO_CHROMIUM, find_chromium
from transformer.core.checkpoint import save_checkpoint
from transformer.core.model import build_model
from transformer.core.tokenizer import train_tokenizer


skipped_browser_tests: list[str] = []


def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pytest.ini): one worker per core, at most four. Each worker starts its own
    app and Chromium for the browser tests, so more workers would mostly wait on each other."""
    return max(1, min(4, os.cpu_count() or 1))


def pytest_configure(config):
    """Under pytest-xdist, one torch thread per worker, and for the apps and CLIs the tests start:
    with several workers every core is busy already, and more threads than cores make OpenMP's
    threads wait on each other (a test that compares thread counts sets its own)."""
    if getattr(config, "workerinput", {}).get("workercount", 1) > 1:
        torch.set_num_threads(1)
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        os.environ.setdefault("APP_TORCH_THREADS", "1")


def pytest_runtest_logreport(report):
    """Count skipped browser tests (tests/browser/conftest.py marks them). Here rather than in
    tests/browser: under pytest-xdist, reports reach the controller, which loads only this file."""
    if report.skipped and "browser" in report.keywords:
        skipped_browser_tests.append(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    if skipped_browser_tests:
        n = len(skipped_browser_tests)
        how = NO_CHROMIUM if find_chromium() is None else "see the skip reasons above (pytest -ra)"
        terminalreporter.write_line(f"{n} browser test{'s' * (n != 1)} skipped: {how}", yellow=True, bold=True)
        if os.environ.get("REQUIRE_BROWSER") == "1":
            terminalreporter.write_line("REQUIRE_BROWSER=1: a skipped browser test fails the run", red=True, bold=True)


def pytest_sessionfinish(session, exitstatus):
    """With ``REQUIRE_BROWSER=1`` a skipped browser test fails the run (CI sets it). Only the
    controller decides: an xdist worker's count holds just its own share."""
    if getattr(session.config, "workerinput", None) is not None:
        return
    if skipped_browser_tests and os.environ.get("REQUIRE_BROWSER") == "1" and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture
def one_thread():
    """Bit-for-bit comparisons need the same kernels every time."""
    with single_thread():
        yield


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("data")
    write_jsonl(d / "train.jsonl", PAIRS * 4)
    write_jsonl(d / "validation.jsonl", PAIRS[:6])
    write_jsonl(d / "test.jsonl", PAIRS[6:12])
    return d


@pytest.fixture(scope="session")
def tokenizers_pair():
    src = train_tokenizer([en for en, _ in PAIRS], vocab_size=120, min_frequency=1)
    tgt = train_tokenizer([it for _, it in PAIRS], vocab_size=130, min_frequency=1)
    return src, tgt


def saved_tiny_model(folder: Path, tokenizers_pair, seed: int) -> Path:
    """A tiny model of the fixture vocabularies, initialised from ``seed`` and saved in ``folder``."""
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(seed)
    return save_checkpoint(folder, build_model(tiny_config(src_tok, tgt_tok)), src_tok, tgt_tok)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizers_pair) -> Path:
    return saved_tiny_model(tmp_path_factory.mktemp("ckpt") / "tiny", tokenizers_pair, seed=0)


@pytest.fixture(scope="session")
def other_checkpoint(tmp_path_factory, tokenizers_pair) -> Path:
    """A second tiny model of the same vocabularies, initialised apart: it translates otherwise."""
    return saved_tiny_model(tmp_path_factory.mktemp("other") / "tiny", tokenizers_pair, seed=1)


@pytest.fixture(scope="session")
def translator(tiny_checkpoint):
    from transformer import load_translator

    return load_translator(tiny_checkpoint)


@pytest.fixture(scope="session")
def shipped():
    """The shipped checkpoint's translator (checkpoints/en-it), loaded once for every test that
    measures the real model. Tests read it and never change it."""
    from transformer import load_translator

    return load_translator(SHIPPED)


@pytest.fixture(scope="module")
def app(translator):
    """The explorer's ``App`` on the tiny checkpoint, built (its callbacks return dicts keyed
    by the components ``build()`` makes)."""
    import explorer.page as explorer_page

    a = explorer_page.App(translator)
    a.build()
    return a


@pytest.fixture(scope="session")
def opus_mt_like(tmp_path_factory) -> Path:
    """A small OPUS-MT-style Marian model (swish, one shared vocabulary, tied embeddings, the
    decoder starting from <pad>), trained for a few seconds with transformers, saved as the Hub
    has them and converted with ``python -m transformer.cli.from_marian``: the converted
    checkpoint's folder (its Marian source is the ``marian`` folder beside it)."""
    from transformers import MarianMTModel

    from transformer.cli import from_marian

    root = tmp_path_factory.mktemp("opus")
    pairs = tatoeba_pairs("train", 2000)
    with single_thread():
        tok = write_marian_tokenizer(
            root / "marian", train_spm([en for en, _ in pairs], 400), train_spm([it for _, it in pairs], 500), False
        )
        torch.manual_seed(0)
        model = MarianMTModel(marian_config(len(tok.encoder), len(tok.encoder), tok.pad_token_id))
        model = train_marian(model, tok, [p for p in pairs if len(p[0]) <= 40], steps=100, batch=32, lr=5e-3)
    model.save_pretrained(root / "marian")
    assert from_marian.main([str(root / "marian"), "--out", str(root / "opus-mt-tiny")]) == 0
    return root / "opus-mt-tiny"


@pytest.fixture(scope="session")
def m2m100_like(tmp_path_factory) -> Path:
    """A small M2M100 model (ReLU, fairseq's sinusoids from position 2, a BPE SentencePiece model
    over vocab.json with the 100 language tokens __xx__ after it, 8 "madeupword" rows past them),
    trained for a few seconds with transformers so it ends its sentences, saved as the Hub has them
    and converted with ``python -m transformer.cli.convert``: the converted checkpoint's folder
    (its transformers source is the ``hf`` folder beside it)."""
    from tests.helpers import build_multilingual_like

    return build_multilingual_like(tmp_path_factory.mktemp("m2m100"), "m2m100", train_steps=150)


@pytest.fixture(scope="session")
def nllb_like(tmp_path_factory) -> Path:
    """A small NLLB-200 model (model_type m2m_100 with NllbTokenizer's tokenizer.json and its 202
    codes like eng_Latn, 2 embedding rows past the tokenizer), random weights, converted: the
    checkpoint's folder (its transformers source is the ``hf`` folder beside it)."""
    from tests.helpers import build_multilingual_like

    return build_multilingual_like(tmp_path_factory.mktemp("nllb"), "nllb")


@pytest.fixture(scope="session")
def mbart50_like(tmp_path_factory) -> Path:
    """A small mBART-50 many-to-many model (GELU, learned positions, embedding norms, logits bias,
    MBart50Tokenizer's tokenizer.json over a unigram SentencePiece model, codes like en_XX), random
    weights, converted: the checkpoint's folder (its transformers source is the ``hf`` folder beside it)."""
    from tests.helpers import build_multilingual_like

    return build_multilingual_like(tmp_path_factory.mktemp("mbart50"), "mbart50")
