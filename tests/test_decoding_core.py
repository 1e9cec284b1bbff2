"""One decoding core: read from the syntax tree of every module outside ``transformer/core``,
no code takes an argmax over logits, builds the decoder's start itself, or runs the model's
encoder or decoder directly; all of it goes through ``transformer.core.stepping``, so a
model's start token, forced start and banned ids hold in every loop. The check itself is
shown to fail on planted code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT
from transformer.core import stepping
from transformer.core.config import TransformerConfig

CORE = ROOT / "transformer" / "core"
# everything that may decode: the library's upper layers, the app, the data and benchmark scripts
SCANNED = [ROOT / "transformer", ROOT / "explorer", ROOT / "data", ROOT / "benchmarks"]
ENTRY_POINTS = [ROOT / "train.py", ROOT / "app.py"]
# an argmax outside the core must say on its line that what it reads is not logits
NOT_LOGITS = "# argmax over attention"
MODEL_NAMES = {"model", "m"}


def scanned_modules() -> list[Path]:
    files = [p for d in SCANNED for p in d.rglob("*.py") if CORE not in p.parents]
    return sorted(files + ENTRY_POINTS)


def _is_model(node: ast.expr) -> bool:
    """``model``, ``m``, or ``<anything>.model``: the receiver of a model call."""
    return (isinstance(node, ast.Name) and node.id in MODEL_NAMES) or (
        isinstance(node, ast.Attribute) and node.attr == "model"
    )


def violations(source: str, name: str = "<planted>") -> list[str]:
    """Every place in ``source`` that decodes outside the core, as "name:line what"."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            f = node.func
            called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if called == "argmax" and NOT_LOGITS not in lines[node.lineno - 1]:
                found.append(f"{name}:{node.lineno} takes an argmax (over logits? use stepping.pick)")
            if called in ("encode", "decode") and isinstance(f, ast.Attribute) and _is_model(f.value):
                found.append(f"{name}:{node.lineno} calls the model's {called} (use stepping)")
        if isinstance(node, ast.Attribute) and node.attr == "tgt_sos_id" and isinstance(node.ctx, ast.Load):
            found.append(f"{name}:{node.lineno} builds a decoder start from tgt_sos_id (use stepping)")
    return found


def test_no_module_outside_the_core_decodes_by_itself():
    found = []
    for path in scanned_modules():
        found += violations(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert found == []


@pytest.mark.parametrize(
    "planted",
    [
        "def f(model, h):\n    logits = model.project(h)\n    return logits.argmax(dim=-1)\n",
        "import torch\ndef f(logits):\n    return torch.argmax(logits, -1)\n",
        "import torch\ndef f(cfg, B):\n    return torch.full((B, 1), cfg.tgt_sos_id)\n",
        "def f(tr, ids):\n    return [tr.cfg.tgt_sos_id, *ids]\n",
        "def f(model, src, mask):\n    return model.encode(src, mask)\n",
        "def f(self, tgt, memory, mask):\n    return self.model.decode(tgt, memory, mask)\n",
    ],
)
def test_the_check_catches_planted_decoding(planted):
    assert len(violations(planted)) == 1


def test_the_check_lets_a_tokenizer_and_an_attention_argmax_be():
    ok = (
        "def f(tok, row, cfg):\n"
        "    ids = tok.encode('x').ids\n"
        "    text = tok.decode(ids)\n"
        f"    return row.argmax()  {NOT_LOGITS} rows\n"
    )
    assert violations(ok) == []


# --- the core's rules, on small configs -------------------------------------------------------
def multilingual(**kw) -> TransformerConfig:
    """A config shaped like M2M100's: one vocabulary, </s> starts the decoder, language tokens."""
    base = dict(
        d_model=16,
        h=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=1,
        src_vocab_size=40,
        tgt_vocab_size=40,
        src_pad_id=1,
        src_unk_id=3,
        src_sos_id=None,
        src_eos_id=2,
        tgt_pad_id=1,
        tgt_unk_id=3,
        tgt_sos_id=2,
        tgt_eos_id=2,
        tie_embeddings="all",
        lang_ids={"en": 30, "it": 31, "de": 32},
        src_lang="en",
        tgt_lang="it",
    )
    return TransformerConfig(**{**base, **kw})


def test_framing_of_each_family():
    ours = TransformerConfig()
    assert stepping.frame_source(ours, [7, 8]) == [2, 7, 8, 3]
    marian = TransformerConfig(src_sos_id=None, src_eos_id=0, src_pad_id=5)
    assert stepping.frame_source(marian, [7, 8]) == [7, 8, 0] and marian.src_frame_len == 1
    m2m = multilingual()
    assert stepping.frame_source(m2m, [7, 8]) == [30, 7, 8, 2] and m2m.src_frame_len == 2
    assert stepping.frame_source(m2m, [7], src_lang="de") == [32, 7, 2]
    assert stepping.forced_start(m2m) == [31] and stepping.forced_start(m2m, "de") == [32]
    assert stepping.forced_start(ours) == []
    assert stepping.with_forced_start(m2m, [31, 9]) == [31, 9]
    assert stepping.with_forced_start(m2m, [9]) == [31, 9]


def test_an_unknown_language_is_one_line():
    with pytest.raises(ValueError, match="unknown language 'fr': this model knows de, en, it"):
        stepping.frame_source(multilingual(), [7], src_lang="fr")
    with pytest.raises(ValueError, match="translates en to it only"):
        stepping.check_languages(TransformerConfig(), None, "de")
    with pytest.raises(ValueError, match="tgt_lang 'fr' is not one of lang_ids"):
        multilingual(tgt_lang="fr")


def test_pick_leaves_out_banned_ids_and_honours_a_forced_start():
    cfg = multilingual(tgt_banned_ids=[5])
    logits = torch.zeros(2, 40)
    logits[:, 5] = 9.0  # the banned id scores highest
    logits[:, 6] = 4.0
    assert stepping.pick(cfg, logits).tolist() == [6, 6]
    assert stepping.pick_at(cfg, logits, [31], 0).tolist() == [31, 31]
    allowed = stepping.allowed_at(cfg, logits[0], [31], 0)
    assert torch.isfinite(allowed).sum() == 1 and allowed[31] == logits[0, 31]
    along = stepping.picks_along(cfg, logits, [31])  # two teacher-forced steps
    assert along.tolist() == [31, 6]
    assert logits[0, 5] == 9.0  # the model's own logits are not changed
