"""The array codecs (transformer/core/wire.py, explorer/quantise.py) and the compact payload the browser draws from:
exact within the quantisation step, small, and safe to embed; plus the notebook viewer
that embeds it."""

import json
import re

import numpy as np
import pytest

from explorer import payload as P
from explorer.assets import WEB
from explorer.notebook import modules, show_trace, viewer_html
from explorer import quantise as W
from transformer.core import wire
from transformer.core.trace import Trace
from transformer.interpret.habits import with_habits
from tests.helpers import ROOT, SHIPPED

RNG = np.random.default_rng(0)
DATA = ROOT / "data" / "tatoeba-en-it"


def softmax_rows(shape, causal=False):
    x = RNG.normal(size=shape) * 3
    if causal:
        T = shape[-1]
        x = np.where(np.triu(np.ones((T, T), bool), k=1), -np.inf, x)
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def synthetic_trace(S, T, L=3, H=8, d=256, k=10, analyses=False) -> Trace:
    """A trace shaped like the shipped model's (3+3 layers, 8 heads, d_model 256); with
    ``analyses``, also the logit lens, rollouts and head statistics a real trace carries,
    with subword strings as long as real ones."""
    pos = np.arange(128)[:, None]
    div = np.exp(np.arange(0, d, 2) * (-np.log(10000.0) / d))
    pe = np.zeros((128, d), np.float32)
    pe[:, 0::2], pe[:, 1::2] = np.sin(pos * div), np.cos(pos * div)
    tr = Trace(
        src_text="x",
        translation="y",
        src_tokens=["[SOS]"] + [f"▁w{i}" for i in range(S - 2)] + ["[EOS]"],
        src_ids=list(range(S)),
        tgt_tokens=["[SOS]"] + [f"▁v{i}" for i in range(T)],
        tgt_ids=list(range(T + 1)),
        special_tokens=["[PAD]", "[UNK]", "[SOS]", "[EOS]"],
        encoder_attn=softmax_rows((L, H, S, S)),
        decoder_self_attn=softmax_rows((L, H, T, T), causal=True),
        cross_attn=softmax_rows((L, H, T, S)),
        topk_ids=RNG.integers(0, 8000, (T, k)),
        topk_tokens=[[f"t{j}" for j in range(k)] for _ in range(T)],
        topk_probs=np.sort(RNG.random((T, k)).astype(np.float32))[:, ::-1],
        positional_encoding=pe,
    )
    if analyses:
        word = lambda i: f"▁parola{i}"  # noqa: E731 - about as long as a real Italian subword
        # a real 126-token trace of the shipped model refers to about 250 distinct token ids
        pool = RNG.choice(4000, 400, replace=False)
        tr.topk_ids = pool[RNG.integers(0, len(pool), (T, k))]
        tr.topk_tokens = [[word(i) for i in row] for row in tr.topk_ids.tolist()]
        tr.logit_lens_ids = pool[RNG.integers(0, len(pool), (T, L, 5))]
        tr.logit_lens_tokens = [[[word(i) for i in r] for r in layer] for layer in tr.logit_lens_ids.tolist()]
        tr.logit_lens_probs = RNG.random((T, L, 5)).astype(np.float32)
        tr.rollout, tr.encoder_rollout = softmax_rows((T, S)), softmax_rows((S, S))
        tr.head_stats = {
            kind: {
                stat: RNG.random((L, H)).round(4).tolist()
                for stat in ("entropy", "prev", "same", "next", "sink_sos", "max")
            }
            for kind in ("encoder", "decoder_self", "cross")
        }
    return tr


@pytest.mark.parametrize("shape", [(3, 8, 12, 12), (2, 4, 1, 7), (5, 33)])
def test_rows_roundtrip_within_half_a_step(shape):
    x = softmax_rows(shape)
    y = W.decode_array(W.encode_rows(x))
    step = x.max(-1, keepdims=True) * (1 + 2**-10) / 255  # the scale is the row max rounded up to float16
    assert y.shape == x.shape and np.all(np.abs(y - x) <= step / 2 + 1e-7)
    assert not np.allclose(y, 0)


def test_tril_stores_half_and_keeps_the_upper_triangle_zero():
    x = softmax_rows((3, 8, 20, 20), causal=True)
    a = W.encode_tril(x)
    y = W.decode_array(a)
    assert np.all(np.abs(y - x) <= x.max(-1, keepdims=True) * (1 + 2**-10) / 510 + 1e-7)
    assert np.all(y[..., np.triu_indices(20, k=1)[0], np.triu_indices(20, k=1)[1]] == 0)
    assert len(a["data"]) < len(W.encode_rows(x)["data"]) * 0.6  # about half the bytes


def test_linear_and_float_encodings():
    x = RNG.uniform(-1, 1, (16, 64)).astype(np.float32)
    assert np.all(np.abs(W.decode_array(W.encode_linear(x, -1.0, 1.0)) - x) <= 1 / 255 + 1e-6)
    np.testing.assert_array_equal(W.decode_array(wire.encode_f32(x)), x)
    zeros = np.zeros((2, 3), np.float32)  # rows of zeros decode to zeros, no division by zero
    np.testing.assert_array_equal(W.decode_array(W.encode_rows(zeros)), zeros)
    with pytest.raises(ValueError):
        W.decode_array({"enc": "bogus", "shape": [1], "data": ""})


def test_real_trace_roundtrip(translator):
    tr = translator.trace("the black cat sleeps.")
    p = P.encode_trace(tr)
    assert p["schema"] == P.SCHEMA and p["steps"] == tr.steps and p["src_tokens"] == tr.src_tokens
    d = P.decode_payload(json.loads(json.dumps(p)))
    for name, ref in [
        ("encoder_attn", tr.encoder_attn),
        ("decoder_attn", tr.decoder_self_attn),
        ("cross_attn", tr.cross_attn),
    ]:
        assert d[name].shape == ref.shape
        assert np.abs(d[name] - ref).max() <= ref.max() / 510 + 1e-6, name
    np.testing.assert_allclose(d["topk_probs"], tr.topk_probs, atol=1e-7)
    pe = d["positional_encoding"]
    assert (
        pe.shape[0] >= len(tr.src_tokens) and np.abs(pe - tr.positional_encoding[: pe.shape[0]]).max() <= 1 / 255 + 1e-6
    )


def test_optional_analysis_fields_travel_when_present():
    tr = synthetic_trace(8, 6)
    assert not {"logit_lens", "rollout", "encoder_rollout", "head_stats"} & set(P.encode_trace(tr))
    tr.logit_lens_ids = RNG.integers(0, 50, (6, 3, 5))
    tr.logit_lens_tokens = [[[f"▁x{i}" for i in k] for k in layer] for layer in tr.logit_lens_ids.tolist()]
    tr.logit_lens_probs = RNG.random((6, 3, 5)).astype(np.float32)
    tr.rollout = softmax_rows((6, 8))
    tr.encoder_rollout = softmax_rows((8, 8))
    tr.head_stats = {"entropy": [[1.0]]}
    p = P.encode_trace(tr)
    d = P.decode_payload(p)
    tokens = P.decode_tokens(json.loads(json.dumps(p)))
    assert tokens["logit_lens_tokens"] == tr.logit_lens_tokens and p["head_stats"] == with_habits(tr.head_stats)
    assert tokens["topk_tokens"] == tr.topk_tokens
    np.testing.assert_allclose(d["logit_lens_probs"], tr.logit_lens_probs)
    assert np.abs(d["rollout"] - tr.rollout).max() <= 1 / 255


@pytest.mark.parametrize("encode", [W.encode_rows, W.encode_tril])
def test_deflated_arrays_decode_to_the_same_values(encode):
    x = softmax_rows((2, 4, 30, 30), causal=encode is W.encode_tril)
    plain, packed = encode(x), encode(x, deflate=True)
    assert packed["zip"] == "deflate" and "zip" not in plain
    np.testing.assert_array_equal(W.decode_array(packed), W.decode_array(plain))
    with pytest.raises(ValueError, match="compression"):
        W.decode_array({**packed, "zip": "gzip"})


def test_payload_attention_travels_deflated(translator):
    p = P.encode_trace(translator.trace("the black cat sleeps."))
    assert {a["zip"] for a in p["attn"].values()} == {"deflate"}
    assert all("zip" not in p[k] for k in ("pe", "rollout", "encoder_rollout") if k in p)


def shipped_shape() -> tuple[int, int, int]:
    """(layers, heads, d_model) of checkpoints/en-it."""
    cfg = json.loads((SHIPPED / "config.json").read_text(encoding="utf-8"))
    return cfg["n_decoder_layers"], cfg["h"], cfg["d_model"]


def test_payload_size_of_a_ten_word_sentence():
    """A 10-word sentence (about 12 source tokens), the shipped model's shape, with every
    analysis a real trace carries."""
    L, H, d = shipped_shape()
    size = len(
        json.dumps(P.encode_trace(synthetic_trace(12, 13, L=L, H=H, d=d, analyses=True)), ensure_ascii=False).encode()
    )
    assert size <= 100_000, size


def test_payload_size_at_the_cap_on_the_shipped_model():
    """The worst case a visitor can cause: 126 source subwords, and a decoder that runs to the
    128-position limit (as a model that never emits [EOS] would), with the shipped model's real
    attention, which is what the deflated size depends on. The decoder is forced through real
    Italian so that every one of its steps is a real one."""
    from transformer import load_translator
    from transformer.core.tokenizer import encode

    tr = load_translator(SHIPPED)
    lines = (DATA / "validation.jsonl").read_text(encoding="utf-8").splitlines()
    pairs = [json.loads(line)["translation"] for line in lines]
    english = " ".join(p["en"] for p in pairs[:40])
    ids = encode(tr.src_tok, english)[:126]
    text = tr.src_tok.decode(ids)
    forced = encode(tr.tgt_tok, " ".join(p["it"] for p in pairs[:40]))[: tr.cfg.max_positions - 1]
    trace = tr.trace(text, forced_prefix=forced)
    assert len(trace.src_tokens) == trace.steps == tr.cfg.max_positions  # both at the limit
    size = len(json.dumps(P.encode_trace(trace), ensure_ascii=False).encode())
    assert size <= 1_500_000, size
    assert trace.cross_attn.shape[0] == shipped_shape()[0]


def test_unk_fraction():
    specials = ["[PAD]", "[UNK]", "[SOS]", "[EOS]"]
    assert P.unk_fraction(["[SOS]", "[UNK]", "[UNK]", "▁a", "[EOS]"], specials) == pytest.approx(2 / 3)
    assert P.unk_fraction(["[SOS]", "[EOS]"], specials) == 0.0


def test_notebook_viewer_embeds_the_same_modules_and_escapes_text(translator):
    tr = translator.trace("</script><img src=x onerror=alert(1)> the cat")
    obj = show_trace(tr)
    html = obj._repr_html_() or obj.data
    assert html.count("</script>") == 2  # the JSON block and the loader; the user's text cannot close either
    block = html.split("data-attention-explorer>")[1].split("</script>")[0]
    assert "<" not in block  # no markup of any kind inside the data block
    data = json.loads(block)
    assert {"viewer.js", "store.js", "payload.js", "attention.js"} <= set(data["modules"])
    for name, text in data["modules"].items():  # every module the viewer imports travels with it
        assert set(re.findall(r'from\s+"\./([\w.-]+\.js)"', text)) <= set(data["modules"]), name
    assert not {"gradio.js", "views.js"} & set(data["modules"])  # the notebook has no Gradio page
    assert data["payload"]["src_text"] == tr.src_text
    assert 'import(url("viewer.js"))' in viewer_html(P.encode_trace(tr))
    assert set(modules()) <= {p.name for p in WEB.glob("*.js")}


def test_the_attention_part_is_the_payload_cut_short(translator):
    """What the epoch comparison sends per snapshot: the same schema and decoder, attention only."""
    tr = translator.trace("the black cat sleeps.")
    part, whole = P.encode_attention(tr), P.encode_trace(tr)
    assert part.items() <= whole.items()
    assert set(part) == {
        "schema",
        "src_tokens",
        "tgt_tokens",
        "special_tokens",
        "layers",
        "decoder_layers",
        "heads",
        "steps",
        "attn",
    }
    decoded = P.decode_payload(json.loads(json.dumps(part)))
    assert set(decoded) == {"encoder_attn", "decoder_attn", "cross_attn"}
    np.testing.assert_array_equal(decoded["cross_attn"], P.decode_payload(whole)["cross_attn"])


def test_unpack_arrays_decodes_every_encoding_in_place():
    x = softmax_rows((2, 3, 4))
    obj = {"a": wire.encode_f32(x), "b": [W.encode_rows(x), {"c": wire.encode_ids([1, 2])}], "d": "text", "e": [1, 2]}
    back = W.unpack_arrays(json.loads(json.dumps(obj)))
    np.testing.assert_array_equal(back["a"], x)
    assert np.abs(back["b"][0] - x).max() <= x.max() / 510 + 1e-6
    np.testing.assert_array_equal(back["b"][1]["c"], [1, 2])
    assert back["d"] == "text" and back["e"] == [1, 2]
    assert W.unpack_arrays({"enc": "nope", "shape": [1], "data": ""}) == {"enc": "nope", "shape": [1], "data": ""}
    # the library's own codec reads the exact arrays and leaves the browser's one-byte ones alone
    assert wire.unpack_arrays(obj)["b"][0] == obj["b"][0]
    np.testing.assert_array_equal(wire.unpack_arrays(obj)["a"], x)


def test_token_ids_travel_as_two_bytes_and_large_vocabularies_as_four():
    ids = RNG.integers(0, 4000, (7, 10))
    a = wire.encode_ids(ids)
    assert a["enc"] == "u16" and len(a["data"]) <= ids.size * 2 * 4 / 3 + 4
    np.testing.assert_array_equal(W.decode_array(json.loads(json.dumps(a))), ids)
    big = np.array([[0, 70_000, 65_535]])
    assert wire.encode_ids(big)["enc"] == "i32"
    np.testing.assert_array_equal(W.decode_array(wire.encode_ids(big)), big)
    with pytest.raises(ValueError):
        wire.encode_ids([-1])


# --- the head a new sentence opens on ------------------------------------------------------------


def cross_stats(entropy, sink, n=1) -> dict:
    return {"n_sentences": n, "kinds": {"cross": {"entropy": entropy, "sink": sink}}}


def test_focus_head_is_the_sharpest_head_that_looks_at_words():
    # layer 1 head 2 is the sharpest but looks at [SOS] and punctuation; layer 2 head 1 is sharp and on words
    stats = cross_stats([[0.6, 0.1], [0.2, None]], [[0.2, 0.9], [0.1, 0.0]], n=1000)
    assert P.focus_head(stats) == {
        "kind": "cross",
        "layer": 2,
        "head": 1,
        "entropy": 0.2,
        "sink": 0.1,
        "n_sentences": 1000,
    }
    assert P.focus_head(None) is None and P.focus_head({"kinds": {"encoder": {}}}) is None


def test_focus_head_takes_a_monotonic_aligner_over_a_sharper_head_that_is_not_one():
    # layer 1 head 1 scores highest, but the habits say only layer 2's heads follow the source in order
    stats = cross_stats([[0.1, 0.5], [0.3, 0.2]], [[0.1, 0.1], [0.1, 0.3]])
    stats["kinds"]["cross"]["habit"] = [["focused", "mixed"], ["monotonic aligner", "monotonic aligner"]]
    assert (P.focus_head(stats)["layer"], P.focus_head(stats)["head"]) == (2, 1)
    # with no aligner at all, every head competes again
    stats["kinds"]["cross"]["habit"] = [["focused", "mixed"], ["[SOS] sink", "focused"]]
    assert (P.focus_head(stats)["layer"], P.focus_head(stats)["head"]) == (1, 1)


def test_the_payload_opens_on_the_test_sets_head_or_else_the_sentences():
    tr = synthetic_trace(8, 6, L=2, H=2)
    assert "focus" not in P.encode_trace(tr)  # no statistics at all: the viewer keeps its own settings
    tr.head_stats = {"kinds": {"cross": {"entropy": [[0.1, 0.9], [0.9, 0.9]], "sink": [[0.1, 0.1], [0.1, 0.1]]}}}
    assert P.encode_trace(tr)["focus"] == {
        "kind": "cross",
        "layer": 1,
        "head": 1,
        "entropy": 0.1,
        "sink": 0.1,
        "n_sentences": 1,
        "source": "sentence",
    }
    test = cross_stats([[0.9, 0.9], [0.9, 0.2]], [[0.1, 0.1], [0.1, 0.1]], n=1000)
    focus = P.encode_trace(tr, test_stats=test)["focus"]
    assert (focus["layer"], focus["head"], focus["source"], focus["n_sentences"]) == (2, 2, "test", 1000)
    json.dumps(P.encode_trace(tr, test_stats=test))  # JSON-ready


def test_the_shipped_model_opens_on_a_sharp_aligner_past_layer_one():
    stats = json.loads((SHIPPED / "head_stats.json").read_text(encoding="utf-8"))
    focus = P.focus_head(stats)
    habit = stats["kinds"]["cross"]["habit"][focus["layer"] - 1][focus["head"] - 1]
    assert focus["layer"] > 1 and habit in ("monotonic aligner", "focused"), (focus, habit)
