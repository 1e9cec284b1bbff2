"""Publish a checkpoint folder to the Hugging Face hub, and what may go with it.

``push_checkpoint`` checks the folder loads (so a broken checkpoint is never published),
creates the model repo if needed and uploads the folder in one commit: config, weights,
tokenizer(s), metrics, the model card (``README.md``) and any snapshots. Training state
(``*.pt``) and hidden temporary folders stay home. Loading back is
``load_translator("owner/name")`` (:func:`transformer.checkpoint.locate_checkpoint`).
"""

from __future__ import annotations

from pathlib import Path

from .checkpoint import CheckpointError, load_checkpoint

# never uploaded: optimizer/training state and leftovers of interrupted atomic writes
IGNORE_PATTERNS = ["*.pt", ".*", "*/.*", "*.tmp-*"]


class HubError(RuntimeError):
    """Talking to the hub failed (no network, no token, no permission...)."""


def push_checkpoint(checkpoint_dir: str | Path, repo_id: str, private: bool = False, token: str | None = None,
                    commit_message: str | None = None) -> str:
    """Upload ``checkpoint_dir`` to the model repo ``repo_id`` ('owner/name'); returns its URL.

    ``token`` defaults to the one ``huggingface_hub`` finds (``HF_TOKEN`` or ``hf auth login``).
    Raises :class:`CheckpointError` for a folder that is not a loadable checkpoint and
    :class:`HubError` when the hub refuses or cannot be reached.
    """
    from huggingface_hub import HfApi
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    directory = Path(checkpoint_dir).expanduser()
    if not directory.is_dir():
        raise CheckpointError(f"checkpoint directory not found: {directory} does not exist")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise HubError(f"{repo_id!r} is not a valid hub repo id ('owner/name'): {exc}") from exc
    if "/" not in repo_id:
        raise HubError(f"{repo_id!r}: give the repo as 'owner/name'")
    load_checkpoint(directory)  # raises CheckpointError naming the bad file
    if not (directory / "README.md").is_file():
        raise CheckpointError(f"{directory}: no README.md model card to publish with the weights")

    api = HfApi(token=token)
    try:
        url = api.create_repo(repo_id, private=private, exist_ok=True, repo_type="model")
        api.upload_folder(
            repo_id=repo_id, folder_path=str(directory), repo_type="model", ignore_patterns=IGNORE_PATTERNS,
            commit_message=commit_message or f"Upload checkpoint {directory.name}",
        )
    except Exception as exc:  # network, auth and HTTP errors come in many types; all mean "not pushed"
        raise HubError(f"could not push {directory} to the hub repo {repo_id}: {type(exc).__name__}: {exc}") from exc
    return str(url)
