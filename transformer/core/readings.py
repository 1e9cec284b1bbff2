"""Readings every trace carries: the logit lens's first settling layer, attention rollout,
source relevance and per-head diagnostics.

Pure functions of attention arrays or of a :class:`~transformer.core.trace.Trace`: they only
read what the traced decode recorded, never run the model, so ``Translator.trace`` computes
them once per sentence and the browser draws them. The analyses that run the model again
(knock-out, head importance) live in ``transformer.interpret.knockout``.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from transformer.core.trace import Trace


# --------------------------------------------------------------------------- logit lens
def logit_lens_first_layer(trace: Trace) -> list[int | None]:
    """Per step, the first decoder layer (0-based) from which the lens's top-1 is the
    token finally emitted and stays so in every later layer; ``None`` when the trace has
    no logit lens. The last layer always qualifies for greedy steps (its top-1 *is* the
    output); a forced step whose token is not the final top-1 gets ``None``."""
    if trace.logit_lens_ids is None:
        return []
    out_ids = np.asarray(trace.tgt_ids[1:])  # (T,)
    hit = trace.logit_lens_ids[:, :, 0] == out_ids[:, None]  # (T, L)
    # stays correct from layer l on: suffix-AND along layers
    stays = np.flip(np.logical_and.accumulate(np.flip(hit, axis=1), axis=1), axis=1)
    return [int(np.argmax(row)) if row.any() else None for row in stays]


# --------------------------------------------------------------------------- rollout
def strongest_key(row) -> int:
    """The key (column) an attention row weighs most: the first of equal maxima."""
    return int(np.argmax(np.asarray(row)))


def _row_normalise(a: np.ndarray) -> np.ndarray:
    s = a.sum(axis=-1, keepdims=True)
    return np.divide(a, s, out=np.zeros_like(a), where=s > 0)


def encoder_rollout(encoder_attn: np.ndarray) -> np.ndarray:
    """Attention rollout of the encoder (Abnar & Zuidema 2020), (S, S), rows sum to 1.

    For each layer l: Ā_l = mean over heads of A_l; Â_l = 0.5·Ā_l + 0.5·I (the residual
    connection), rows renormalised to sum to 1. Then R = Â_L · ... · Â_2 · Â_1: row i is
    how much each source position flows into the top-layer representation of position i.
    """
    A = np.asarray(encoder_attn, dtype=np.float64)  # (L, H, S, S)
    S = A.shape[-1]
    eye = np.eye(S)
    R = eye.copy()
    for layer in A:
        a_hat = _row_normalise(0.5 * layer.mean(axis=0) + 0.5 * eye)
        R = a_hat @ R
    return R.astype(np.float32)


def _residual_normalise(R: np.ndarray) -> np.ndarray:
    """R̄ = rownorm(R - I) + I (Chefer et al. 2021, eqs. 8-9): the self-relevance kept by
    the residual stays 1, the relevance spread to other tokens sums to 1 per row."""
    eye = np.eye(R.shape[-1])
    return _row_normalise(R - eye) + eye


def source_relevance(encoder_attn: np.ndarray, decoder_self_attn: np.ndarray, cross_attn: np.ndarray) -> np.ndarray:
    """Source relevance of every target step (T, S), rows sum to 1: Chefer et al. 2021
    ("Generic Attention-model Explainability for Interpreting Bi-Modal and
    Encoder-Decoder Transformers"), attention-only rules (Ā = mean over heads of the
    attention, in place of their gradient-weighted E_h[(∇A ⊙ A)+]).

    s = source tokens (S), t = target steps (T). Start with R_ss = I_S, R_tt = I_T, R_ts = 0.

    - each encoder layer (self-attention rule):      R_ss ← R_ss + Ā_enc · R_ss
    - each decoder layer, in order,
        self-attention rule:                        R_tt ← R_tt + Ā_dec · R_tt
                                                     R_ts ← R_ts + Ā_dec · R_ts
        cross-attention (bi-modal rule):            R_ts ← R_ts + R̄_tt · Ā_cross · R̄_ss
        (its other update, R_tt ← R_tt + Ā_cross · R_st, adds 0: the encoder never
        reads the target, R_st = 0)
      with R̄_xx = rownorm(R_xx - I) + I.
    - rollout[t] = R_ts[t] / sum(R_ts[t]).

    Note R_ss = Π(I + Ā_enc) = 2^L_enc × the Abnar-Zuidema encoder rollout, so the
    relevance runs through the encoder rollout. One deliberate departure from the
    reference code, which multiplies by (R̄_tt)ᵀ: in a causal decoder the transpose would
    make step t depend on later steps (R_tt is lower triangular), so we use R̄_tt, which
    mixes the cross-attention of the earlier target positions that step t drew on. Row t
    therefore uses only steps 0..t and does not change as decoding goes on.
    """
    enc = np.asarray(encoder_attn, dtype=np.float64)  # (Le, H, S, S)
    dec = np.asarray(decoder_self_attn, dtype=np.float64)  # (Ld, H, T, T)
    cross = np.asarray(cross_attn, dtype=np.float64)  # (Ld, H, T, S)
    S, T = enc.shape[-1], dec.shape[-1]
    R_ss, R_tt, R_ts = np.eye(S), np.eye(T), np.zeros((T, S))
    for layer in enc:
        R_ss = R_ss + layer.mean(axis=0) @ R_ss
    R_ss_bar = _residual_normalise(R_ss)
    for self_l, cross_l in zip(dec, cross):
        a = self_l.mean(axis=0)  # (T, T)
        R_tt = R_tt + a @ R_tt
        R_ts = R_ts + a @ R_ts
        R_ts = R_ts + _residual_normalise(R_tt) @ cross_l.mean(axis=0) @ R_ss_bar
    return _row_normalise(R_ts).astype(np.float32)


# --------------------------------------------------------------------------- head diagnostics
# the key classes a sink is measured on (a head's share of weight on them)
SINK_CLASSES = ("sink_sos", "sink_eos", "sink_punct")


def is_punctuation(token: str) -> bool:
    """A token made only of punctuation once the '▁' word marker is removed."""
    text = token.replace("▁", "")
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def _key_classes(tokens: list[str], starts: list[str], ends: list[str]) -> dict[str, np.ndarray]:
    """Key masks: the start tokens, the end tokens (``Trace.start_tokens`` / ``end_tokens``),
    punctuation. A token that both starts and ends (M2M100's </s>) counts as a start."""
    return {
        "sink_sos": np.array([t in starts for t in tokens]),
        "sink_eos": np.array([t in ends and t not in starts for t in tokens]),
        "sink_punct": np.array([is_punctuation(t) for t in tokens]),
    }


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks along the last axis, ties get their average rank (as in Spearman's rho)."""
    less = (x[..., None, :] < x[..., :, None]).sum(-1)
    equal = (x[..., None, :] == x[..., :, None]).sum(-1)
    return less + (equal + 1) / 2.0


def _spearman(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rank correlation of x (n,) with each row of y (..., n); NaN if constant."""
    rx, ry = _ranks(np.asarray(x, dtype=np.float64)), _ranks(np.asarray(y, dtype=np.float64))
    rx, ry = rx - rx.mean(), ry - ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx**2).sum() * (ry**2).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (ry * rx).sum(-1) / np.where(den > 0, den, 1.0), np.nan)


def _attention_measures(
    A: np.ndarray, key_tokens: list[str], causal: bool, self_attn: bool, frame: tuple[list[str], list[str]]
) -> dict[str, np.ndarray]:
    """Per-head measures (L, H) of attention A (L, H, Q, K); NaN where undefined. ``frame``:
    the names of the start and end tokens."""
    A = np.asarray(A, dtype=np.float64)
    L, H, Q, K = A.shape
    q = np.arange(Q)
    lengths = q + 1 if causal else np.full(Q, K)  # keys each query may see
    rows = lengths > 1  # length-1 rows have no choice: excluded everywhere
    out: dict[str, np.ndarray] = {}
    nan = np.full((L, H), np.nan)
    if not rows.any():
        for name in ("entropy", "confidence", "sink", *SINK_CLASSES):
            out[name] = nan.copy()
        return out
    Ar = A[:, :, rows]  # (L, H, Qr, K)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(Ar > 0, Ar * np.log(np.where(Ar > 0, Ar, 1.0)), 0.0)
    out["entropy"] = (-plogp.sum(-1) / np.log(lengths[rows])).mean(-1)
    out["confidence"] = Ar.max(-1).mean(-1)
    classes = _key_classes(key_tokens, *frame)
    for name, keys in classes.items():
        out[name] = Ar[..., keys].sum(-1).mean(-1)
    out["sink"] = Ar[..., classes["sink_sos"] | classes["sink_eos"] | classes["sink_punct"]].sum(-1).mean(-1)
    if self_attn:
        offsets = {"prev": -1, "same": 0} if causal else {"prev": -1, "same": 0, "next": 1}
        for name, d in offsets.items():
            k = q + d
            ok = rows & (k >= 0) & (k < lengths)
            out[name] = A[:, :, q[ok], k[ok]].mean(-1) if ok.any() else nan.copy()
    return out


def _monotonicity(cross: np.ndarray, trace: Trace) -> np.ndarray:
    """Spearman rho of step index vs argmax source position, per head (L, H)."""
    L, H, T, S = cross.shape
    frame = set(trace.start_tokens) | set(trace.end_tokens)
    content = np.array([t not in frame for t in trace.src_tokens])
    steps = np.array([trace.tgt_tokens[t + 1] not in trace.end_tokens for t in range(T)])
    if content.sum() == 0 or steps.sum() < 3:
        return np.full((L, H), np.nan)
    masked = np.where(content, cross[:, :, steps], -1.0)  # (L, H, T', S)
    return _spearman(np.arange(int(steps.sum())), masked.argmax(-1))


def _stats_dict(measures: dict[str, dict[str, np.ndarray]], n_sentences: int) -> dict:
    kinds = {}
    for kind, m in measures.items():
        L, H = next(iter(m.values())).shape
        entry: dict = {"layers": L, "heads": H}
        # rounded as shown (4 decimals), so that what is read from the figures (the habit a
        # head is named by, transformer.interpret.habits) agrees with them, and float noise (a
        # sentence traced alone or in a padded batch sums in another order) cannot tip a head
        # that sits on a threshold
        shown = {name: np.round(arr.astype(np.float64), 4) for name, arr in m.items()}
        for name, r in shown.items():
            entry[name] = [[None if np.isnan(v) else v for v in row] for row in r.tolist()]
        kinds[kind] = entry
    return {"schema": "head-stats/1", "n_sentences": n_sentences, "kinds": kinds}


def head_measures(trace: Trace) -> dict[str, dict[str, np.ndarray]]:
    """The raw (L, H) float arrays behind :func:`head_stats` (NaN where undefined)."""
    T = trace.steps
    frame = (trace.start_tokens, trace.end_tokens)
    enc = _attention_measures(trace.encoder_attn, trace.src_tokens, causal=False, self_attn=True, frame=frame)
    dec = _attention_measures(trace.decoder_self_attn, trace.tgt_tokens[:T], causal=True, self_attn=True, frame=frame)
    cross = _attention_measures(trace.cross_attn, trace.src_tokens, causal=False, self_attn=False, frame=frame)
    cross["monotonicity"] = _monotonicity(np.asarray(trace.cross_attn, dtype=np.float64), trace)
    return {"encoder": enc, "decoder_self": dec, "cross": cross}


def head_stats(trace: Trace) -> dict:
    """Diagnostics of every head on one sentence, JSON-ready.

    Measures, each an (L, H) list of lists per kind (``null`` where undefined):

    - ``entropy``: mean over query rows of the row's entropy / log(row length): 0 = all
      weight on one key, 1 = uniform. Row length = keys the query may see (S for encoder
      and cross-attention, t + 1 for decoder step t).
    - ``confidence``: mean over rows of the largest weight (Voita et al. 2019).
    - ``sink_sos``, ``sink_eos``, ``sink_punct`` and their sum ``sink``: mean share of a
      row's weight on [SOS], [EOS] and punctuation-only tokens (keys: source tokens for
      encoder and cross-attention, decoder inputs ``tgt_tokens[:T]`` for decoder self).
    - self-attention only: ``prev``, ``same`` (and ``next``, encoder only: the decoder is
      causal) = mean weight on key q-1, q, q+1, over the rows where that key exists.
    - cross-attention only: ``monotonicity`` = Spearman rank correlation between the step
      index and the source position of the row's largest weight (among source tokens
      other than [SOS]/[EOS]), over the steps that do not emit [EOS]; ``null`` when fewer
      than 3 such steps or a constant argmax. 1 = reads the source left to right.

    Rows of length 1 (decoder step 0, which can only see [SOS]) are excluded from every
    measure: that weight is forced, not chosen. ``transformer.interpret.habits.with_habits``
    names each head by what these figures say it habitually does.
    """
    return _stats_dict(head_measures(trace), 1)


def aggregate_head_stats(stats: list[dict]) -> dict:
    """Average several :func:`head_stats` dicts (e.g. over a test set) head by head,
    ignoring sentences where a measure is undefined (habit names the inputs carry are left
    out: name the averages again). The result has the same layout; ``n_sentences`` adds up
    the inputs' counts."""
    if not stats:
        raise ValueError("no head stats to aggregate")
    measures: dict[str, dict[str, np.ndarray]] = {}
    for kind, first in stats[0]["kinds"].items():
        names = [n for n, v in first.items() if isinstance(v, list) and n != "habit"]
        measures[kind] = {}
        for name in names:
            stack = np.array([s["kinds"][kind][name] for s in stats], dtype=np.float64)  # None -> nan
            ok = ~np.isnan(stack)
            count = ok.sum(axis=0)
            total = np.where(ok, stack, 0.0).sum(axis=0)
            # a head undefined in every sentence stays NaN (-> null)
            measures[kind][name] = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    return _stats_dict(measures, sum(int(s.get("n_sentences", 1)) for s in stats))
