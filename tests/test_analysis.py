"""Head mask, knock-out, head importance, logit lens, rollout and head diagnostics."""

import json
import sys
import types

import numpy as np
import pytest
import torch

from transformer.core import readings
from transformer.interpret import knockout as knockouts
from transformer.core.readings import aggregate_head_stats, encoder_rollout, head_stats, source_relevance
from transformer.interpret.habits import HABIT_RULE, with_habits
from transformer.interpret.knockout import head_importance, knockout, parse_heads
from transformer.cli.head_stats import main as analyze_main
from transformer.core.decoding import greedy_decode
from transformer.core.trace import Trace

TEXT = "the black cat sleeps."
OTHER = "where is the station?"


def ones_mask(cfg, **zeros):
    """Head mask with every head on except the (layer, head) pairs given per kind."""
    mask = {k: torch.ones(knockouts.n_layers(cfg, k), cfg.h) for k in knockouts.KINDS}
    for kind, pairs in zeros.items():
        for layer, head in pairs:
            mask[kind][layer, head] = 0.0
    return mask


def tf_inputs(translator, text):
    src = torch.tensor([translator.encode_source(text).ids])
    ids = greedy_decode(translator.model, src).ids[0]
    tgt = [translator.cfg.tgt_sos_id, *ids]
    return src, torch.tensor([tgt[:-1]]), torch.tensor([tgt[1:]])


# ----------------------------------------------------------------------------- head mask
@pytest.mark.parametrize("need_weights", [False, True])
def test_all_ones_head_mask_changes_nothing_exactly(translator, need_weights):
    src, tgt_in, _ = tf_inputs(translator, TEXT)
    with torch.no_grad():
        plain = translator.model(src, tgt_in, need_weights=need_weights).logits
        masked = translator.model(src, tgt_in, need_weights=need_weights, head_mask=ones_mask(translator.cfg)).logits
    assert torch.equal(plain, masked)


def test_head_mask_agrees_between_fused_and_explicit_attention(translator):
    model, cfg = translator.model, translator.cfg
    src, tgt_in, _ = tf_inputs(translator, TEXT)
    g = torch.Generator().manual_seed(1)
    mask = {k: (torch.rand(3, knockouts.n_layers(cfg, k), cfg.h, generator=g) > 0.4).float() for k in knockouts.KINDS}
    src3, tgt3 = src.expand(3, -1), tgt_in.expand(3, -1)
    with torch.no_grad():
        fused = model(src3, tgt3, need_weights=False, head_mask=mask).logits
        explicit = model(src3, tgt3, need_weights=True, head_mask=mask).logits
        plain = model(src3, tgt3).logits
    torch.testing.assert_close(fused, explicit, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(fused, plain, atol=1e-4)
    # a batch of masks (B, L, H) equals each (L, H) mask run alone
    for b in range(3):
        with torch.no_grad():
            alone = model(src, tgt_in, head_mask={k: m[b] for k, m in mask.items()}).logits
        torch.testing.assert_close(fused[b : b + 1], alone, rtol=1e-5, atol=1e-5)


def test_silenced_head_output_is_zero_before_o_proj(translator):
    model, cfg = translator.model, translator.cfg
    src, tgt_in, _ = tf_inputs(translator, TEXT)
    seen = {}
    attn = model.decoder_layers[1].cross_attn
    handle = attn.o_proj.register_forward_pre_hook(lambda mod, args: seen.__setitem__("x", args[0].clone()))
    try:
        with torch.no_grad():
            model(src, tgt_in, head_mask=ones_mask(cfg, cross=[(1, 2)]))
    finally:
        handle.remove()
    d_k = cfg.d_model // cfg.h
    x = seen["x"]  # (B, T, D): heads concatenated
    assert torch.all(x[..., 2 * d_k : 3 * d_k] == 0)
    assert torch.all(x[..., :d_k].abs().sum(-1) > 0)


def test_cached_decoding_honours_the_head_mask(translator):
    """Greedy decoding with a KV cache and a mask emits the argmax of the masked
    teacher-forced pass at every step."""
    model, cfg = translator.model, translator.cfg
    src = torch.tensor([translator.encode_source(OTHER).ids])
    mask = ones_mask(cfg, encoder=[(0, 1)], decoder_self=[(1, 0), (0, 3)], cross=[(0, 0), (1, 1)])
    ids = greedy_decode(model, src, head_mask=mask).ids[0]
    tgt = [cfg.tgt_sos_id, *ids]
    with torch.no_grad():
        logits = model(src, torch.tensor([tgt[:-1]]), head_mask=mask).logits[0]
    assert logits.argmax(-1).tolist() == ids


def test_bad_head_masks_are_clear_errors(translator):
    src, tgt_in, _ = tf_inputs(translator, TEXT)
    with pytest.raises(ValueError, match="unknown head_mask keys"):
        translator.model(src, tgt_in, head_mask={"decoder": torch.ones(2, 4)})
    with pytest.raises(ValueError, match=r"must be \(layers, heads\)"):
        translator.model(src, tgt_in, head_mask={"cross": torch.ones(4, 2)})
    with pytest.raises(ValueError, match="batch of 3 masks"):
        translator.model(src, tgt_in, head_mask={"cross": torch.ones(3, 2, 4)})
    with pytest.raises(TypeError, match="head_mask must be a dict"):
        translator.model(src, tgt_in, head_mask=torch.ones(2, 4))


# ----------------------------------------------------------------------------- heads format
def test_parse_heads_accepts_dicts_and_shorthand_and_rejects_the_rest(translator):
    cfg = translator.cfg
    got = parse_heads([{"kind": "cross", "layer": 1, "head": 3}, "encoder:0:2", "cross:1:3"], cfg)
    assert got == [{"kind": "encoder", "layer": 0, "head": 2}, {"kind": "cross", "layer": 1, "head": 3}]
    assert parse_heads("cross:1:3, decoder_self:0:0", cfg) == parse_heads(["decoder_self:0:0", "cross:1:3"], cfg)
    assert parse_heads("", cfg) == [] and parse_heads([], cfg) == []
    for bad, msg in [
        (["cross:2:0"], r"layer 2 out of range 0..1"),
        (["cross:0:4"], r"head 4 out of range 0..3"),
        (["attn:0:0"], "unknown kind 'attn'"),
        (["cross:0"], "expected 'kind:layer:head'"),
        (["cross:a:0"], "must be integers"),
        ([{"kind": "cross", "layer": 0}], "lacks head"),
        ([{"kind": "cross", "layer": True, "head": 0}], "must be integers"),
        ([3], r"heads\[0\] is a int"),
        (5, "heads must be a list"),
    ]:
        with pytest.raises(ValueError, match=msg):
            parse_heads(bad, cfg)


# ----------------------------------------------------------------------------- knock-out
def test_empty_knockout_gives_the_original_translation_and_probabilities_exactly(translator):
    res = knockout(translator, TEXT, [])
    assert res["heads"] == [] and not res["changed"]
    assert res["knockout"]["translation"] == res["original"]["translation"] == translator.translate([TEXT])[0]
    assert res["knockout"]["ids"] == res["original"]["ids"]
    assert res["steps"]["p_knockout"] == res["steps"]["p_original"]
    assert res["steps"]["logprob_knockout"] == res["steps"]["logprob_original"]
    # p_original is the probability greedy decoding saw for the token it emitted
    trace = translator.trace(TEXT)
    np.testing.assert_allclose(res["steps"]["p_original"], trace.topk_probs[:, 0], atol=1e-5)
    json.dumps(res)


@pytest.mark.parametrize("kind", ["encoder", "decoder_self", "cross"])
def test_knocking_out_every_head_of_a_kind_changes_the_output(translator, kind):
    cfg = translator.cfg
    every = [f"{kind}:{layer}:{h}" for layer in range(knockouts.n_layers(cfg, kind)) for h in range(cfg.h)]
    res = knockout(translator, TEXT, every)
    assert len(res["heads"]) == len(every)
    assert not np.allclose(res["steps"]["p_knockout"], res["steps"]["p_original"], atol=1e-4)
    assert len(res["steps"]["p_knockout"]) == len(res["original"]["ids"]) - 1
    if kind == "cross":
        # without cross-attention the decoder cannot read the source at all
        # (the step limit depends on the source length, so compare the common prefix)
        other = knockout(translator, OTHER, every)
        a, b = res["knockout"]["ids"], other["knockout"]["ids"]
        n = min(len(a), len(b))
        assert a[:n] == b[:n]
        a, b = res["original"]["ids"], other["original"]["ids"]
        assert a[: min(len(a), len(b))] != b[: min(len(a), len(b))]  # with cross-attention they differ


def test_knockout_validates_heads(translator):
    with pytest.raises(ValueError, match="out of range"):
        knockout(translator, TEXT, ["decoder_self:5:0"])


# ----------------------------------------------------------------------------- importance
def test_batched_head_importance_equals_one_head_at_a_time(translator):
    model, cfg = translator.model, translator.cfg
    res = head_importance(translator, TEXT)
    src, tgt_in, target = tf_inputs(translator, TEXT)

    def logp(mask=None):
        with torch.no_grad():
            lp = model(src, tgt_in, head_mask=mask).logits.log_softmax(-1)
        return lp.gather(-1, target[..., None])[0, :, 0]  # (T,)

    base = logp()
    assert res["logprob"] == pytest.approx(float(base.sum()), abs=1e-4)
    for kind in knockouts.KINDS:
        imp = np.array(res["importance"][kind])
        per_step = np.array(res["per_step"][kind])
        assert imp.shape == (knockouts.n_layers(cfg, kind), cfg.h)
        for layer in range(imp.shape[0]):
            for h in range(cfg.h):
                drop = base - logp(ones_mask(cfg, **{kind: [(layer, h)]}))
                assert imp[layer, h] == pytest.approx(float(drop.sum()), abs=1e-4)
                np.testing.assert_allclose(per_step[layer, h], drop.numpy(), atol=1e-4)
    ranked = [r["drop"] for r in res["ranking"]]
    assert ranked == sorted(ranked, reverse=True)
    # smaller batches give the same numbers
    chunked = head_importance(translator, TEXT, batch_size=5)
    for kind in knockouts.KINDS:
        np.testing.assert_allclose(chunked["importance"][kind], res["importance"][kind], atol=1e-4)
    json.dumps(res)


# ----------------------------------------------------------------------------- logit lens
def test_logit_lens_last_layer_is_the_recorded_topk_and_layers_match_a_recompute(translator):
    trace = translator.trace(TEXT)
    L, T = translator.cfg.n_decoder_layers, trace.steps
    assert trace.logit_lens_ids.shape == (T, L, 5) and trace.logit_lens_probs.shape == (T, L, 5)
    np.testing.assert_array_equal(trace.logit_lens_ids[:, -1], trace.topk_ids[:, :5])
    np.testing.assert_allclose(trace.logit_lens_probs[:, -1], trace.topk_probs[:, :5], atol=1e-6)
    assert trace.logit_lens_tokens[1][0][0] == translator.tgt_tok.id_to_token(int(trace.logit_lens_ids[1, 0, 0]))
    # an earlier layer: decode teacher-forced with the hidden states, norm, project
    model = translator.model
    src = torch.tensor([trace.src_ids])
    with torch.no_grad():
        memory, _ = model.encode(src)
        dec = model.decode(torch.tensor([trace.tgt_ids[:-1]]), memory, model.src_mask(src), need_hidden_states=True)
        probs = model.project(model.decoder_norm(dec.layer_hidden[0]))[0].softmax(-1)
    p, i = probs.topk(5, dim=-1)
    np.testing.assert_array_equal(trace.logit_lens_ids[:, 0], i.numpy())
    np.testing.assert_allclose(trace.logit_lens_probs[:, 0], p.numpy(), atol=1e-5)
    first = readings.logit_lens_first_layer(trace)
    assert len(first) == T and all(f is not None and 0 <= f < L for f in first)


# ----------------------------------------------------------------------------- rollout
def test_rollout_rows_sum_to_one_and_depend_only_on_earlier_steps(translator):
    trace = translator.trace(OTHER)
    S, T = len(trace.src_tokens), trace.steps
    assert trace.encoder_rollout.shape == (S, S) and trace.rollout.shape == (T, S)
    np.testing.assert_allclose(trace.encoder_rollout.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(trace.rollout.sum(-1), 1.0, atol=1e-5)
    assert (trace.rollout >= 0).all()
    np.testing.assert_allclose(trace.encoder_rollout, encoder_rollout(trace.encoder_attn), atol=1e-6)
    # step t's row is what it would be if decoding had stopped at step t
    t = T // 2
    cut = source_relevance(
        trace.encoder_attn, trace.decoder_self_attn[:, :, : t + 1, : t + 1], trace.cross_attn[:, :, : t + 1]
    )
    np.testing.assert_allclose(cut, trace.rollout[: t + 1], atol=1e-6)


def test_rollout_hand_computed_two_layer_example():
    eye = np.eye(2)
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])
    first = np.array([[1.0, 0.0], [1.0, 0.0]])
    enc = np.stack([np.stack([eye, swap]), np.stack([first, first])])  # (L=2, H=2, S=2, S=2)
    # heads average to [[.5,.5],[.5,.5]] then [[1,0],[1,0]]; with 0.5·A + 0.5·I:
    # Â1 = [[.75,.25],[.25,.75]], Â2 = [[1,0],[.5,.5]], R = Â2·Â1 = [[.75,.25],[.5,.5]]
    np.testing.assert_allclose(encoder_rollout(enc), [[0.75, 0.25], [0.5, 0.5]], atol=1e-6)

    dec = np.stack([np.stack([first, eye]), np.stack([eye, eye])])  # self: [[1,0],[.5,.5]], then I
    second = np.array([[0.0, 1.0], [0.0, 1.0]])
    cross = np.stack([np.stack([eye, eye]), np.stack([second, second])])
    # By hand (Chefer rules, see source_relevance): R_ss = (I+Ā2)(I+Ā1) = [[3,1],[2,2]],
    # R̄_ss = [[5/3,1/3],[2/3,4/3]]. Layer 1: R_tt = [[2,0],[.5,1.5]] = R̄_tt,
    # R_ts = R̄_tt·I·R̄_ss = [[10/3,2/3],[11/6,13/6]]. Layer 2: R_tt = [[4,0],[1,3]],
    # R_ts doubles to [[20/3,4/3],[11/3,13/3]], R̄_tt = [[2,0],[1/3,5/3]],
    # R̄_tt·Ā_c·R̄_ss = [[4/3,8/3],[4/3,8/3]], R_ts = [[8,4],[5,7]] -> rows normalised.
    np.testing.assert_allclose(source_relevance(enc, dec, cross), [[2 / 3, 1 / 3], [5 / 12, 7 / 12]], atol=1e-6)


# ----------------------------------------------------------------------------- head diagnostics
SRC = ["[SOS]", "▁a", "▁b", "▁c", "▁d", ".", "[EOS]"]  # S = 7, sinks: [SOS], ".", [EOS]
TGT = ["[SOS]", "▁w", "▁x", "▁y", "▁z", "[EOS]"]  # T = 5 steps


def synthetic_trace() -> Trace:
    """One layer, four heads per kind: identity, uniform, previous-token, sink."""
    S, T = len(SRC), len(TGT) - 1
    prev_s = np.eye(S, k=-1)
    prev_s[0, 0] = 1.0
    enc = np.stack([np.eye(S), np.full((S, S), 1 / S), prev_s, np.tile(np.eye(S)[-1], (S, 1))])
    causal = np.tril(np.ones((T, T)))
    prev_t = np.eye(T, k=-1)
    prev_t[0, 0] = 1.0
    dec = np.stack([np.eye(T), causal / causal.sum(-1, keepdims=True), prev_t, np.tile(np.eye(T)[0], (T, 1))])
    diag = np.zeros((T, S))
    diag[np.arange(4), np.arange(1, 5)] = 1.0  # step t reads source word t + 1
    diag[4, 6] = 1.0  # the step emitting [EOS] reads [EOS]
    reverse = np.zeros((T, S))
    reverse[np.arange(4), np.arange(4, 0, -1)] = 1.0
    reverse[4, 6] = 1.0
    cross = np.stack([diag, np.full((T, S), 1 / S), reverse, np.tile(np.eye(S)[-1], (T, 1))])
    k = 3
    return Trace(
        src_text="a b c d.",
        translation="w x y z",
        src_tokens=SRC,
        src_ids=list(range(S)),
        tgt_tokens=TGT,
        tgt_ids=list(range(T + 1)),
        special_tokens=["[PAD]", "[UNK]", "[SOS]", "[EOS]"],
        encoder_attn=enc[None].astype(np.float32),
        decoder_self_attn=dec[None].astype(np.float32),
        cross_attn=cross[None].astype(np.float32),
        topk_ids=np.zeros((T, k), dtype=np.int64),
        topk_tokens=[["▁w"] * k] * T,
        topk_probs=np.zeros((T, k), dtype=np.float32),
        positional_encoding=np.zeros((8, 4), dtype=np.float32),
    )


def test_head_diagnostics_on_synthetic_attention():
    stats = with_habits(head_stats(synthetic_trace()))
    json.dumps(stats)
    assert stats["habit_rule"] == HABIT_RULE
    enc, dec, cross = (stats["kinds"][k] for k in ("encoder", "decoder_self", "cross"))
    row = lambda d, name: d[name][0]  # noqa: E731  (layer 0, the four heads)
    approx = lambda got, want: all(g == pytest.approx(w, abs=1e-4) for g, w in zip(got, want))  # noqa: E731

    # identity, uniform, previous-token, all-on-[EOS] in the encoder (S = 7)
    assert approx(row(enc, "entropy"), [0, 1, 0, 0])
    assert approx(row(enc, "confidence"), [1, 1 / 7, 1, 1])
    assert approx(row(enc, "same"), [1, 1 / 7, 1 / 7, 1 / 7])  # row 0 of prev attends itself
    assert approx(row(enc, "prev"), [0, 1 / 7, 1, 0])  # over rows 1..6
    assert approx(row(enc, "next"), [0, 1 / 7, 0, 1 / 6])
    assert approx(row(enc, "sink_eos"), [1 / 7, 1 / 7, 0, 1])
    assert approx(row(enc, "sink"), [3 / 7, 3 / 7, 3 / 7, 1])
    assert enc["habit"][0] == ["same-token head", "broad", "previous-token head", "[EOS] sink"]

    # decoder self (T = 5, row 0 has one key and is excluded): identity, uniform, previous, all-on-[SOS]
    assert approx(row(dec, "entropy"), [0, 1, 0, 0])
    assert approx(row(dec, "confidence"), [1, (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4, 1, 1])
    assert approx(row(dec, "prev"), [0, (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4, 1, 1 / 4])
    assert approx(row(dec, "sink_sos"), [0, (1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 4, 1 / 4, 1])
    assert "next" not in dec
    assert dec["habit"][0] == ["same-token head", "broad", "previous-token head", "[SOS] sink"]

    # cross: monotonic diagonal, uniform, reversed, all-on-[EOS]
    assert approx(row(cross, "monotonicity")[:3:2], [1, -1])
    assert row(cross, "monotonicity")[1] is None and row(cross, "monotonicity")[3] is None  # constant argmax
    assert approx(row(cross, "entropy"), [0, 1, 0, 0])
    assert approx(row(cross, "sink_eos"), [1 / 5, 1 / 7, 1 / 5, 1])
    assert cross["habit"][0] == ["monotonic aligner", "broad", "focused", "[EOS] sink"]
    assert "prev" not in cross


def test_aggregate_head_stats_averages_head_by_head():
    one = with_habits(head_stats(synthetic_trace()))
    two = json.loads(json.dumps(one))
    two["kinds"]["encoder"]["entropy"][0][0] = 0.5
    two["kinds"]["cross"]["monotonicity"][0][0] = None  # undefined in one sentence: ignored
    agg = aggregate_head_stats([one, two])
    assert agg["n_sentences"] == 2
    assert agg["kinds"]["encoder"]["entropy"][0][0] == pytest.approx(0.25)
    assert agg["kinds"]["cross"]["monotonicity"][0][0] == pytest.approx(1.0)
    assert agg["kinds"]["cross"]["monotonicity"][0][1] is None  # undefined everywhere stays null
    assert "habit" not in agg["kinds"]["encoder"]  # names of the inputs are not averaged
    assert with_habits(agg)["kinds"]["encoder"]["habit"] == one["kinds"]["encoder"]["habit"]
    with pytest.raises(ValueError, match="no head stats"):
        aggregate_head_stats([])


# ----------------------------------------------------------------------------- trace and translator
def test_trace_to_dict_carries_the_analyses(translator):
    trace = translator.trace(TEXT)
    d = json.loads(json.dumps(trace.to_dict()))
    T, S, L = trace.steps, len(trace.src_tokens), translator.cfg.n_decoder_layers
    assert np.array(d["logit_lens"]["probs"]).shape == (T, L, 5)
    assert np.array(d["logit_lens"]["ids"]).shape == (T, L, 5) and len(d["logit_lens"]["tokens"][0]) == L
    assert np.array(d["rollout"]).shape == (T, S) and np.array(d["encoder_rollout"]).shape == (S, S)
    assert d["head_stats"]["kinds"]["cross"]["layers"] == L
    assert d["topk"][0][0] == {
        "token": trace.topk_tokens[0][0],
        "id": int(trace.topk_ids[0, 0]),
        "prob": round(float(trace.topk_probs[0, 0]), 5),
    }


def test_greedy_decode_returns_trimmed_arrays(translator):
    cfg = translator.cfg
    src = torch.tensor([translator.encode_source(TEXT).ids])
    out = greedy_decode(translator.model, src, forced_prefix=[5, cfg.tgt_eos_id], need_trace=True)
    res = out.records[0]
    assert out.ids[0] == [5, cfg.tgt_eos_id]
    assert res.self_attn.shape[2:] == (2, 2) and res.cross_attn.shape[2] == 2
    assert res.topk_ids.shape[0] == 2 and res.lens_ids.shape[0] == 2
    with pytest.raises(ValueError, match=r"\[PAD\]"):
        greedy_decode(translator.model, src, forced_prefix=[cfg.tgt_pad_id], need_trace=True)
    with pytest.raises(ValueError, match=r"\[PAD\]"):
        translator.trace(TEXT, forced_prefix=[cfg.tgt_pad_id])


def test_trace_with_a_head_mask_steps_through_the_knocked_out_model(translator):
    heads = ["cross:0:0", "cross:1:2", "decoder_self:0:1"]
    ko = knockout(translator, TEXT, heads)
    trace = translator.trace(TEXT, head_mask=knockouts.heads_to_mask(heads, translator.cfg))
    assert trace.tgt_ids == ko["knockout"]["ids"]


def test_translate_input_and_beam_validation(translator, monkeypatch):
    for bad in (None, "the cat sleeps.", 3):
        with pytest.raises(TypeError, match="list of strings"):
            translator.translate(bad)
    with pytest.raises(TypeError, match="sentence 1"):
        translator.translate([TEXT, None])
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="beam_size"):
            translator.translate([TEXT], beam_size=bad)
    calls = []
    fake = types.ModuleType("transformer.core.beam")
    fake.translate_beam = lambda tr, sentences, beam_size, batch_size, src_lang, tgt_lang: (
        calls.append((sentences, beam_size, batch_size, src_lang, tgt_lang)) or ["x"]
    )
    monkeypatch.setitem(sys.modules, "transformer.core.beam", fake)
    assert translator.translate([TEXT], beam_size=4, batch_size=8) == ["x"]
    assert calls == [([TEXT], 4, 8, None, None)]
    assert translator.translate((TEXT,)) == translator.translate([TEXT])


# ----------------------------------------------------------------------------- CLI
def exit_code(argv) -> int:
    """analyze's exit code: main returns 0, or exits with 2 (transformer.cli.fail)."""
    try:
        return analyze_main(argv)
    except SystemExit as exc:
        return exc.code


def test_analyze_cli_writes_aggregated_head_stats(tiny_checkpoint, data_dir, tmp_path, capsys):
    out = tmp_path / "hs.json"
    assert (
        analyze_main(
            [
                "--checkpoint",
                str(tiny_checkpoint),
                "--data",
                str(data_dir / "test.jsonl"),
                "--limit",
                "4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    stats = json.loads(out.read_text())
    assert stats["n_sentences"] == 4 and stats["schema"] == "head-stats/1"
    assert set(stats["kinds"]) == {"encoder", "decoder_self", "cross"}
    cross = stats["kinds"]["cross"]  # each head named from the averages, as the viewer shows them
    assert stats["habit_rule"] == HABIT_RULE and len(cross["habit"]) == cross["layers"] == 2
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n"] == 4


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--data", "/nonexistent/x.jsonl"], "no such file"),
        (["--limit", "0"], "argument --limit: expected a whole number ≥ 1, got '0'"),
        (["--checkpoint", "/nonexistent/ckpt"], "error"),
        (["--out", "/nonexistent/dir/hs.json"], "no such directory"),
    ],
)
def test_analyze_cli_bad_input_exits_2(tiny_checkpoint, data_dir, args, msg, capsys):
    base = {"--checkpoint": str(tiny_checkpoint), "--data": str(data_dir / "test.jsonl")}
    argv = []
    for flag, value in base.items():
        if flag not in args:
            argv += [flag, value]
    assert exit_code(argv + args) == 2
    assert msg in capsys.readouterr().err


def test_analyze_cli_corrupt_data_exits_2(tiny_checkpoint, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert exit_code(["--checkpoint", str(tiny_checkpoint), "--data", str(bad), "--out", str(tmp_path / "o.json")]) == 2
    assert "error" in capsys.readouterr().err


def test_a_habit_agrees_with_the_figures_shown():
    """A head whose [EOS] share is 0.49996 is shown as 0.5 and so labelled a sink; float noise
    of order 1e-7 (a padded batch sums in another order) must not flip its label."""

    def measures(eos):
        names = ("entropy", "confidence", "sink", "sink_sos", "sink_eos", "sink_punct", "monotonicity")
        m = {n: np.zeros((1, 1)) for n in names}
        m["sink"][:] = m["sink_eos"][:] = eos
        m["monotonicity"][:] = 0.9
        return {"cross": m}

    labels = set()
    for eos in (0.49996 - 1e-7, 0.49996, 0.49996 + 1e-7):
        entry = with_habits(readings._stats_dict(measures(eos), 1))["kinds"]["cross"]
        assert entry["sink_eos"] == [[0.5]]
        labels.add(entry["habit"][0][0])
    assert labels == {"[EOS] sink"}
