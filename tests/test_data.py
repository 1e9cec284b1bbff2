"""Data loading (hub id or local JSONL, one code path) and token-budget batches."""

import datasets
import pytest

from tests.conftest import PAIRS, write_jsonl
from transformer.data import (
    DataError, EncodedPairs, encode_dataset, encode_pairs, load_parallel, load_parallel_dataset, make_batch,
    text_batches, token_budget_batches,
)
from transformer.tokenizer import train_tokenizer


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


@pytest.mark.parametrize("src, tgt, message", [
    ("en", "de", r"language 'de' not found; this dataset has \['en', 'it'\]$"),
    ("xx", "it", r"language 'xx' not found; this dataset has \['en', 'it'\]$"),
    ("fr", "de", r"languages 'fr' and 'de' not found"),
    ("en", "en", "both 'en'"),
])
def test_wrong_languages_name_the_missing_one(data_dir, src, tgt, message):
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
    with pytest.raises(DataError, match=r"bad\.jsonl: line 1: not valid JSON"):
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


def test_hub_translation_feature_and_empty_pairs(monkeypatch, tmp_path):
    """The hub's opus_books types the column as datasets.Translation; rows with a missing or
    blank side are dropped, text is stripped."""
    rows = {"id": ["0", "1", "2", "3"],
            "translation": [{"en": " Hello. ", "it": "Ciao."}, {"en": "", "it": "Vuoto."},
                            {"en": "Alone.", "it": None}, {"en": "Bye.", "it": "Ciao ciao."}]}
    features = datasets.Features({"id": datasets.Value("string"),
                                  "translation": datasets.Translation(languages=["en", "it"])})
    hub = datasets.DatasetDict({"train": datasets.Dataset.from_dict(rows, features=features),
                                "validation": datasets.Dataset.from_dict(rows, features=features)})
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None, **kw: hub)
    d = load_parallel("Helsinki-NLP/opus_books", "en", "it", config="en-it")
    assert d.train == [("Hello.", "Ciao."), ("Bye.", "Ciao ciao.")] and d.test == []
    with pytest.raises(DataError, match="language 'de' not found"):
        load_parallel("Helsinki-NLP/opus_books", "de", "it")


def test_arrow_path_matches_the_list_path(data_dir, tokenizers_pair):
    """load_parallel_dataset + text_batches + encode_dataset give exactly what the list
    functions give: same pairs, same tokenizer, same ids, same batches."""
    from tests.conftest import tiny_config

    lists = load_parallel(str(data_dir / "train.jsonl"), seed=3)
    arrow = load_parallel_dataset(str(data_dir / "train.jsonl"), seed=3)
    assert list(zip(arrow.train["src"], arrow.train["tgt"])) == lists.train
    assert list(zip(arrow.validation["src"], arrow.validation["tgt"])) == lists.validation
    assert arrow.test is None and arrow.to_lists() == lists

    from_batches = train_tokenizer(text_batches(arrow.train, batch_size=7), vocab_size=150, min_frequency=1)
    from_list = train_tokenizer([s for s, _ in lists.train] + [t for _, t in lists.train], 150, min_frequency=1)
    assert from_batches.to_str() == from_list.to_str()

    src_tok, tgt_tok = tokenizers_pair
    cfg = tiny_config(src_tok, tgt_tok, max_positions=6)  # short limit: truncation must match too
    enc = encode_dataset(arrow.train, src_tok, tgt_tok, cfg, batch_size=10)
    ref = encode_pairs(lists.train, src_tok, tgt_tok, cfg)
    assert isinstance(enc, EncodedPairs) and len(enc) == len(ref)
    assert [enc[i] for i in range(len(enc))] == [tuple(p) for p in ref]
    assert enc[-1] == tuple(ref[-1]) and enc[1:3] == [tuple(p) for p in ref[1:3]]
    assert max(len(s) for s, _ in ref) == cfg.max_positions - 2  # the limit did bite
    for epoch in (0, 1):
        assert token_budget_batches(enc, 60, seed=0, epoch=epoch) == token_budget_batches(ref, 60, seed=0, epoch=epoch)
    assert make_batch([enc[i] for i in range(4)], cfg).src.tolist() == make_batch(ref[:4], cfg).src.tolist()
    with pytest.raises(IndexError):
        enc[len(enc)]


def test_encoding_is_cached_per_tokenizer(data_dir, tokenizers_pair):
    """The second encode of the same data with the same tokenizers reads the datasets cache;
    another tokenizer gets its own cache entry (never stale ids)."""
    from tests.conftest import tiny_config

    src_tok, tgt_tok = tokenizers_pair
    cfg = tiny_config(src_tok, tgt_tok)
    train = load_parallel_dataset(str(data_dir)).train
    before = {f["filename"] for f in train.cache_files}
    a = encode_dataset(train, src_tok, tgt_tok, cfg)
    cache_dir = __import__("pathlib").Path(next(iter(before))).parent
    files_after_first = set(cache_dir.glob("cache-*.arrow"))
    b = encode_dataset(train, src_tok, tgt_tok, cfg)
    assert set(cache_dir.glob("cache-*.arrow")) == files_after_first  # nothing new written
    assert [a[i] for i in range(len(a))] == [b[i] for i in range(len(b))]
    swapped = encode_dataset(train, tgt_tok, src_tok, cfg)
    assert [swapped[i] for i in range(3)] != [a[i] for i in range(3)]
    assert len(set(cache_dir.glob("cache-*.arrow"))) == len(files_after_first) + 1
