"""The figure builders: what the user sees must be right (rows = queries, [0, 1] scale...)."""

import json

import numpy as np
import pytest

from transformer import viewer, viz


@pytest.fixture(scope="module")
def trace(translator):
    return translator.trace("the black cat sleeps.")


def heat(fig, i=0):
    return fig.data[i]


def test_attention_figure_axes_scale_and_hover(trace):
    fig = viewer.attention_figure(trace, viewer.ENCODER, 0, 0, "0", False)
    h = heat(fig)
    assert (h.zmin, h.zmax) == (0.0, 1.0) and h.colorbar.title.text == "weight"
    z = np.array(h.z, dtype=float)
    S = len(trace.src_tokens)
    assert z.shape == (S, S)  # rows = queries, columns = keys
    np.testing.assert_allclose(z, np.round(trace.encoder_attn[0, 0], 4))
    assert list(fig.layout.yaxis.ticktext) == [f"{i}: {t}" for i, t in enumerate(trace.src_tokens)]
    assert fig.layout.yaxis.autorange == "reversed"
    assert "query: source token" in h.hovertemplate and "weight" in h.hovertemplate
    assert h.customdata[1][2][0].startswith("1:") and h.customdata[1][2][1].startswith("2:")


def test_mean_and_max_over_heads(trace):
    mean = np.array(heat(viewer.attention_figure(trace, viewer.CROSS, 1, 1, "mean", False)).z, dtype=float)
    mx = np.array(heat(viewer.attention_figure(trace, viewer.CROSS, 1, 1, "max", False)).z, dtype=float)
    np.testing.assert_allclose(mean[:2], np.round(trace.cross_attn[1].mean(0)[:2], 4), atol=1e-6)
    np.testing.assert_allclose(mx[:2], np.round(trace.cross_attn[1].max(0)[:2], 4), atol=1e-6)
    assert np.all(np.isnan(mean[2:]))  # rows after step 1 are hidden


def test_decoder_future_is_masked_and_later_rows_dimmed(trace):
    t = 2
    fig = viewer.attention_figure(trace, viewer.DECODER, t, 0, "1", False)
    z = np.array(heat(fig).z, dtype=float)
    T = trace.steps
    assert z.shape == (T, T)
    mask_trace = heat(fig, 1)
    m = np.array(mask_trace.z, dtype=float)
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert np.all(m[future] == 1) and np.all(np.isnan(m[~future]))  # grey "masked" cells
    assert np.all(np.isnan(z[future]))
    np.testing.assert_allclose(z[t, : t + 1], np.round(trace.decoder_self_attn[0, 1, t, : t + 1], 4))
    assert np.all(np.isnan(z[t + 1 :]))  # not generated yet
    shapes = fig.layout.shapes
    assert shapes[0].y0 == t - 0.5 and shapes[0].line.color == viz.HIGHLIGHT  # current row outlined
    assert any(a.text == "not generated yet" for a in fig.layout.annotations)


def test_hide_special_tokens(trace):
    fig = viewer.attention_figure(trace, viewer.ENCODER, 0, 0, "mean", True)
    labels = list(fig.layout.xaxis.ticktext)
    assert len(labels) == len(trace.src_tokens) - 2 and not any("[SOS]" in l or "[EOS]" in l for l in labels)
    assert labels[0].startswith("1:")  # original positions are kept


def test_token_labels_are_escaped(translator):
    tr = translator.trace("<b>the</b> cat & dog")
    fig = viewer.attention_figure(tr, viewer.ENCODER, 0, 0, "mean", False)
    text = json.dumps(list(fig.layout.xaxis.ticktext))
    assert "<b>" not in text and "<" not in "".join(fig.layout.xaxis.ticktext)


def test_heads_grid_has_every_layer_and_head(trace):
    fig = viewer.grid_figure(trace, viewer.CROSS, 1, 0)
    L, H, T, S = trace.cross_attn.shape
    z = np.array(heat(fig).z, dtype=float)
    assert z.shape == (L * (T + 1) - 1, H * (S + 1) - 1)
    np.testing.assert_allclose(z[0:2, 0:S], np.round(trace.cross_attn[0, 0, :2], 3))
    r0, c0 = (T + 1), 2 * (S + 1)  # layer 2, head 3
    np.testing.assert_allclose(z[r0 : r0 + 2, c0 : c0 + S], np.round(trace.cross_attn[1, 2, :2], 3))
    assert list(fig.layout.xaxis.ticktext) == [f"head {h + 1}" for h in range(H)]
    assert len(fig.layout.shapes) == L  # the current step outlined in every layer
    assert (heat(fig).zmin, heat(fig).zmax) == (0, 1)


def test_heads_grid_caps_long_inputs_to_one_layer():
    attn = np.random.default_rng(0).random((3, 8, 60, 60))
    fig = viz.heads_grid_figure(attn, ["a"] * 60, ["b"] * 60, title="t", layers=[0, 1, 2])
    assert list(fig.layout.yaxis.ticktext) == ["layer 1"]


def test_topk_figure_marks_the_emitted_token(trace):
    fig = viewer.topk_figure(trace, 0)
    bar = fig.data[0]
    assert list(bar.x) == [round(float(p), 4) for p in trace.topk_probs[0]]
    assert bar.marker.color[0] == viz.HIGHLIGHT  # greedy: the top candidate was emitted
    assert list(fig.layout.xaxis.range) == [0, 1.08]


def test_positional_encoding_figures(trace):
    heat_fig, sim_fig, curves = viewer.pe_figures(trace, 10, 3)
    z = np.array(heat_fig.data[0].z, dtype=float)
    np.testing.assert_allclose(z, np.round(trace.positional_encoding[:10], 3))
    sim = np.array(sim_fig.data[0].z, dtype=float)
    assert sim.shape == (10, 10) and np.allclose(np.diag(sim), 1.0, atol=1e-3)
    assert sim[3, 4] > sim[3, 9]  # nearby positions are more alike
    assert heat_fig.layout.shapes[0].y0 == 2.5  # the followed position is outlined
    assert curves.data[0].name.startswith("dim 0 (sin)")
    assert trace.src_tokens[2] in viewer.position_text(trace, 2) and "past the end" in viewer.position_text(trace, 30)


def test_candidates_and_whatif_prefix(trace):
    choices = viewer.candidate_choices(trace, 1)
    assert choices[0][1] == 0 and trace.topk_tokens[1][0] in choices[0][0]
    prefix = viewer.whatif_prefix(trace, 1, 2)
    assert prefix == [trace.tgt_ids[1], int(trace.topk_ids[1][2])]
