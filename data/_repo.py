"""Where the repository is, for the scripts in data/: ``ROOT``, the clone. It goes first on
sys.path, so a script finds the project's packages from a clone without ``pip install -e .``.
A script imports it before the project: ``from _repo import ROOT`` (its folder is on sys.path
when it runs as ``python data/NAME.py``)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
