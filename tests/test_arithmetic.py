"""The arithmetic of one attention row (transformer/interpret/arithmetic.py) against the model's own
forward pass: the softmax row must be the trace's recorded row, the weighted value sum
must be what the attention module hands W_o, masked keys exactly the future/padding ones."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch

from tests.helpers import tiny_config
from transformer.interpret import arithmetic
from transformer.interpret.arithmetic import attention_arithmetic
from transformer.core.decoding import greedy_decode
from transformer.core.model import build_model
from transformer.core.translator import Translator

TEXT = "the black cat sleeps."
TOL = 1e-5
KINDS = ("encoder", "decoder_self", "cross")


def attn_module(model, kind, layer):
    if kind == "encoder":
        return model.encoder_layers[layer].self_attn
    return model.decoder_layers[layer].self_attn if kind == "decoder_self" else model.decoder_layers[layer].cross_attn


def n_queries(trace, kind):
    return len(trace.src_ids) if kind == "encoder" else trace.steps


def recorded_row(trace, kind, layer, head, query):
    arr = {"encoder": trace.encoder_attn, "decoder_self": trace.decoder_self_attn, "cross": trace.cross_attn}[kind]
    return arr[layer, head, query]


@torch.no_grad()
def head_outputs(model, trace, kind, layer, head_mask=None):
    """(queries, D): the input of this attention module's W_o (the concatenated heads), one
    row per query, captured by a hook on ``o_proj`` during the model's real passes: the
    encoder's own (fused-attention) pass, and for the decoder kinds the cached step-by-step
    greedy decode replaying the trace's tokens (the pass the trace itself came from)."""
    seen = []
    handle = attn_module(model, kind, layer).o_proj.register_forward_pre_hook(
        lambda mod, args: seen.append(args[0].detach().clone())
    )
    try:
        src = torch.tensor([trace.src_ids])
        if kind == "encoder":
            model.encode(src, head_mask=head_mask)
        else:
            greedy_decode(model, src, forced_prefix=trace.tgt_ids[1:], head_mask=head_mask)
    finally:
        handle.remove()
    if kind == "encoder":
        return seen[0][0]  # (S, D)
    assert all(x.shape[:2] == (1, 1) for x in seen)  # one new position per cached step
    return torch.cat([x[0] for x in seen])  # (steps, D)


def cases(trace, cfg, kind):
    """Every layer, a few heads, every query position."""
    layers = cfg.n_encoder_layers if kind == "encoder" else cfg.n_decoder_layers
    return [
        (layer, head, query)
        for layer in range(layers)
        for head in (0, 1, cfg.h - 1)
        for query in range(n_queries(trace, kind))
    ]


@pytest.fixture(scope="module")
def post_norm_translator(tokenizers_pair):
    """A tiny random model with the paper's post-norm placement."""
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(1)
    return Translator(build_model(tiny_config(src_tok, tgt_tok, norm_placement="post")), src_tok, tgt_tok)


@pytest.fixture(params=["pre", "post"])
def any_translator(request, translator, post_norm_translator):
    tr = translator if request.param == "pre" else post_norm_translator
    assert tr.cfg.norm_placement == request.param
    return tr


# ----------------------------------------------------------------------------- the row
@pytest.mark.parametrize("kind", KINDS)
def test_softmax_row_equals_the_traced_row(any_translator, kind):
    trace = any_translator.trace(TEXT)
    worst = 0.0
    for layer, head, query in cases(trace, any_translator.cfg, kind):
        row = attention_arithmetic(any_translator, trace, kind, layer, head, query)
        expected = recorded_row(trace, kind, layer, head, query)
        diff = float(np.abs(row.weights - expected).max())
        assert diff <= TOL, (kind, layer, head, query, diff)
        assert row.max_abs_diff_vs_trace == pytest.approx(diff, abs=1e-9)
        worst = max(worst, diff)
    assert worst < TOL


@pytest.mark.parametrize("kind", KINDS)
def test_weighted_value_sum_is_the_heads_output_in_the_forward_pass(any_translator, kind):
    model, cfg = any_translator.model, any_translator.cfg
    trace = any_translator.trace(TEXT)
    captured = {}
    for layer, head, query in cases(trace, cfg, kind):
        if layer not in captured:
            captured[layer] = head_outputs(model, trace, kind, layer)
        row = attention_arithmetic(any_translator, trace, kind, layer, head, query)
        d_k = cfg.d_model // cfg.h
        expected = captured[layer][query, head * d_k : (head + 1) * d_k].numpy()
        assert row.out.shape == (d_k,)
        np.testing.assert_allclose(row.out, expected, rtol=0, atol=TOL, err_msg=f"{kind} {layer} {head} {query}")
        # and the sum is literally sum_j w_j v_j over the returned numbers
        np.testing.assert_allclose(row.weights @ row.v, row.out, rtol=0, atol=1e-6)


def test_every_number_follows_from_the_ones_before(translator):
    """dots = q·k_j, scores = dots/sqrt(d_k), exp/sum = weights, contributions = |w_j v_j|."""
    trace = translator.trace(TEXT)
    row = attention_arithmetic(translator, trace, "cross", 1, 2, min(2, trace.steps - 1))
    d_k = translator.cfg.d_model // translator.cfg.h
    n = len(trace.src_ids)
    assert row.d_k == d_k and row.scale == math.sqrt(d_k)
    assert row.q.shape == (d_k,) and row.k.shape == row.v.shape == (n, d_k)
    np.testing.assert_allclose(row.dots, row.k @ row.q, rtol=0, atol=1e-5)
    np.testing.assert_allclose(row.scores, row.dots / math.sqrt(d_k), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(row.exp_scores / row.sum_exp, row.weights, rtol=0, atol=1e-6)
    assert row.max_score == pytest.approx(float(row.scores.max()))
    np.testing.assert_allclose(row.contributions, np.linalg.norm(row.weights[:, None] * row.v, axis=1), rtol=1e-5)
    assert row.weights.sum() == pytest.approx(1.0, abs=1e-6)
    # labels
    assert row.key_tokens == trace.src_tokens
    assert row.query_token == trace.tgt_tokens[row.query] and row.output_token == trace.tgt_tokens[row.query + 1]
    assert [t["key"] for t in row.top] == list(np.argsort(-row.contributions, kind="stable")[: len(row.top)])
    assert len(row.top) == min(arithmetic.TOP_K, n) and row.top[0]["token"] == trace.src_tokens[row.top[0]["key"]]
    assert row.head_scale == 1.0


def test_query_is_made_by_the_modules_own_projection(translator):
    """q = head slice of q_proj(x_q), x_q = LayerNorm(layer input) in a pre-norm model:
    recomputed here from the embeddings, independently of the capture."""
    model, cfg = translator.model, translator.cfg
    trace = translator.trace(TEXT)
    src = torch.tensor([trace.src_ids])
    with torch.no_grad():
        x = model.pos_encoding(model.src_embed(src))  # input of encoder layer 0
        h = model.encoder_layers[0].self_attn_block.norm(x)
        q_all = model.encoder_layers[0].self_attn.q_proj(h)[0]  # (S, D)
    d_k = cfg.d_model // cfg.h
    for head in range(cfg.h):
        row = attention_arithmetic(translator, trace, "encoder", 0, head, 1)
        np.testing.assert_allclose(row.q, q_all[1, head * d_k : (head + 1) * d_k].numpy(), rtol=0, atol=1e-6)


def test_unscaled_scores_would_not_match_the_trace(translator):
    """The trace comparison has teeth: without the 1/sqrt(d_k) the softmax is another row."""
    trace = translator.trace(TEXT)
    row = attention_arithmetic(translator, trace, "encoder", 1, 0, 2)
    unscaled = np.exp(row.dots - row.dots.max())
    unscaled /= unscaled.sum()
    assert np.abs(unscaled - recorded_row(trace, "encoder", 1, 0, 2)).max() > 1e-3


# ----------------------------------------------------------------------------- masks
def test_decoder_self_attention_masks_exactly_the_future(translator):
    trace = translator.trace(TEXT)
    T = trace.steps
    for t in range(T):
        row = attention_arithmetic(translator, trace, "decoder", 1, 3, t)  # "decoder": synonym
        assert row.kind == "decoder_self"
        future = np.arange(T) > t
        assert row.key_tokens == trace.tgt_tokens[:T]
        assert row.masked.dtype == bool and np.array_equal(row.masked, future)
        assert row.mask_reasons == ["future" if f else None for f in future]
        assert np.all(row.weights[future] == 0.0) and np.all(row.exp_scores[future] == 0.0)
        assert np.all(row.weights[~future] > 0.0)
        assert np.all(np.isfinite(row.scores))  # masked keys keep their real score
        assert all(not row.masked[c["key"]] for c in row.top)


def test_padding_keys_are_masked_with_their_reason(translator):
    """A trace's source is never padded, so pad one by hand (its attention taken from the
    model's own teacher-forced pass on the padded source): [PAD] keys get weight 0."""
    model, cfg = translator.model, translator.cfg
    trace = translator.trace(TEXT)
    src_ids = [*trace.src_ids, cfg.src_pad_id, cfg.src_pad_id]
    src = torch.tensor([src_ids])
    tgt_in = torch.tensor([trace.tgt_ids[: trace.steps]])
    with torch.no_grad():
        out = model(src, tgt_in, need_weights=True)
    padded = dataclasses.replace(
        trace,
        src_ids=src_ids,
        src_tokens=[*trace.src_tokens, "[PAD]", "[PAD]"],
        encoder_attn=torch.stack(out.encoder_attn)[:, 0].numpy(),
        decoder_self_attn=torch.stack(out.decoder_self_attn)[:, 0].numpy(),
        cross_attn=torch.stack(out.cross_attn)[:, 0].numpy(),
    )
    is_pad = np.array([i == cfg.src_pad_id for i in src_ids])
    for kind, query in (("encoder", 1), ("encoder", len(src_ids) - 1), ("cross", 0), ("cross", trace.steps - 1)):
        row = attention_arithmetic(translator, padded, kind, 0, 1, query)
        assert np.array_equal(row.masked, is_pad)
        assert row.mask_reasons == ["padding" if p else None for p in is_pad]
        assert np.all(row.weights[is_pad] == 0.0)
        assert row.max_abs_diff_vs_trace <= TOL
        # padding changes nothing for the real keys: the unpadded row, zeros appended
        if kind == "cross" or query < len(trace.src_ids):
            plain = attention_arithmetic(translator, trace, kind, 0, 1, query)
            np.testing.assert_allclose(row.weights[~is_pad], plain.weights, rtol=0, atol=TOL)


# ----------------------------------------------------------------------------- knock-out, JSON, errors
def test_knocked_out_trace_with_its_head_mask(translator):
    cfg = translator.cfg
    mask = {k: torch.ones(2, cfg.h) for k in KINDS}
    mask["cross"][0, 1] = 0.0
    mask["encoder"][0, 2] = 0.0
    trace = translator.trace(TEXT, head_mask=mask)
    for kind, layer, head in (("cross", 0, 1), ("cross", 1, 1), ("encoder", 1, 0), ("decoder_self", 1, 2)):
        outputs = head_outputs(translator.model, trace, kind, layer, head_mask=mask)
        d_k = cfg.d_model // cfg.h
        for query in range(n_queries(trace, kind)):
            row = attention_arithmetic(translator, trace, kind, layer, head, query, head_mask=mask)
            assert row.max_abs_diff_vs_trace <= TOL
            assert row.head_scale == float(mask[kind][layer, head])
            # W_o reads head_scale * out: zero for the silenced head
            expected = outputs[query, head * d_k : (head + 1) * d_k].numpy()
            np.testing.assert_allclose(row.head_scale * row.out, expected, rtol=0, atol=TOL)


def significant_digits(x: float) -> int:
    """Significant digits of the shortest repr of ``x`` (what JSON sends)."""
    mantissa = repr(abs(x)).split("e")[0].replace(".", "")
    return len(mantissa.lstrip("0").rstrip("0")) or 1


def test_to_dict_is_small_rounded_json(translator):
    trace = translator.trace(TEXT)
    row = attention_arithmetic(translator, trace, "decoder_self", 0, 0, trace.steps - 1)
    d = json.loads(row.to_json())
    assert d["schema"] == "attention-row/1" and d["kind"] == "decoder_self"
    assert d["d_k"] == row.d_k and len(d["q"]) == row.d_k and len(d["k"]) == len(d["key_tokens"]) == trace.steps
    assert d["masked"] == row.masked.tolist() and d["mask_reasons"] == row.mask_reasons
    for key in ("q", "dots", "scores", "weights", "out", "contributions"):
        np.testing.assert_allclose(d[key], getattr(row, key), rtol=1e-5, atol=1e-12)
        assert all(significant_digits(x) <= 6 for x in d[key]), d[key]
    np.testing.assert_allclose(d["k"], row.k, rtol=1e-5, atol=1e-12)
    assert d == row.to_dict()
    assert json.loads(row.to_json(digits=3))["weights"][0] == float(f"{row.weights[0]:.3g}")


def test_bad_arguments_raise_value_error(translator):
    cfg = translator.cfg
    trace = translator.trace(TEXT)
    S, T = len(trace.src_ids), trace.steps
    bad = [
        (("attention", 0, 0, 0), "unknown attention kind"),
        ((None, 0, 0, 0), "unknown attention kind"),
        (("encoder", cfg.n_encoder_layers, 0, 0), r"layer 2 out of range 0\.\.1"),
        (("cross", -1, 0, 0), "layer -1 out of range"),
        (("cross", True, 0, 0), "layer must be an integer"),
        (("decoder_self", 0, cfg.h, 0), r"head 4 out of range 0\.\.3"),
        (("decoder_self", 0, 0, T), rf"query {T} is beyond the trace: its decoding steps are 0\.\.{T - 1}"),
        (("cross", 0, 0, -1), "beyond the trace"),
        (("encoder", 0, 0, S), rf"query {S} is beyond the source: positions are 0\.\.{S - 1}"),
        (("encoder", 0, 0, 1.0), "query must be an integer"),
    ]
    for args, message in bad:
        with pytest.raises(ValueError, match=message):
            attention_arithmetic(translator, trace, *args)
    other = dataclasses.replace(trace, encoder_attn=trace.encoder_attn[:1])
    with pytest.raises(ValueError, match="another model"):
        attention_arithmetic(translator, other, "encoder", 0, 0, 0)
    with pytest.raises(TypeError):
        attention_arithmetic("model", trace, "encoder", 0, 0, 0)


def test_training_mode_is_refused_and_nothing_is_left_on_the_model(tokenizers_pair):
    src_tok, tgt_tok = tokenizers_pair
    torch.manual_seed(0)
    tr = Translator(build_model(tiny_config(src_tok, tgt_tok)), src_tok, tgt_tok)
    trace = tr.trace(TEXT)
    before = {name: (set(vars(m)), len(m._forward_pre_hooks)) for name, m in tr.model.named_modules()}
    attention_arithmetic(tr.model, trace, "cross", 0, 0, 0)  # a bare Transformer works too
    after = {name: (set(vars(m)), len(m._forward_pre_hooks)) for name, m in tr.model.named_modules()}
    assert before == after
    tr.model.train()
    try:
        with pytest.raises(ValueError, match="training mode"):
            attention_arithmetic(tr, trace, "encoder", 0, 0, 0)
    finally:
        tr.model.eval()


def test_the_call_is_read_from_the_recording_of_one_pass(translator):
    """What the row is computed from is what the attention read in an ordinary pass (the
    recording's points), with the query's own length, and nothing is left on the module."""
    model = translator.model
    trace = translator.trace(TEXT)
    module = model.encoder_layers[0].self_attn
    call = arithmetic._run(model, trace, "encoder", 0, None)
    assert set(call) == set(arithmetic.CALL_POINTS)
    assert call["query_in"].shape[1] == len(trace.src_ids) and call["head_mask"] is None
    assert len(module._forward_pre_hooks) == len(module._forward_hooks) == 0


# ----------------------------------------------------------------------------- the shipped model
@pytest.fixture(scope="module")
def sofa(shipped):
    return shipped.trace("The black cat sleeps on the red sofa near the window.")


@pytest.mark.parametrize(
    "kind,layer,head",
    [
        ("encoder", 0, 0),
        ("encoder", 2, 5),
        ("decoder_self", 1, 3),
        ("decoder_self", 2, 7),
        ("cross", 0, 2),
        ("cross", 2, 6),
    ],
)
def test_shipped_checkpoint(shipped, sofa, kind, layer, head):
    tr, trace = shipped, sofa
    outputs = head_outputs(tr.model, trace, kind, layer)
    d_k = tr.cfg.d_model // tr.cfg.h
    for query in range(n_queries(trace, kind)):
        row = attention_arithmetic(tr, trace, kind, layer, head, query)
        assert row.d_k == d_k == 32
        assert np.abs(row.weights - recorded_row(trace, kind, layer, head, query)).max() <= TOL
        np.testing.assert_allclose(row.out, outputs[query, head * d_k : (head + 1) * d_k].numpy(), rtol=0, atol=TOL)
        if kind == "decoder_self":
            assert np.array_equal(row.masked, np.arange(trace.steps) > query)
        else:
            assert not row.masked.any()
    assert len(row.to_json()) < 20_000  # one small request for ~16 keys
