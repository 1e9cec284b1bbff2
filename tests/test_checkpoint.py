import json
import os
import shutil
import stat
from pathlib import Path

import pytest
import torch

from tests.helpers import tiny_config
import transformer.cli as cli
from transformer.core import checkpoint as ckpt
from transformer import load_translator
from transformer.core.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer.core.model import build_model

SENTENCE = "the black cat sleeps."


def copy_ckpt(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_round_trip_gives_identical_outputs(translator, tiny_checkpoint):
    again = load_translator(tiny_checkpoint)
    assert again.trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids
    for a, b in zip(again.model.state_dict().values(), translator.model.state_dict().values()):
        assert torch.equal(a, b)
    names = sorted(p.name for p in tiny_checkpoint.iterdir())
    assert names == ["config.json", "model.safetensors", "tokenizer_src.json", "tokenizer_tgt.json"]


def test_joint_vocab_all_tied_bf16_storage(tmp_path, tokenizers_pair):
    tok = tokenizers_pair[0]
    torch.manual_seed(1)
    model = build_model(
        tiny_config(
            tok,
            tok,
            tie_embeddings="all",
            storage_dtype="bfloat16",
            src_tokenizer_file="tokenizer.json",
            tgt_tokenizer_file="tokenizer.json",
        )
    )
    d = save_checkpoint(tmp_path / "joint", model, tok, tok)
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "model.safetensors", "tokenizer.json"]
    loaded, *_ = load_checkpoint(d)
    assert loaded.src_embed.weight is loaded.tgt_embed.weight
    assert loaded.src_embed.weight.dtype == torch.float32
    torch.testing.assert_close(loaded.src_embed.weight, model.src_embed.weight.to(torch.bfloat16).float())


def test_missing_config_names_the_file(tmp_path, tiny_checkpoint):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    (d / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"config\.json: missing"):
        load_translator(d)


def test_corrupt_config_and_unknown_keys(tmp_path, tiny_checkpoint):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    (d / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"config\.json: not valid JSON"):
        load_translator(d)
    cfg = json.loads((tiny_checkpoint / "config.json").read_text())
    cfg["d_modle"] = 3
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="unknown config keys: d_modle"):
        load_translator(d)


def test_special_ids_must_name_special_tokens_of_the_tokenizer(tmp_path, tiny_checkpoint):
    """The config says which ids are special; a config written for another tokenizer, whose
    end id is an ordinary word piece here, is refused in one line (names are never looked up)."""
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    cfg = json.loads((tiny_checkpoint / "config.json").read_text())
    (d / "config.json").write_text(json.dumps({**cfg, "tgt_eos_id": 10}))
    with pytest.raises(CheckpointError, match="tgt_eos_id=10 is not a special token of the tgt tokenizer"):
        load_translator(d)
    (d / "config.json").write_text(json.dumps({**cfg, "src_sos_id": None}))  # a start-less source is the config's call
    assert load_translator(d).cfg.src_sos_id is None


def test_corrupt_weights_name_the_file(tmp_path, tiny_checkpoint):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    data = (d / "model.safetensors").read_bytes()
    (d / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"model\.safetensors: corrupt"):
        load_translator(d)
    (d / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"model\.safetensors: missing"):
        load_translator(d)


def test_config_that_does_not_match_weights(tmp_path, tiny_checkpoint):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    cfg = json.loads((d / "config.json").read_text())
    cfg["d_ff"] = 48
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(
        CheckpointError, match=r"linear1\.weight has shape \(64, 32\) but config\.json implies \(48, 32\)"
    ):
        load_translator(d)
    cfg["d_ff"], cfg["n_encoder_layers"] = 64, 3
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(CheckpointError, match="do not match config.json; missing encoder_layers.2"):
        load_translator(d)


def test_missing_or_corrupt_tokenizer(tmp_path, tiny_checkpoint):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "c")
    (d / "tokenizer_tgt.json").write_text("garbage")
    with pytest.raises(CheckpointError, match=r"tokenizer_tgt\.json: not a valid tokenizers JSON"):
        load_translator(d)
    (d / "tokenizer_tgt.json").unlink()
    with pytest.raises(CheckpointError, match=r"tokenizer_tgt\.json: tokenizer file not found"):
        load_translator(d)


def fail_if_hub_is_called(monkeypatch):
    import huggingface_hub

    def snapshot_download(*a, **kw):
        raise AssertionError("a local path must never reach the hub")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)


@pytest.mark.parametrize("name", ["runs/nope/best", "./nope", "nope", "/no/such/dir/best", "~/nope-xyz/a/b"])
def test_missing_local_path_says_it_does_not_exist(monkeypatch, tmp_path, name):
    fail_if_hub_is_called(monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError) as info:
        load_translator(name)
    message = str(info.value)
    assert "does not exist" in message and "checkpoint directory not found" in message
    assert "internet" not in message and "hub" not in message


def test_hub_shaped_name_that_fails_on_the_hub_too_says_both(monkeypatch, tmp_path):
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    def offline(repo_id, **kw):
        raise LocalEntryNotFoundError(
            "Cannot find the requested files in the disk cache and outgoing traffic "
            "has been disabled. Check your internet connection."
        )

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError) as info:
        load_translator("runs/best")
    message = str(info.value)
    assert "runs/best does not exist" in message  # the local reading
    assert "hub repo id" in message and "LocalEntryNotFoundError" in message  # and the hub's


def test_checkpoint_error_is_exported():
    import transformer

    assert transformer.CheckpointError is CheckpointError
    assert "CheckpointError" in transformer.__all__


def test_files_get_normal_permissions(tmp_path, tiny_checkpoint):
    model, src_tok, tgt_tok, _ = load_checkpoint(tiny_checkpoint)
    old = os.umask(0o022)
    try:
        d = save_checkpoint(
            tmp_path / "perm",
            model,
            src_tok,
            tgt_tok,
            metrics={"a": 1},
            model_card="# card\n",
            extra_files={"train_state.pt": {"step": 1}},
        )
    finally:
        os.umask(old)
    assert oct(d.stat().st_mode & 0o777) == "0o755"
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in d.iterdir()}
    assert modes and set(modes.values()) == {"0o644"}, modes
    assert "model.safetensors" in modes and "train_state.pt" in modes


def test_snapshots_share_the_parent_tokenizer(tmp_path, tiny_checkpoint, translator):
    model, src_tok, tgt_tok, _ = load_checkpoint(tiny_checkpoint)
    ckpt_dir = copy_ckpt(tiny_checkpoint, tmp_path / "best")
    assert ckpt.list_snapshots(ckpt_dir) == []
    for epoch in (2, 1, 10):
        save_checkpoint(
            ckpt_dir / "snapshots" / f"epoch-{epoch:03d}",
            model,
            None,
            None,
            metrics={"epoch": epoch},
            include_tokenizers=False,
        )
    (ckpt_dir / "snapshots" / ".epoch-011.tmp-x").mkdir()  # a half-written one is not listed
    snap = ckpt_dir / "snapshots" / "epoch-001"
    assert sorted(p.name for p in snap.iterdir()) == ["config.json", "metrics.json", "model.safetensors"]
    snapshots = ckpt.list_snapshots(ckpt_dir)
    assert [(s.epoch, s.path.name, s.metrics) for s in snapshots] == [
        (1, "epoch-001", {"epoch": 1}),
        (2, "epoch-002", {"epoch": 2}),
        (10, "epoch-010", {"epoch": 10}),
    ]
    loaded = load_translator(snap)
    assert loaded.trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids
    # a snapshot outside a checkpoint folder has no tokenizer to borrow: a clear error
    lone = shutil.copytree(snap, tmp_path / "lone")
    with pytest.raises(CheckpointError, match=r"tokenizer_src\.json: tokenizer file not found"):
        load_translator(lone)
    # re-saving the checkpoint itself (a new best) keeps its snapshots
    save_checkpoint(ckpt_dir, model, src_tok, tgt_tok)
    assert [s.epoch for s in ckpt.list_snapshots(ckpt_dir)] == [1, 2, 10]
    assert (
        load_translator(ckpt_dir / "snapshots" / "epoch-010").trace(SENTENCE).tgt_ids
        == translator.trace(SENTENCE).tgt_ids
    )


def test_saving_without_tokenizers_needs_the_flag(tmp_path, tiny_checkpoint):
    model, *_ = load_checkpoint(tiny_checkpoint)
    with pytest.raises(ValueError, match="include_tokenizers"):
        save_checkpoint(tmp_path / "x", model, None, None)


def test_default_checkpoint_works_from_another_directory(monkeypatch, tmp_path, tiny_checkpoint, translator):
    """'checkpoints/en-it' (the app's and load_translator's default) is found beside the
    package when the working directory has none, and the hub is not asked."""
    fail_if_hub_is_called(monkeypatch)
    repo = tmp_path / "repo"
    copy_ckpt(tiny_checkpoint, repo / "checkpoints" / "en-it")
    monkeypatch.setattr(cli, "REPO_ROOT", repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert cli.locate_checkpoint("checkpoints/en-it") == repo / "checkpoints" / "en-it"
    assert cli.locate_checkpoint(None) == repo / "checkpoints" / "en-it"
    assert load_translator().trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids
    # a checkpoints/en-it in the working directory wins over the repository's
    local = copy_ckpt(tiny_checkpoint, elsewhere / "checkpoints" / "en-it")
    assert cli.locate_checkpoint("checkpoints/en-it").resolve() == local.resolve()


def test_hub_repo_id_goes_through_snapshot_download(monkeypatch, tmp_path, tiny_checkpoint, translator):
    """The network boundary is mocked: snapshot_download 'downloads' from a local folder."""
    import huggingface_hub

    calls = []

    def fake_snapshot_download(repo_id, revision=None, allow_patterns=None, **kw):
        calls.append((repo_id, allow_patterns))
        dest = tmp_path / "hub-cache" / repo_id.replace("/", "--")
        if not dest.exists():
            shutil.copytree(tiny_checkpoint, dest)
        return str(dest)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.chdir(tmp_path)
    tr = load_translator("someone/tiny-en-it")
    assert calls == [("someone/tiny-en-it", ckpt.CHECKPOINT_PATTERNS)]
    assert tr.trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids


def test_a_write_killed_midway_leaves_the_old_checkpoint(monkeypatch, tmp_path, tiny_checkpoint, translator):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "best")
    model, src_tok, tgt_tok, _ = load_checkpoint(d)

    def dying_save_file(tensors, path, *a, **k):
        Path(path).write_bytes(b"half a file")
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(ckpt, "save_file", dying_save_file)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(d, model, src_tok, tgt_tok)
    assert load_translator(d).trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids
    assert [p.name for p in tmp_path.iterdir()] == ["best"]  # no temp dir left behind


def test_killed_between_the_two_renames_still_loads(tmp_path, tiny_checkpoint, translator):
    d = copy_ckpt(tiny_checkpoint, tmp_path / "best")
    os.replace(d, tmp_path / f".best.old-{os.getpid()}")  # the old copy was moved aside, new not yet in
    assert load_translator(d).trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids


def test_write_file_atomic_replaces_whole_files_with_normal_permissions(tmp_path):
    target = tmp_path / "metrics.json"
    old_umask = os.umask(0o022)
    try:
        ckpt.write_file_atomic(target, "first ✓")
        assert target.read_text(encoding="utf-8") == "first ✓"
        assert stat.S_IMODE(target.stat().st_mode) == 0o644  # not mkstemp's owner-only 0600
        ckpt.write_file_atomic(target, b"second")
        assert target.read_bytes() == b"second"
        with pytest.raises(TypeError):  # a write that fails half-way keeps the old file
            ckpt.write_file_atomic(target, 12345)
        assert target.read_bytes() == b"second"
        assert [p.name for p in tmp_path.iterdir()] == ["metrics.json"]  # no temporary left behind
    finally:
        os.umask(old_umask)


def record_hub_calls(monkeypatch) -> list:
    """snapshot_download replaced by a recorder that fails like an offline machine, so a
    test sees whether the hub was asked at all (and a failure can't hide behind it)."""
    import huggingface_hub
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls = []

    def snapshot_download(repo_id, **kw):
        calls.append(repo_id)
        raise LocalEntryNotFoundError(
            "Cannot find the requested files in the disk cache and outgoing traffic\n"
            "has been disabled. Check your internet connection."
        )

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


@pytest.mark.parametrize("args", [(), ("checkpoints/en-it",), (Path("checkpoints/en-it"),)])
def test_default_checkpoint_missing_everywhere_is_one_line_and_never_the_hub(monkeypatch, tmp_path, args):
    """After ``pip install .`` the package sits where no checkpoints/en-it is, and the working
    directory has none either: the default is a path, so the hub is never asked, and the
    error says in one line where it looked and what to pass instead."""
    calls = record_hub_calls(monkeypatch)
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path / "site-packages")
    cwd = tmp_path / "somewhere"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with pytest.raises(CheckpointError) as info:
        load_translator(*args)
    message = str(info.value)
    assert calls == []
    assert "\n" not in message
    assert message.startswith(f"no checkpoint at checkpoints/en-it (relative to {cwd})")
    assert "load_translator('path/to/checkpoint')" in message and "'owner/name'" in message
    assert cli.is_default_checkpoint("checkpoints/en-it")  # a folder, so never a hub id


@pytest.mark.parametrize(
    "name", ["./runs/best", "../runs/best", "/tmp/no/such", "~/models/best", "a/b/c", "runs\\best"]
)
def test_names_that_look_like_paths_never_reach_the_hub(monkeypatch, tmp_path, name):
    calls = record_hub_calls(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert not ckpt.is_hub_id(name)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_translator(name)
    assert calls == []


def test_hub_failure_is_one_line(monkeypatch, tmp_path):
    calls = record_hub_calls(monkeypatch)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CheckpointError) as info:
        load_translator("someone/missing")
    assert calls == ["someone/missing"]
    assert "\n" not in str(info.value) and "Check your internet connection" in str(info.value)
