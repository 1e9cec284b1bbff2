"""Value zeroing (Mohebbi, Zuidema, Chrupała and Alishahi, EACL 2023): how much each token
matters to each other token in one layer, measured by taking it out.

For a layer and an attention kind, token j is taken out by zeroing its value vectors in that
attention (every head), so no query can read anything from it; the layer then runs again and
its output at every position i is compared with the original::

    C[i, j] = 1 - cos(x̃_i, x̃_i^{¬j})          (the layer's output at i, with and without j's values)

Unlike attention weights this sees the whole layer: the value vectors' sizes, the output
projection, the residual connection, the norms and the feed-forward block. Rows are
normalised to sum to 1 (a row of zeros stays zero), as in the paper, and the layers are
rolled out by multiplying the normalised matrices (no identity added: the residual is
already inside each layer's measurement).

Kinds, for a trace of source length S and T decoder steps (rows are queries, columns keys):

- ``encoder``: (L_enc, S, S), each source token's effect on each source position;
- ``decoder_self``: (L_dec, T, T), each decoder input's effect on each step (causal: a later
  input cannot reach an earlier step, those entries are 0);
- ``cross``: (L_dec, T, S), each source token's effect on each step, through the decoder
  layer's cross-attention (the encoder output of token j loses its values there).

Rolled out: ``encoder_rollout`` (S, S) = N_L ... N_1 over the encoder layers,
``decoder_rollout`` (T, T) likewise over the decoder's self-attention, and
``cross_rollout`` (L_dec, T, S) = cross_l · encoder_rollout: each layer's cross-attention
measurement carried back through the encoder to the source tokens as typed.

Each layer runs once per kind, batched: row j of the batch zeroes token j's values, read
and replaced through the model's named points (``transformer.core.recording``), every row
starting from the layer's recorded input. ``tests/test_value_zeroing.py`` checks the batch
against a brute-force loop of whole forward passes, one zeroed token at a time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch

from transformer.core import stepping
from transformer.core.model import Transformer
from transformer.core.recording import Recording, recording
from transformer.core.trace import Trace

KINDS = ("encoder", "decoder_self", "cross")
SCHEMA = "value-zeroing/1"
# what a layer's runs start from and are compared with (transformer.core.recording)
LAYER_POINTS = ["encoder.*.residual", "encoder_ffn.*.output", "decoder_self.*.residual", "decoder_ffn.*.output"]


@dataclass
class ValueZeroing:
    """Value zeroing of one trace: per kind (L, queries, keys), rows normalised."""

    src_tokens: list[str]
    tgt_tokens: list[str]  # the decoder inputs of the T steps
    encoder: np.ndarray  # (L_enc, S, S)
    decoder_self: np.ndarray  # (L_dec, T, T)
    cross: np.ndarray  # (L_dec, T, S)
    raw: dict  # kind -> the distances before normalising, same shapes

    @property
    def encoder_rollout(self) -> np.ndarray:
        return rollout(self.encoder)

    @property
    def decoder_rollout(self) -> np.ndarray:
        return rollout(self.decoder_self)

    @property
    def cross_rollout(self) -> np.ndarray:
        return self.cross @ self.encoder_rollout  # (L_dec, T, S)

    def to_dict(self, digits: int = 4) -> dict:
        def r(a: np.ndarray) -> list:
            return np.round(np.asarray(a, dtype=np.float64), digits).tolist()

        return {
            "schema": SCHEMA,
            "src_tokens": self.src_tokens,
            "tgt_tokens": self.tgt_tokens,
            **{kind: r(getattr(self, kind)) for kind in KINDS},
            "encoder_rollout": r(self.encoder_rollout),
            "decoder_rollout": r(self.decoder_rollout),
            "cross_rollout": r(self.cross_rollout),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


def normalise_rows(c: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (a row of zeros stays zero)."""
    s = c.sum(axis=-1, keepdims=True)
    return np.divide(c, s, out=np.zeros_like(c), where=s > 0)


def rollout(layers: np.ndarray) -> np.ndarray:
    """N_L ... N_1 of normalised square matrices (L, Q, Q): row i, what each position of the
    stack's input contributes to position i at its top."""
    out = np.eye(layers.shape[-1])
    for n in layers:
        out = n @ out
    return out


def zero_own_token(v: torch.Tensor) -> torch.Tensor:
    """Row b of the batch (B, H, K, d_k) with the values of key b zeroed, in every head."""
    v = v.clone()
    b = torch.arange(v.shape[0])
    v[b, :, b] = 0.0
    return v


def distances(rows: torch.Tensor, original: torch.Tensor) -> np.ndarray:
    """1 - cos between row j's output at every position (J, Q, D) and the original (Q, D):
    (Q, J), queries by zeroed keys."""
    cos = torch.nn.functional.cosine_similarity(rows.double(), original.double()[None], dim=-1)  # (J, Q)
    return (1.0 - cos).clamp(min=0.0).T.numpy()


@torch.no_grad()
def _recorded(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor) -> tuple[Recording, dict]:
    """One ordinary pass keeping each layer's input and output, and what the layers are run with."""
    rec = Recording(keep=LAYER_POINTS)
    with recording(rec):
        src_mask, memory, _ = stepping.encode(model, src)
        stepping.decode_all(model, tgt_in, memory, src_mask)
    return rec, {"memory": memory, "src_mask": src_mask, "tgt_mask": model.tgt_mask(tgt_in)}


@torch.no_grad()
def _encoder_layer(model: Transformer, rec: Recording, run: dict, l: int) -> np.ndarray:
    x = rec[f"encoder.{l}.residual"]  # (1, S, D): the layer's input
    S = x.shape[1]
    with recording(Recording(replace={f"encoder.{l}.v": zero_own_token})):
        rows, _ = model.encoder_layers[l](x.expand(S, -1, -1), run["src_mask"].expand(S, -1, -1, -1))
    return distances(rows, rec[f"encoder_ffn.{l}.output"][0])  # (S, S)


@torch.no_grad()
def _decoder_layer(model: Transformer, rec: Recording, run: dict, l: int, kind: str) -> np.ndarray:
    x = rec[f"decoder_self.{l}.residual"]  # (1, T, D): the layer's input
    J = x.shape[1] if kind == "decoder_self" else run["memory"].shape[1]
    with recording(Recording(replace={f"{kind}.{l}.v": zero_own_token})):
        rows, *_ = model.decoder_layers[l](
            x.expand(J, -1, -1),
            run["memory"].expand(J, -1, -1),
            run["tgt_mask"].expand(J, -1, -1, -1),
            run["src_mask"].expand(J, -1, -1, -1),
        )
    d = distances(rows, rec[f"decoder_ffn.{l}.output"][0])  # (T, J)
    return np.tril(d) if kind == "decoder_self" else d  # a later input never reaches an earlier step


def value_zeroing(translator_or_model, trace: Trace) -> ValueZeroing:
    """Value zeroing of every layer and kind of ``trace`` (a trace this model made)."""
    model = getattr(translator_or_model, "model", translator_or_model)
    if not isinstance(model, Transformer):
        raise TypeError(f"expected a Translator or a Transformer, got {type(translator_or_model).__name__}")
    if model.training:
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    if not isinstance(trace, Trace) or trace.steps == 0:
        raise ValueError("value zeroing needs a trace with at least one decoding step")
    src = torch.tensor([trace.src_ids])  # (1, S)
    tgt_in = torch.tensor([trace.tgt_ids[: trace.steps]])  # (1, T): the decoder inputs
    rec, run = _recorded(model, src, tgt_in)
    raw = {
        "encoder": np.stack([_encoder_layer(model, rec, run, l) for l in range(len(model.encoder_layers))]),
        "decoder_self": np.stack(
            [_decoder_layer(model, rec, run, l, "decoder_self") for l in range(len(model.decoder_layers))]
        ),
        "cross": np.stack([_decoder_layer(model, rec, run, l, "cross") for l in range(len(model.decoder_layers))]),
    }
    return ValueZeroing(
        src_tokens=list(trace.src_tokens),
        tgt_tokens=list(trace.tgt_tokens[: trace.steps]),
        **{kind: normalise_rows(raw[kind]) for kind in KINDS},
        raw=raw,
    )
