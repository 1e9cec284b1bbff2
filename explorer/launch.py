"""Run the real app, ``python app.py``, in a child process: for the tests, the benchmarks and
the screenshot script, which all drive the page a visitor gets rather than an in-process copy.

    with running_app("checkpoints/en-it", log=Path("app.log")) as app:
        app.url, app.seconds  # where it serves, and how long it took to answer

One launcher, so they all start the app the same way: on a free port, unbuffered, without
Gradio's analytics, and only counted as up when this app's own log names its port and the
page answers (another server on a reused port is never mistaken for it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# what to do when find_chromium finds nothing (the browser tests skip with this line)
NO_CHROMIUM = (
    "no Chromium found: install one (Debian/Ubuntu: apt-get install chromium; anywhere: "
    "playwright install chromium) or point CHROMIUM=/path/to/chrome at one"
)


def find_chromium() -> str | None:
    """The Chromium the browser tests and benchmarks drive: ``$CHROMIUM`` when set (None if it
    is not a file), else the system's (Debian's ``chromium``, Ubuntu's ``chromium-browser``,
    Google Chrome), else Playwright's own after ``playwright install chromium``; None if none."""
    if os.environ.get("CHROMIUM"):
        return os.environ["CHROMIUM"] if Path(os.environ["CHROMIUM"]).is_file() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if found := shutil.which(name):
            return found
    try:  # Playwright knows where its own download goes, whether or not it is there
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            path = p.chromium.executable_path
    except Exception:  # no playwright package, or its driver cannot start
        return None
    return path if Path(path).is_file() else None


class AppDidNotStart(RuntimeError):
    """The app exited, or did not answer in time; the message ends with its log's tail."""


@dataclass
class RunningApp:
    url: str  # "http://127.0.0.1:PORT/"
    log: Path
    seconds: float  # from start until the page answered
    checkpoint: Path | None

    def log_text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2)
        return True
    except OSError:
        return False


@contextlib.contextmanager
def running_app(
    checkpoint: str | Path | None = None, log: Path | None = None, extra: tuple[str, ...] = (), timeout: float = 180.0
):
    """``python app.py [--checkpoint C] --port P *extra`` until the block ends; yields a
    :class:`RunningApp`. Raises :class:`AppDidNotStart` if it exits or does not answer
    within ``timeout`` seconds. ``log``: where its output goes (a temporary file if None)."""
    import tempfile

    port = free_port()
    log = Path(log) if log is not None else Path(tempfile.mkdtemp(prefix="explorer-app-")) / "app.log"
    args = [sys.executable, "app.py", "--port", str(port), *extra]
    if checkpoint is not None:
        args[2:2] = ["--checkpoint", str(checkpoint)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    start = time.perf_counter()
    with log.open("w") as f:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    tail = lambda: log.read_text(encoding="utf-8", errors="replace")[-3000:]  # noqa: E731
    try:
        while True:
            if proc.poll() is not None:
                raise AppDidNotStart(f"app.py exited with code {proc.returncode}:\n{tail()}")
            if f"127.0.0.1:{port}" in log.read_text(encoding="utf-8", errors="replace") and _answers(url):
                break
            if time.perf_counter() - start > timeout:
                raise AppDidNotStart(f"app.py did not answer within {timeout:.0f} s:\n{tail()}")
            time.sleep(0.1)
        yield RunningApp(url, log, time.perf_counter() - start, None if checkpoint is None else Path(checkpoint))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
