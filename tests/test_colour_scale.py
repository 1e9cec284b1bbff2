"""The attention weights' colour scale (the sequential map of explorer/web/theme.css, interpolated
by canvas.js), run under Node.js with the palette theme.css gives each theme: a weight of 0 is the
page's background, the scale moves away from it monotonically, and in dark small weights stay
apart from the background on a projector (at least 1.3:1 at w = 0.05 and 3:1 from w = 0.2)."""

import re

import pytest

from explorer.assets import WEB
from tests.helpers import needs_node, run_node

pytestmark = needs_node


def palette(theme: str) -> dict:
    """theme.css's custom properties for `theme`: :root's, with .dark's over them in dark."""
    css = (WEB / "theme.css").read_text(encoding="utf-8")

    def block(selector: str) -> dict:
        body = re.search(re.escape(selector) + r"\s*\{(.*?)\n\}", css, re.S).group(1)
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        return {m[0]: m[1].strip() for m in re.findall(r"(--ax-[\w-]+)\s*:\s*([^;]+);", body)}

    props = block(":root")
    if theme == "dark":
        props.update(block(".dark"))
    return props


# canvas.js under a stub page whose styles are theme.css's (the document, its computed style and
# the watcher of Gradio's class are all that canvas.js and theme.js touch): the colour of a weight
SCRIPT = """
import { readFileSync } from "node:fs";
const props = JSON.parse(readFileSync(0, "utf8"));
globalThis.document = { createElement: () => ({ getContext: () => ({}) }), querySelector: () => null,
  body: {}, documentElement: {} };
globalThis.window = globalThis;
globalThis.MutationObserver = class { observe() {} disconnect() {} };
globalThis.getComputedStyle = () => ({ getPropertyValue: (name) => props[name] || "" });
const canvas = await import("./canvas.js");
canvas.usePalette();
const weights = Array.from({ length: 101 }, (_, i) => i / 100);
console.log(JSON.stringify({ theme: canvas.THEME, background: canvas.hexRgb(canvas.BACKGROUND),
  colours: weights.map((w) => canvas.blue(w)), lut: canvas.BLUES_LUT }));
"""


def luminance(rgb) -> float:
    f = [(v / 255) / 12.92 if v / 255 <= 0.04045 else ((v / 255 + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2]


def contrast(a, b) -> float:
    x, y = luminance(a), luminance(b)
    return (max(x, y) + 0.05) / (min(x, y) + 0.05)


def scale_of(theme: str, tmp_path_factory) -> dict:
    """canvas.js's colour scale in ``theme``'s palette, computed by node."""
    got = run_node(tmp_path_factory.mktemp(theme), ("canvas.js",), SCRIPT, palette(theme))
    assert got["theme"] == theme
    return got


@pytest.fixture(scope="module", params=["light", "dark"])
def scale(request, tmp_path_factory):
    return scale_of(request.param, tmp_path_factory)


def test_zero_is_the_background_and_the_scale_moves_away_from_it_monotonically(scale):
    bg, colours = scale["background"], scale["colours"]
    assert contrast(colours[0], bg) < 1.02, (colours[0], bg)
    # every step of the 256-entry table is as far from the background as the one before, or further
    away = [abs(luminance(c) - luminance(bg)) for c in scale["lut"]]
    assert all(b >= a - 1e-9 for a, b in zip(away, away[1:])), [i for i in range(255) if away[i + 1] < away[i]][:5]
    assert contrast(colours[100], bg) > 10  # the top of the scale stands out in either theme


@pytest.fixture(scope="module")
def dark_scale(tmp_path_factory):
    return scale_of("dark", tmp_path_factory)


def test_small_weights_stand_apart_from_a_dark_background(dark_scale):
    # (the light scale keeps ColorBrewer's Blues, whose small weights stand apart from white)
    scale = dark_scale
    bg, colours = scale["background"], scale["colours"]
    ratios = {w: round(contrast(colours[w], bg), 2) for w in (2, 5, 10, 20)}
    assert ratios[2] > 1.05 and ratios[5] >= 1.3 and ratios[10] >= 1.8, ratios
    assert min(contrast(c, bg) for c in colours[20:]) >= 3, ratios
