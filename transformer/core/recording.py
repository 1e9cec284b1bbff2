"""One way to read and replace the model's internals: named points of the forward pass.

Every analysis that looks inside the model (attribution, activation patching, contributions,
DecoderLens, the arithmetic of one attention row) reads what it needs through a
:class:`Recording`, never through forward hooks or extra forward parameters::

    rec = Recording(keep=["cross.1.weights", "decoder_ffn.*.out"])
    with recording(rec):
        model(src, tgt_in)
    rec["cross.1.weights"]                          # (B, H, T, S)

    # activation patching: replace a point's value as the pass goes by
    rec = Recording(replace={"cross.0.heads": lambda heads: patched_heads})

The points, for layer ``l`` (0-based) of each attention kind ``encoder``, ``decoder_self``
and ``cross``:

- ``{kind}.{l}.residual``: the residual stream entering the sublayer (B, T, D);
- ``{kind}.{l}.query_in``: the query input after any pre-norm (B, T, D); ``.k`` and ``.v``
  (B, H, S, d_k) as the attention reads them (a cache's included); ``.mask``; ``.head_mask``
  (B or 1, H) or None;
- ``{kind}.{l}.weights``: the post-softmax weights before dropout (B, H, T, S), only when
  the pass computes them (``need_weights``);
- ``{kind}.{l}.heads``: each head's output as ``o_proj`` receives it (B, H, T, d_k), after any
  head mask (replaceable: patching);
- ``{kind}.{l}.output``: the residual stream leaving the sublayer (B, T, D);

and for the feed-forward blocks ``encoder_ffn`` and ``decoder_ffn``: ``.residual``, ``.out``
(the block's output before the residual dropout, replaceable) and ``.output`` (the layer's
output). ``encoder_ffn.{l}.output`` is what encoder layer ``l`` hands on; each stack's input
(token vectors and positions) is ``source.input`` (B, S, D) and ``target.input`` (B, T, D).

The recording is active for the current thread (a :class:`contextvars.ContextVar`), never
stored on a module, so a server's concurrent requests through one model never see each
other's recordings. With no recording active a point costs one variable lookup.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Callable, Iterable
from contextvars import ContextVar

_ACTIVE: ContextVar[Recording | None] = ContextVar("transformer_recording", default=None)


class Recording:
    """Which points to keep (names or ``fnmatch`` patterns) and which to replace (name ->
    function of the point's value returning the value to use instead)."""

    def __init__(self, keep: Iterable[str] = (), replace: dict[str, Callable] | None = None) -> None:
        self.keep = list(keep)
        self.replace = dict(replace or {})
        self.values: dict[str, object] = {}
        self.seen: set[str] = set()  # every point the pass went through (a test's check)

    def _kept(self, name: str) -> bool:
        return any(name == k or fnmatch.fnmatchcase(name, k) for k in self.keep)

    def see(self, name: str, value):
        """The point ``name`` with ``value``: replaced if asked, kept if asked."""
        self.seen.add(name)
        fn = self.replace.get(name)
        if fn is not None:
            value = fn(value)
        if self.keep and self._kept(name):
            self.values[name] = value
        return value

    def __getitem__(self, name: str):
        if name not in self.values:
            raise KeyError(f"{name!r} was not recorded (kept: {', '.join(self.keep) or 'nothing'})")
        return self.values[name]

    def __contains__(self, name: str) -> bool:
        return name in self.values


@contextlib.contextmanager
def recording(rec: Recording):
    """Make ``rec`` the active recording of this thread for the ``with`` block."""
    token = _ACTIVE.set(rec)
    try:
        yield rec
    finally:
        _ACTIVE.reset(token)


def point(prefix: str, what: str, value):
    """Called by the model at each named point (``prefix.what``); returns the value to go on
    with. The name is only put together while a recording is active."""
    rec = _ACTIVE.get()
    if rec is None:
        return value
    return rec.see(f"{prefix}.{what}", value)


def active() -> bool:
    """Whether a recording is active in this thread (a point whose value is costly to build,
    such as a mask, is only built then)."""
    return _ACTIVE.get() is not None
