"""The README's YAML front matter is the Space card: check it against the hub's Space
metadata rules, so a push is never rejected for it (the hub refused a 61-character
short_description once).

Parsing is huggingface_hub's own (``SpaceCard`` / ``SpaceCardData`` / ``metadata_load``);
the value rules it does not check are those of the hub documentation:
https://huggingface.co/docs/hub/spaces-config-reference and
https://huggingface.co/docs/hub/repositories-licenses
"""

from __future__ import annotations

import importlib.metadata
import re
import unicodedata

import pytest
from huggingface_hub import SpaceCard, SpaceCardData, metadata_load
from tests.helpers import ROOT

README = ROOT / "README.md"

COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
SDKS = {"gradio", "streamlit", "docker", "static"}
SHORT_DESCRIPTION_MAX = 60
# the license identifiers the hub accepts (repositories-licenses)
LICENSES = {
    "apache-2.0",
    "mit",
    "openrail",
    "bigscience-openrail-m",
    "creativeml-openrail-m",
    "bigscience-bloom-rail-1.0",
    "bigcode-openrail-m",
    "afl-3.0",
    "artistic-2.0",
    "bsl-1.0",
    "bsd",
    "bsd-2-clause",
    "bsd-3-clause",
    "bsd-3-clause-clear",
    "c-uda",
    "cc",
    "cc0-1.0",
    "cc-by-2.0",
    "cc-by-2.5",
    "cc-by-3.0",
    "cc-by-4.0",
    "cc-by-sa-3.0",
    "cc-by-sa-4.0",
    "cc-by-nc-2.0",
    "cc-by-nc-3.0",
    "cc-by-nc-4.0",
    "cc-by-nd-4.0",
    "cc-by-nc-nd-3.0",
    "cc-by-nc-nd-4.0",
    "cc-by-nc-sa-2.0",
    "cc-by-nc-sa-3.0",
    "cc-by-nc-sa-4.0",
    "cdla-sharing-1.0",
    "cdla-permissive-1.0",
    "cdla-permissive-2.0",
    "wtfpl",
    "ecl-2.0",
    "epl-1.0",
    "epl-2.0",
    "etalab-2.0",
    "eupl-1.1",
    "agpl-3.0",
    "gfdl",
    "gpl",
    "gpl-2.0",
    "gpl-3.0",
    "lgpl",
    "lgpl-2.1",
    "lgpl-3.0",
    "isc",
    "lppl-1.3c",
    "ms-pl",
    "mpl-2.0",
    "odc-by",
    "odbl",
    "openrail++",
    "osl-3.0",
    "postgresql",
    "ofl-1.1",
    "ncsa",
    "unlicense",
    "zlib",
    "pddl",
    "lgpl-lr",
    "deepfloyd-if-license",
    "llama2",
    "gemma",
    "unknown",
    "other",
}
# every key the Spaces configuration reference documents; a typo (colourFrom) would be
# silently ignored by the hub, so unknown keys fail here
KNOWN_KEYS = {
    "title",
    "emoji",
    "colorFrom",
    "colorTo",
    "sdk",
    "python_version",
    "sdk_version",
    "suggested_hardware",
    "suggested_storage",
    "app_file",
    "app_port",
    "app_build_command",
    "base_path",
    "fullWidth",
    "header",
    "short_description",
    "models",
    "datasets",
    "tags",
    "thumbnail",
    "pinned",
    "hf_oauth",
    "hf_oauth_scopes",
    "hf_oauth_expiration_minutes",
    "hf_oauth_authorized_org",
    "disable_embedding",
    "startup_duration_timeout",
    "custom_headers",
    "preload_from_hub",
    "license",
    "license_name",
    "license_link",
    "duplicated_from",
}


def is_single_emoji(text: str) -> bool:
    """One emoji: one pictographic symbol, optionally with variation selectors, skin-tone
    modifiers and zero-width-joined parts (one grapheme as the hub shows it)."""
    if not text or text != text.strip():
        return False
    joiners = {"\u200d", "\ufe0f", "\ufe0e", "\u20e3"}
    parts = [c for c in text if c not in joiners and not 0x1F3FB <= ord(c) <= 0x1F3FF]
    pictographic = [c for c in parts if unicodedata.category(c) == "So" or 0x1F1E6 <= ord(c) <= 0x1F1FF]
    if len(parts) != len(pictographic) or not parts:
        return False
    if len(parts) == 2 and all(0x1F1E6 <= ord(c) <= 0x1F1FF for c in parts):
        return True  # a flag: two regional indicators
    return len(parts) == 1 or text.count("\u200d") == len(parts) - 1


def pinned(name: str) -> str:
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        m = re.match(rf"^\s*{re.escape(name)}\s*==\s*([\w.]+)", line, re.IGNORECASE)
        if m:
            return m.group(1)
    raise AssertionError(f"{name} is not pinned with == in requirements.txt")


@pytest.fixture(scope="module")
def card() -> SpaceCard:
    return SpaceCard.load(README)


@pytest.fixture(scope="module")
def meta(card) -> dict:
    return card.data.to_dict()


def test_front_matter_parses_as_a_space_card(card, meta):
    assert isinstance(card.data, SpaceCardData)
    raw = metadata_load(README)
    assert raw == meta  # huggingface_hub's two readers agree: nothing lost or renamed
    unknown = set(raw) - KNOWN_KEYS
    assert not unknown, f"keys the hub does not know: {sorted(unknown)}"
    # the card survives huggingface_hub's own round trip (what the hub stores)
    assert SpaceCard(str(card)).data.to_dict() == meta
    assert card.text.lstrip().startswith("# "), "the README body should follow the front matter"


def test_sdk_matches_the_pinned_gradio(card):
    assert card.data.sdk in SDKS and card.data.sdk == "gradio"
    assert str(card.data.sdk_version) == pinned("gradio")
    # what the tests run is what the Space runs
    assert importlib.metadata.version("gradio") == card.data.sdk_version


def test_app_file_and_python_version(card):
    assert card.data.app_file and (ROOT / card.data.app_file).is_file()
    assert isinstance(card.data.python_version, str), "quote python_version, or YAML reads 3.10 as 3.1"
    assert re.fullmatch(r"3\.\d+(\.\d+)?", card.data.python_version)


def test_short_description_fits_the_hub_limit(meta):
    text = meta.get("short_description")
    assert isinstance(text, str) and text.strip() == text and text
    assert len(text) <= SHORT_DESCRIPTION_MAX, f"{len(text)} characters: {text!r}"


def test_title_colors_emoji_license(card, meta):
    assert isinstance(card.data.title, str) and card.data.title.strip()
    assert meta.get("colorFrom") in COLORS and meta.get("colorTo") in COLORS
    assert is_single_emoji(meta.get("emoji", "")), meta.get("emoji")
    assert card.data.license in LICENSES
    assert isinstance(meta.get("pinned", False), bool)


@pytest.mark.parametrize(
    "value, ok",
    [
        ("🔍", True),
        ("❤️", True),
        ("👩‍💻", True),
        ("👍🏽", True),
        ("🇮🇹", True),
        ("", False),
        ("ab", False),
        ("🔍🔍", False),
        ("🔍 ", False),
        ("x", False),
    ],
)
def test_emoji_rule_itself(value, ok):
    assert is_single_emoji(value) is ok
