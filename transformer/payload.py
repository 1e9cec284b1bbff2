"""The compact trace the browser viewer draws from: ``encode_trace(trace) -> dict``.

Why: the server runs the model once per sentence and the browser draws every view from
this one payload, so it must be small (about 40 KB for a 10-word sentence, at most about
1.47 MB at the 126-token cap, where both source and target reach 128 positions) and quick
to make. ``Trace.to_dict()`` stays the full-precision download.

Schema ``attention-explorer-payload/2`` (a JSON object):

- ``schema``, ``src_text``, ``translation``, ``src_tokens``, ``tgt_tokens``, ``special_tokens``,
  ``forced_prefix`` (target ids), ``truncated``, ``n_src_tokens_dropped``, ``finished``,
  ``layers``, ``heads``, ``steps`` (T), ``d_model``, ``unk_fraction`` (share of source
  subwords read as ``[UNK]``, specials excluded), ``origin`` (free label, e.g. ``"whatif"``).
- ``attn``: ``{"encoder": A (L,H,S,S), "decoder": A (L,H,T,T), "cross": A (L,H,T,S)}``;
  rows are queries, columns keys. Step t (0-based) is row t of decoder and cross.
- ``vocab``: ``{"<id>": str}``, the target-vocabulary string of every token id that ``topk``
  and ``logit_lens`` refer to. Tokens travel as ids plus this table because the same few
  hundred strings repeat across steps and layers (version 1 sent the strings themselves,
  about 60 KB at the 126-token cap).
- ``topk``: ``{"ids": A (T,k) token ids, "probs": A (T,k)}``.
- ``pe``: A (P, d_model): the model's positional-encoding buffer, first P positions
  (P = the longer of source and target, at least 16, at most max_positions).
- optional (present when the trace has them): ``logit_lens`` ``{"ids": A (T,L,5),
  "probs": A (T,L,5)}``, ``encoder_rollout`` A (S,S), ``rollout`` A (T,S), ``head_stats`` (JSON).

Every array ``A`` is ``{"enc": ..., "shape": [...], "data": base64}`` with ``enc`` one of:

- ``"u8row"``: each last-axis row r is quantised against its own maximum ``m_r``:
  ``q = round(255 * x / m_r)``; ``scale`` (base64 little-endian float16, one per row) holds
  ``m_r``, the row's maximum rounded up to the next float16; value ``= q * m_r / 255``, so
  the error is at most ``m_r / 510``. For non-negative data below 65504.
- ``"u8tril"``: as ``u8row`` but row i of each (T, T) matrix stores only entries 0..i
  (the causal decoder never looks right of the diagonal, where weights are exactly 0).
- ``"u8lin"``: ``q = round(255 * (x - lo) / (hi - lo))`` with ``lo``/``hi`` given; for signed data.
- ``"f32"``: little-endian float32.
- ``"u16"`` / ``"i32"``: little-endian integers (token ids; ``i32`` only for vocabularies of
  more than 65,536 entries).

``decode_payload`` is the inverse in Python (used by the tests); the browser's decoder is
``transformer/web/payload.js``.
"""

from __future__ import annotations

import base64

import numpy as np

SCHEMA = "attention-explorer-payload/2"
MIN_PE_POSITIONS = 16


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _unb64(s: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def _row_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row maxima as float16, rounded up so that no value exceeds its row's scale (rows
    of all zeros get scale 1 so they decode to zeros), and the values quantised against them.
    float16 halves the scales' share of the payload (about 50 KB at the 126-token cap); its
    relative error, under 0.05%, is far below the uint8 step."""
    m = x.max(axis=-1, keepdims=True) if x.shape[-1] else np.ones(x.shape[:-1] + (1,), np.float32)
    m = np.where(m > 0, m, 1.0).astype(np.float32)
    if m.size and m.max() > np.finfo(np.float16).max:
        raise ValueError("u8row/u8tril scales are stored as float16: values must stay below 65504")
    m16 = m.astype(np.float16)
    low = m16.astype(np.float32) < m
    m16[low] = np.nextafter(m16[low], np.float16(np.inf))
    m = m16.astype(np.float32)
    return m16, np.rint(np.clip(x / m, 0.0, 1.0) * 255.0).astype(np.uint8)


def encode_rows(x: np.ndarray) -> dict:
    """Non-negative array -> ``u8row`` (per last-axis-row max scaling)."""
    x = np.asarray(x, dtype=np.float32)
    m, q = _row_scale(x)
    return {"enc": "u8row", "shape": list(x.shape), "data": _b64(q), "scale": _b64(m.reshape(-1))}


def encode_tril(x: np.ndarray) -> dict:
    """(..., T, T) causal matrices -> ``u8tril``: only entries on or left of the diagonal."""
    x = np.asarray(x, dtype=np.float32)
    T = x.shape[-1]
    m, q = _row_scale(np.tril(x))
    rows, cols = np.tril_indices(T)
    return {"enc": "u8tril", "shape": list(x.shape), "data": _b64(q[..., rows, cols]),
            "scale": _b64(m.reshape(-1))}


def encode_linear(x: np.ndarray, lo: float, hi: float) -> dict:
    x = np.asarray(x, dtype=np.float32)
    q = np.rint((np.clip(x, lo, hi) - lo) / (hi - lo) * 255.0).astype(np.uint8)
    return {"enc": "u8lin", "shape": list(x.shape), "data": _b64(q), "lo": lo, "hi": hi}


def encode_f32(x: np.ndarray) -> dict:
    x = np.asarray(x, dtype="<f4")
    return {"enc": "f32", "shape": list(x.shape), "data": _b64(x)}


def encode_ids(x) -> dict:
    """Token ids as ``u16`` (two bytes each, base64), or ``i32`` for very large vocabularies."""
    x = np.asarray(x, dtype=np.int64)
    if x.size and (x.min() < 0 or x.max() > np.iinfo(np.int32).max):
        raise ValueError("token ids must be non-negative 32-bit integers")
    small = not x.size or x.max() <= np.iinfo(np.uint16).max
    return {"enc": "u16" if small else "i32", "shape": list(x.shape), "data": _b64(x.astype("<u2" if small else "<i4"))}


def decode_array(a: dict) -> np.ndarray:
    """The inverse of the ``encode_*`` functions (float32 result; int64 for ids)."""
    shape = tuple(a["shape"])
    if a["enc"] not in ("f32", "u8lin", "u8row", "u8tril", "u16", "i32"):
        raise ValueError(f"unknown array encoding {a['enc']!r}")
    if a["enc"] in ("u16", "i32"):
        return _unb64(a["data"], "<u2" if a["enc"] == "u16" else "<i4").reshape(shape).astype(np.int64)
    if a["enc"] == "f32":
        return _unb64(a["data"], "<f4").reshape(shape).astype(np.float32)
    if a["enc"] == "u8lin":
        q = _unb64(a["data"], np.uint8).reshape(shape).astype(np.float32)
        return (a["lo"] + q / 255.0 * (a["hi"] - a["lo"])).astype(np.float32)
    scale = _unb64(a["scale"], "<f2").astype(np.float32).reshape(shape[:-1] + (1,))
    if a["enc"] == "u8row":
        q = _unb64(a["data"], np.uint8).reshape(shape).astype(np.float32)
        return q * scale / 255.0
    T = shape[-1]  # u8tril
    rows, cols = np.tril_indices(T)
    packed = _unb64(a["data"], np.uint8).reshape(shape[:-2] + (len(rows),)).astype(np.float32)
    full = np.zeros(shape, dtype=np.float32)
    full[..., rows, cols] = packed
    return full * scale / 255.0


def unk_fraction(src_tokens: list[str], special_tokens: list[str], unk: str = "[UNK]") -> float:
    """Share of the real (non-special) source subwords that the tokenizer could not read."""
    real = [t for t in src_tokens if t not in special_tokens or t == unk]
    return sum(t == unk for t in real) / len(real) if real else 0.0


def encode_trace(trace, origin: str = "translate") -> dict:
    """A :class:`~transformer.trace.Trace` -> the JSON-ready payload described above."""
    S, T = len(trace.src_tokens), trace.steps
    pe_rows = int(min(trace.positional_encoding.shape[0], max(S, T + 1, MIN_PE_POSITIONS)))
    vocab: dict[str, str] = {}
    for ids, tokens in zip(trace.topk_ids, trace.topk_tokens):
        vocab.update(zip(map(str, np.asarray(ids).tolist()), tokens))
    lens = None
    if all(getattr(trace, f"logit_lens_{x}", None) is not None for x in ("ids", "tokens", "probs")):
        lens = trace.logit_lens_ids
        for step_ids, step_tokens in zip(lens, trace.logit_lens_tokens):
            for ids, tokens in zip(step_ids, step_tokens):
                vocab.update(zip(map(str, np.asarray(ids).tolist()), tokens))
    out = {
        "schema": SCHEMA,
        "origin": origin,
        "src_text": trace.src_text,
        "translation": trace.translation,
        "src_tokens": list(trace.src_tokens),
        "tgt_tokens": list(trace.tgt_tokens),
        "special_tokens": list(trace.special_tokens),
        "forced_prefix": [int(i) for i in trace.forced_prefix],
        "truncated": bool(trace.truncated),
        "n_src_tokens_dropped": int(trace.n_src_tokens_dropped),
        "finished": bool(trace.finished),
        "layers": trace.n_layers,
        "decoder_layers": int(trace.cross_attn.shape[0]),
        "heads": trace.n_heads,
        "steps": T,
        "d_model": int(trace.positional_encoding.shape[1]),
        "max_positions": int(trace.positional_encoding.shape[0]),
        "unk_fraction": unk_fraction(trace.src_tokens, trace.special_tokens),
        "attn": {
            "encoder": encode_rows(trace.encoder_attn),
            "decoder": encode_tril(trace.decoder_self_attn),
            "cross": encode_rows(trace.cross_attn),
        },
        "vocab": vocab,
        "topk": {
            "ids": encode_ids(trace.topk_ids),
            "probs": encode_f32(trace.topk_probs),
        },
        "pe": encode_linear(trace.positional_encoding[:pe_rows], -1.0, 1.0),
    }
    if lens is not None:
        out["logit_lens"] = {"ids": encode_ids(trace.logit_lens_ids),
                             "probs": encode_f32(trace.logit_lens_probs)}
    for name in ("encoder_rollout", "rollout"):
        value = getattr(trace, name, None)
        if value is not None:
            out[name] = encode_rows(np.asarray(value))
    head_stats = getattr(trace, "head_stats", None)
    if head_stats is not None:
        out["head_stats"] = head_stats
    return out


def decode_tokens(payload: dict) -> dict[str, list]:
    """The token strings of a payload: ``topk_tokens`` (T, k) and, when present,
    ``logit_lens_tokens`` (T, L, 5), looked up in its ``vocab`` table."""
    vocab = payload["vocab"]
    out = {"topk_tokens": [[vocab[str(i)] for i in row] for row in decode_array(payload["topk"]["ids"]).tolist()]}
    if "logit_lens" in payload:
        out["logit_lens_tokens"] = [[[vocab[str(i)] for i in k] for k in layer]
                                    for layer in decode_array(payload["logit_lens"]["ids"]).tolist()]
    return out


def decode_payload(payload: dict) -> dict[str, np.ndarray]:
    """Every array of a payload decoded back to float32 numpy (for tests and notebooks)."""
    if payload.get("schema") != SCHEMA:
        raise ValueError(f"not an {SCHEMA} payload")
    out = {f"{name}_attn": decode_array(a) for name, a in payload["attn"].items()}
    out["topk_probs"] = decode_array(payload["topk"]["probs"])
    out["positional_encoding"] = decode_array(payload["pe"])
    if "logit_lens" in payload:
        out["logit_lens_probs"] = decode_array(payload["logit_lens"]["probs"])
    for name in ("encoder_rollout", "rollout"):
        if name in payload:
            out[name] = decode_array(payload[name])
    return out
