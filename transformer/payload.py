"""The compact trace the browser viewer draws from: ``encode_trace(trace) -> dict``.

Why: the server runs the model once per sentence and the browser draws every view from
this one payload, so it must be small (about 20 KB for a 10-word sentence, about 1.3 MB at
the 126-token cap) and quick to make. ``Trace.to_dict()`` stays the full-precision download.

Schema ``attention-explorer-payload/1`` (a JSON object):

- ``schema``, ``src_text``, ``translation``, ``src_tokens``, ``tgt_tokens``, ``special_tokens``,
  ``forced_prefix`` (target ids), ``truncated``, ``n_src_tokens_dropped``, ``finished``,
  ``layers``, ``heads``, ``steps`` (T), ``d_model``, ``unk_fraction`` (share of source
  subwords read as ``[UNK]``, specials excluded), ``origin`` (free label, e.g. ``"whatif"``).
- ``attn``: ``{"encoder": A (L,H,S,S), "decoder": A (L,H,T,T), "cross": A (L,H,T,S)}``;
  rows are queries, columns keys. Step t (0-based) is row t of decoder and cross.
- ``topk``: ``{"tokens": [[str]] (T,k), "ids": [[int]], "probs": A (T,k)}``.
- ``pe``: A (P, d_model): the model's positional-encoding buffer, first P positions
  (P = the longer of source and target, at least 16, at most max_positions).
- optional (present when the trace has them): ``logit_lens`` ``{"tokens": (T,L,5) str,
  "probs": A (T,L,5)}``, ``encoder_rollout`` A (S,S), ``rollout`` A (T,S), ``head_stats`` (JSON).

Every array ``A`` is ``{"enc": ..., "shape": [...], "data": base64}`` with ``enc`` one of:

- ``"u8row"``: each last-axis row r is quantised against its own maximum ``m_r``:
  ``q = round(255 * x / m_r)``; ``scale`` (base64 float32, one per row) holds ``m_r``;
  value ``= q * m_r / 255``, so the error is at most ``m_r / 510``. For non-negative data.
- ``"u8tril"``: as ``u8row`` but row i of each (T, T) matrix stores only entries 0..i
  (the causal decoder never looks right of the diagonal, where weights are exactly 0).
- ``"u8lin"``: ``q = round(255 * (x - lo) / (hi - lo))`` with ``lo``/``hi`` given; for signed data.
- ``"f32"``: little-endian float32.

``decode_payload`` is the inverse in Python (used by the tests); the browser's decoder is
``transformer/web/payload.js``.
"""

from __future__ import annotations

import base64

import numpy as np

SCHEMA = "attention-explorer-payload/1"
MIN_PE_POSITIONS = 16


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _unb64(s: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def _row_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row maxima (rows of all zeros get scale 1 so they decode to zeros)."""
    m = x.max(axis=-1, keepdims=True) if x.shape[-1] else np.ones(x.shape[:-1] + (1,), np.float32)
    m = np.where(m > 0, m, 1.0).astype(np.float32)
    return m, np.rint(np.clip(x / m, 0.0, 1.0) * 255.0).astype(np.uint8)


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


def decode_array(a: dict) -> np.ndarray:
    """The inverse of the ``encode_*`` functions (float32 result)."""
    shape = tuple(a["shape"])
    if a["enc"] not in ("f32", "u8lin", "u8row", "u8tril"):
        raise ValueError(f"unknown array encoding {a['enc']!r}")
    if a["enc"] == "f32":
        return _unb64(a["data"], "<f4").reshape(shape).astype(np.float32)
    if a["enc"] == "u8lin":
        q = _unb64(a["data"], np.uint8).reshape(shape).astype(np.float32)
        return (a["lo"] + q / 255.0 * (a["hi"] - a["lo"])).astype(np.float32)
    scale = _unb64(a["scale"], "<f4").reshape(shape[:-1] + (1,))
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
        "topk": {
            "tokens": [list(row) for row in trace.topk_tokens],
            "ids": np.asarray(trace.topk_ids).astype(int).tolist(),
            "probs": encode_f32(trace.topk_probs),
        },
        "pe": encode_linear(trace.positional_encoding[:pe_rows], -1.0, 1.0),
    }
    lens_tokens, lens_probs = getattr(trace, "logit_lens_tokens", None), getattr(trace, "logit_lens_probs", None)
    if lens_tokens is not None and lens_probs is not None:
        out["logit_lens"] = {"tokens": [[list(k) for k in layer] for layer in lens_tokens],
                             "probs": encode_f32(lens_probs)}
    for name in ("encoder_rollout", "rollout"):
        value = getattr(trace, name, None)
        if value is not None:
            out[name] = encode_rows(np.asarray(value))
    head_stats = getattr(trace, "head_stats", None)
    if head_stats is not None:
        out["head_stats"] = head_stats
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
