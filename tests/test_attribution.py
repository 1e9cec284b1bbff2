"""Direct logit attribution and activation patching (``transformer/interpret/attribution.py``), read
and patched through the model's named points (``transformer.core.recording``).

The exactness checks run on the tiny random checkpoint of ``conftest.py`` and on the shipped
model: the terms sum to the logit (1e-3), patching every component gives B's difference.
Patched rows are also checked against an independent patch made with PyTorch hooks.
"""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from transformer.interpret.attribution import (
    LN_NOTE,
    activation_patching,
    direct_logit_attribution,
    greedy_targets,
    head_terms,
    record,
    step_inputs,
)
from transformer.core import stepping
from transformer.core.config import TransformerConfig
from transformer.core.model import build_model
from transformer.core.translator import Translator

# one thread (conftest): the same kernels on every run, so the tolerances below hold run after run
pytestmark = pytest.mark.usefixtures("one_thread")

TEXT = "the black cat sleeps."
OTHER = "the white dog eats."
TOM = "Tom gave Mary a beautiful present for her birthday."
NICE = "Tom gave Mary a nice present for her birthday."


def teacher_forced_logits(translator, text: str, target_ids: list[int]) -> torch.Tensor:
    """The model's ordinary forward pass (no probes): logits (T, V) of [SOS] + target_ids[:-1]."""
    src = torch.tensor([translator.encode_source(text).ids])
    tgt_in = torch.tensor([[translator.cfg.tgt_sos_id, *target_ids[:-1]]])
    with torch.no_grad():
        return translator.model(src, tgt_in).logits[0]


# ----------------------------------------------------------------------------- the recorded terms
def test_head_terms_split_o_proj_exactly(translator):
    """Summed over heads, plus the bias, the per-head terms are o_proj of the concatenated heads."""
    model = translator.model
    inp = step_inputs(translator, TEXT, 2, [5, 6, 7, 8])
    with torch.no_grad():
        rec = record(model, inp.src, inp.prefix)
        T, H, d_k = inp.prefix.shape[1], model.cfg.h, model.cfg.d_k
        for layer, self_h, cross_h in zip(model.decoder_layers, rec.self_heads, rec.cross_heads):
            assert self_h.shape == cross_h.shape == (1, H, T, d_k)
            for attn, heads in ((layer.self_attn, self_h), (layer.cross_attn, cross_h)):
                at_pos = heads[0, :, -1]  # (H, d_k)
                whole = attn.o_proj(at_pos.reshape(-1))  # (D,)
                split = head_terms(attn, at_pos).sum(0) + attn.o_proj.bias
                torch.testing.assert_close(split, whole, atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- direct logit attribution
@pytest.mark.parametrize("versus", [None, "runner-up", 7])
def test_dla_terms_sum_to_the_logit_on_the_tiny_model(translator, versus):
    target = [9, 5, 7, 11, 3]  # forced: the emitted token is not always the top-1
    logits = teacher_forced_logits(translator, TEXT, target)
    for step in range(len(target)):
        if versus == target[step]:
            continue
        res = direct_logit_attribution(translator, TEXT, step, target_ids=target, versus=versus)
        assert res.token_id == target[step]
        expected = logits[step, res.token_id] - (0.0 if res.versus_id is None else logits[step, res.versus_id])
        assert res.value == pytest.approx(float(expected), abs=1e-4)  # the probed pass is the ordinary one
        assert res.total() == pytest.approx(res.value, abs=1e-3)
        if versus == "runner-up":
            others = logits[step].clone()
            others[res.token_id] = -float("inf")
            assert res.versus_id == int(others.argmax())


def test_dla_terms_sum_to_the_logit_on_the_shipped_model(shipped):
    target = greedy_targets(shipped, [TOM])[0]
    for step in (0, 3, 6, len(target) - 1):
        for versus in (None, "runner-up"):
            res = direct_logit_attribution(shipped, TOM, step, target_ids=target, versus=versus)
            assert abs(res.total() - res.value) < 1e-3, (step, versus, res.total(), res.value)
    # the ordinary forward pass agrees with the probed one on the shipped model too
    logits = teacher_forced_logits(shipped, TOM, target)
    assert res.value == pytest.approx(float(logits[step, res.token_id] - logits[step, res.versus_id]), abs=1e-4)


def test_dla_result_is_json_ready_and_says_how_the_norm_is_folded(translator):
    res = direct_logit_attribution(translator, TEXT, 1, target_ids=[9, 5, 7], versus="runner-up")
    d = json.loads(json.dumps(res.to_dict()))
    L, H = translator.cfg.n_decoder_layers, translator.cfg.h
    assert np.array(d["decoder_self"]).shape == np.array(d["cross"]).shape == (L, H)
    assert len(d["ffn"]) == len(d["cross_bias"]) == len(d["decoder_self_bias"]) == L
    assert d["note"] == LN_NOTE and "frozen" in d["note"]
    assert d["norm_sigma"] > 0
    assert d["prefix_tokens"][0] == "[SOS]" and len(d["prefix_tokens"]) == 2
    top = d["ranking"][0]
    assert abs(top["value"]) == pytest.approx(max(np.abs(res.decoder_self).max(), np.abs(res.cross).max()), abs=1e-5)


def test_dla_refuses_post_norm_training_mode_and_bad_input(translator):
    post = TransformerConfig.from_dict({**translator.cfg.to_dict(), "norm_placement": "post"})
    tr_post = Translator(build_model(post), translator.src_tok, translator.tgt_tok)
    with pytest.raises(ValueError, match="pre-norm"):
        direct_logit_attribution(tr_post, TEXT, 0)
    tr_train = Translator(build_model(translator.cfg), translator.src_tok, translator.tgt_tok)
    tr_train.model.train()
    with pytest.raises(ValueError, match="training mode"):
        direct_logit_attribution(tr_train, TEXT, 0, target_ids=[5, 6])
    with pytest.raises(ValueError, match="step must be 0..1"):
        direct_logit_attribution(translator, TEXT, 2, target_ids=[5, 6])
    with pytest.raises(ValueError, match="chosen token itself"):
        direct_logit_attribution(translator, TEXT, 0, target_ids=[5, 6], versus=5)
    with pytest.raises(ValueError, match="runner-up"):
        direct_logit_attribution(translator, TEXT, 0, target_ids=[5, 6], versus="second")
    with pytest.raises(ValueError, match="PAD"):
        direct_logit_attribution(translator, TEXT, 0, target_ids=[translator.cfg.tgt_pad_id, 6])


def test_dla_figure_shows_the_terms(translator):
    res = direct_logit_attribution(translator, TEXT, 1, target_ids=[9, 5, 7])
    fig = res.figure()
    assert isinstance(fig, go.Figure)
    self_map, cross_map, bars = fig.data
    np.testing.assert_allclose(np.array(self_map.z), res.decoder_self)
    np.testing.assert_allclose(np.array(cross_map.z), res.cross)
    assert sum(bars.y) == pytest.approx(res.total(), abs=1e-9)
    assert "frozen" in fig.layout.title.text and fig.layout.meta["step"] == 2


# ----------------------------------------------------------------------------- activation patching
def hooked_patch(
    translator, a, b, kind: str, layer: int, head: int | None, positions: str, tokens: tuple[int, int] | None = None
) -> float:
    """A's logit difference (of what A and B emit, or of ``tokens``) with one component's output
    replaced by B's at every decoder position (``"prefix"``) or at the step's alone
    (``"step"``), patched with PyTorch hooks on full teacher-forced passes (independent of
    HeadProbe/LayerProbe and of the cache)."""
    model = translator.model
    dec_layer = model.decoder_layers[layer]
    module = {"decoder_self": dec_layer.self_attn.o_proj, "cross": dec_layer.cross_attn.o_proj, "ffn": dec_layer.ffn}[
        kind
    ]
    d_k = model.cfg.d_k
    cols = slice(None) if kind == "ffn" else slice(head * d_k, (head + 1) * d_k)
    rows = slice(None) if positions == "prefix" else slice(-1, None)
    saved = {}

    def keep_b(mod, args, out=None):
        saved["value"] = (args[0] if kind != "ffn" else out).clone()

    def put_b(mod, args, out=None):
        x = (out if kind == "ffn" else args[0]).clone()  # (1, T, D)
        x[:, rows, cols] = saved["value"][:, rows, cols]
        return x if kind == "ffn" else (x,)

    def run(inp, hook):
        handle = module.register_forward_hook(hook) if kind == "ffn" else module.register_forward_pre_hook(hook)
        try:
            with torch.no_grad():
                return model(inp.src, inp.prefix).logits[0, -1]
        finally:
            handle.remove()

    run(b, keep_b)
    logits = run(a, put_b)
    first, second = (a.token, b.token) if tokens is None else tokens
    return float(logits[first] - logits[second])


@pytest.mark.parametrize("positions", ["prefix", "step"])
def test_patching_everything_gives_b_on_the_tiny_model(translator, positions):
    target_a, target_b = [9, 5, 7, 11], [10, 6, 8, 12]
    res = activation_patching(
        translator, TEXT, "i see the dog.", 2, target_a=target_a, target_b=target_b, positions=positions
    )
    assert (res.token_a_id, res.token_b_id) == (7, 8)
    a = step_inputs(translator, TEXT, 2, target_a)
    b = step_inputs(translator, "i see the dog.", 2, target_b)
    la, lb = (
        teacher_forced_logits(translator, TEXT, target_a),
        teacher_forced_logits(translator, "i see the dog.", target_b),
    )
    assert res.diff_a == pytest.approx(float(la[2, 7] - la[2, 8]), abs=1e-4)
    assert res.diff_b == pytest.approx(float(lb[2, 7] - lb[2, 8]), abs=1e-4)
    assert res.patched["all"] == pytest.approx(res.diff_b, abs=1e-3)
    assert res.fraction("all") == pytest.approx(1.0, abs=1e-3)
    assert a.prefix.shape == b.prefix.shape


@pytest.mark.parametrize("positions", ["prefix", "step"])
def test_batched_rows_match_patches_made_with_hooks(translator, positions):
    """Row by row, the batched pass equals patching that one component alone, made with
    forward hooks on o_proj's input and the FFN's output."""
    target_a, target_b = [9, 5, 7, 11], [10, 6, 8, 12]
    res = activation_patching(translator, TEXT, OTHER, 2, target_a=target_a, target_b=target_b, positions=positions)
    a, b = step_inputs(translator, TEXT, 2, target_a), step_inputs(translator, OTHER, 2, target_b)
    L, H = translator.cfg.n_decoder_layers, translator.cfg.h
    for layer in range(L):
        for head in range(H):
            for kind in ("decoder_self", "cross"):
                assert res.patched[kind][layer, head] == pytest.approx(
                    hooked_patch(translator, a, b, kind, layer, head, positions), abs=1e-4
                ), (kind, layer, head)
        assert res.patched["ffn"][layer] == pytest.approx(
            hooked_patch(translator, a, b, "ffn", layer, None, positions), abs=1e-4
        )


def test_patching_sources_of_different_lengths(translator):
    res = activation_patching(
        translator, "the cat sleeps.", "the book is on the table.", 1, target_a=[9, 5, 7], target_b=[10, 6, 8]
    )
    assert res.fraction("all") == pytest.approx(1.0, abs=1e-3)


def test_patching_refuses_equal_tokens_and_bad_input(translator):
    with pytest.raises(ValueError, match="name '.*' twice"):
        activation_patching(translator, TEXT, OTHER, 0, target_a=[9, 5], target_b=[8, 6], tokens_ab=[9, 9])
    with pytest.raises(ValueError, match="positions"):
        activation_patching(translator, TEXT, OTHER, 0, target_a=[9, 5], target_b=[8, 6], positions="all")
    with pytest.raises(ValueError, match="step must be 0..1"):
        activation_patching(translator, TEXT, OTHER, 2, target_a=[9, 5], target_b=[8, 6, 7])
    with pytest.raises(ValueError, match="pair"):
        activation_patching(translator, TEXT, OTHER, 0, target_a=[9, 5], target_b=[8, 6], tokens_ab=[9])


# A and B write the same word at step 2 (token 7) after different prefixes
SAME_A, SAME_B = [9, 5, 7, 11], [10, 6, 7, 12]


def test_the_same_word_in_a_and_b_is_patched_against_as_runner_up(translator):
    """Where A and B emit the same token, the metric is A's lead of it over its runner-up (the
    highest other allowed logit of A's ordinary forward pass); a fraction is the share of that
    lead a component's output from B takes away, so everything patched gives B's lead, and
    each row equals the same patch made with hooks."""
    res = activation_patching(translator, TEXT, OTHER, 2, target_a=SAME_A, target_b=SAME_B)
    la, lb = teacher_forced_logits(translator, TEXT, SAME_A)[2], teacher_forced_logits(translator, OTHER, SAME_B)[2]
    runner = int(stepping.pick(translator.cfg, la.index_fill(0, torch.tensor([7]), float("-inf"))))
    assert (res.metric, res.token_a_id, res.token_b_id) == ("runner-up", 7, runner)
    assert res.diff_a == pytest.approx(float(la[7] - la[runner]), abs=1e-4)
    assert res.diff_b == pytest.approx(float(lb[7] - lb[runner]), abs=1e-4)
    assert res.patched["all"] == pytest.approx(res.diff_b, abs=1e-3)
    assert res.fraction("all") == pytest.approx((res.diff_a - res.diff_b) / res.diff_a, abs=1e-3)
    a, b = step_inputs(translator, TEXT, 2, SAME_A), step_inputs(translator, OTHER, 2, SAME_B)
    for kind, layer, head in (("cross", 0, 1), ("decoder_self", 1, 0), ("ffn", 0, None)):
        by_hand = hooked_patch(translator, a, b, kind, layer, head, "prefix", tokens=(7, runner))
        got = res.patched[kind][layer] if head is None else res.patched[kind][layer, head]
        assert got == pytest.approx(by_hand, abs=1e-4), (kind, layer, head)
        share = res.fraction(kind)[layer] if head is None else res.fraction(kind)[layer, head]
        assert share == pytest.approx((res.diff_a - by_hand) / res.diff_a, abs=1e-4)
    d = json.loads(json.dumps(res.to_dict()))
    assert (d["metric"], d["runner_up_id"], d["reference"]) == ("runner-up", runner, 0.0)
    assert d["runner_up"] == d["token_b"] == translator.tgt_tok.id_to_token(runner)
    assert f"A and B both write “{d['token_a']}” at step 3" in d["summary"]
    assert f"over its runner-up “{d['runner_up']}”" in d["summary"] or "trails A's top token" in d["summary"]
    fig = res.figure()
    assert "both write" in fig.layout.title.text and fig.layout.meta["metric"] == "runner-up"


@pytest.mark.parametrize("positions", ["prefix", "step"])
def test_b_equal_to_a_moves_nothing(translator, positions):
    """B = A: every component's output from B is A's own, so no patch moves A's lead."""
    res = activation_patching(translator, TEXT, TEXT, 2, target_a=SAME_A, target_b=SAME_A, positions=positions)
    assert res.metric == "runner-up" and res.diff_b == pytest.approx(res.diff_a, abs=1e-6)
    for name in ("embedding", "decoder_self", "cross", "ffn", "all"):
        np.testing.assert_allclose(res.fraction(name), 0.0, atol=1e-4)
    greedy = activation_patching(translator, TEXT, TEXT, 0)  # the two greedy translations, as the app asks
    assert greedy.metric == "runner-up" and greedy.fraction("all") == pytest.approx(0.0, abs=1e-4)


def test_the_difference_metric_is_kept_where_a_and_b_differ(translator):
    res = activation_patching(translator, TEXT, OTHER, 2, target_a=[9, 5, 7, 11], target_b=[10, 6, 8, 12])
    d = res.to_dict()
    assert (d["metric"], d["runner_up"], d["reference"]) == ("difference", None, d["diff_b"])
    assert "each component moves when it takes B's output" in d["summary"]


def test_patching_two_word_orders_on_the_shipped_model(shipped):
    """The two sentences part at step 4 (1-based): A says "a" and names Mary first, B says "un"
    and keeps her for the end. Patching every component together moves the whole difference."""
    res = activation_patching(shipped, TOM, NICE, 3)
    assert (res.token_a, res.token_b) == ("▁a", "▁un")
    assert res.diff_a > 0 > res.diff_b
    assert res.patched["all"] == pytest.approx(res.diff_b, abs=1e-3)
    cfg = shipped.cfg
    assert res.fraction("cross").shape == res.fraction("decoder_self").shape == (cfg.n_decoder_layers, cfg.h)
    d = json.loads(json.dumps(res.to_dict()))
    assert d["fraction"]["all"] == pytest.approx(1.0, abs=1e-3)
    assert len(d["ranking"]) == 10
    fig = res.figure()
    np.testing.assert_allclose(np.array(fig.data[1].z), res.fraction("cross"))
    assert fig.layout.meta["view"] == "patching"
    assert d["metric"] == "difference"


def test_the_same_word_on_the_shipped_model(shipped):
    """Both sentences start "Tom ha dato": at step 3 the maps are about A's lead of "dato"."""
    res = activation_patching(shipped, TOM, NICE, 2)
    assert (res.metric, res.token_a) == ("runner-up", "▁dato") and res.diff_a > 0
    assert res.patched["all"] == pytest.approx(res.diff_b, abs=1e-3)
    assert res.summary().startswith("A and B both write “▁dato” at step 3: the maps show how much")
