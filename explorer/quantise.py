"""The browser payload's one-byte arrays: attention and probabilities quantised for the wire.

The container and the exact encodings (``f32``, ``u16``, ``i32``) are the library's
(``transformer/core/wire.py``), which the ``/translate`` API sends. What only the browser
reads is here: the explorer's payload (``explorer/payload.py``) quantises attention to one byte
per weight, and ``explorer/web/payload.js`` decodes every encoding. :func:`decode_array` and
:func:`unpack_arrays` read them back in Python (tests, benchmarks).

- ``"u8row"``: each last-axis row r is quantised against its own maximum ``m_r``:
  ``q = round(255 * x / m_r)``; ``scale`` (base64 little-endian float16, one per row) holds
  ``m_r``, the row's maximum rounded up to the next float16; value ``= q * m_r / 255``, so
  the error is at most ``m_r / 510``. For non-negative data below 65504.
- ``"u8tril"``: as ``u8row`` but row i of each (T, T) matrix stores only entries 0..i
  (the causal decoder never looks right of the diagonal, where weights are exactly 0).
- ``"u8lin"``: ``q = round(255 * (x - lo) / (hi - lo))`` with ``lo``/``hi`` given; for signed data.

The explorer deflates attention (``deflate=True``): most of a row's weights quantise to a few
small values, so it shrinks 1.7-10x, and the longest sentences stay within the payload budget
with a deeper model.
"""

from __future__ import annotations

import numpy as np

from transformer.core import wire

QUANTISED = ("u8lin", "u8row", "u8tril")
# every encoding the browser payload holds
ENCODINGS = (*wire.ENCODINGS, *QUANTISED)


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


def encode_rows(x: np.ndarray, deflate: bool = False) -> dict:
    """Non-negative array -> ``u8row`` (per last-axis-row max scaling)."""
    x = np.asarray(x, dtype=np.float32)
    m, q = _row_scale(x)
    return {"enc": "u8row", "shape": list(x.shape), **wire.pack_bytes(q, deflate), "scale": wire.b64(m.reshape(-1))}


def encode_tril(x: np.ndarray, deflate: bool = False) -> dict:
    """(..., T, T) causal matrices -> ``u8tril``: only entries on or left of the diagonal."""
    x = np.asarray(x, dtype=np.float32)
    T = x.shape[-1]
    m, q = _row_scale(np.tril(x))
    rows, cols = np.tril_indices(T)
    return {
        "enc": "u8tril",
        "shape": list(x.shape),
        **wire.pack_bytes(q[..., rows, cols], deflate),
        "scale": wire.b64(m.reshape(-1)),
    }


def encode_linear(x: np.ndarray, lo: float, hi: float) -> dict:
    """Values in [lo, hi] -> ``u8lin`` (one byte each, error at most (hi - lo) / 510)."""
    x = np.asarray(x, dtype=np.float32)
    q = np.rint((np.clip(x, lo, hi) - lo) / (hi - lo) * 255.0).astype(np.uint8)
    return {"enc": "u8lin", "shape": list(x.shape), "data": wire.b64(q), "lo": lo, "hi": hi}


def decode_array(a: dict) -> np.ndarray:
    """Any array of the payload as numpy: the quantised ones here, the rest by the library's codec."""
    if a["enc"] not in QUANTISED:
        return wire.decode_array(a)
    shape = tuple(a["shape"])
    if a["enc"] == "u8lin":
        q = wire.read_bytes(a, np.uint8).reshape(shape).astype(np.float32)
        return (a["lo"] + q / 255.0 * (a["hi"] - a["lo"])).astype(np.float32)
    scale = wire.unb64(a["scale"], "<f2").astype(np.float32).reshape(shape[:-1] + (1,))
    if a["enc"] == "u8row":
        q = wire.read_bytes(a, np.uint8).reshape(shape).astype(np.float32)
        return q * scale / 255.0
    rows, cols = np.tril_indices(shape[-1])  # u8tril
    packed = wire.read_bytes(a, np.uint8).reshape(shape[:-2] + (len(rows),)).astype(np.float32)
    full = np.zeros(shape, dtype=np.float32)
    full[..., rows, cols] = packed
    return full * scale / 255.0


def unpack_arrays(obj):
    """``obj`` (a payload, or part of one) with every encoded array replaced by numpy."""
    return wire.unpack_arrays(obj, decode_array, ENCODINGS)
