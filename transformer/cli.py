"""What every command-line entry point shares: one-line errors and exit code 2.

    from transformer.cli import fail, load_translator_or_exit
    tr = load_translator_or_exit(args.checkpoint)

Library code raises (``CheckpointError``, ``DataError``...); only entry points turn an
exception into a message on stderr and an exit code, through these helpers.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

EXIT_USAGE = 2


def fail(message: str) -> NoReturn:
    """Print ``error: message`` on stderr and exit with code 2 (bad input, not a crash)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def load_translator_or_exit(name_or_path: str | Path):
    """``load_translator(name_or_path)``, or a one-line message and exit code 2 when the
    checkpoint is missing, corrupt, or cannot be fetched from the hub."""
    from .checkpoint import CheckpointError
    from .translator import load_translator

    try:
        return load_translator(name_or_path)
    except (CheckpointError, OSError, ValueError) as exc:
        # OSError covers unreadable files and huggingface_hub's HTTP/offline errors
        fail(str(exc) or type(exc).__name__)
