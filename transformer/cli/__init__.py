"""What every command-line entry point shares: one-line errors and exit code 2.

    from transformer.cli import ArgumentParser, fail, load_translator_or_exit, whole_number
    p = ArgumentParser(prog="python -m transformer.cli.evaluate")
    p.add_argument("--limit", type=whole_number(1))
    check_output_or_exit(args.output, "--output")      # before the slow part
    tr = load_translator_or_exit(args.checkpoint)

Library code raises (``CheckpointError``, ``DataError``...); only entry points turn an
exception into a message on stderr and an exit code, through these helpers. Bad input is
one line, never a traceback or a usage block, so that it reads the same in a terminal, a
log file or a Space's build log.

This layer is also the one that knows the repository the package came with: its shipped
checkpoint is what "no checkpoint given" means (:func:`load_translator`,
:func:`locate_checkpoint`), found in the working directory or beside the package.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import warnings
from pathlib import Path
from typing import NamedTuple, NoReturn

EXIT_USAGE = 2


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit with code 2 (bad input, not a crash)."""
    print(f"error: {one_line(message)}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def one_line(message: str) -> str:
    """``message`` with its line breaks folded into spaces: messages of other libraries
    (huggingface_hub, datasets) often span several lines."""
    return " ".join(message.split())


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` whose usage errors are one line,
    ``prog: error: message (see prog --help)``, instead of the usage block and the message.

    A full usage block buries the one thing that went wrong under a screen of options;
    ``--help`` still prints them."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


# ---------------------------------------------------------------- argument types
# argparse names a type by its function when the function raises ValueError ("invalid
# _non_negative_int value"); these raise ArgumentTypeError, whose text argparse prints as
# is, after "argument --flag: ".


def _parsed(text: str, cast, ok, expected: str):
    """``cast(text)`` if it parses and passes ``ok``, else the error argparse prints."""
    try:
        value = cast(text)
    except ValueError:
        value = None
    if value is None or not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def integer(text: str) -> int:
    """Any whole number (seeds)."""
    return _parsed(text, int, lambda v: True, "a whole number")


def whole_number(minimum: int = 0):
    """A type for whole numbers ≥ ``minimum``."""
    return lambda text: _parsed(text, int, lambda v: v >= minimum, f"a whole number ≥ {minimum}")


def positive_number(text: str) -> float:
    """A number > 0 (learning rates, minutes)."""
    return _parsed(text, float, lambda v: 0 < v < float("inf"), "a number > 0")


def fraction(text: str) -> float:
    """A number in [0, 1) (dropout, label smoothing)."""
    return _parsed(text, float, lambda v: 0 <= v < 1, "a number in [0, 1)")


def port_number(text: str) -> int:
    """A TCP port a server can be asked to listen on."""
    return _parsed(text, int, lambda v: 1 <= v <= 65535, "a port number 1-65535")


# ---------------------------------------------------------------- data and output paths


class DataSplit(NamedTuple):
    path: Path  # as given to --data
    split: str  # the split to read ("train" for a single file, which is read whole)
    file: Path  # the file that holds it: what the results name as their data


def add_checkpoint_and_data(p: argparse.ArgumentParser, verb: str, data_note: str = "") -> None:
    """``--checkpoint``, ``--data`` and ``--split`` as every command that reads a model and a
    held-out split takes them (``data_split_or_exit`` reads the last two)."""
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT, help="checkpoint directory or hub repo id")
    p.add_argument(
        "--data",
        required=True,
        help="JSONL file (read whole), or a folder: its test.jsonl, or the split --split names; "
        "OPUS Books schema, .jsonl.gz too" + data_note,
    )
    p.add_argument("--split", default=None, help=f"split to {verb} when --data is a folder (default: test)")


def data_split_or_exit(data: str, split: str | None) -> DataSplit:
    """What to read for ``--data`` and ``--split``, or a one-line message and exit code 2,
    before any model loads. A file is read whole (``transformer.training.data`` calls it the
    "train" split); a folder gives its ``split`` file, by default ``test``: the held-out
    pairs a checkpoint is measured on."""
    from transformer.training.data import DataError, local_data_files

    path = Path(data)
    if not path.exists():
        fail(f"{path}: no such file or directory")
    if path.is_file():
        if split is not None:
            fail(f"--split {split}: {path} is one file, read whole (--split picks a file of a folder)")
        return DataSplit(path, "train", path)
    split = split or "test"
    try:
        return DataSplit(path, split, Path(local_data_files(path, split)[split]))
    except DataError as exc:
        fail(str(exc))


def output_problem(path: str | Path, flag: str) -> str | None:
    """Why the file ``path`` (given with ``flag``) could not be written, or None. Commands
    write their output at the end: they ask this first, so that a mistyped path costs a
    second, not the minutes of work before the write."""
    target = Path(path).expanduser()
    if target.is_dir():
        return f"{flag} {path}: is a folder; give the name of a file to write"
    if not target.parent.is_dir():
        return f"{flag} {path}: no such directory {target.parent}"
    if not os.access(target.parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        return f"{flag} {path}: not allowed to write there"
    return None


def check_output_or_exit(path: str | Path | None, flag: str) -> None:
    """:func:`output_problem` as a one-line message and exit code 2; None passes."""
    problem = output_problem(path, flag) if path is not None else None
    if problem:
        fail(problem)


# ---------------------------------------------------------------- checkpoints

# the checkpoint the app and the commands load when given none; from another working
# directory it is found beside the package, in the repository it came with
DEFAULT_CHECKPOINT = "checkpoints/en-it"
REPO_ROOT = Path(__file__).resolve().parents[2]


def is_default_checkpoint(name_or_path: str | Path | None) -> bool:
    """None or ``checkpoints/en-it``: the shipped checkpoint, which is a folder, never a hub id
    (it is shaped like 'owner/name', so it has to be told apart by name)."""
    return name_or_path is None or Path(name_or_path) == Path(DEFAULT_CHECKPOINT)


def default_checkpoint() -> Path:
    """The shipped checkpoint's folder: ``checkpoints/en-it`` in the working directory if there
    is one, else the repository's copy beside the package (so it works from any directory).
    Raises a one-line ``CheckpointError`` naming both places when neither has it, as after a
    plain ``pip install .``, which installs the package away from the repository."""
    from transformer.core.checkpoint import CheckpointError, resolve_checkpoint_dir

    for candidate in (Path(DEFAULT_CHECKPOINT), REPO_ROOT / DEFAULT_CHECKPOINT):
        found = resolve_checkpoint_dir(candidate)
        if found.is_dir():
            return found
    raise CheckpointError(
        f"no checkpoint at {DEFAULT_CHECKPOINT} (relative to {Path.cwd()}) nor beside the "
        f"package ({REPO_ROOT / DEFAULT_CHECKPOINT}): pass load_translator('path/to/checkpoint') "
        f"or a hub id 'owner/name'"
    )


def locate_checkpoint(name_or_path: str | Path | None = None) -> Path:
    """``transformer.core.checkpoint.locate_checkpoint``, where None (or ``checkpoints/en-it``)
    is the shipped checkpoint (:func:`default_checkpoint`), never looked up on the hub."""
    from transformer.core import checkpoint

    return default_checkpoint() if is_default_checkpoint(name_or_path) else checkpoint.locate_checkpoint(name_or_path)


def load_translator(name_or_path: str | Path | None = None):
    """Load a checkpoint from a local directory or a hub repo id ('owner/name') as a
    ``Translator``. None is the shipped checkpoint, ``checkpoints/en-it`` in the working
    directory or beside the package; it is a folder, so it is never looked up on the hub, and
    when it is in neither place the ``CheckpointError`` says what to pass instead."""
    from transformer.core.translator import Translator

    return Translator.load(locate_checkpoint(name_or_path))


def _hub_reason(exc: BaseException) -> str:
    """Why the hub did not give a checkpoint or dataset, in words (its own messages are
    several lines of HTTP detail)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return "the hub repo is gated: log in with an account that has access"
    # LocalEntryNotFoundError is an EntryNotFoundError too: it means offline, not missing
    if isinstance(exc, (LocalEntryNotFoundError, ConnectionError, TimeoutError)):
        return "the hub could not be reached"
    if isinstance(exc, (RepositoryNotFoundError, RevisionNotFoundError, EntryNotFoundError)):
        return "not found on the hub"
    return f"the hub failed: {type(exc).__name__}: {one_line(str(exc))}"


# "convert:facebook/nllb-200-distilled-600M": a published model of a family the converter knows
# (python -m transformer.cli.convert: Marian, M2M100 and NLLB-200, mBART-50), converted once into
# CONVERT_CACHE (a Space converts at start-up and never commits the result). "marian:" is the same
# for a Marian model (the prefix of OPUS-MT before the other families), which it fetches at once.
CONVERT_PREFIX = "convert:"
MARIAN_PREFIX = "marian:"
CONVERT_PREFIXES = (CONVERT_PREFIX, MARIAN_PREFIX)


def converted_prefix(name_or_path: str | Path) -> str | None:
    """The prefix (``convert:`` or ``marian:``) that ``name_or_path`` starts with, or None."""
    return next((p for p in CONVERT_PREFIXES if str(name_or_path).startswith(p)), None)


def convert_cache(hub_id: str) -> Path:
    """Where ``convert:<hub_id>`` (or ``marian:<hub_id>``) is converted to:
    ``$CONVERT_CACHE/<owner--name>`` (``$MARIAN_CACHE``, its earlier name, is read too), by
    default under ``~/.cache/inside-the-transformer/converted``."""
    root = os.environ.get("CONVERT_CACHE") or os.environ.get("MARIAN_CACHE")
    root = root or Path.home() / ".cache" / "inside-the-transformer" / "converted"
    return Path(root).expanduser() / hub_id.replace("/", "--")


marian_cache = convert_cache  # its earlier name


def _convert_into(hub_id: str, out: Path, marian_only: bool) -> None:
    """Fetch (or read, for a local folder) ``hub_id`` and convert it into ``out`` (atomic: no half
    model); a Marian model is fetched with its family's files at once when ``marian_only``."""
    from transformer.cli import convert, from_marian

    argv = [hub_id, "--out", str(out)]
    if marian_only:
        import sentencepiece  # noqa: F401  (a Marian model's tokenizers are SentencePiece files: before the download)

        folder = from_marian.locate_source(hub_id)
        problem = from_marian.marian_problem(folder)
        if problem:
            raise from_marian.MarianError(problem)
        from_marian.convert(folder, out, hub_id, argv)
        return
    folder, family = convert.source_folder(hub_id, None)
    if family.MODEL_TYPE == "marian":
        family.convert(folder, out, hub_id, argv)
    else:
        family.convert(folder, out, hub_id, argv, (None, None))


def converted_or_exit(name: str, flag_prefix: str = "") -> Path:
    """The converted checkpoint of ``name``, ``convert:<hub id>`` or ``marian:<hub id>`` (a hub id
    or a local folder written by save_pretrained): from the cache, or fetched and converted into it
    now; one line and exit code 2 when that cannot be done (``flag_prefix`` starts the line)."""
    prefix = converted_prefix(name)
    hub_id = name[len(prefix) :]
    if not hub_id.strip():
        fail(f"{flag_prefix}{name}: give the model after {prefix}, e.g. {prefix}facebook/nllb-200-distilled-600M")
    out = convert_cache(hub_id)
    if (out / "config.json").is_file():
        return out
    from transformer.cli.conversion import ConversionError

    try:
        _convert_into(hub_id, out, prefix == MARIAN_PREFIX)
    except ImportError as exc:  # sentencepiece (and its protobuf), for a SentencePiece model file
        needed = "protobuf" if (exc.name or "").startswith("google") else "sentencepiece"
        fail(f'{flag_prefix}{name}: converting it needs {needed}: pip install -e ".[marian]"')
    except (ConversionError, ValueError, OSError) as exc:  # ConversionError is a ValueError too
        fail(f"{flag_prefix}{name}: {one_line(str(exc))}")
    return out


def converted_marian_or_exit(hub_id: str, prefix: str = "") -> Path:
    """``converted_or_exit`` of ``marian:<hub_id>`` (its earlier form)."""
    return converted_or_exit(MARIAN_PREFIX + hub_id, prefix)


def locate_checkpoint_or_exit(name_or_path: str | Path, flag: str | None = None) -> Path:
    """The local checkpoint folder for a path or hub id (downloaded if need be), or for
    ``convert:<hub id>`` / ``marian:<hub id>`` (converted once, :func:`converted_or_exit`), or a
    one-line message and exit code 2. ``flag`` (e.g. ``--distill-from``) prefixes the message when
    the checkpoint is not the command's main one."""
    from transformer.core.checkpoint import CheckpointError, is_hub_id

    prefix = f"{flag}: " if flag else ""
    if converted_prefix(name_or_path):
        return converted_or_exit(str(name_or_path), prefix)
    try:
        return locate_checkpoint(name_or_path)
    except CheckpointError as exc:
        # locate_checkpoint chains the hub's exception only when it tried the hub
        if exc.__cause__ is not None and is_hub_id(str(name_or_path)):
            fail(f"{prefix}no checkpoint at {name_or_path} (not a local folder, and {_hub_reason(exc.__cause__)})")
        fail(f"{prefix}{exc}")


def load_translator_or_exit(name_or_path: str | Path, flag: str | None = None):
    """``load_translator(name_or_path)``, or a one-line message and exit code 2 when the
    checkpoint is missing, corrupt, or cannot be fetched from the hub (``flag``: see
    :func:`locate_checkpoint_or_exit`)."""
    from transformer.core.checkpoint import CheckpointError
    from transformer.core.translator import Translator

    directory = locate_checkpoint_or_exit(name_or_path, flag)
    try:
        return Translator.load(directory)
    except (CheckpointError, OSError, ValueError) as exc:
        # OSError covers unreadable files
        fail(f"{flag + ': ' if flag else ''}{exc or type(exc).__name__}")


# ---------------------------------------------------------------- warnings


@contextlib.contextmanager
def one_line_warnings(*categories: type[Warning]):
    """Inside, warnings of ``categories`` print as ``warning: message``, one line: Python's
    own format adds the file, line and source line of the call, which mean nothing to
    someone running the command. Other warnings keep Python's format."""
    original = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, categories):
            print(f"warning: {one_line(str(message))}", file=sys.stderr if file is None else file)
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original
