"""Fixtures the tests make themselves: a tiny parallel corpus and a random-weight checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transformer.checkpoint import save_checkpoint
from transformer.config import TransformerConfig
from transformer.model import build_model
from transformer.tokenizer import special_ids, train_tokenizer

# Hand-written for the tests (not taken from any corpus).
PAIRS = [
    ("the cat sleeps.", "il gatto dorme."),
    ("the black cat sleeps.", "il gatto nero dorme."),
    ("the dog eats.", "il cane mangia."),
    ("the white dog eats.", "il cane bianco mangia."),
    ("i see the cat.", "vedo il gatto."),
    ("i see the dog.", "vedo il cane."),
    ("we see a house.", "vediamo una casa."),
    ("you have a red car.", "hai una macchina rossa."),
    ("she reads a book.", "lei legge un libro."),
    ("he writes a letter.", "lui scrive una lettera."),
    ("the house is big.", "la casa è grande."),
    ("the car is small.", "la macchina è piccola."),
    ("i like coffee.", "mi piace il caffè."),
    ("i do not like tea.", "non mi piace il tè."),
    ("where is the station?", "dov'è la stazione?"),
    ("the book is on the table.", "il libro è sul tavolo."),
    ("my sister is tall.", "mia sorella è alta."),
    ("my brother is tall.", "mio fratello è alto."),
    ("we are happy.", "siamo felici."),
    ("they are tired.", "sono stanchi."),
    ("the children play outside.", "i bambini giocano fuori."),
    ("it is raining today.", "oggi piove."),
    ("i am going home.", "vado a casa."),
    ("open the window, please.", "apri la finestra, per favore."),
]


def write_jsonl(path: Path, pairs) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, (en, it) in enumerate(pairs):
            f.write(json.dumps({"id": str(i), "translation": {"en": en, "it": it}}, ensure_ascii=False) + "\n")
    return path


def tiny_main(data_dir, out, *extra):
    """``train.main`` with the tiny preset cut to the fixture corpus (one thread)."""
    import train

    return train.main(["--preset", "tiny", "--dataset", str(data_dir), "--out", str(out), "--threads", "1",
                       "--batch-tokens", "600", "--vocab-size", "200", *extra])


@pytest.fixture
def one_thread():
    """Bit-for-bit comparisons need the same kernels every time (and the machine is shared)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("data")
    write_jsonl(d / "train.jsonl", PAIRS * 4)
    write_jsonl(d / "validation.jsonl", PAIRS[:6])
    write_jsonl(d / "test.jsonl", PAIRS[6:12])
    return d


def tiny_config(tok_src, tok_tgt, **overrides) -> TransformerConfig:
    ids = {f"src_{k}_id": v for k, v in special_ids(tok_src).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tok_tgt).items()})
    kw = dict(d_model=32, h=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2, dropout=0.1, attn_dropout=0.1,
              max_positions=40, src_vocab_size=tok_src.get_vocab_size(), tgt_vocab_size=tok_tgt.get_vocab_size(),
              tie_embeddings="decoder", **ids)
    kw.update(overrides)
    return TransformerConfig(**kw)


@pytest.fixture(scope="session")
def tokenizers_pair():
    src = train_tokenizer([en for en, _ in PAIRS], vocab_size=120, min_frequency=1)
    tgt = train_tokenizer([it for _, it in PAIRS], vocab_size=130, min_frequency=1)
    return src, tgt


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory, tokenizers_pair) -> Path:
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(0)
    model = build_model(tiny_config(src_tok, tgt_tok))
    return save_checkpoint(tmp_path_factory.mktemp("ckpt") / "tiny", model, src_tok, tgt_tok)


@pytest.fixture(scope="session")
def translator(tiny_checkpoint):
    from transformer import load_translator

    return load_translator(tiny_checkpoint)


@pytest.fixture(scope="module")
def app(translator):
    """The explorer's ``App`` on the tiny checkpoint, built (its callbacks return dicts keyed
    by the components ``build()`` makes)."""
    import app as app_module

    a = app_module.App(translator)
    a.build()
    return a
