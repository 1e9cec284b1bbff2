"""Trace.figure (transformer/interpret/figures.py): plotly figures that show what the explorer shows.

Each attention figure is checked against the explorer's own payload (explorer/payload.py,
decoded as the browser decodes it) through a line-by-line Python reading of
``layout()`` and ``attentionMatrix()`` in explorer/web/attention.js, and, where Node.js
is installed, against those very JavaScript functions run on the same payload. The
positional encoding is checked against the model's buffer, the candidates against the
trace's top-k. Everything runs on the tiny random-weight checkpoint of conftest.py.
"""

import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from explorer import payload as P
from explorer.assets import module_sources
from transformer.interpret import figures as F

TOL = 1 / 500  # the payload's one-byte quantisation: at most (row max, rounded up to float16) / 510
# Repeated source and target tokens (each must stay its own column), and a forced target
# prefix: the random-weight model alone emits only [SOS], which hiding specials would empty.
SENTENCE, TARGET = "the cat sees the black cat.", "il gatto nero vede il gatto."
STEPS = ("first", "middle", "last")
HEADS = ("mean", "max", 2)


@pytest.fixture(scope="module")
def trace(translator):
    tr = translator.trace(SENTENCE, forced_prefix=translator.tgt_tok.encode(TARGET).ids)
    assert tr.steps >= 3  # enough steps for rows both generated and not yet generated
    assert len(set(tr.src_tokens)) < len(tr.src_tokens) and len(set(tr.tgt_tokens)) < len(tr.tgt_tokens)
    return tr


@pytest.fixture(scope="module")
def payload(trace):
    """The payload exactly as the browser receives it (through JSON)."""
    return json.loads(json.dumps(P.encode_trace(trace)))


@pytest.fixture(scope="module")
def decoded(payload):
    return P.decode_payload(payload)


def step_number(which: str, steps: int) -> int:
    return {"first": 1, "middle": max(1, steps // 2), "last": steps}[which]


def browser_view(p: dict, arrays: dict, view: str, layer: int, head, step: int, hide: bool):
    """attention.js ``layout()`` (full labels) and ``attentionMatrix()``, line for line, on
    the decoded payload: (row labels, column labels, current row, matrix) with NaN for
    masked cells and -inf for rows not generated yet, as the browser paints them."""
    t = step - 1
    src, tgt, steps, special = p["src_tokens"], p["tgt_tokens"], p["steps"], set(p["special_tokens"])

    def keep(tokens):
        return [i for i in range(len(tokens)) if not (hide and tokens[i] in special)]

    if view == "encoder":
        rows = cols = [(i, src[i]) for i in keep(src)]
        future, current, causal = set(), None, False
    else:
        rows = [
            (i, f"{i + 1}: {tgt[i]} → {tgt[i + 1]}" if i <= t else f"{i + 1}: not generated yet") for i in range(steps)
        ]
        future, current = set(range(t + 1, steps)), t
        if view == "cross":
            cols, causal = [(i, src[i]) for i in keep(src)], False
        else:
            cols, causal = [(j, tgt[j] if j <= t else "(future)") for j in keep(tgt[:steps])], True
    A = arrays[f"{view}_attn"]  # (L, H, Q, K) as the browser decoded it
    H = A.shape[1]
    out = np.zeros((len(rows), len(cols)))
    for r, (q, _) in enumerate(rows):
        if q in future:
            out[r] = -np.inf
            continue
        for c, (k, _) in enumerate(cols):
            if causal and k > q:
                out[r, c] = np.nan
            elif head == "mean":
                out[r, c] = sum(float(A[layer - 1, h, q, k]) for h in range(H)) / H
            elif head == "max":
                out[r, c] = max(float(A[layer - 1, h, q, k]) for h in range(H))
            else:
                out[r, c] = A[layer - 1, head - 1, q, k]
    return [label for _, label in rows], [label for _, label in cols], current, out


def trace_z(fig, name: str) -> np.ndarray:
    """The ``z`` of the figure's trace called ``name`` as floats (None -> NaN); all NaN
    when the figure has no such trace."""
    shape = np.array(fig.data[0].z, dtype=float).shape
    for d in fig.data:
        if d.name == name:
            return np.array(d.z, dtype=float)
    return np.full(shape, np.nan)


def assert_shows(fig, rows, cols, current, ref):
    """The figure shows matrix ``ref`` (browser sentinels: NaN masked, -inf not generated
    yet) with these labels and this current row."""
    assert list(fig.layout.yaxis.ticktext) == rows
    assert list(fig.layout.xaxis.ticktext) == cols
    z = trace_z(fig, "weight")
    assert z.shape == ref.shape
    shown = np.isfinite(ref)
    np.testing.assert_array_equal(np.isfinite(z), shown)  # a weight exactly where the browser paints one
    np.testing.assert_allclose(z[shown], ref[shown], rtol=0, atol=TOL)
    np.testing.assert_array_equal(trace_z(fig, "masked") == 1, np.isnan(ref))
    np.testing.assert_array_equal(trace_z(fig, "not generated yet") == 1, np.isneginf(ref))
    frames = [s for s in fig.layout.shapes if s.type == "rect"]
    if current is None:
        assert not frames
    else:
        (frame,) = frames
        assert (frame.y0, frame.y1) == (current - 0.5, current + 0.5)


@pytest.mark.parametrize("hide", [False, True], ids=["all", "hide-specials"])
@pytest.mark.parametrize("which", STEPS)
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("layer", [1, 2])
@pytest.mark.parametrize("view", ["cross", "decoder", "encoder"])
def test_attention_figure_shows_the_payloads_matrix(trace, payload, decoded, view, layer, head, which, hide):
    step = step_number(which, trace.steps)
    fig = F.figure(trace, view=view, layer=layer, head=head, step=step, hide_specials=hide)
    assert_shows(fig, *browser_view(payload, decoded, view, layer, head, step, hide))
    assert fig.layout.meta == dict(view=view, layer=layer, head=head, step=step, hide_specials=hide)


@pytest.mark.parametrize(
    "view, weights", [("cross", "cross_attn"), ("decoder", "decoder_self_attn"), ("encoder", "encoder_attn")]
)
def test_attention_values_are_the_traces_own_at_full_precision(trace, view, weights):
    a = getattr(trace, weights).astype(np.float64)  # (L, H, Q, K)
    step = trace.steps  # every row generated
    for head, ref in [("mean", a[1].mean(0)), ("max", a[1].max(0)), (3, a[1, 2])]:
        z = trace_z(F.figure(trace, view, layer=2, head=head, step=step), "weight")
        if view == "decoder":
            ref = np.where(np.tril(np.ones_like(ref, bool)), ref, np.nan)
        np.testing.assert_allclose(z, ref, rtol=0, atol=1e-7)


def test_future_rows_and_later_keys_show_no_weight(trace):
    """At step s, s rows of weights; in the decoder only the lower triangle of those rows,
    and keys after step s are labelled "(future)"."""
    T, S = trace.steps, len(trace.src_tokens)
    for s in range(1, T + 1):
        cross = F.figure(trace, "cross", step=s)
        assert np.isfinite(trace_z(cross, "weight")).sum() == s * S
        assert (trace_z(cross, "not generated yet") == 1).sum() == (T - s) * S
        dec = F.figure(trace, "decoder", step=s)
        assert np.isfinite(trace_z(dec, "weight")).sum() == s * (s + 1) // 2
        assert (trace_z(dec, "masked") == 1).sum() == s * T - s * (s + 1) // 2
        assert list(dec.layout.xaxis.ticktext) == trace.tgt_tokens[:s] + ["(future)"] * (T - s)
        future = [label.endswith("not generated yet") for label in dec.layout.yaxis.ticktext]
        assert future == [i >= s for i in range(T)]


NODE = shutil.which("node")
RUNNER = """
globalThis.document = { createElement: () => ({ getContext: () => ({}) }) }; // canvas.js makes canvases at load
const { readFileSync } = await import("node:fs");
const { readTrace } = await import("./payload.js");
const { layout, attentionMatrix, headIndex, validView } = await import("./attention.js");
const input = JSON.parse(readFileSync(0, "utf8"));
const tr = await readTrace(input.payload);
const num = (x) => (Number.isNaN(x) ? "nan" : x === -Infinity ? "-inf" : x);
console.log(JSON.stringify(input.settings.map((s) => {
  const v = validView(tr, s), lay = layout(tr, v);
  return { settings: v, rows: lay.rows.map((r) => r.label), cols: lay.cols.map((c) => c.label),
           current: lay.rows.findIndex((r) => r.current),
           matrix: Array.from(attentionMatrix(tr, v.view, v.layer - 1, headIndex(v.head), lay), num) };
})));
"""


@pytest.mark.skipif(NODE is None, reason="needs Node.js to run the explorer's own attention.js")
def test_figures_match_the_browsers_own_code(trace, payload, tmp_path):
    """The real attention.js and payload.js (Node.js, with a stub document) on the payload:
    the browser's labels and matrix for every view, layer, head and step."""
    for name, text in module_sources("payload.js").items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "run.mjs").write_text(RUNNER)
    settings = [
        dict(view=view, layer=layer, head=str(head), step=step, hide=hide)
        for view in ("cross", "decoder", "encoder")
        for layer in (1, 2)
        for head in HEADS
        for step in sorted({1, 2, trace.steps // 2, trace.steps - 1, trace.steps})
        for hide in (False, True)
    ]
    r = subprocess.run(
        [NODE, "run.mjs"],
        cwd=tmp_path,
        input=json.dumps({"payload": payload, "settings": settings}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(r.stdout)
    assert len(results) == len(settings)
    for s, js in zip(settings, results):
        assert js["settings"] == s  # nothing was clamped: these are the settings the browser drew
        head = s["head"] if s["head"] in ("mean", "max") else int(s["head"])
        fig = F.figure(trace, s["view"], layer=s["layer"], head=head, step=s["step"], hide_specials=s["hide"])
        ref = np.array([{"nan": math.nan, "-inf": -math.inf}.get(x, x) for x in js["matrix"]], dtype=float)
        ref = ref.reshape(len(js["rows"]), len(js["cols"]))
        assert_shows(fig, js["rows"], js["cols"], None if js["current"] < 0 else js["current"], ref)


def test_positional_figure_is_the_models_own_encoding(translator, trace, payload, decoded):
    pe = translator.model.pos_encoding.pe.numpy()  # (max_positions, d_model)
    S, d = len(trace.src_tokens), pe.shape[1]
    fig = F.figure(trace, "positional")
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (S, d)  # by default one row per source token
    np.testing.assert_array_equal(z, pe[:S].astype(np.float64))
    assert list(fig.data[0].x) == list(range(d))
    assert list(fig.layout.yaxis.ticktext) == [f"{i}: {tok}" for i, tok in enumerate(trace.src_tokens)]
    # all the positions the explorer sends, against its (one-byte) copy
    n = decoded["positional_encoding"].shape[0]
    fig = F.figure(trace, "positional", positions=n)
    z = np.array(fig.data[0].z, dtype=float)
    assert z.shape == (n, d) and np.abs(z - decoded["positional_encoding"]).max() <= 1 / 255 + 1e-6
    assert list(fig.layout.yaxis.ticktext)[S:] == [str(i) for i in range(S, n)]  # past the sentence: numbers
    assert "the model's buffer" in fig.layout.title.text
    with pytest.raises(ValueError, match=f"positions must be 1..{pe.shape[0]}"):
        F.figure(trace, "positional", positions=pe.shape[0] + 1)


@pytest.mark.parametrize("which", STEPS)
def test_candidates_figure_is_the_top_k(trace, payload, decoded, which):
    step = step_number(which, trace.steps)
    t = step - 1
    fig = F.figure(trace, "candidates", step=step)
    (bars,) = fig.data
    assert bars.orientation == "h"
    np.testing.assert_array_equal(np.array(bars.x), trace.topk_probs[t].astype(np.float64))
    np.testing.assert_allclose(np.array(bars.x), decoded["topk_probs"][t], rtol=0, atol=1e-7)
    tokens = P.decode_tokens(payload)["topk_tokens"][t]
    assert list(fig.layout.yaxis.ticktext) == tokens == trace.topk_tokens[t]
    assert fig.layout.yaxis.autorange == "reversed"  # most likely on top, as in the app
    emitted = trace.tgt_tokens[step]
    assert list(bars.marker.color) == [F.HIGHLIGHT if tok == emitted else F.BAR for tok in tokens]


@pytest.mark.parametrize("which", STEPS)
def test_rollout_figures_match_the_payload(trace, payload, decoded, which):
    step = step_number(which, trace.steps)
    fig = F.figure(trace, "rollout", step=step)
    z, ref = trace_z(fig, "weight"), decoded["rollout"]  # (T, S)
    np.testing.assert_allclose(z[:step], ref[:step], rtol=0, atol=TOL)
    assert np.isnan(z[step:]).all() and (trace_z(fig, "not generated yet")[step:] == 1).all()
    assert fig.data[0].zmax == pytest.approx(float(trace.rollout.max()))  # the sentence's maximum, as maxOf
    fig = F.figure(trace, "encoder_rollout", hide_specials=True)
    keep = [i for i, tok in enumerate(trace.src_tokens) if tok not in trace.special_tokens]
    np.testing.assert_allclose(trace_z(fig, "weight"), decoded["encoder_rollout"][np.ix_(keep, keep)], rtol=0, atol=TOL)
    assert list(fig.layout.xaxis.ticktext) == [trace.src_tokens[i] for i in keep]


def test_default_step_is_the_whole_translation(trace):
    fig = F.figure(trace)
    assert fig.layout.meta["step"] == trace.steps and fig.layout.meta["view"] == "cross"
    assert np.isfinite(trace_z(fig, "weight")).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(layer=5), "layer must be 1..2, got 5"),
        (dict(layer=0), "layer must be 1..2, got 0"),
        (dict(layer="1"), "layer must be 1..2, got '1'"),
        (dict(layer=True), "layer must be 1..2, got True"),
        (dict(head=0), "head must be 'mean', 'max' or 1..4, got 0"),
        (dict(head="median"), "head must be 'mean', 'max' or 1..4, got 'median'"),
        (dict(head=2.0), "head must be 'mean', 'max' or 1..4, got 2.0"),
        (dict(step=0), "step must be 1..{T}, got 0"),
        (dict(step="T+1"), "step must be 1..{T}, got {T+1}"),
        (dict(step=1.5), "step must be 1..{T}, got 1.5"),
        (dict(view="candidates", step=0), "step must be 1..{T}, got 0"),
        (
            dict(view="heads"),
            "view must be one of cross, decoder, encoder, positional, candidates, rollout, "
            "encoder_rollout; got 'heads'",
        ),
    ],
)
def test_bad_arguments_raise_value_error(trace, kwargs, message):
    T = trace.steps
    if kwargs.get("step") == "T+1":
        kwargs = {**kwargs, "step": T + 1}
    with pytest.raises(ValueError, match=re.escape(message.replace("{T}", str(T)).replace("{T+1}", str(T + 1)))):
        F.figure(trace, **kwargs)


def test_rollout_views_need_a_trace_with_analyses(trace):
    from dataclasses import replace

    bare = replace(trace, rollout=None, encoder_rollout=None)
    for view in ("rollout", "encoder_rollout"):
        with pytest.raises(ValueError, match=f"no {view}"):
            F.figure(bare, view)


def test_library_loads_without_plotly_gradio_or_the_explorer(tmp_path, trace):
    """Trace imports plotly only when a figure is asked for; figures.py needs neither Gradio
    nor the explorer; a figure writes a self-contained HTML file (no network)."""
    code = (
        "import sys, transformer, transformer.core.trace; assert 'plotly' not in sys.modules; "
        "import transformer.interpret.figures; bad = {'gradio', 'explorer'} & {m.split('.')[0] for m in sys.modules}; "
        "assert not bad, bad"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "cross.html"
    F.figure(trace, "decoder", step=2).write_html(out, include_plotlyjs=True)
    html = out.read_text(encoding="utf-8")
    assert "Decoder self-attention" in html and '<script src="http' not in html
