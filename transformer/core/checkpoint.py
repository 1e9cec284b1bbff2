"""Checkpoint directories: ``config.json`` + ``model.safetensors`` + tokenizer JSON.

Nothing here unpickles: weights are safetensors and everything else is JSON. Every error
names the file at fault and what is wrong with it. Writes are atomic: a checkpoint is
written into a temporary sibling directory and renamed into place, so a process killed at
any moment leaves either the old checkpoint or the new one, never half of one. Files get
the usual permissions (0644/0755 under the common umask 022), not the private 0600/0700
of a temporary directory, so a checkpoint can be shared, served or pushed as it is.

Snapshots (``<ckpt>/snapshots/epoch-NNN/``) hold only config, weights and metrics; they
share the tokenizer of the checkpoint they sit in (:func:`list_snapshots`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors import safe_open
from safetensors.torch import save_file
from tokenizers import Tokenizer

from transformer.core.config import TransformerConfig
from transformer.core.model import Transformer, build_model
from transformer.core.tokenizer import load_tokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
METRICS_FILE = "metrics.json"
SNAPSHOTS_DIR = "snapshots"
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
    include_tokenizers: bool = True,
) -> None:
    """Write the files of a checkpoint into an existing ``directory`` (not atomic alone)."""
    cfg = model.cfg
    cfg.to_json(directory / CONFIG_FILE)
    save_file(weights_state_dict(model, cfg.storage_dtype), str(directory / WEIGHTS_FILE))
    if include_tokenizers:
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
    src_tok: Tokenizer | None,
    tgt_tok: Tokenizer | None,
    metrics: dict | None = None,
    model_card: str | None = None,
    extra_files: dict[str, object] | None = None,
    include_tokenizers: bool = True,
) -> Path:
    """Atomically (re)place the checkpoint at ``directory``.

    ``extra_files`` maps file names to objects saved with ``torch.save`` (training state
    only: plain tensors and numbers, read back with ``weights_only=True``).
    ``include_tokenizers=False`` writes a snapshot: no tokenizer files (the tokenizers may
    then be None), loaded with the tokenizer of the checkpoint folder it sits in. Replacing
    a checkpoint keeps its ``snapshots/`` folder (hard-linked into the new copy).
    """
    directory = Path(directory)
    if include_tokenizers and (src_tok is None or tgt_tok is None):
        raise ValueError("save_checkpoint needs both tokenizers unless include_tokenizers=False")
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.tmp-", dir=directory.parent))
    try:
        write_checkpoint_files(tmp, model, src_tok, tgt_tok, metrics, model_card, include_tokenizers)
        for name, obj in (extra_files or {}).items():
            torch.save(obj, tmp / name)
        old_snapshots = directory / SNAPSHOTS_DIR
        if old_snapshots.is_dir() and not (tmp / SNAPSHOTS_DIR).exists():
            shutil.copytree(
                old_snapshots, tmp / SNAPSHOTS_DIR, copy_function=_link_or_copy, ignore=shutil.ignore_patterns(".*")
            )
        _normal_permissions(tmp)
        replace_dir(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return directory


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_file_atomic(path: str | Path, data: str | bytes) -> Path:
    """Replace the file ``path`` whole: write a temporary sibling, then rename it over.
    Why: a reader (another visitor downloading it, or the app loading a checkpoint) and a
    process killed mid-way see the old file or the new one, never half of one. Text is
    written as UTF-8; the file gets the user's normal permissions, not ``mkstemp``'s 0600."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def _normal_permissions(root: Path) -> None:
    """rw-r--r-- files and rwxr-xr-x folders (under umask 022): what any other file the
    user writes gets, instead of the owner-only modes of ``tempfile.mkdtemp``."""
    mask = _umask()
    file_mode, dir_mode = 0o666 & ~mask, 0o777 & ~mask
    os.chmod(root, dir_mode)
    for here, dirs, files in os.walk(root):
        for name in dirs:
            os.chmod(os.path.join(here, name), dir_mode)
        for name in files:
            os.chmod(os.path.join(here, name), file_mode)


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


_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def is_hub_id(name: str) -> bool:
    """'owner/name' shaped (hub naming rules) and not an existing local path. Anything that
    reads as a path (``./x``, ``/x``, ``~/x``, ``a/b/c``, a backslash) is not: such a name
    never goes to the hub."""
    name = str(name)
    if not _HUB_ID.match(name) or ".." in name or "--" in name or name.endswith((".", "-")):
        return False
    return not Path(name).expanduser().exists()


def locate_checkpoint(name_or_path: str | Path) -> Path:
    """A local checkpoint directory, downloading it first if ``name_or_path`` is a hub id.

    Local paths come first. The hub is only tried for an ``owner/name`` that is not a local
    path, so a mistyped local path says "does not exist" instead of a network error; when
    the hub fails too, the message gives both reasons, on one line. (Which checkpoint "none
    given" means is the command line's to say: ``transformer.cli.locate_checkpoint``.)
    """
    path = Path(name_or_path).expanduser()
    if path.exists():
        path = resolve_checkpoint_dir(path)
        if not path.is_dir():
            raise CheckpointError(f"{path}: not a checkpoint directory (it is a file)")
        return path
    resolved = resolve_checkpoint_dir(path)
    if resolved.is_dir():
        return resolved
    local = f"checkpoint directory not found: {path} does not exist"
    if not is_hub_id(str(name_or_path)):
        raise CheckpointError(local)
    try:
        return download_checkpoint(str(name_or_path))
    except Exception as exc:  # offline, no such repo, no access...: any hub failure is reported
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())  # the hub's messages span several lines
        raise CheckpointError(
            f"{local}, and {name_or_path!r} could not be loaded as a Hugging Face hub repo id ({reason})"
        ) from exc


def _snapshot_parent(directory: Path) -> Path | None:
    """The checkpoint folder a snapshot (``<ckpt>/snapshots/epoch-NNN``) belongs to."""
    if directory.parent.name == SNAPSHOTS_DIR:
        return directory.parent.parent
    return None


@dataclass
class Snapshot:
    """One per-epoch snapshot of a checkpoint folder (for views across training)."""

    epoch: int
    path: Path
    metrics: dict = field(default_factory=dict)


_SNAPSHOT_NAME = re.compile(r"^epoch-(\d+)$")


def list_snapshots(ckpt_dir: str | Path) -> list[Snapshot]:
    """The snapshots under ``<ckpt_dir>/snapshots/``, sorted by epoch; [] when there are none.
    Only complete ones (config and weights present) are listed; half-written temporary
    folders are skipped."""
    root = Path(ckpt_dir) / SNAPSHOTS_DIR
    if not root.is_dir():
        return []
    found = []
    for d in root.iterdir():
        m = _SNAPSHOT_NAME.match(d.name)
        if m and d.is_dir() and (d / CONFIG_FILE).is_file() and (d / WEIGHTS_FILE).is_file():
            found.append(Snapshot(epoch=int(m.group(1)), path=d, metrics=read_metrics(d)))
    return sorted(found, key=lambda s: s.epoch)


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
    and shape so a config/weights mismatch names the tensor instead of failing later.

    The file is read tensor by tensor straight into the model's own tensors, with plain reads:
    loading takes the model's memory and little more. (``safetensors.load_file`` maps the file,
    and a mapped file's pages count in the process's resident memory until it is unmapped: a
    600M-parameter model peaked at twice its 2.4 GB, benchmarks/published_sizes.py.)"""
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    entries = _safetensors_entries(path)
    check_weight_shapes(model, {name: entry[1] for name, entry in entries.items()}, path)
    own = model.state_dict()
    with path.open("rb") as f, torch.no_grad():
        for name, (dtype, _, begin, end) in entries.items():
            f.seek(begin)
            if not _read_into(f, end - begin, dtype, own[name]):
                raise CheckpointError(f"{path}: corrupt or not a safetensors file (tensor {name} is cut short)")


# safetensors' dtype names (the format's header: https://github.com/huggingface/safetensors)
_SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
_READ_CHUNK_BYTES = 32 * 2**20  # a tensor that is not read in place goes through buffers this big


def _safetensors_entries(path: Path) -> dict[str, tuple[torch.dtype, tuple[int, ...], int, int]]:
    """{name: (dtype, shape, first byte, end byte)} of a safetensors file, offsets in the file.
    safetensors checks the header first (offsets, sizes, the file's length), reading no tensor."""
    try:
        with safe_open(str(path), framework="pt") as f:
            names = set(f.keys())
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(size))
        start = 8 + size
        return {
            name: (_SAFETENSORS_DTYPES[h["dtype"]], tuple(h["shape"]), *(start + o for o in h["data_offsets"]))
            for name, h in header.items()
            if name in names
        }
    except (SafetensorError, OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointError(f"{path}: corrupt or not a safetensors file ({exc})") from exc


def _read_into(f, nbytes: int, dtype: torch.dtype, dst: torch.Tensor) -> bool:
    """Read ``nbytes`` of ``f`` (a tensor of ``dtype`` shaped as ``dst``) into ``dst``: in place
    when it has that dtype and is contiguous, else through buffers of whole rows, cast and copied
    (a float16 checkpoint into a float32 model; a matrix laid out by columns). False when the
    file ends first."""
    if dst.numel() == 0:
        return True
    if dst.dtype == dtype and dst.is_contiguous():
        return f.readinto(memoryview(dst.reshape(-1).view(torch.uint8).numpy())) == nbytes
    rows = dst if dst.dim() == 2 else dst.view(-1, dst.shape[-1]) if dst.dim() else dst.view(1, 1)  # (R, C), a view
    row_bytes = nbytes // rows.shape[0]
    step = max(1, _READ_CHUNK_BYTES // max(row_bytes, 1))
    for first in range(0, rows.shape[0], step):
        n = min(step, rows.shape[0] - first)
        buf = bytearray(n * row_bytes)
        if f.readinto(buf) != len(buf):
            return False
        rows[first : first + n].copy_(torch.frombuffer(buf, dtype=dtype).view(n, -1))
    return True


def check_weight_shapes(model: Transformer, shapes: dict[str, tuple[int, ...]], path: Path | str) -> None:
    """Names and shapes of the tensors to load must match the model's exactly (tied aliases
    excepted); a ``CheckpointError`` names the first that does not."""
    aliases = _tied_aliases(model)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items() if k not in aliases}
    missing = sorted(set(expected) - set(shapes))
    unexpected = sorted(set(shapes) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: weights do not match config.json"
            + (f"; missing {', '.join(missing[:5])}" if missing else "")
            + (f"; unexpected {', '.join(unexpected[:5])}" if unexpected else "")
        )
    for name, shape in expected.items():
        if tuple(shapes[name]) != shape:
            got = tuple(shapes[name])
            raise CheckpointError(f"{path}: tensor {name} has shape {got} but config.json implies {shape}")


def assign_weights(model: Transformer, tensors: dict[str, torch.Tensor], path: Path | str) -> None:
    """Copy ``tensors`` into ``model``; names and shapes must match exactly (tied aliases
    excepted). ``path`` only names the source in error messages."""
    check_weight_shapes(model, {name: tuple(t.shape) for name, t in tensors.items()}, path)
    own = model.state_dict()
    with torch.no_grad():
        for name, tensor in tensors.items():
            own[name].copy_(tensor.to(own[name].dtype))


def lay_out_for_decoding(model: Transformer) -> Transformer:
    """Store the output projection's matrix (V, D) column by column: as the contiguous (D, V)
    matrix that ``Transformer.project`` multiplies by when no gradient is wanted, so that its
    (D, V) copy is the matrix itself rather than V x D more floats (1 GB at NLLB-200's
    256,206 x 1024; benchmarks/published_sizes.py). Every value, so every embedding and logit,
    stays the same; only the layout differs. For a model that only decodes, before its weights
    are read (a model to train keeps PyTorch's usual layout). Returns ``model``."""
    holder = model.proj if model.proj is not None else model.tgt_embed
    weight = holder.weight
    V, D = weight.shape
    with torch.no_grad():
        weight.data = torch.empty(0, dtype=weight.dtype)  # the old storage goes first: never two at once
        weight.data = torch.empty(D, V, dtype=weight.dtype).t()  # (V, D) with strides (1, V)
    return model


def tokenizer_path(directory: Path, name: str) -> Path:
    """``directory/name``, or for a snapshot without its own tokenizer the parent
    checkpoint's file (errors then name the checkpoint's own path)."""
    own = directory / name
    parent = _snapshot_parent(directory)
    if not own.is_file() and parent is not None and (parent / name).is_file():
        return parent / name
    return own


def special_id_problem(cfg, side: str, tok: Tokenizer) -> str | None:
    """Whether the config's special ids of one side fit its tokenizer: each names a special
    token of it. The ids are the config's to say (a model's tokens are never recognised by
    their names: ours are [PAD] [UNK] [SOS] [EOS], Marian's <pad> <unk> </s>, NLLB's have
    language tokens besides); this only catches a config written for another tokenizer. The
    decoder's start token is left out: it is only ever read, and a Marian model with two
    vocabularies starts from an id that is an ordinary piece of its target tokenizer."""
    specials = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    for name in ("pad", "unk", "sos", "eos"):
        value = getattr(cfg, f"{side}_{name}_id")
        if side == "tgt" and name == "sos":
            continue  # read, never written: Marian's is the source's <pad>, a plain piece of the target's
        if value is not None and value not in specials:
            return f"{side}_{name}_id={value} is not a special token of the {side} tokenizer"
    return None


def load_checkpoint(
    name_or_path: str | Path, for_decoding: bool = False
) -> tuple[Transformer, Tokenizer, Tokenizer, Path]:
    """(model in eval mode, source tokenizer, target tokenizer, local directory).
    ``for_decoding``: a model that will only decode (``Translator.load``): its output matrix is
    laid out as decoding reads it (:func:`lay_out_for_decoding`)."""
    directory = locate_checkpoint(name_or_path)
    cfg = read_config(directory)
    try:
        src_tok = load_tokenizer(tokenizer_path(directory, cfg.src_tokenizer_file))
        tgt_tok = load_tokenizer(tokenizer_path(directory, cfg.tgt_tokenizer_file))
    except (FileNotFoundError, ValueError) as exc:
        raise CheckpointError(str(exc)) from exc
    for side, tok, vocab in (("src", src_tok, cfg.src_vocab_size), ("tgt", tgt_tok, cfg.tgt_vocab_size)):
        if tok.get_vocab_size() != vocab:
            where = tokenizer_path(directory, getattr(cfg, side + "_tokenizer_file"))
            raise CheckpointError(
                f"{where}: vocabulary of {tok.get_vocab_size()} but config.json says {side}_vocab_size={vocab}"
            )
        problem = special_id_problem(cfg, side, tok)
        if problem:
            raise CheckpointError(f"{directory / CONFIG_FILE}: {problem}")
    model = build_model(cfg)
    if for_decoding:
        lay_out_for_decoding(model)
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
