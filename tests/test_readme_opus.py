"""The README's "Look inside OPUS-MT" commands, run as written on a small local Marian model
(the hub id replaced by its folder, ``models/`` by a temporary folder): the conversion, then
the app on the converted model alone and beside ours, each answering with its page."""

from __future__ import annotations

import shlex
import subprocess
import sys
import urllib.request

import pytest

from explorer.launch import running_app
from tests.helpers import ROOT, SHIPPED

pytestmark = pytest.mark.slow  # a conversion and two app starts, in subprocesses


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Look inside OPUS-MT", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.strip().splitlines() if line.split("#", 1)[0].strip()]


def test_the_readmes_opus_mt_commands_run_on_a_small_local_marian_model(opus_mt_like, tmp_path):
    commands = readme_commands()
    assert [c.split()[:3] for c in commands] == [
        ["pip", "install", "-e"],
        ["python", "-m", "transformer.cli.from_marian"],
        ["python", "app.py", "--checkpoint"],
        ["python", "app.py", "--checkpoint"],
    ]
    local = {"Helsinki-NLP/opus-mt-en-it": str(opus_mt_like.parent / "marian"), "models/": f"{tmp_path}/"}
    for command in commands[1:]:  # the first is the install this test runs in
        for hub, here in local.items():
            command = command.replace(hub, here)
        args = shlex.split(command)
        if args[1] == "-m":
            subprocess.run([sys.executable, *args[1:]], cwd=ROOT, check=True, capture_output=True, timeout=600)
            assert (tmp_path / "opus-mt-en-it" / "config.json").is_file()
            continue
        extra = tuple(a if a != "checkpoints/en-it" else str(SHIPPED) for a in args[2:])
        with running_app(None, tmp_path / "app.log", extra) as app:
            page = urllib.request.urlopen(app.url, timeout=30).read().decode("utf-8")
            assert "Inside the Transformer" in page
            if extra.count("--checkpoint") == 2:  # the second model's own page
                other = urllib.request.urlopen(app.url + "opus-mt-en-it", timeout=30).read().decode("utf-8")
                assert "Inside the Transformer" in other
        assert "Traceback" not in (tmp_path / "app.log").read_text(encoding="utf-8")
