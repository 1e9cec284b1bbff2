"""The README's commands for M2M100, NLLB-200 and mBART-50, run as written on small local models of
each family (each hub id replaced by the folder of a small model saved as the Hub has them,
``models/`` by a temporary folder): the three conversions, then the app serving NLLB-200 beside
ours, converted beforehand and converted at start-up (``convert:``), each model answering with its
page, the converted one saying where it comes from. (The Space commands beside them run in
tests/test_deploy.py, where the Hub is replaced at its network calls.)"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import urllib.request

import pytest

from explorer.launch import running_app
from tests.helpers import ROOT, SHIPPED

pytestmark = pytest.mark.slow  # three conversions and two app starts, in subprocesses

NLLB = "facebook/nllb-200-distilled-600M"


def section_blocks(heading: str) -> list[list[str]]:
    """The commands of each ```bash block of the README's section ``heading``, comments dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```bash")[1:]]
    return [[c for c in (line.split("#", 1)[0].strip() for line in b.strip().splitlines()) if c] for b in blocks]


def page_path(checkpoint_folder_name: str) -> str:
    """Where the app puts a second model's page (explorer.models.Model: its folder's name)."""
    return "/" + re.sub(r"[^a-z0-9]+", "_", checkpoint_folder_name.lower()).strip("_").replace("_", "-")


def test_the_readmes_convert_and_serve_commands_run_on_small_local_models(
    m2m100_like, nllb_like, mbart50_like, tmp_path, monkeypatch
):
    commands = section_blocks("## Look inside OPUS-MT")[1]
    assert [c.split()[:3] for c in commands] == [["python", "-m", "transformer.cli.convert"]] * 3 + [
        ["python", "app.py", "--checkpoint"]
    ] * 2
    assert f"convert:{NLLB}" in commands[-1]
    local = {
        "facebook/m2m100_418M": m2m100_like.parent / "hf",
        NLLB: nllb_like.parent / "hf",
        "facebook/mbart-large-50-many-to-many-mmt": mbart50_like.parent / "hf",
        "models/": f"{tmp_path}/",
    }
    monkeypatch.setenv("CONVERT_CACHE", str(tmp_path / "cache"))  # the app's environment too
    for command in commands:
        for hub, here in local.items():
            command = command.replace(hub, str(here))
        args = shlex.split(command)
        if args[1] == "-m":
            subprocess.run([sys.executable, *args[1:]], cwd=ROOT, check=True, capture_output=True, timeout=600)
            out = args[args.index("--out") + 1]
            assert "license: " in (tmp_path / out.rsplit("/", 1)[-1] / "README.md").read_text(encoding="utf-8")
            continue
        extra = tuple(a if a != "checkpoints/en-it" else str(SHIPPED) for a in args[2:])
        second = extra[3]  # the converted model: a folder, or convert:<its source>
        name = (tmp_path / "cache" / second.removeprefix("convert:").replace("/", "--")).name
        if not second.startswith("convert:"):
            name = second.rstrip("/").rsplit("/", 1)[-1]
        with running_app(None, tmp_path / "app.log", extra, timeout=600) as app:
            assert "Inside the Transformer" in urllib.request.urlopen(app.url, timeout=60).read().decode("utf-8")
            other = urllib.request.urlopen(app.url.rstrip("/") + page_path(name), timeout=60).read().decode("utf-8")
            assert "Inside the Transformer" in other and "converted from" in other
        assert "Traceback" not in (tmp_path / "app.log").read_text(encoding="utf-8")
    assert (tmp_path / "cache").is_dir() and any((tmp_path / "cache").iterdir())  # convert: converted there
