"""Data loading (hub id or local JSONL, one code path) and token-budget batches."""

import datasets
import pytest

from tests.conftest import PAIRS, write_jsonl
from transformer.data import DataError, encode_pairs, load_parallel, make_batch, token_budget_batches


def fake_hub(monkeypatch, tmp_path):
    """opus_books en-it as the hub serves it: one 'train' split. The network boundary is
    mocked; everything after it is the real code path."""
    write_jsonl(tmp_path / "hub.jsonl", PAIRS * 5)
    real = datasets.load_dataset
    calls = []

    def load_dataset(name, config=None, **kw):
        if name == "json":
            return real(name, config, **kw)
        calls.append((name, config))
        return real("json", data_files={"train": str(tmp_path / "hub.jsonl")})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls


def test_hub_dataset_without_validation_gets_a_seeded_split(monkeypatch, tmp_path):
    calls = fake_hub(monkeypatch, tmp_path)
    a = load_parallel("Helsinki-NLP/opus_books", "en", "it", config="en-it", seed=1)
    b = load_parallel("Helsinki-NLP/opus_books", "en", "it", config="en-it", seed=1)
    c = load_parallel("Helsinki-NLP/opus_books", "en", "it", config="en-it", seed=2)
    assert calls[0] == ("Helsinki-NLP/opus_books", "en-it")
    assert len(a.validation) == 12 and len(a.train) == 108  # 10% carved out
    assert a.validation == b.validation and a.validation != c.validation


def test_local_directory_and_single_file(data_dir):
    d = load_parallel(str(data_dir), "en", "it")
    assert (len(d.train), len(d.validation), len(d.test)) == (96, 6, 6)
    f = load_parallel(str(data_dir / "train.jsonl"), "en", "it")
    assert len(f.train) + len(f.validation) == 96 and f.test == []
    rev = load_parallel(str(data_dir), "it", "en")
    assert rev.train[0] == (d.train[0][1], d.train[0][0])


@pytest.mark.parametrize("src, tgt, message", [("en", "de", "language 'en' or 'de' not found"),
                                                ("en", "en", "both 'en'")])
def test_wrong_languages(data_dir, src, tgt, message):
    with pytest.raises(DataError, match=message):
        load_parallel(str(data_dir), src, tgt)


def test_missing_and_broken_files(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_parallel(str(tmp_path / "nope.jsonl"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no train.jsonl"):
        load_parallel(str(tmp_path / "empty"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{this is not json\n")
    with pytest.raises(DataError, match="could not read"):
        load_parallel(str(bad))


def test_token_budget_batches(data_dir, tokenizers_pair):
    from tests.conftest import tiny_config

    src_tok, tgt_tok = tokenizers_pair
    cfg = tiny_config(src_tok, tgt_tok)
    enc = encode_pairs(load_parallel(str(data_dir)).train, src_tok, tgt_tok, cfg)
    batches = token_budget_batches(enc, 300, seed=0, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(len(enc)))  # every pair exactly once
    assert batches == token_budget_batches(enc, 300, seed=0, epoch=0)  # seeded
    assert batches != token_budget_batches(enc, 300, seed=0, epoch=1)  # reshuffled per epoch
    for b in batches:
        batch = make_batch([enc[i] for i in b], cfg)
        assert batch.src.numel() + batch.tgt_in.numel() <= 300 or len(b) == 1
        assert batch.n_tgt_tokens == int((batch.tgt_out != cfg.tgt_pad_id).sum())
        assert (batch.tgt_in[:, 0] == cfg.tgt_sos_id).all()
        # the target is the input shifted by one, ending in [EOS]
        n = int((batch.tgt_out[0] != cfg.tgt_pad_id).sum())
        assert batch.tgt_in[0, 1:n].tolist() == batch.tgt_out[0, : n - 1].tolist()
        assert batch.tgt_out[0, n - 1] == cfg.tgt_eos_id
