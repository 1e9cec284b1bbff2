"""The compact trace the browser viewer draws from: ``encode_trace(trace) -> dict``.

Why: the server runs the model once per sentence and the browser draws every view from
this one payload, so it must be small (tens of KB for a 10-word sentence, and under
1.5 MB at the 126-token cap even where both source and target reach 128 positions) and
quick to make. ``Trace.to_dict()`` stays the full-precision download.

Schema ``attention-explorer-payload/2`` (a JSON object):

- ``schema``, ``src_text``, ``translation``, ``src_tokens``, ``tgt_tokens``, ``special_tokens``,
  ``forced_prefix`` (target ids), ``truncated``, ``n_src_tokens_dropped``, ``finished``,
  ``layers``, ``heads``, ``steps`` (T), ``d_model``, ``unk_fraction`` (share of source
  subwords read as the unknown token, ``[UNK]`` or a Marian model's ``<unk>``, specials
  excluded), ``origin`` (free label, e.g. ``"whatif"``).
- ``attn``: ``{"encoder": A (L,H,S,S), "decoder": A (L,H,T,T), "cross": A (L,H,T,S)}``;
  rows are queries, columns keys. Step t (0-based) is row t of decoder and cross.
- ``vocab``: ``{"<id>": str}``, the target-vocabulary string of every token id that ``topk``
  and ``logit_lens`` refer to. Tokens travel as ids plus this table because the same few
  hundred strings repeat across steps and layers (the strings themselves would add about
  60 KB at the 126-token cap).
- ``topk``: ``{"ids": A (T,k) token ids, "probs": A (T,k)}``.
- ``pe``: A (P, d_model): the model's positional-encoding buffer, first P positions
  (P = the longer of source and target, at least 16, at most max_positions).
- optional (present when the trace has them): ``logit_lens`` ``{"ids": A (T,L,5),
  "probs": A (T,L,5)}``, ``encoder_rollout`` A (S,S), ``rollout`` A (T,S), ``head_stats`` (JSON);
  ``logit_lens_left_out: true`` in place of ``logit_lens`` when a large vocabulary's trace was made
  without it (``explorer/panels/lens.py`` gives it on demand, in this encoding).
- optional ``focus``: the cross-attention head a new sentence opens on (:func:`focus_head`),
  ``{"kind": "cross", "layer", "head" (1-based), "entropy", "sink", "source": "test" | "sentence",
  "n_sentences"}``: chosen from the checkpoint's test-set diagnostics when the caller passes them
  (``head_stats.json``), else from this sentence's own.
- optional ``names``: what the labels call this trace's languages and special tokens
  (:meth:`explorer.names.Names.payload`: ``src_lang``, ``tgt_lang``, ``src``, ``tgt`` (English
  names), ``tokens`` ``{"src"|"tgt": {"pad", "unk", "sos", "eos"}}``, a missing role null). It
  travels with each trace, as a multilingual model's target language changes per request;
  without it the browser names the shipped model's (English, Italian, [SOS] ...).

Every array ``A`` is encoded on the library's array container (``transformer/core/wire.py``:
probabilities as ``f32``, token ids as ``u16``) or as one of the explorer's one-byte formats
(``explorer/quantise.py``: attention as ``u8row``/``u8tril``, deflated, the positional
encoding as ``u8lin``). ``decode_payload`` is the inverse in Python (used by the
tests); the browser's decoder is ``explorer/web/payload.js``.

The attention part alone (:func:`encode_attention`: tokens, sizes and ``attn``) is what the
epoch comparison sends for each training snapshot, so the browser reads both with the
same decoder.
"""

from __future__ import annotations

import numpy as np

from explorer.quantise import decode_array, encode_linear, encode_rows, encode_tril
from transformer.core.wire import encode_f32, encode_ids
from transformer.interpret.habits import with_habits

SCHEMA = "attention-explorer-payload/2"
MIN_PE_POSITIONS = 16


def unk_fraction(src_tokens: list[str], special_tokens: list[str], unk: str = "[UNK]") -> float:
    """Share of the real (non-special) source subwords that the tokenizer could not read."""
    real = [t for t in src_tokens if t not in special_tokens or t == unk]
    return sum(t == unk for t in real) / len(real) if real else 0.0


def encode_attention(trace) -> dict:
    """The attention part of the payload: ``schema``, the tokens, the sizes and ``attn``."""
    return {
        "schema": SCHEMA,
        "src_tokens": list(trace.src_tokens),
        "tgt_tokens": list(trace.tgt_tokens),
        "special_tokens": list(trace.special_tokens),
        "layers": trace.n_layers,
        "decoder_layers": int(trace.cross_attn.shape[0]),
        "heads": trace.n_heads,
        "steps": trace.steps,
        "attn": {
            "encoder": encode_rows(trace.encoder_attn, deflate=True),
            "decoder": encode_tril(trace.decoder_self_attn, deflate=True),
            "cross": encode_rows(trace.cross_attn, deflate=True),
        },
    }


def token_table(trace) -> dict[str, str]:
    """``vocab``: the string of every token id that the candidates and the logit lens name."""
    vocab: dict[str, str] = {}
    for ids, tokens in zip(trace.topk_ids, trace.topk_tokens):
        vocab.update(zip(map(str, np.asarray(ids).tolist()), tokens))
    if has_logit_lens(trace):
        for step_ids, step_tokens in zip(trace.logit_lens_ids, trace.logit_lens_tokens):
            for ids, tokens in zip(step_ids, step_tokens):
                vocab.update(zip(map(str, np.asarray(ids).tolist()), tokens))
    return vocab


def has_logit_lens(trace) -> bool:
    return all(getattr(trace, f"logit_lens_{x}", None) is not None for x in ("ids", "tokens", "probs"))


def focus_head(stats: dict | None) -> dict | None:
    """The cross-attention head that aligns best by a head-stats dict (one sentence's, as
    ``transformer.core.readings.head_stats`` measures it, or the test set's average): the one
    whose attention is both sharp (low normalised entropy) and on words rather than on [SOS],
    [EOS] or punctuation (low sink share), i.e. the largest (1 − entropy)·(1 − sink). When the
    stats name habits (``transformer.interpret.habits``), only the monotonic aligners compete
    (if there are any): a sharp head that does not follow the source in order (a "focused"
    head of layer 1, say) draws no alignment to read. Layers and heads 1-based; None without
    cross-attention stats."""
    cross = ((stats or {}).get("kinds") or {}).get("cross") or {}
    entropy, sink = cross.get("entropy"), cross.get("sink")
    if not entropy or not sink:
        return None
    habit = cross.get("habit") or []
    aligners = {(l, h) for l, row in enumerate(habit) for h, x in enumerate(row or []) if x == "monotonic aligner"}
    best = None
    for l, (row_e, row_s) in enumerate(zip(entropy, sink)):
        for h, (e, k) in enumerate(zip(row_e, row_s)):
            if e is None or k is None or (aligners and (l, h) not in aligners):
                continue
            score = (1 - e) * (1 - k)
            if best is None or score > best[0]:
                best = (score, l, h, e, k)
    if best is None:
        return None
    _, l, h, e, k = best
    return {
        "kind": "cross",
        "layer": l + 1,
        "head": h + 1,
        "entropy": round(float(e), 4),
        "sink": round(float(k), 4),
        "n_sentences": int(stats.get("n_sentences") or 1),
    }


def encode_trace(trace, origin: str = "translate", test_stats: dict | None = None, names=None) -> dict:
    """A :class:`~transformer.core.trace.Trace` -> the JSON-ready payload described above.
    ``test_stats``: the checkpoint's test-set head diagnostics (``head_stats.json``), which
    choose the head a new sentence opens on; without them the sentence's own choose it.
    ``names``: the :class:`explorer.names.Names` of the trace's languages and special tokens."""
    S, T = len(trace.src_tokens), trace.steps
    pe_rows = int(min(trace.positional_encoding.shape[0], max(S, T + 1, MIN_PE_POSITIONS)))
    out = {
        **encode_attention(trace),
        "origin": origin,
        "src_text": trace.src_text,
        "translation": trace.translation,
        "forced_prefix": [int(i) for i in trace.forced_prefix],
        "truncated": bool(trace.truncated),
        "n_src_tokens_dropped": int(trace.n_src_tokens_dropped),
        "finished": bool(trace.finished),
        "d_model": int(trace.positional_encoding.shape[1]),
        "max_positions": int(trace.positional_encoding.shape[0]),
        "unk_fraction": unk_fraction(trace.src_tokens, trace.special_tokens, trace.unk_token),
        "vocab": token_table(trace),
        "topk": {"ids": encode_ids(trace.topk_ids), "probs": encode_f32(trace.topk_probs)},
        "pe": encode_linear(trace.positional_encoding[:pe_rows], -1.0, 1.0),
    }
    if has_logit_lens(trace):
        out["logit_lens"] = {"ids": encode_ids(trace.logit_lens_ids), "probs": encode_f32(trace.logit_lens_probs)}
    elif getattr(trace, "logit_lens_left_out", False):
        out["logit_lens_left_out"] = True  # the page asks for it when its section opens (panels/lens.py)
    for name in ("encoder_rollout", "rollout"):
        value = getattr(trace, name, None)
        if value is not None:
            out[name] = encode_rows(np.asarray(value))
    head_stats = getattr(trace, "head_stats", None)
    if head_stats is not None:
        out["head_stats"] = head_stats = with_habits(head_stats)  # the viewer shows each head's habit
    if names is not None:
        out["names"] = names.payload()
    from_test = focus_head(test_stats)
    focus = from_test or focus_head(head_stats)
    if focus is not None:
        out["focus"] = {**focus, "source": "test" if from_test else "sentence"}
    return out


def decode_tokens(payload: dict) -> dict[str, list]:
    """The token strings of a payload: ``topk_tokens`` (T, k) and, when present,
    ``logit_lens_tokens`` (T, L, 5), looked up in its ``vocab`` table."""
    vocab = payload["vocab"]
    out = {"topk_tokens": [[vocab[str(i)] for i in row] for row in decode_array(payload["topk"]["ids"]).tolist()]}
    if "logit_lens" in payload:
        out["logit_lens_tokens"] = [
            [[vocab[str(i)] for i in k] for k in layer] for layer in decode_array(payload["logit_lens"]["ids"]).tolist()
        ]
    return out


def decode_payload(payload: dict) -> dict[str, np.ndarray]:
    """Every array of a payload (or of its attention part alone) decoded back to float32
    numpy, for tests and notebooks."""
    if payload.get("schema") != SCHEMA:
        raise ValueError(f"not an {SCHEMA} payload")
    out = {f"{name}_attn": decode_array(a) for name, a in payload["attn"].items()}
    if "topk" in payload:
        out["topk_probs"] = decode_array(payload["topk"]["probs"])
    if "pe" in payload:
        out["positional_encoding"] = decode_array(payload["pe"])
    if "logit_lens" in payload:
        out["logit_lens_probs"] = decode_array(payload["logit_lens"]["probs"])
    for name in ("encoder_rollout", "rollout"):
        if name in payload:
            out[name] = decode_array(payload[name])
    return out
