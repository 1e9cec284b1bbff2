"""Checkpoint directories: ``config.json`` + ``model.safetensors`` + tokenizer JSON.

Nothing here unpickles: weights are safetensors and everything else is JSON. Every error
names the file at fault and what is wrong with it. Writes are atomic: a checkpoint is
written into a temporary sibling directory and renamed into place, so a process killed at
any moment leaves either the old checkpoint or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

from .config import TransformerConfig
from .model import Transformer, build_model
from .tokenizer import load_tokenizer, special_ids

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
METRICS_FILE = "metrics.json"
# files a hub download needs (the model card and metrics are nice to have)
CHECKPOINT_PATTERNS = ["*.json", "*.safetensors", "README.md"]

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class CheckpointError(ValueError):
    """A checkpoint file is missing, corrupt, or does not match its config."""


def _tied_aliases(model: Transformer) -> set[str]:
    """State-dict keys that are the same tensor as an earlier key (tied embeddings)."""
    seen, aliases = {}, set()
    for name, tensor in model.state_dict(keep_vars=True).items():
        key = tensor.data_ptr()
        if key in seen:
            aliases.add(name)
        else:
            seen[key] = name
    return aliases


def weights_state_dict(model: Transformer, storage_dtype: str = "float32") -> dict[str, torch.Tensor]:
    """The tensors to store: tied aliases dropped, floats cast to ``storage_dtype``."""
    aliases = _tied_aliases(model)
    dtype = _DTYPES[storage_dtype]
    return {
        k: (v.detach().to(dtype) if v.is_floating_point() else v.detach()).contiguous()
        for k, v in model.state_dict().items()
        if k not in aliases
    }


def write_checkpoint_files(
    directory: Path,
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    metrics: dict | None = None,
    model_card: str | None = None,
) -> None:
    """Write the files of a checkpoint into an existing ``directory`` (not atomic alone)."""
    cfg = model.cfg
    cfg.to_json(directory / CONFIG_FILE)
    save_file(weights_state_dict(model, cfg.storage_dtype), str(directory / WEIGHTS_FILE))
    src_tok.save(str(directory / cfg.src_tokenizer_file))
    if cfg.tgt_tokenizer_file != cfg.src_tokenizer_file:
        tgt_tok.save(str(directory / cfg.tgt_tokenizer_file))
    if metrics is not None:
        (directory / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    if model_card is not None:
        (directory / "README.md").write_text(model_card, encoding="utf-8")


def save_checkpoint(
    directory: str | Path,
    model: Transformer,
    src_tok: Tokenizer,
    tgt_tok: Tokenizer,
    metrics: dict | None = None,
    model_card: str | None = None,
    extra_files: dict[str, object] | None = None,
) -> Path:
    """Atomically (re)place the checkpoint at ``directory``.

    ``extra_files`` maps file names to objects saved with ``torch.save`` (training state
    only: plain tensors and numbers, read back with ``weights_only=True``).
    """
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        write_checkpoint_files(tmp, model, src_tok, tgt_tok, metrics, model_card)
        for name, obj in (extra_files or {}).items():
            torch.save(obj, tmp / name)
        replace_dir(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def replace_dir(src: Path, dst: Path) -> None:
    """Move directory ``src`` to ``dst``, replacing any old ``dst``.

    A directory cannot be renamed over a non-empty one, so the old one is first renamed
    aside; if we die between the two renames, :func:`resolve_checkpoint_dir` still finds
    the old copy beside it.
    """
    old = None
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old)
        os.replace(dst, old)
    os.replace(src, dst)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def resolve_checkpoint_dir(directory: Path) -> Path:
    """``directory``, or the copy left aside by a replacement interrupted mid-way."""
    if directory.is_dir():
        return directory
    leftovers = sorted(directory.parent.glob(f".{directory.name}.old-*")) if directory.parent.is_dir() else []
    return leftovers[-1] if leftovers else directory


def download_checkpoint(repo_id: str, revision: str | None = None) -> Path:
    """Fetch a checkpoint from the Hugging Face hub (cached by ``huggingface_hub``)."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id=repo_id, revision=revision, allow_patterns=CHECKPOINT_PATTERNS))


def is_hub_id(name: str) -> bool:
    """'owner/name' that is not a local path."""
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not Path(name).exists() and not name.startswith((".", "/", "~"))


def locate_checkpoint(name_or_path: str | Path) -> Path:
    """A local checkpoint directory, downloading it first if ``name_or_path`` is a hub id."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        path = resolve_checkpoint_dir(path)
        if not path.is_dir():
            raise CheckpointError(f"{path}: not a checkpoint directory")
        return path
    resolved = resolve_checkpoint_dir(path)
    if resolved.is_dir():
        return resolved
    if is_hub_id(str(name_or_path)):
        return download_checkpoint(str(name_or_path))
    raise CheckpointError(f"{path}: checkpoint directory not found (and not a hub repo id like 'owner/name')")


def read_config(directory: Path) -> TransformerConfig:
    path = directory / CONFIG_FILE
    if not path.is_file():
        raise CheckpointError(f"{path}: missing (every checkpoint needs its config.json)")
    try:
        return TransformerConfig.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not valid JSON ({exc})") from exc
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: invalid config ({exc})") from exc


def load_weights(model: Transformer, path: Path) -> None:
    """Load safetensors weights into ``model`` (cast to its dtype), checking every name
    and shape so a config/weights mismatch names the tensor instead of failing later."""
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"{path}: corrupt or not a safetensors file ({exc})") from exc
    assign_weights(model, tensors, path)


def assign_weights(model: Transformer, tensors: dict[str, torch.Tensor], path: Path | str) -> None:
    """Copy ``tensors`` into ``model``; names and shapes must match exactly (tied aliases
    excepted). ``path`` only names the source in error messages."""
    expected = weights_state_dict(model)
    missing = sorted(set(expected) - set(tensors))
    unexpected = sorted(set(tensors) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: weights do not match config.json"
            + (f"; missing {', '.join(missing[:5])}" if missing else "")
            + (f"; unexpected {', '.join(unexpected[:5])}" if unexpected else "")
        )
    for name, ref in expected.items():
        if tuple(tensors[name].shape) != tuple(ref.shape):
            raise CheckpointError(
                f"{path}: tensor {name} has shape {tuple(tensors[name].shape)} "
                f"but config.json implies {tuple(ref.shape)}"
            )
    own = model.state_dict()
    with torch.no_grad():
        for name, tensor in tensors.items():
            own[name].copy_(tensor.to(own[name].dtype))


def load_checkpoint(name_or_path: str | Path) -> tuple[Transformer, Tokenizer, Tokenizer, Path]:
    """(model in eval mode, source tokenizer, target tokenizer, local directory)."""
    directory = locate_checkpoint(name_or_path)
    cfg = read_config(directory)
    try:
        src_tok = load_tokenizer(directory / cfg.src_tokenizer_file)
        tgt_tok = load_tokenizer(directory / cfg.tgt_tokenizer_file)
    except (FileNotFoundError, ValueError) as exc:
        raise CheckpointError(str(exc)) from exc
    for side, tok, vocab in (("src", src_tok, cfg.src_vocab_size), ("tgt", tgt_tok, cfg.tgt_vocab_size)):
        ids = special_ids(tok)
        if tok.get_vocab_size() != vocab:
            raise CheckpointError(
                f"{directory / getattr(cfg, side + '_tokenizer_file')}: vocabulary of {tok.get_vocab_size()} "
                f"but config.json says {side}_vocab_size={vocab}"
            )
        for name, value in ids.items():
            if getattr(cfg, f"{side}_{name}_id") != value:
                raise CheckpointError(f"{directory / CONFIG_FILE}: {side}_{name}_id does not match the tokenizer")
    model = build_model(cfg)
    load_weights(model, directory / WEIGHTS_FILE)
    model.eval()
    return model, src_tok, tgt_tok, directory


def read_metrics(directory: Path) -> dict:
    path = directory / METRICS_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
