"""``python -m transformer.cli.convert``: one command, the family chosen by config.json's model_type.

A Marian folder converts as ``python -m transformer.cli.from_marian`` converts it (the same files),
an unknown model_type or bad input is one line and exit code 2 before any slow work, and a hub
id fetches config.json first, then only the files of its family (``snapshot_download`` replaced
here by the local folder: nothing goes to the network).
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings

import pytest
import torch
from safetensors.torch import load_file

from tests.helpers import exit_2, marian_config, single_thread, tatoeba_pairs, train_spm, write_marian_tokenizer
from transformer.cli import convert, from_marian


@pytest.fixture(scope="module")
def marian_folder(tmp_path_factory):
    """A small Marian model as the Hub has them (random weights: only the files are compared)."""
    from transformers import MarianMTModel

    folder = tmp_path_factory.mktemp("registry") / "marian"
    pairs = tatoeba_pairs("train", 1000)
    with single_thread():
        tok = write_marian_tokenizer(
            folder, train_spm([en for en, _ in pairs], 300), train_spm([it for _, it in pairs], 300), False
        )
        torch.manual_seed(0)
        MarianMTModel(marian_config(len(tok.encoder), len(tok.encoder), tok.pad_token_id)).save_pretrained(folder)
    return folder


def _files(folder) -> dict:
    """Every file of a checkpoint folder: the weights as tensors, the rest as text."""
    out = {}
    for p in sorted(folder.iterdir()):
        out[p.name] = load_file(str(p)) if p.suffix == ".safetensors" else p.read_text(encoding="utf-8")
    return out


def test_a_marian_folder_converts_as_from_marian_converts_it(marian_folder, tmp_path):
    assert convert.main([str(marian_folder), "--out", str(tmp_path / "a")]) == 0
    assert from_marian.main([str(marian_folder), "--out", str(tmp_path / "b")]) == 0
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert (
        sorted(a)
        == sorted(b)
        == ["README.md", "config.json", "model.safetensors", "tokenizer_src.json", "tokenizer_tgt.json"]
    )
    for name in a:
        if name.endswith(".safetensors"):
            assert sorted(a[name]) == sorted(b[name])
            assert all(torch.equal(a[name][k], b[name][k]) for k in a[name])
        else:  # the card gives the command, with its --out
            assert a[name] == b[name].replace(str(tmp_path / "b"), str(tmp_path / "a")), name


def test_an_unknown_model_type_names_the_families_known(tmp_path, capfd):
    src = tmp_path / "t5"
    src.mkdir()
    (src / "config.json").write_text(json.dumps({"model_type": "t5"}))
    line = exit_2(capfd, convert.main, [str(src), "--out", str(tmp_path / "out")])
    assert "'t5'" in line and "marian, m2m_100, mbart" in line
    assert not (tmp_path / "out").exists()


def test_bad_input_is_one_line_and_exit_2(nllb_like, marian_folder, tmp_path, capfd):
    out = ["--out", str(tmp_path / "out")]
    assert "no such folder" in exit_2(capfd, convert.main, [str(tmp_path / "missing"), *out])
    bad = tmp_path / "bad"
    bad.mkdir()
    assert "no config.json" in exit_2(capfd, convert.main, [str(bad), *out])
    (bad / "config.json").write_text('{"model_type": "m2m_100",')
    assert "not valid JSON" in exit_2(capfd, convert.main, [str(bad), *out])
    (bad / "config.json").write_text("[1, 2]")
    assert "not a JSON object" in exit_2(capfd, convert.main, [str(bad), *out])
    no_tok = tmp_path / "no-tokenizer"
    shutil.copytree(nllb_like.parent / "hf", no_tok)
    (no_tok / "tokenizer.json").unlink()
    assert "vocab.json, sentencepiece.bpe.model" in exit_2(capfd, convert.main, [str(no_tok), *out])
    broken = tmp_path / "broken-tokenizer"
    shutil.copytree(nllb_like.parent / "hf", broken)
    (broken / "tokenizer.json").write_text("{}")
    assert "not a tokenizers JSON file" in exit_2(capfd, convert.main, [str(broken), *out])
    nllb = [str(nllb_like.parent / "hf"), *out]
    assert "not one of the model's 202 languages" in exit_2(capfd, convert.main, [*nllb, "--tgt-lang", "xx_Yyyy"])
    assert "a Marian model has one pair" in exit_2(capfd, convert.main, [str(marian_folder), *out, "--tgt-lang", "it"])
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    assert "--force" in exit_2(capfd, convert.main, [str(marian_folder), "--out", str(busy)])
    assert not (tmp_path / "out").exists()


def test_a_hub_id_fetches_the_config_then_the_familys_files(nllb_like, tmp_path, monkeypatch):
    """``snapshot_download`` (replaced by the local folder) is asked for config.json, then for the
    family's files: one weight format and the tokenizer, not the whole repository."""
    import huggingface_hub

    asked = []

    def local(repo_id, revision=None, allow_patterns=None, **kwargs):
        asked.append((repo_id, list(allow_patterns)))
        return str(nllb_like.parent / "hf")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", local)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert convert.main(["facebook/nllb-200-distilled-600M", "--out", str(tmp_path / "out")]) == 0
    assert [a[0] for a in asked] == ["facebook/nllb-200-distilled-600M"] * 2
    assert asked[0][1] == ["config.json"] and "tokenizer.json" in asked[1][1] and "*" not in asked[1][1]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "https://huggingface.co/facebook/nllb-200-distilled-600M" in card and "license: cc-by-nc-4.0" in card


def test_a_hub_id_that_cannot_be_fetched_is_one_line(tmp_path, capfd, monkeypatch):
    import huggingface_hub

    def offline(**kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    line = exit_2(capfd, convert.main, ["facebook/m2m100_418M", "--out", str(tmp_path / "out")])
    assert "could not be downloaded" in line and "no network" in line


def test_the_new_switches_default_to_what_our_checkpoints_do():
    """The shipped config.json, written before the switches, loads as it did: the same state dict
    names, one positional table for both stacks, no embedding norm; and a learned table takes no
    offset (it is stored from position 0)."""
    from tests.helpers import SHIPPED
    from transformer.core.checkpoint import load_checkpoint
    from transformer.core.config import TransformerConfig

    model, *_ = load_checkpoint(SHIPPED)
    cfg = model.cfg
    assert (cfg.positional_table, cfg.position_offset, cfg.embedding_norm) == ("interleaved", 0, False)
    assert model.tgt_pos_encoding is model.pos_encoding and model.encoder_embed_norm is None
    assert set(load_file(str(SHIPPED / "model.safetensors"))) <= set(model.state_dict())
    with pytest.raises(ValueError, match="position_offset"):
        TransformerConfig(positional_table="learned", position_offset=2)


# ----------------------------------------------------------------------------- convert:HUB_ID, converted at start-up
NLLB, MBART = "facebook/nllb-200-distilled-600M", "facebook/mbart-large-50-many-to-many-mmt"


def test_a_convert_prefix_converts_any_family_once_into_the_cache(nllb_like, mbart50_like, tmp_path, monkeypatch):
    """``--checkpoint convert:<hub id>`` (how a Space serves a published model, ``CHECKPOINT``):
    config.json, then the family's files, downloaded (mocked at the network boundary) and converted
    on the first start, read from the cache after that. The checkpoint says where it comes from and
    under which licence (config and card), and its page says where it comes from."""
    import huggingface_hub

    from explorer.page import App
    from tests.helpers import short_test_sources
    from transformer.cli import load_translator_or_exit
    from transformer import load_translator

    fixtures = {NLLB: (nllb_like, "cc-by-nc-4.0"), MBART: (mbart50_like, "mit")}
    asked = []

    def download(repo_id, revision=None, allow_patterns=None, **kw):
        asked.append((repo_id, allow_patterns == ["config.json"]))
        return str(fixtures[repo_id][0].parent / "hf")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    monkeypatch.setenv("CONVERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MARIAN_CACHE", raising=False)
    text = short_test_sources(1)[0]
    for hub_id, (converted, licence) in fixtures.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            first = load_translator_or_exit(f"convert:{hub_id}")
        again = load_translator_or_exit(f"convert:{hub_id}")
        assert first.directory == again.directory == tmp_path / "cache" / hub_id.replace("/", "--")
        assert first.cfg.extra["converted_from"] == hub_id and first.cfg.extra["license"] == licence
        card = (first.directory / "README.md").read_text(encoding="utf-8")
        assert f"license: {licence}" in card and f"https://huggingface.co/{hub_id}" in card
        assert first.translate([text]) == load_translator(converted).translate([text])
        assert f"converted from {hub_id}" in App(first).intro()
    # each: config.json alone (to know the family), then the family's files; never again from the cache
    assert asked == [(NLLB, True), (NLLB, False), (MBART, True), (MBART, False)]


def test_a_convert_prefix_that_cannot_be_converted_is_one_line(tmp_path, capfd, monkeypatch):
    import huggingface_hub

    from transformer.cli import load_translator_or_exit

    def offline(**kwargs):
        raise OSError("no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    monkeypatch.setenv("CONVERT_CACHE", str(tmp_path / "cache"))
    line = exit_2(capfd, load_translator_or_exit, "convert:facebook/m2m100_418M")
    assert line.startswith("error: convert:facebook/m2m100_418M: ") and "could not be downloaded" in line
    t5 = tmp_path / "t5"
    t5.mkdir()
    (t5 / "config.json").write_text(json.dumps({"model_type": "t5"}))
    line = exit_2(capfd, load_translator_or_exit, f"convert:{t5}", "--distill-from")
    assert line.startswith(f"error: --distill-from: convert:{t5}: ") and "'t5'" in line
    assert exit_2(capfd, load_translator_or_exit, "convert:") == (
        "error: convert:: give the model after convert:, e.g. convert:facebook/nllb-200-distilled-600M"
    )
    monkeypatch.setitem(sys.modules, "sentencepiece", None)  # not installed: said before any download
    assert exit_2(capfd, load_translator_or_exit, "marian:Helsinki-NLP/opus-mt-en-it") == (
        'error: marian:Helsinki-NLP/opus-mt-en-it: converting it needs sentencepiece: pip install -e ".[marian]"'
    )
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_spaces_checkpoint_variable_lists_ours_and_the_converted_models(monkeypatch):
    """What ``python -m explorer.deploy --with`` sets, as app.py reads it."""
    import app

    monkeypatch.setenv("CHECKPOINT", f"checkpoints/en-it,convert:{NLLB}")
    assert app.parse_args([]).checkpoint == ["checkpoints/en-it", f"convert:{NLLB}"]
