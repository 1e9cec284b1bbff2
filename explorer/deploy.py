"""Create or update a Hugging Face Space that serves the explorer, from a clone, in one command.

    python -m explorer.deploy OWNER/NAME --dry-run   # every file it would send, with sizes; no network
    python -m explorer.deploy OWNER/NAME             # the Space, with checkpoints/en-it inside it
    python -m explorer.deploy OWNER/NAME --model-repo OWNER/MODEL   # the weights in a model repo
    python -m explorer.deploy OWNER/NAME --with facebook/nllb-200-distilled-600M   # ours, and NLLB-200 beside it

The files go up with huggingface_hub's ``upload_folder``, not ``git push``: a push carries
the repository's history, whose old weights are plain git blobs over the Hub's 10 MiB
limit, and the Hub refuses them. An upload sends today's files only, and the Hub stores the
large and binary ones as large files (Xet/LFS) by itself.

The Space gets what it runs and nothing else (:data:`SPACE_FILES`), plus the checkpoint.
Its variable ``CHECKPOINT``, which ``app.py`` reads as its ``--checkpoint``, says which model
it serves: the checkpoint folder inside the Space, or the model repo's id. Each deploy sets
it and deletes the Space's files that the clone no longer sends, so the Space ends up
holding exactly the list ``--dry-run`` prints.

``--with HUB_ID`` (repeatable) serves a published model beside ours: a Marian (OPUS-MT),
M2M100, NLLB-200 or mBART-50 model of the Hub, which the Space downloads and converts when it
starts (``convert:HUB_ID`` in ``CHECKPOINT``, ``transformer.cli.converted_or_exit``), into its
cache, never into the Space's files; the converted checkpoint carries the model's own licence
(its card and config). The Space's requirements.txt then also gets what the converter needs
(:data:`CONVERTER_REQUIREMENTS`). Each id is checked before anything is sent: config.json is
fetched and its model_type must be one the converter knows (a dry run fetches nothing).
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import fnmatch
import glob
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from transformer.cli import CONVERT_PREFIX, DEFAULT_CHECKPOINT, ArgumentParser, fail, one_line
from transformer.core.checkpoint import CheckpointError, load_checkpoint
from transformer.core.hub import (
    IGNORE_PATTERNS,
    HubError,
    check_checkpoint_folder,
    check_repo_id,
    checkpoint_files,
    select_files,
)

from .launch import ROOT  # the clone: the folder holding app.py

__all__ = ["SPACE_FILES", "SPACE_IGNORE", "Plan", "Upload", "main", "parse_args", "plan_deploy"]

PROG = "python -m explorer.deploy"
# what the Space runs and shows, as huggingface_hub matches patterns ('*' also crosses '/'):
# the entry point and both packages (with the explorer's browser files), the pins
# (pre-requirements.txt puts torch's CPU build in first), the card (README.md) and the one
# picture it shows, the licence, and the large-file rules for anyone who clones the Space.
# Never data/, tests/, runs/, benchmarks/ or the rest of docs/: the app reads none of them.
SPACE_FILES = [
    "app.py",
    "README.md",
    "LICENSE",
    ".gitattributes",
    "requirements.txt",
    "pre-requirements.txt",
    "docs/screenshot.png",
    "explorer/*",
    "transformer/*",
]
# never sent from those folders: bytecode, hidden files and half-written leftovers, training state
SPACE_IGNORE = ["*/__pycache__/*", "*.pyc", "*/.*", "*.tmp-*", "*.pt"]
CHECKPOINT_VARIABLE = "CHECKPOINT"
REQUIREMENTS = "requirements.txt"
# what converting a published model at start-up needs beyond requirements.txt: sentencepiece (the
# pin of requirements-marian.txt) reads Marian's and M2M100's SentencePiece files, through its
# protobuf module (tensorboard brings protobuf too). safetensors, tokenizers and huggingface_hub
# are already there; transformers is not needed to convert
CONVERTER_REQUIREMENTS = ["sentencepiece==0.2.3", "protobuf"]
COMMIT_MESSAGE = f"Deploy the attention explorer ({PROG})"
# what the Hub stores as a large file: huggingface_hub sends it each file's path, size and
# first 512 bytes (the "preupload" call) and the Hub decides; the same rules, applied here
# to the same three things, let --dry-run say it with no network
LARGE_FILE_BYTES = 10 * 1024 * 1024
SAMPLE_BYTES = 512


@dataclass
class Upload:
    """One ``upload_folder`` call: these arguments, and the files they select."""

    repo_id: str
    repo_type: str
    folder: Path
    allow_patterns: list[str] | None
    ignore_patterns: list[str]
    files: list[str]  # relative to folder, '/'-separated, sorted


@dataclass
class Plan:
    """Everything a deploy does, decided before any network call."""

    space: str
    checkpoint: str  # the Space's CHECKPOINT: a folder inside it or the model repo id, then any convert:HUB_ID
    space_upload: Upload
    model_upload: Upload | None
    converted: list[str] = field(default_factory=list)  # the --with hub ids, converted by the Space
    replaced: dict[str, str] = field(default_factory=dict)  # files the Space gets with this text instead


def _repo_id(text: str) -> str:
    try:
        return check_repo_id(text)
    except HubError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_args(argv=None) -> argparse.Namespace:
    p = ArgumentParser(
        prog=PROG,
        description="Create or update a Hugging Face Space (Gradio SDK) that serves "
        "the explorer, by uploading this clone's files (no git history).",
    )
    p.add_argument("space", type=_repo_id, metavar="OWNER/NAME", help="the Space to create or update")
    p.add_argument(
        "--checkpoint",
        default=None,
        metavar="DIR",
        help=f"checkpoint folder to serve (default: {DEFAULT_CHECKPOINT} of this clone); without "
        "--model-repo it must lie inside the clone, and goes up with the Space",
    )
    p.add_argument(
        "--model-repo",
        type=_repo_id,
        default=None,
        metavar="OWNER/NAME",
        help="push the checkpoint (with its model card) to this model repo instead, and have the "
        "Space load it from there by id",
    )
    p.add_argument(
        "--with",
        dest="with_models",
        action="append",
        type=_repo_id,
        default=[],
        metavar="HUB_ID",
        help="also serve this published model of the Hub (Marian/OPUS-MT, M2M100, NLLB-200, mBART-50), "
        "converted by the Space when it starts, under its own licence; repeat it for several",
    )
    p.add_argument(
        "--private",
        action="store_true",
        help="create the Space private (a --model-repo stays public, so that the Space can read it)",
    )
    p.add_argument(
        "--token",
        default=None,
        help="Hugging Face token with write access (default: HF_TOKEN, or the one `hf auth login` saved)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list every file that would be sent, with sizes and which go as large files; "
        "needs no network and no token",
    )
    return p.parse_args(argv)


def _checkpoint_dir(args, root: Path) -> Path:
    """The checkpoint folder, checked to load (and to carry its card when it goes to a model
    repo); a one-line exit otherwise. A folder only: a hub id here would have nothing to upload."""
    directory = Path(args.checkpoint).expanduser() if args.checkpoint else root / DEFAULT_CHECKPOINT
    flag = f"--checkpoint {args.checkpoint}" if args.checkpoint else f"the checkpoint {directory}"
    if not directory.is_dir():
        fail(f"{flag}: not a folder (a checkpoint folder holds config.json and model.safetensors)")
    try:
        if args.model_repo:
            check_checkpoint_folder(directory)
        else:
            load_checkpoint(directory)
    except (CheckpointError, OSError, ValueError) as exc:
        fail(f"{flag}: {exc}")
    return directory.resolve()


def plan_deploy(args, root: Path = ROOT) -> Plan:
    """What to send where, from the parsed arguments; bad input exits with one line."""
    root = root.resolve()
    if not (root / "app.py").is_file():
        fail(f"{root} has no app.py: run {PROG} from a clone of the repository")
    directory = _checkpoint_dir(args, root)
    allow = list(SPACE_FILES)
    model_upload = None
    if args.model_repo:
        checkpoint = args.model_repo
        model_upload = Upload(
            args.model_repo, "model", directory, None, list(IGNORE_PATTERNS), checkpoint_files(directory)
        )
    else:
        if not directory.is_relative_to(root):
            fail(
                f"--checkpoint {args.checkpoint}: outside this clone ({root}), and a Space gets its files from "
                f"the clone: copy it under checkpoints/, or publish it with --model-repo OWNER/NAME"
            )
        checkpoint = directory.relative_to(root).as_posix()
        allow.append(glob.escape(checkpoint) + "/*")
    space_upload = Upload(args.space, "space", root, allow, list(SPACE_IGNORE), select_files(root, allow, SPACE_IGNORE))
    if not args.model_repo and f"{checkpoint}/model.safetensors" not in space_upload.files:
        fail(
            f"--checkpoint {args.checkpoint}: its files would not be sent (a hidden or temporary folder): "
            f"copy it under checkpoints/"
        )
    converted = list(dict.fromkeys(args.with_models))
    variable = ",".join([checkpoint, *(CONVERT_PREFIX + hub_id for hub_id in converted)])
    replaced = {REQUIREMENTS: space_requirements(root)} if converted else {}
    return Plan(args.space, variable, space_upload, model_upload, converted, replaced)


def space_requirements(root: Path) -> str:
    """The clone's requirements.txt with :data:`CONVERTER_REQUIREMENTS` added (those it lacks)."""
    text = (root / REQUIREMENTS).read_text(encoding="utf-8")
    have = {line.split("==")[0].strip().lower() for line in text.splitlines() if not line.startswith("#")}
    extra = [req for req in CONVERTER_REQUIREMENTS if req.split("==")[0].lower() not in have]
    if not extra:
        return text
    note = f"# converting the published models of CHECKPOINT's {CONVERT_PREFIX} entries at start-up ({PROG} --with)"
    return text.rstrip("\n") + "\n" + "\n".join([note, *extra]) + "\n"


def check_convertible(hub_id: str) -> None:
    """``hub_id``'s config.json (fetched alone) names a family the converter knows; else one line
    and exit code 2, before anything is sent (the Space would fail when it starts)."""
    from transformer.cli import convert
    from transformer.cli.conversion import ConversionError, locate_source, model_type_of

    try:
        convert.family_of(model_type_of(locate_source(hub_id, None, ["config.json"])))
    except ConversionError as exc:
        fail(f"--with {hub_id}: {one_line(str(exc))}")


def lfs_rules(root: Path) -> list[str]:
    """The patterns that ``root/.gitattributes`` stores as large files (``filter=lfs``)."""
    path = root / ".gitattributes"
    if not path.is_file():
        return []
    rules = [line.split() for line in path.read_text(encoding="utf-8").splitlines()]
    return [words[0] for words in rules if words and not words[0].startswith("#") and "filter=lfs" in words[1:]]


def is_large(path: Path, name: str, rules: list[str]) -> bool:
    """Whether the Hub stores ``name`` (the file at ``path``) as a large file: over 10 MiB,
    binary (a NUL byte, or not UTF-8, in its first 512 bytes), or marked by .gitattributes."""
    if path.stat().st_size > LARGE_FILE_BYTES:
        return True
    with path.open("rb") as f:
        sample = f.read(SAMPLE_BYTES)
    try:  # incremental: a character cut at byte 512 is not an error
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    base = name.rsplit("/", 1)[-1]
    return b"\0" in sample or any(fnmatch.fnmatch(name if "/" in rule else base, rule) for rule in rules)


def _describe(upload: Upload, rules: list[str], out, replaced: dict[str, str] | None = None) -> tuple[int, int, int]:
    """Print one line per file (size, 'large' or not, path); returns (files, bytes, large files).
    ``replaced``: files sent with this text instead of the clone's (plain text, never large)."""
    total = large = 0
    replaced = replaced or {}
    for name in upload.files:
        path = upload.folder / name
        if name in replaced:
            size, big = len(replaced[name].encode("utf-8")), False
        else:
            size, big = path.stat().st_size, is_large(path, name, rules)
        total, large = total + size, large + big
        print(f"{size:>12,}  {'large' if big else '     '}  {name}", file=out)
    return len(upload.files), total, large


def _summary(files: int, total: int, large: int) -> str:
    return f"{files} files, {total:,} bytes ({total / 2**20:.1f} MiB), {large} large"


def print_plan(plan: Plan, private: bool, out=None) -> None:
    """The dry run: where each file would go, its size, and which go as large files."""
    out = out or sys.stdout
    rules = lfs_rules(plan.space_upload.folder)
    counts = []
    if plan.model_upload:
        print(f"model repo {plan.model_upload.repo_id} (from {plan.model_upload.folder}):", file=out)
        counts.append(_describe(plan.model_upload, rules, out))
    visibility = "private" if private else "public"
    print(
        f"Space {plan.space} (gradio, {visibility} if new; {CHECKPOINT_VARIABLE}={plan.checkpoint}), "
        f"from {plan.space_upload.folder}:",
        file=out,
    )
    counts.append(_describe(plan.space_upload, rules, out, plan.replaced))
    for hub_id in plan.converted:
        print(f"{CONVERT_PREFIX}{hub_id}: downloaded and converted by the Space when it starts (not sent)", file=out)
    if plan.replaced:
        added = ", ".join(CONVERTER_REQUIREMENTS)
        print(f"{REQUIREMENTS}: the clone's, with what the converter needs ({added})", file=out)
    files, total, large = (sum(c[i] for c in counts) for i in range(3))
    print(f"total: {_summary(files, total, large)} (large: stored with Xet/LFS, over 10 MiB or binary)", file=out)
    print("dry run: nothing was sent", file=out)


def find_token(given: str | None) -> str:
    """``--token``, else the token huggingface_hub finds (HF_TOKEN, or the saved login)."""
    from huggingface_hub import get_token

    token = given or get_token()
    if not token:
        fail(
            "no Hugging Face token: log in with `hf auth login`, or set HF_TOKEN, or pass --token "
            "(a token with write access, from https://huggingface.co/settings/tokens)"
        )
    return token


def _hub_failure(exc: Exception) -> str:
    """Why the hub refused, in words, with the way out for the usual token problems."""
    if isinstance(exc, HubError) and exc.__cause__ is not None:  # the model repo's push
        return f"{_hub_failure(exc.__cause__)} (pushing the model repo)"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status == 401:
        return "the hub refused the token (401): log in again with `hf auth login`, or set HF_TOKEN"
    if status == 403:
        return "the token may not write there (403): use a token with write access"
    return f"{type(exc).__name__}: {one_line(str(exc))}"


def deploy(plan: Plan, token: str, private: bool) -> str:
    """Push the model (if it has its own repo), create the Space if need be, set its
    CHECKPOINT, then upload its files in one commit; returns the Space's URL."""
    from huggingface_hub import HfApi

    from transformer.core.hub import push_checkpoint

    if plan.model_upload:
        push_checkpoint(plan.model_upload.folder, plan.model_upload.repo_id, token=token)
    api = HfApi(token=token)
    up = plan.space_upload
    # private=None: a new Space is public unless its organisation makes new repos private
    url = api.create_repo(plan.space, repo_type="space", space_sdk="gradio", private=private or None, exist_ok=True)
    # before the upload, so that the build the upload starts already serves the right model
    api.add_space_variable(
        plan.space,
        CHECKPOINT_VARIABLE,
        plan.checkpoint,
        description="the checkpoints app.py serves: a folder in the Space or a model repo id, then any convert:HUB_ID",
    )
    # copies of the lists: upload_folder appends its own defaults to the ignore list
    with staged(up, plan.replaced) as folder:
        api.upload_folder(
            repo_id=plan.space,
            repo_type="space",
            folder_path=str(folder),
            allow_patterns=list(up.allow_patterns),
            ignore_patterns=list(up.ignore_patterns),
            delete_patterns=["*"],
            commit_message=COMMIT_MESSAGE,
        )
    return str(url)


@contextlib.contextmanager
def staged(upload: Upload, replaced: dict[str, str]):
    """The folder upload_folder sends from: the clone itself, or, when some files go with other
    text (``replaced``), a temporary folder of the listed files (hard links where the file system
    allows, else copies) with those files rewritten, so that it is still one upload_folder call."""
    if not replaced:
        yield upload.folder
        return
    try:  # beside the files, for hard links (a hidden name: never one of SPACE_FILES)
        stage = Path(tempfile.mkdtemp(prefix=".deploy-", dir=upload.folder))
    except OSError:
        stage = Path(tempfile.mkdtemp(prefix="deploy-"))
    try:
        for name in upload.files:
            target = stage / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if name in replaced:
                target.write_text(replaced[name], encoding="utf-8")
            else:
                _link_or_copy(upload.folder / name, target)
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        dst.hardlink_to(src)
    except OSError:
        shutil.copy2(src, dst)


def main(argv=None, root: Path = ROOT) -> int:
    """Deploy, or with --dry-run list; bad input (an id, the token, the checkpoint) exits with
    code 2 and one line before any upload. ``root`` is the clone to deploy from."""
    args = parse_args(argv)
    token = None if args.dry_run else find_token(args.token)  # before the checkpoint loads
    plan = plan_deploy(args, root)
    if not args.dry_run:
        for hub_id in plan.converted:
            check_convertible(hub_id)
    if args.dry_run:
        print_plan(plan, args.private)
        return 0
    try:
        url = deploy(plan, token, args.private)
    except Exception as exc:  # noqa: BLE001 (network, auth and HTTP errors come in many types; all mean "not deployed")
        fail(f"could not deploy to the Space {plan.space}: {_hub_failure(exc)}")
    files = len(plan.space_upload.files)
    print(f"deployed {files} files to {url}; the Space now builds (installing its requirements), then starts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
