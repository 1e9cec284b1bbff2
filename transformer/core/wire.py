"""Arrays on the wire: the codec for every numpy array this project sends as JSON.

Why: a trace is mostly float arrays. As nested JSON lists, every number is a node that
the server serialises and that a client (gradio_client, the browser) walks: that cost more
CPU than running the model. Encoded, an array is one small object whose bytes travel as
base64. The ``/translate`` API sends exact ``f32`` arrays with the encodings below, which
:func:`decode_array` reads back in Python (tests, notebooks, gradio_client users).

An encoded array is ``{"enc": ..., "shape": [...], "data": base64}`` with ``enc`` one of:

- ``"f32"``: little-endian float32, exact.
- ``"u16"`` / ``"i32"``: little-endian integers (token ids; ``i32`` only for vocabularies of
  more than 65,536 entries).

A user of the codec may add encodings of its own on the same container (one-byte quantised
ones for a browser, say), built with :func:`pack_bytes` / :func:`read_bytes` and read back by
passing its decoder to :func:`unpack_arrays`.

An array packed with ``deflate=True`` also has ``"zip": "deflate"``: its ``data`` bytes were
compressed with zlib (RFC 1950) before base64, which the browser inflates with its own
``DecompressionStream("deflate")``.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

ENCODINGS = ("f32", "u16", "i32")


def b64(a: np.ndarray) -> str:
    """The bytes of ``a`` (C order) in base64."""
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")


def unb64(s: str, dtype) -> np.ndarray:
    """The inverse of :func:`b64`, flat."""
    return np.frombuffer(base64.b64decode(s), dtype=dtype)


def pack_bytes(q: np.ndarray, deflate: bool) -> dict:
    """``data`` (and ``zip``) of an encoded array: its bytes in base64, deflated first if asked.
    Level 1: the attention of the longest sentence deflates in about 30 ms, and higher levels
    gain under 10% more."""
    if not deflate:
        return {"data": b64(q)}
    raw = np.ascontiguousarray(q).tobytes()
    return {"data": base64.b64encode(zlib.compress(raw, 1)).decode("ascii"), "zip": "deflate"}


def read_bytes(a: dict, dtype) -> np.ndarray:
    """The bytes of encoded array ``a`` as ``dtype`` (inflated where ``a`` was deflated)."""
    if a.get("zip") is None:
        return unb64(a["data"], dtype)
    if a["zip"] != "deflate":
        raise ValueError(f"unknown array compression {a['zip']!r}")
    return np.frombuffer(zlib.decompress(base64.b64decode(a["data"])), dtype=dtype)


def encode_f32(x: np.ndarray) -> dict:
    """Any float array, exactly (as little-endian float32)."""
    x = np.asarray(x, dtype="<f4")
    return {"enc": "f32", "shape": list(x.shape), "data": b64(x)}


def encode_ids(x) -> dict:
    """Token ids as ``u16`` (two bytes each, base64), or ``i32`` for very large vocabularies."""
    x = np.asarray(x, dtype=np.int64)
    if x.size and (x.min() < 0 or x.max() > np.iinfo(np.int32).max):
        raise ValueError("token ids must be non-negative 32-bit integers")
    small = not x.size or x.max() <= np.iinfo(np.uint16).max
    return {"enc": "u16" if small else "i32", "shape": list(x.shape), "data": b64(x.astype("<u2" if small else "<i4"))}


def is_encoded(obj, encodings: tuple[str, ...] = ENCODINGS) -> bool:
    """True for a dict that one of the ``encode_*`` functions made (of ``encodings``)."""
    return isinstance(obj, dict) and obj.get("enc") in encodings and "shape" in obj and "data" in obj


def decode_array(a: dict) -> np.ndarray:
    """The inverse of the ``encode_*`` functions (float32 result; int64 for ids)."""
    if a["enc"] not in ENCODINGS:
        raise ValueError(f"unknown array encoding {a['enc']!r}")
    shape = tuple(a["shape"])
    if a["enc"] == "f32":
        return read_bytes(a, "<f4").reshape(shape).astype(np.float32)
    return read_bytes(a, "<u2" if a["enc"] == "u16" else "<i4").reshape(shape).astype(np.int64)


def unpack_arrays(obj, decode=decode_array, encodings: tuple[str, ...] = ENCODINGS):
    """``obj`` (e.g. the trace dict ``/translate`` returns) with every encoded array replaced
    by a numpy array; nested dicts and lists are walked, everything else returned as it is.
    ``decode`` and ``encodings``: those of a codec that adds encodings of its own."""
    if is_encoded(obj, encodings):
        return decode(obj)
    if isinstance(obj, dict):
        return {k: unpack_arrays(v, decode, encodings) for k, v in obj.items()}
    if isinstance(obj, list):
        return [unpack_arrays(v, decode, encodings) for v in obj]
    return obj
