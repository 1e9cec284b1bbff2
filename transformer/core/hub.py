"""Publish a checkpoint folder to the Hugging Face hub, and what may go with it.

``push_checkpoint`` checks the folder loads (so a broken checkpoint is never published),
creates the model repo if needed and uploads the folder in one commit: config, weights,
tokenizer(s), metrics, the model card (``README.md``) and any snapshots. Training state
(``*.pt``) and hidden temporary folders stay home. Loading back is
``load_translator("owner/name")`` (:func:`transformer.core.checkpoint.locate_checkpoint`).

:func:`select_files` says which files ``HfApi.upload_folder`` sends for given patterns, so
a command can list an upload before (or instead of) making it.
"""

from __future__ import annotations

from pathlib import Path

from transformer.core.checkpoint import CheckpointError, load_checkpoint

# never uploaded: optimizer/training state and leftovers of interrupted atomic writes
IGNORE_PATTERNS = ["*.pt", ".*", "*/.*", "*.tmp-*"]


class HubError(RuntimeError):
    """Talking to the hub failed (no network, no token, no permission...)."""


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` when it names a hub repo as 'owner/name', else :class:`HubError` saying so.
    The hub accepts a bare 'name' too (under the caller's account), but a command that
    publishes should say whose repo it writes to."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        reason = " ".join(str(exc).split())
        raise HubError(f"{repo_id!r} is not a valid hub repo id ('owner/name'): {reason}") from exc
    if "/" not in repo_id:
        raise HubError(f"{repo_id!r}: give the repo as 'owner/name'")
    return repo_id


def check_checkpoint_folder(checkpoint_dir: str | Path) -> Path:
    """The folder, once it is known to load and to carry its model card (``README.md``), which
    is what a model repo shows; :class:`CheckpointError` naming the fault otherwise."""
    directory = Path(checkpoint_dir).expanduser()
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory} does not exist")
    load_checkpoint(directory)  # raises CheckpointError naming the bad file
    if not (directory / "README.md").is_file():
        raise CheckpointError(f"{directory}: no README.md model card to publish with the weights")
    return directory


def select_files(
    folder: str | Path, allow_patterns: list[str] | None = None, ignore_patterns: list[str] | None = None
) -> list[str]:
    """The files (paths relative to ``folder``, '/'-separated, sorted) that
    ``HfApi.upload_folder(folder_path=folder, allow_patterns=..., ignore_patterns=...)`` sends:
    every file under the folder, filtered by huggingface_hub's own ``filter_repo_objects``
    with its ``DEFAULT_IGNORE_PATTERNS`` (``.git``, its caches) added, as upload_folder does."""
    from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
    from huggingface_hub.utils import filter_repo_objects

    root = Path(folder).expanduser().resolve()
    files = [p.relative_to(root).as_posix() for p in sorted(root.glob("**/*")) if p.is_file()]
    ignore = [*(ignore_patterns or []), *DEFAULT_IGNORE_PATTERNS]
    return list(filter_repo_objects(files, allow_patterns=allow_patterns, ignore_patterns=ignore))


def checkpoint_files(checkpoint_dir: str | Path) -> list[str]:
    """What :func:`push_checkpoint` uploads from ``checkpoint_dir``, relative to it."""
    return select_files(checkpoint_dir, ignore_patterns=IGNORE_PATTERNS)


def push_checkpoint(
    checkpoint_dir: str | Path,
    repo_id: str,
    private: bool = False,
    token: str | None = None,
    commit_message: str | None = None,
) -> str:
    """Upload ``checkpoint_dir`` to the model repo ``repo_id`` ('owner/name'); returns its URL.

    ``token`` defaults to the one ``huggingface_hub`` finds (``HF_TOKEN`` or ``hf auth login``).
    Raises :class:`CheckpointError` for a folder that is not a loadable checkpoint and
    :class:`HubError` when the hub refuses or cannot be reached.
    """
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    directory = check_checkpoint_folder(checkpoint_dir)
    api = HfApi(token=token)
    try:
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        # a copy: upload_folder appends its own defaults to the list it is given
        api.upload_folder(
            repo_id=repo_id,
            folder_path=str(directory),
            repo_type="model",
            ignore_patterns=list(IGNORE_PATTERNS),
            commit_message=commit_message or f"Upload checkpoint {directory.name}",
        )
    except Exception as exc:  # network, auth and HTTP errors come in many types; all mean "not pushed"
        raise HubError(f"could not push {directory} to the hub repo {repo_id}: {type(exc).__name__}: {exc}") from exc
    return str(url)
