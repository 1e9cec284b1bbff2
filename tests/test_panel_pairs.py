"""The minimal-pairs panel (explorer/panels/pairs.py) without a browser, on the tiny
checkpoint: B's trace travels in the viewer's payload format, bad B gets one plain message,
a curated pair opens its first sentence in the viewer; and the browser's own alignment and
difference map (explorer/web/pairs.js, run under Node.js with a stub document) on real
payloads."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from explorer.assets import module_sources
from explorer.errors import GENERIC_ERROR
from explorer.panels import PANELS
from explorer.panels.pairs import PAIRS, PairsPanel
from explorer.payload import SCHEMA, decode_payload, encode_trace
from tests.helpers import lcs_length
from explorer.panels.base import Asked

A = "the black cat sleeps."
B = "the white dog eats."
LONGER_B = "the big white dog eats."
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def panel(app):
    return app.panel("pairs")


def request(**data):
    return Asked(None, data)


def answer_of(panel, out) -> dict:
    """The JSON the view receives (one numbered message)."""
    return json.loads(out[panel.host])


# --- the panel on the page ----------------------------------------------------------------------
def test_pairs_is_one_panel_and_one_view(app):
    assert PairsPanel in PANELS and app.panel("pairs").view == "pairs"
    views = module_sources("views.js")["views.js"]
    assert 'import * as pairs from "./pairs.js";' in views and "pairs" in views.split("VIEWS = ")[1]
    assert {"a", "b", "hint"} <= set(PAIRS[0]) and 2 <= len(PAIRS) <= 3


def test_nothing_runs_until_compare(app, panel):
    """A new sentence in the viewer costs the panel nothing: it holds no server state."""
    assert panel.sentence_outputs() == [] and panel.sentence_changed("translate") == {}
    assert panel.host.value == ""  # no answer with the page; the pairs travel as the block's data


# --- Compare ---------------------------------------------------------------------------------------
def test_compare_sends_bs_trace_in_the_viewers_payload_format(app, panel, translator):
    a = answer_of(panel, panel.compare(request(text=B, sentenceId=7)))
    assert set(a) == {"sentenceId", "text", "payload", "seq"} and (a["sentenceId"], a["text"]) == (7, B)
    payload = a["payload"]
    assert payload["schema"] == SCHEMA and payload["origin"] == "pair" and payload["src_text"] == B
    ref = translator.trace(B)
    assert payload["src_tokens"] == ref.src_tokens and payload["tgt_tokens"] == ref.tgt_tokens
    assert payload["translation"] == ref.translation
    # the same encoder as the viewer's: every key, and the arrays decode to B's attention
    assert set(payload) == set(encode_trace(ref))
    decoded = decode_payload(payload)
    assert np.abs(decoded["cross_attn"] - ref.cross_attn).max() < 0.01


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "Type a second sentence (B)"),
        ("   \n", "Type a second sentence (B)"),
        (None, "Type a second sentence (B)"),
        (12, "Type a second sentence (B)"),
        ("x" * 100_000, "characters"),
    ],
)
def test_bad_b_gets_one_plain_message(panel, text, words):
    a = answer_of(panel, panel.compare(request(text=text, sentenceId=3)))
    assert set(a) == {"sentenceId", "text", "error", "seq"} and a["sentenceId"] == 3
    assert words in a["error"] and "\n" not in a["error"] and "Traceback" not in a["error"]


def test_a_bug_while_tracing_b_is_one_generic_line(panel, monkeypatch):
    def broken(text):
        raise RuntimeError("boom")

    monkeypatch.setattr(panel.app.batcher, "trace", broken)
    a = answer_of(panel, panel.compare(request(text=B, sentenceId=1)))
    assert a["error"] == GENERIC_ERROR and "boom" not in json.dumps(a)


# --- a curated pair ----------------------------------------------------------------------------------
def test_a_curated_pair_opens_its_first_sentence_in_the_viewer(app, panel):
    out = panel.open_pair(request(pair=1))
    assert out[app.src_text] == PAIRS[1]["a"]
    viewer = json.loads(out[app.viewer])
    assert viewer["src_text"] == PAIRS[1]["a"] and viewer["origin"] == "translate"
    assert out[app.trace_state].src_text == PAIRS[1]["a"]


@pytest.mark.parametrize("index", [-1, len(PAIRS), "0", None, True, 1.0])
def test_no_such_pair_says_so(app, panel, index):
    out = panel.open_pair(request(pair=index))
    assert set(out) == {app.notice} and out[app.notice].startswith("⚠️")


# --- the browser's alignment and difference map (pairs.js under Node.js) ------------------------------
RUNNER = """
globalThis.document = { createElement: () => ({ getContext: () => ({}) }) }; // canvas.js makes canvases at load
const { readFileSync } = await import("node:fs");
const { align, alignView, differenceMap } = await import("./pairs.js");
const { readTrace } = await import("./payload.js");
const { layout, attentionMatrix, headIndex } = await import("./attention.js");
const input = JSON.parse(readFileSync(0, "utf8"));
const num = (x) => (Number.isNaN(x) ? "nan" : x === Infinity ? "gap" : x === -Infinity ? "future" : x);
const out = { aligned: input.cases.map(([a, b]) => align(a, b)) };
if (input.a) {
  const A = await readTrace(input.a), B = await readTrace(input.b);
  out.maps = input.settings.map((s) => {
    const la = layout(A, s), lb = layout(B, s);
    const ma = attentionMatrix(A, s.view, s.layer - 1, headIndex(s.head), la);
    const mb = attentionMatrix(B, s.view, s.layer - 1, headIndex(s.head), lb);
    const d = differenceMap(la, ma, lb, mb, alignView(A, B, s.view));
    return { rows: d.rows.map((r) => [r.i, r.j]), cols: d.cols.map((c) => [c.i, c.j]),
             matrix: Array.from(d.matrix, num) };
  });
}
console.log(JSON.stringify(out));
"""


def run_pairs_js(tmp_path, cases, a=None, b=None, settings=()):
    for name, text in module_sources("pairs.js").items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "run.mjs").write_text(RUNNER)
    r = subprocess.run(
        [NODE, "run.mjs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        input=json.dumps({"cases": cases, "a": a, "b": b, "settings": list(settings)}),
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


CASES = [
    (["▁My", "▁brother", "▁is", "▁t", "all."], ["▁My", "▁sister", "▁is", "▁t", "all."]),
    (["▁I", "▁have", "▁a", "▁red", "▁car."], ["▁I", "▁have", "▁two", "▁red", "▁cars."]),
    (["a", "b", "c"], ["a", "b", "c"]),
    ([], ["x", "y"]),
    (["x", "y"], []),
    (["a", "b", "a", "b"], ["b", "a", "b", "a"]),
    (["[SOS]", "▁Il", "▁dotto", "re", "[EOS]"], ["[SOS]", "▁La", "▁dotto", "ressa", "[EOS]"]),
]


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the explorer's own pairs.js")
def test_alignment_is_a_longest_common_subsequence(tmp_path):
    results = run_pairs_js(tmp_path, CASES)["aligned"]
    assert results[0] == [[0, 0], [1, None], [None, 1], [2, 2], [3, 3], [4, 4]]  # A's token first, then B's
    assert results[2] == [[0, 0], [1, 1], [2, 2]] and results[3] == [[None, 0], [None, 1]]
    for (a, b), pairs in zip(CASES, results):
        # every token of each side once, in order; matched pairs are equal tokens; as many as an LCS has
        assert [i for i, _ in pairs if i is not None] == list(range(len(a)))
        assert [j for _, j in pairs if j is not None] == list(range(len(b)))
        matched = [(i, j) for i, j in pairs if i is not None and j is not None]
        assert all(a[i] == b[j] for i, j in matched)
        assert len(matched) == lcs_length(a, b), (a, b)


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the explorer's own pairs.js")
def test_difference_map_is_b_minus_a_on_shared_tokens(tmp_path, translator):
    ta, tb = translator.trace(A), translator.trace(LONGER_B)  # words swapped, and one more: some gaps
    pa, pb = encode_trace(ta), encode_trace(tb)
    da, db = decode_payload(pa), decode_payload(pb)  # what the browser decodes
    settings = [
        dict(view=v, layer=1, head=h, step=st, hide=False)
        for v in ("cross", "encoder")
        for h in ("mean", "2")
        for st in (1, min(ta.steps, tb.steps))
    ]
    maps = run_pairs_js(tmp_path, [], pa, pb, settings)["maps"]
    kinds = {type(v).__name__ if not isinstance(v, str) else v for m in maps for v in m["matrix"]}
    assert {"gap", "float"} <= kinds or {"gap", "int"} <= kinds, kinds  # both shared cells and gaps were checked
    for s, m in zip(settings, maps):
        rows, cols = m["rows"], m["cols"]
        x = np.array(m["matrix"], dtype=object).reshape(len(rows), len(cols))
        key = "cross_attn" if s["view"] == "cross" else "encoder_attn"
        head = (lambda w: w.mean(axis=0)) if s["head"] == "mean" else (lambda w: w[int(s["head"]) - 1])
        wa, wb = head(da[key][0]), head(db[key][0])
        # source columns: shared tokens once, a word swapped for another paired with it, the rest gaps
        paired = [(i, j) for i, j in cols if i is not None and j is not None]
        same = [(i, j) for i, j in paired if ta.src_tokens[i] == tb.src_tokens[j]]
        assert len(same) == lcs_length(ta.src_tokens, tb.src_tokens) < len(paired)
        assert len(cols) == len(ta.src_tokens) + len(tb.src_tokens) - len(paired)
        for y, (ri, rj) in enumerate(rows):
            for c, (ci, cj) in enumerate(cols):
                v = x[y, c]
                if s["view"] == "cross" and any(r is not None and r >= s["step"] for r in (ri, rj)):
                    assert v == "future"  # a step not generated yet in either sentence shows nothing
                elif None in (ri, rj, ci, cj):
                    assert v == "gap"
                else:
                    assert v == pytest.approx(float(wb[rj, cj] - wa[ri, ci]), abs=1e-5), (s, y, c)
