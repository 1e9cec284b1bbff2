"""The full-precision trace files behind the "Download trace" button.

The name is the hash of the content, and files are never deleted while the app runs (only
at start-up, see :func:`prune_trace_files`), so a file another visitor is about to download
can never disappear; identical traces share one file. Written to a temporary name and
renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from pathlib import Path

from transformer.core.checkpoint import write_file_atomic
from transformer.interpret.habits import with_habits

TRACE_DIR = Path(tempfile.gettempdir()) / "attention-explorer-traces"
TRACE_MAX_AGE_S = 24 * 3600  # pruned at start-up only, when no visitor can be waiting for a file


def write_trace_file(trace, directory: Path | None = None) -> str:
    """The trace's JSON (``Trace.to_dict()``, its heads named by their habits as the viewer
    shows them) in ``directory`` (default :data:`TRACE_DIR`); its path."""
    directory = TRACE_DIR if directory is None else directory
    content = trace.to_dict()
    if content.get("head_stats") is not None:
        content["head_stats"] = with_habits(content["head_stats"])
    data = json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path = directory / f"trace-{hashlib.sha256(data).hexdigest()[:24]}.json"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, data)
    return str(path)


def prune_trace_files(max_age_s: float = TRACE_MAX_AGE_S, directory: Path | None = None) -> int:
    """Remove trace files older than ``max_age_s``; called once before the server starts serving."""
    directory = TRACE_DIR if directory is None else directory
    removed, cutoff = 0, time.time() - max_age_s
    if directory.is_dir():
        for old in directory.iterdir():
            if old.is_file() and old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
                removed += 1
    return removed
