"""Data loading (hub id or local JSONL, one code path) and token-budget batches."""

import datasets
import pytest

from tests.helpers import PAIRS, write_jsonl
from transformer.training import data
from transformer.training.data import (
    DataError,
    EncodedPairs,
    encode_dataset,
    encode_pairs,
    load_extra_train,
    load_parallel,
    load_parallel_dataset,
    load_split,
    make_batch,
    text_batches,
    token_budget_batches,
)
from transformer.core.tokenizer import train_tokenizer


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


@pytest.mark.parametrize(
    "src, tgt, message",
    [
        ("en", "de", r"language 'de' not found; this dataset has \['en', 'it'\]$"),
        ("xx", "it", r"language 'xx' not found; this dataset has \['en', 'it'\]$"),
        ("fr", "de", r"languages 'fr' and 'de' not found"),
        ("en", "en", "both 'en'"),
    ],
)
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
    from tests.helpers import tiny_config

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
    rows = {
        "id": ["0", "1", "2", "3"],
        "translation": [
            {"en": " Hello. ", "it": "Ciao."},
            {"en": "", "it": "Vuoto."},
            {"en": "Alone.", "it": None},
            {"en": "Bye.", "it": "Ciao ciao."},
        ],
    }
    features = datasets.Features(
        {"id": datasets.Value("string"), "translation": datasets.Translation(languages=["en", "it"])}
    )
    hub = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict(rows, features=features),
            "validation": datasets.Dataset.from_dict(rows, features=features),
        }
    )
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None, **kw: hub)
    d = load_parallel("Helsinki-NLP/opus_books", "en", "it", config="en-it")
    assert d.train == [("Hello.", "Ciao."), ("Bye.", "Ciao ciao.")] and d.test == []
    with pytest.raises(DataError, match="language 'de' not found"):
        load_parallel("Helsinki-NLP/opus_books", "de", "it")


def test_arrow_path_matches_the_list_path(data_dir, tokenizers_pair):
    """load_parallel_dataset + text_batches + encode_dataset give exactly what the list
    functions give: same pairs, same tokenizer, same ids, same batches."""
    from tests.helpers import tiny_config

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
    from tests.helpers import tiny_config

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


def write_gz(path, text: bytes):
    import gzip

    with gzip.open(path, "wb") as f:
        f.write(text)
    return path


def with_bad_byte(path, line: int = 3) -> bytes:
    """``path``'s bytes with line ``line`` (1-based) replaced by a pair whose English holds
    byte 0xff, which is never UTF-8, after the 26 characters ``{"translation": {"en": "àè``."""
    lines = path.read_bytes().splitlines(keepends=True)
    lines[line - 1] = b'{"translation": {"en": "\xc3\xa0\xc3\xa8\xff cat.", "it": "gatto."}}\n'
    return b"".join(lines)


@pytest.mark.parametrize("name", ["train.jsonl", "validation.jsonl", "test.jsonl"])
def test_bytes_that_are_not_utf8_are_named_by_file_line_and_column(data_dir, tmp_path, name):
    """datasets reads such bytes without a word and pyarrow fails later, deep in a map;
    the loader names the file, the line and the column (in characters, as an editor counts)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split in ("train.jsonl", "validation.jsonl", "test.jsonl"):
        (folder / split).write_bytes((data_dir / split).read_bytes())
    (folder / name).write_bytes(with_bad_byte(data_dir / name))
    message = f"{folder / name}: line 3: not UTF-8 text (byte 0xff at column 27)"
    with pytest.raises(DataError) as exc:
        load_parallel(str(folder))
    assert str(exc.value) == message
    with pytest.raises(DataError) as exc:
        load_split(str(folder / name), "train", "en", "it")  # one file: evaluate, analyze, beam_eval
    assert str(exc.value) == message
    with pytest.raises(DataError) as exc:
        load_extra_train(str(folder / name), "en", "it")  # train.py --extra-train
    assert str(exc.value) == message


def test_a_bad_byte_is_found_on_line_one_and_across_blocks(tmp_path, monkeypatch):
    """The file is checked in blocks of whole lines: small blocks here, which cut lines and
    multi-byte characters, must neither miss a bad byte nor see one that is not there."""
    first = tmp_path / "first.jsonl"
    first.write_bytes(b'\xc3{"translation": {"en": "a", "it": "b"}}\n')
    with pytest.raises(DataError, match=r"first\.jsonl: line 1: not UTF-8 text \(byte 0xc3 at column 1\)$"):
        load_parallel(str(first))
    monkeypatch.setattr(data, "CHECK_BYTES", 997)
    good = b'{"translation": {"en": "the cat \xe2\x80\x94 sleeps.", "it": "il gatto \xc3\xa8 qui."}}\n'
    fine = tmp_path / "fine.jsonl"
    fine.write_bytes(good * 500 + good.rstrip(b"\n"))  # no newline at the end
    assert len(load_parallel(str(fine)).train) + len(load_parallel(str(fine)).validation) == 501
    long = tmp_path / "long.jsonl"
    long.write_bytes(good * 500 + b'{"translation": {"en": "x\xe2\x80", "it": "y"}}\n' + good)
    with pytest.raises(DataError, match=r"long\.jsonl: line 501: not UTF-8 text \(byte 0xe2 at column 26\)$"):
        load_parallel(str(long))


def test_gzipped_jsonl_loads_like_plain_jsonl(data_dir, tmp_path):
    """A folder of ``train.jsonl.gz`` (``validation.jsonl.gz``, ``test.jsonl.gz``) or one such
    file reads the same pairs as the plain files."""
    folder = tmp_path / "gz"
    folder.mkdir()
    for split in ("train", "validation", "test"):
        write_gz(folder / f"{split}.jsonl.gz", (data_dir / f"{split}.jsonl").read_bytes())
    gz, plain = load_parallel(str(folder)), load_parallel(str(data_dir))
    assert (gz.train, gz.validation, gz.test) == (plain.train, plain.validation, plain.test)
    assert load_split(str(folder), "test", "en", "it") == load_split(str(data_dir), "test", "en", "it")
    single = load_split(str(folder / "test.jsonl.gz"), "train", "en", "it")
    assert single == load_split(str(data_dir / "test.jsonl"), "train", "en", "it")
    assert load_extra_train(str(folder / "train.jsonl.gz"), "en", "it") == load_extra_train(
        str(data_dir / "train.jsonl"), "en", "it"
    )


def test_gzipped_jsonl_errors_name_the_file_and_line(data_dir, tmp_path):
    bad = write_gz(tmp_path / "bad.jsonl.gz", with_bad_byte(data_dir / "test.jsonl", line=2))
    with pytest.raises(DataError) as exc:
        load_parallel(str(bad))
    assert str(exc.value) == f"{bad}: line 2: not UTF-8 text (byte 0xff at column 27)"
    broken = write_gz(tmp_path / "broken.jsonl.gz", b'{"translation": {"en": "a", "it": "b"}}\n{oops\n')
    with pytest.raises(DataError, match=r"broken\.jsonl\.gz: line 2: not valid JSON"):
        load_parallel(str(broken))
    not_gzip = tmp_path / "plain.jsonl.gz"
    not_gzip.write_bytes((data_dir / "test.jsonl").read_bytes())
    with pytest.raises(DataError, match=r"^.*plain\.jsonl\.gz: not a gzip file"):
        load_parallel(str(not_gzip))
    both = tmp_path / "both"
    both.mkdir()
    (both / "train.jsonl").write_bytes((data_dir / "train.jsonl").read_bytes())
    write_gz(both / "train.jsonl.gz", (data_dir / "train.jsonl").read_bytes())
    with pytest.raises(DataError, match=r"both train\.jsonl and train\.jsonl\.gz: keep one"):
        load_parallel(str(both))
