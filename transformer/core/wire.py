"""Arrays on the wire: the one codec for every numpy array this project sends as JSON.

Why: a trace is mostly float arrays. As nested JSON lists, every number is a node that
the server serialises and that a client (gradio_client, the browser) walks: that cost more
CPU than running the model. Encoded, an array is one small object whose bytes travel as
base64. The ``/translate`` API sends exact ``f32`` arrays; the explorer's browser payload
(``explorer/payload.py``) quantises attention to one byte per weight. Both use the
encodings below, so one decoder reads them all: :func:`decode_array` in Python (tests,
notebooks, gradio_client users) and ``explorer/web/payload.js`` in the browser.

An encoded array is ``{"enc": ..., "shape": [...], "data": base64}`` with ``enc`` one of:

- ``"f32"``: little-endian float32, exact.
- ``"u8row"``: each last-axis row r is quantised against its own maximum ``m_r``:
  ``q = round(255 * x / m_r)``; ``scale`` (base64 little-endian float16, one per row) holds
  ``m_r``, the row's maximum rounded up to the next float16; value ``= q * m_r / 255``, so
  the error is at most ``m_r / 510``. For non-negative data below 65504.
- ``"u8tril"``: as ``u8row`` but row i of each (T, T) matrix stores only entries 0..i
  (the causal decoder never looks right of the diagonal, where weights are exactly 0).
- ``"u8lin"``: ``q = round(255 * (x - lo) / (hi - lo))`` with ``lo``/``hi`` given; for signed data.
- ``"u16"`` / ``"i32"``: little-endian integers (token ids; ``i32`` only for vocabularies of
  more than 65,536 entries).

An array made with ``deflate=True`` also has ``"zip": "deflate"``: its ``data`` bytes were
compressed with zlib (RFC 1950) before base64, which the browser inflates with its own
``DecompressionStream("deflate")``. The explorer deflates attention: most of a row's weights
quantise to a few small values, so it shrinks 1.7-10x, and the longest sentences stay
within the payload budget with a deeper model.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

ENCODINGS = ("f32", "u8lin", "u8row", "u8tril", "u16", "i32")


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def _unb64(s: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def _packed(q: np.ndarray, deflate: bool) -> dict:
    """``data`` (and ``zip``) of an encoded array: its bytes in base64, deflated first if asked.
    Level 1: the attention of the longest sentence deflates in about 30 ms, and higher levels
    gain under 10% more."""
    if not deflate:
        return {"data": _b64(q)}
    raw = np.ascontiguousarray(q).tobytes()
    return {"data": base64.b64encode(zlib.compress(raw, 1)).decode("ascii"), "zip": "deflate"}


def _data(a: dict, dtype) -> np.ndarray:
    """The bytes of encoded array ``a`` as ``dtype`` (inflated where ``a`` was deflated)."""
    if a.get("zip") is None:
        return _unb64(a["data"], dtype)
    if a["zip"] != "deflate":
        raise ValueError(f"unknown array compression {a['zip']!r}")
    return np.frombuffer(zlib.decompress(base64.b64decode(a["data"])), dtype=dtype)


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


def encode_f32(x: np.ndarray) -> dict:
    """Any float array, exactly (as little-endian float32)."""
    x = np.asarray(x, dtype="<f4")
    return {"enc": "f32", "shape": list(x.shape), "data": _b64(x)}


def encode_rows(x: np.ndarray, deflate: bool = False) -> dict:
    """Non-negative array -> ``u8row`` (per last-axis-row max scaling)."""
    x = np.asarray(x, dtype=np.float32)
    m, q = _row_scale(x)
    return {"enc": "u8row", "shape": list(x.shape), **_packed(q, deflate), "scale": _b64(m.reshape(-1))}


def encode_tril(x: np.ndarray, deflate: bool = False) -> dict:
    """(..., T, T) causal matrices -> ``u8tril``: only entries on or left of the diagonal."""
    x = np.asarray(x, dtype=np.float32)
    T = x.shape[-1]
    m, q = _row_scale(np.tril(x))
    rows, cols = np.tril_indices(T)
    return {
        "enc": "u8tril",
        "shape": list(x.shape),
        **_packed(q[..., rows, cols], deflate),
        "scale": _b64(m.reshape(-1)),
    }


def encode_linear(x: np.ndarray, lo: float, hi: float) -> dict:
    """Values in [lo, hi] -> ``u8lin`` (one byte each, error at most (hi - lo) / 510)."""
    x = np.asarray(x, dtype=np.float32)
    q = np.rint((np.clip(x, lo, hi) - lo) / (hi - lo) * 255.0).astype(np.uint8)
    return {"enc": "u8lin", "shape": list(x.shape), "data": _b64(q), "lo": lo, "hi": hi}


def encode_ids(x) -> dict:
    """Token ids as ``u16`` (two bytes each, base64), or ``i32`` for very large vocabularies."""
    x = np.asarray(x, dtype=np.int64)
    if x.size and (x.min() < 0 or x.max() > np.iinfo(np.int32).max):
        raise ValueError("token ids must be non-negative 32-bit integers")
    small = not x.size or x.max() <= np.iinfo(np.uint16).max
    return {"enc": "u16" if small else "i32", "shape": list(x.shape), "data": _b64(x.astype("<u2" if small else "<i4"))}


def is_encoded(obj) -> bool:
    """True for a dict that one of the ``encode_*`` functions made."""
    return isinstance(obj, dict) and obj.get("enc") in ENCODINGS and "shape" in obj and "data" in obj


def decode_array(a: dict) -> np.ndarray:
    """The inverse of the ``encode_*`` functions (float32 result; int64 for ids)."""
    shape = tuple(a["shape"])
    if a["enc"] not in ENCODINGS:
        raise ValueError(f"unknown array encoding {a['enc']!r}")
    if a["enc"] in ("u16", "i32"):
        return _data(a, "<u2" if a["enc"] == "u16" else "<i4").reshape(shape).astype(np.int64)
    if a["enc"] == "f32":
        return _data(a, "<f4").reshape(shape).astype(np.float32)
    if a["enc"] == "u8lin":
        q = _data(a, np.uint8).reshape(shape).astype(np.float32)
        return (a["lo"] + q / 255.0 * (a["hi"] - a["lo"])).astype(np.float32)
    scale = _unb64(a["scale"], "<f2").astype(np.float32).reshape(shape[:-1] + (1,))
    if a["enc"] == "u8row":
        q = _data(a, np.uint8).reshape(shape).astype(np.float32)
        return q * scale / 255.0
    T = shape[-1]  # u8tril
    rows, cols = np.tril_indices(T)
    packed = _data(a, np.uint8).reshape(shape[:-2] + (len(rows),)).astype(np.float32)
    full = np.zeros(shape, dtype=np.float32)
    full[..., rows, cols] = packed
    return full * scale / 255.0


def unpack_arrays(obj):
    """``obj`` (e.g. the trace dict ``/translate`` returns) with every encoded array replaced
    by a numpy array; nested dicts and lists are walked, everything else returned as it is."""
    if is_encoded(obj):
        return decode_array(obj)
    if isinstance(obj, dict):
        return {k: unpack_arrays(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unpack_arrays(v) for v in obj]
    return obj
