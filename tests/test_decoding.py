import json

import numpy as np
import pytest
import torch

from transformer.core.decoding import greedy_decode, naive_greedy_decode

SENTENCES = ["the black cat sleeps.", "i see the dog.", "where is the station?", "my sister is tall."]


def teacher_forced(translator, trace):
    """Full forward pass over the generated sequence, attention weights asked for."""
    src = torch.tensor([trace.src_ids])
    tgt_in = torch.tensor([trace.tgt_ids[:-1]])
    with torch.no_grad():
        return translator.model(src, tgt_in, need_weights=True)


@pytest.mark.parametrize("text", SENTENCES)
def test_cached_decoding_equals_recomputing_the_prefix(translator, text):
    trace = translator.trace(text)
    src = torch.tensor([trace.src_ids])
    naive = naive_greedy_decode(translator.model, src, trace.steps)
    assert naive == trace.tgt_ids[1:]
    # and the attention rows of every step equal a recompute over the whole prefix
    ref = teacher_forced(translator, trace)
    dec = np.stack([w[0].numpy() for w in ref.decoder_self_attn])
    cross = np.stack([w[0].numpy() for w in ref.cross_attn])
    enc = np.stack([w[0].numpy() for w in ref.encoder_attn])
    np.testing.assert_allclose(trace.decoder_self_attn, dec, atol=1e-5)
    np.testing.assert_allclose(trace.cross_attn, cross, atol=1e-5)
    np.testing.assert_allclose(trace.encoder_attn, enc, atol=1e-5)


def test_trace_topk_matches_teacher_forced_probabilities(translator):
    trace = translator.trace(SENTENCES[0], top_k=5)
    probs = teacher_forced(translator, trace).logits[0].softmax(-1)
    top_p, top_i = probs.topk(5, dim=-1)
    np.testing.assert_array_equal(trace.topk_ids, top_i.numpy())
    np.testing.assert_allclose(trace.topk_probs, top_p.numpy(), atol=1e-5)
    assert trace.topk_tokens[0][0] == translator.tgt_tok.id_to_token(int(top_i[0, 0]))
    # greedy: the emitted token is the top candidate at every step
    assert [int(r[0]) for r in trace.topk_ids] == trace.tgt_ids[1:]


def test_attention_rows_sum_to_one_and_causal_rows_are_zero_in_the_future(translator):
    trace = translator.trace(SENTENCES[1])
    for attn in (trace.encoder_attn, trace.decoder_self_attn, trace.cross_attn):
        np.testing.assert_allclose(attn.sum(-1), 1.0, atol=1e-5)
    T = trace.steps
    future = np.triu(np.ones((T, T), dtype=bool), k=1)
    assert np.all(trace.decoder_self_attn[:, :, future] == 0.0)


def test_padded_source_positions_get_zero_weight_in_batched_decoding(translator):
    short, long = (translator.encode_source(s).ids for s in ("the cat sleeps.", "the book is on the table."))
    src = torch.full((2, len(long)), translator.cfg.src_pad_id)
    src[0, : len(short)] = torch.tensor(short)
    src[1] = torch.tensor(long)
    model = translator.model
    with torch.no_grad():
        memory, enc_w = model.encode(src, need_weights=True)
        dec = model.decode(
            torch.tensor([[translator.cfg.tgt_sos_id]] * 2), memory, model.src_mask(src), need_weights=True
        )
    for w in enc_w + dec.cross_attn:
        assert torch.all(w[0, :, :, len(short) :] == 0)
    # padding changes nothing: the short sentence decodes the same alone and in the batch
    batched = greedy_decode(model, src).ids[0]
    alone = greedy_decode(model, torch.tensor([short])).ids[0]
    assert batched == alone


def test_batched_translate_equals_one_by_one(translator):
    together = translator.translate(SENTENCES)
    assert together == [translator.trace(s).translation for s in SENTENCES]


def test_forced_prefix_continues_greedily(translator):
    trace = translator.trace(SENTENCES[0])
    # forcing what greedy chose anyway changes nothing
    same = translator.trace(SENTENCES[0], forced_prefix=trace.tgt_ids[1:3])
    assert same.tgt_ids == trace.tgt_ids
    np.testing.assert_allclose(same.cross_attn, trace.cross_attn, atol=1e-6)
    # "take the 2nd candidate at step 1 and go on greedily"
    alt_id = int(trace.topk_ids[1][1])
    alt = translator.trace(SENTENCES[0], forced_prefix=[trace.tgt_ids[1], alt_id])
    assert alt.tgt_ids[:3] == [trace.tgt_ids[0], trace.tgt_ids[1], alt_id]
    assert alt.forced_prefix == [trace.tgt_ids[1], alt_id]
    # after the prefix it is greedy again: each later token is the top candidate
    assert [int(r[0]) for r in alt.topk_ids[2:]] == alt.tgt_ids[3:]
    with pytest.raises(ValueError, match="outside the target vocabulary"):
        translator.trace(SENTENCES[0], forced_prefix=[10**6])


def test_trace_layout_and_step_slices(translator):
    trace = translator.trace(SENTENCES[2])
    L, H = translator.cfg.n_decoder_layers, translator.cfg.h
    S, T = len(trace.src_tokens), trace.steps
    assert trace.encoder_attn.shape == (L, H, S, S)
    assert trace.decoder_self_attn.shape == (L, H, T, T)
    assert trace.cross_attn.shape == (L, H, T, S)
    assert trace.src_tokens[0] == "[SOS]" and trace.src_tokens[-1] == "[EOS]" and trace.tgt_tokens[0] == "[SOS]"
    assert trace.src_special_mask()[0] and not trace.src_special_mask()[1]
    assert trace.positional_encoding.shape == (translator.cfg.max_positions, translator.cfg.d_model)
    s = trace.step(2)
    assert s.prefix_tokens == trace.tgt_tokens[:3] and s.output_token == trace.tgt_tokens[3]
    assert s.decoder_self_attn.shape == (L, H, 3)
    np.testing.assert_array_equal(s.cross_attn, trace.cross_attn[:, :, 2])
    with pytest.raises(IndexError):
        trace.step(T)
    d = json.loads(json.dumps(trace.to_dict()))
    assert d["schema"] == "transformer-trace/1"
    assert np.array(d["cross_attn"]).shape == (L, H, T, S)
    assert len(d["positional_encoding"]) == S and len(d["topk"]) == T


def test_packed_trace_dict_is_exact_and_unpacks_to_the_lists(translator):
    from transformer.core.wire import encode_f32, unpack_arrays

    trace = translator.trace("the black cat sleeps.")
    lists = json.loads(json.dumps(trace.to_dict()))
    packed = json.loads(json.dumps(trace.to_dict(packed=True)))
    assert packed["cross_attn"].keys() == {"enc", "shape", "data"} and packed["cross_attn"]["enc"] == "f32"
    back = unpack_arrays(packed)
    for key, arr in (
        ("encoder_attn", trace.encoder_attn),
        ("decoder_self_attn", trace.decoder_self_attn),
        ("cross_attn", trace.cross_attn),
        ("rollout", trace.rollout),
    ):
        np.testing.assert_array_equal(back[key], arr.astype(np.float32))  # exact, not rounded
        np.testing.assert_allclose(back[key], np.array(lists[key]), atol=1e-5)
    np.testing.assert_allclose(back["logit_lens"]["probs"], np.array(lists["logit_lens"]["probs"]), atol=1e-5)
    assert back["src_tokens"] == lists["src_tokens"]
    for packed_step, list_step, probs in zip(back["topk"], lists["topk"], trace.topk_probs):
        assert [c["token"] for c in packed_step] == [c["token"] for c in list_step]
        assert [c["prob"] for c in packed_step] == probs.astype(float).tolist()  # exact when packed
    assert unpack_arrays(lists) == lists  # nothing packed: unchanged
    big_endian = np.arange(6, dtype=">f4").reshape(2, 3)
    np.testing.assert_array_equal(unpack_arrays(encode_f32(big_endian)), big_endian)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\x00\x07"])
def test_empty_input_is_a_clear_value_error(translator, text):
    with pytest.raises(ValueError, match="empty sentence"):
        translator.trace(text)
    with pytest.raises(ValueError, match="sentence 1: empty"):
        translator.translate(["the cat sleeps.", text])


@pytest.mark.parametrize(
    "text",
    [
        "the cat 😺 sleeps 🎉",
        "ça c'est très élégant",
        "the\x00 cat\u200b\u202e sleeps\r\n",
        "<script>alert('x')</script>",
        "مرحبا بالعالم",
        "东京",
    ],
)
def test_odd_characters_do_not_crash(translator, text):
    trace = translator.trace(text)
    assert trace.steps >= 1 and isinstance(trace.translation, str)
    assert not any(c in tok for tok in trace.src_tokens for c in "\x00\u200b\u202e\r\n")


def test_long_input_is_truncated_and_says_so(translator):
    text = " ".join(["the black cat sleeps."] * 40)
    trace = translator.trace(text)
    assert trace.truncated and trace.n_src_tokens_dropped > 0
    assert len(trace.src_ids) == translator.cfg.max_positions
    assert trace.steps <= translator.cfg.max_positions
    assert not translator.trace("the cat sleeps.").truncated


def test_batched_traces_equal_single_traces(translator):
    """A sentence traced in a padded batch (other lengths, other stopping steps) reads like
    the same sentence traced alone: same tokens, arrays equal up to float rounding."""
    texts = ["the black cat sleeps.", "a dog.", "the small red house is near the old black cat and the dog."]
    batch = translator.trace_batch(texts)
    assert translator.trace_batch([]) == []
    for text, got in zip(texts, batch):
        alone = translator.trace(text)
        assert got.translation == alone.translation and got.tgt_ids == alone.tgt_ids
        assert got.src_tokens == alone.src_tokens and got.topk_tokens == alone.topk_tokens
        assert got.logit_lens_tokens == alone.logit_lens_tokens
        for name in (
            "encoder_attn",
            "decoder_self_attn",
            "cross_attn",
            "topk_probs",
            "logit_lens_probs",
            "rollout",
            "encoder_rollout",
        ):
            a, b = getattr(alone, name), getattr(got, name)
            assert a.shape == b.shape, name
            np.testing.assert_allclose(b, a, atol=1e-5, err_msg=name)
        assert got.head_stats["kinds"].keys() == alone.head_stats["kinds"].keys()
    with pytest.raises(ValueError, match="sentence 2: empty"):
        translator.trace_batch(["the cat.", "  "])


def test_finished_sentences_leave_the_batch_without_changing_any_output(translator):
    """Without a trace, a sentence that has emitted [EOS] is dropped from the batch (its KV
    cache, memory and mask rows with it); the survivors must decode exactly as before:
    as in a traced batch (which keeps every row) and as each sentence alone."""
    texts = SENTENCES + ["the cat.", "yes.", "the book that i bought yesterday is on the table."]
    src = torch.nn.utils.rnn.pad_sequence(
        [torch.tensor(translator.encode_source(t).ids) for t in texts],
        batch_first=True,
        padding_value=translator.cfg.src_pad_id,
    )
    model = translator.model
    dropped = greedy_decode(model, src).ids
    kept = greedy_decode(model, src, need_trace=True).ids
    assert len({len(ids) for ids in dropped}) > 1  # rows really finish at different steps
    assert dropped == kept
    for i, text in enumerate(texts):
        assert dropped[i] == greedy_decode(model, src[i : i + 1, : len(translator.encode_source(text).ids)]).ids[0]


def test_a_forced_eos_ends_the_output_and_every_traced_array(translator):
    """The prefix goes on past a forced [EOS], but the sentence has ended there: its ids stop
    at the [EOS] and every per-step array of its record has exactly those steps."""
    cfg = translator.cfg
    src = torch.tensor([translator.encode_source(SENTENCES[0]).ids])
    first = greedy_decode(translator.model, src).ids[0][0]
    res = greedy_decode(translator.model, src, forced_prefix=[first, cfg.tgt_eos_id, first], need_trace=True)
    assert res.ids == [[first, cfg.tgt_eos_id]]
    rec = res.records[0]
    L, H, S = cfg.n_decoder_layers, cfg.h, src.shape[1]
    assert rec.self_attn.shape == (L, H, 2, 2) and rec.cross_attn.shape == (L, H, 2, S)
    assert rec.topk_ids.shape[0] == rec.topk_probs.shape[0] == 2
    assert rec.lens_ids.shape[:2] == rec.lens_probs.shape[:2] == (2, L)
