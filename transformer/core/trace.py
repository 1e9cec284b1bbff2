"""The record of one decoded sentence: plain numpy arrays and strings, no torch.

Kept apart from ``decoding.py`` so that anything that only *reads* a trace (the viewer
payload, analyses, notebooks, tests) does not need the model code. Layout (see also
``decoding.py``): the decoder input is ``[SOS] y1 ... y(n-1)``; step t (0-based) reads
input token t and emits ``y(t+1)``.

- ``tgt_tokens`` is ``[SOS] y1 ... yn`` (n + 1 tokens);
- ``decoder_self_attn`` is (layers, heads, n, n): row t is what step t attended to;
  entries right of the diagonal are exactly 0;
- ``cross_attn`` is (layers, heads, n, S), ``encoder_attn`` (layers, heads, S, S);
- ``topk_*`` row t are the candidates for the token emitted at step t;
- ``logit_lens_*`` (T, L_dec, 5): at step t, the top-5 of decoder layer l's output passed
  through the final norm and the output projection (the last layer's equals ``topk[:, :5]``);
  None with ``logit_lens_left_out`` set when the trace was made without it (a large
  vocabulary's default: ``Translator.logit_lens(trace)`` computes it when it is wanted);
- ``encoder_rollout`` (S, S) and ``rollout`` (T, S): attention rollout and the source
  relevance of each step, rows sum to 1 (formulas in ``transformer.core.readings``);
- ``head_stats``: per-head diagnostics of this sentence (``transformer.core.readings.head_stats``;
  ``transformer.interpret.habits`` names each head's habit from them).

The analysis fields default to ``None`` so code that builds a bare Trace keeps working.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from transformer.core.wire import encode_f32


@dataclass
class StepView:
    """Everything the viewer shows at step t: cheap slices of a :class:`Trace`."""

    t: int
    prefix_tokens: list[str]  # tgt_tokens[: t + 1], the decoder inputs so far
    query_token: str  # tgt_tokens[t]
    output_token: str  # tgt_tokens[t + 1]
    decoder_self_attn: np.ndarray  # (L, H, t + 1): row t over the prefix
    cross_attn: np.ndarray  # (L, H, S): row t over the source
    topk_tokens: list[str]
    topk_probs: np.ndarray  # (k,)


@dataclass
class Trace:
    """One sentence, fully decoded and recorded. See the module docstring for the layout."""

    src_text: str
    translation: str
    src_tokens: list[str]
    src_ids: list[int]
    tgt_tokens: list[str]
    tgt_ids: list[int]
    special_tokens: list[str]
    encoder_attn: np.ndarray
    decoder_self_attn: np.ndarray
    cross_attn: np.ndarray
    topk_ids: np.ndarray
    topk_tokens: list[list[str]]
    topk_probs: np.ndarray
    positional_encoding: np.ndarray  # (max_positions, d_model): the model's own buffer
    truncated: bool = False
    n_src_tokens_dropped: int = 0
    finished: bool = True  # ended on [EOS] (False: hit the step limit)
    forced_prefix: list[int] = field(default_factory=list)
    logit_lens_tokens: list[list[list[str]]] | None = None  # (T, L_dec, 5)
    logit_lens_ids: np.ndarray | None = None  # int (T, L_dec, 5)
    logit_lens_probs: np.ndarray | None = None  # float32 (T, L_dec, 5)
    logit_lens_left_out: bool = False  # made without the lens, to save time: Translator.logit_lens adds it
    encoder_rollout: np.ndarray | None = None  # float32 (S, S)
    rollout: np.ndarray | None = None  # float32 (T, S)
    head_stats: dict | None = None
    unk_token: str = "[UNK]"  # the source tokenizer's unknown token (a Marian model's is <unk>)
    src_lang: str = "en"  # language codes (a multilingual model's, chosen per request)
    tgt_lang: str = "it"
    # names of the tokens that open and close a sentence, read from the config's ids: what
    # the head diagnostics call a start or end sink (ours [SOS] / [EOS]; Marian's <pad> / </s>;
    # a multilingual model's </s> starts the decoder and its language token the source)
    start_tokens: list[str] = field(default_factory=lambda: ["[SOS]"])
    end_tokens: list[str] = field(default_factory=lambda: ["[EOS]"])

    @property
    def steps(self) -> int:
        return len(self.tgt_tokens) - 1

    @property
    def n_layers(self) -> int:
        return int(self.encoder_attn.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.encoder_attn.shape[1])

    def src_special_mask(self) -> list[bool]:
        return [t in self.special_tokens for t in self.src_tokens]

    def tgt_special_mask(self) -> list[bool]:
        return [t in self.special_tokens for t in self.tgt_tokens]

    def step(self, t: int) -> StepView:
        if not 0 <= t < self.steps:
            raise IndexError(f"step {t} out of range 0..{self.steps - 1}")
        return StepView(
            t=t,
            prefix_tokens=self.tgt_tokens[: t + 1],
            query_token=self.tgt_tokens[t],
            output_token=self.tgt_tokens[t + 1],
            decoder_self_attn=self.decoder_self_attn[:, :, t, : t + 1],
            cross_attn=self.cross_attn[:, :, t, :],
            topk_tokens=self.topk_tokens[t],
            topk_probs=self.topk_probs[t],
        )

    def to_dict(self, pe_positions: int | None = None, packed: bool = False) -> dict:
        """JSON-ready dict (schema in docs/how-it-works.md, "Trace JSON"). The PE table is cut to
        ``pe_positions`` rows (default: the source length) to keep downloads small.

        ``packed=False`` (the download): float arrays as nested lists rounded to 5 decimals,
        converted whole (round in numpy, one ``tolist``). ``packed=True`` (the ``/translate`` API,
        sent on every request): float arrays exact, as :func:`transformer.core.wire.encode_f32`
        objects (why: see ``wire.py``), which :func:`transformer.core.wire.unpack_arrays` reads back.
        """
        n = len(self.src_tokens) if pe_positions is None else pe_positions

        def r(a: np.ndarray) -> list | dict:
            return encode_f32(a) if packed else np.round(a.astype(np.float64), 5).tolist()

        probs = self.topk_probs.astype(np.float64)
        top_ids, top_probs = self.topk_ids.tolist(), (probs if packed else np.round(probs, 5)).tolist()
        out = {
            "schema": "transformer-trace/1",
            "src_text": self.src_text,
            "translation": self.translation,
            "src_tokens": self.src_tokens,
            "src_ids": self.src_ids,
            "tgt_tokens": self.tgt_tokens,
            "tgt_ids": self.tgt_ids,
            "special_tokens": self.special_tokens,
            "src_lang": self.src_lang,
            "tgt_lang": self.tgt_lang,
            "start_tokens": self.start_tokens,
            "end_tokens": self.end_tokens,
            "truncated": self.truncated,
            "n_src_tokens_dropped": self.n_src_tokens_dropped,
            "finished": self.finished,
            "forced_prefix": self.forced_prefix,
            "layers": self.n_layers,
            "heads": self.n_heads,
            "encoder_attn": r(self.encoder_attn),
            "decoder_self_attn": r(self.decoder_self_attn),
            "cross_attn": r(self.cross_attn),
            "topk": [
                [{"token": tok, "id": i, "prob": p} for tok, i, p in zip(toks, ids, probs)]
                for toks, ids, probs in zip(self.topk_tokens, top_ids, top_probs)
            ],
            "positional_encoding": r(self.positional_encoding[:n]),
        }
        if self.logit_lens_ids is not None:
            # (T, L_dec, 5) each: [step][layer][rank]
            out["logit_lens"] = {
                "tokens": self.logit_lens_tokens,
                "ids": self.logit_lens_ids.tolist(),
                "probs": r(self.logit_lens_probs),
            }
        elif self.logit_lens_left_out:
            out["logit_lens_left_out"] = True
        if self.rollout is not None:
            out["rollout"] = r(self.rollout)
        if self.encoder_rollout is not None:
            out["encoder_rollout"] = r(self.encoder_rollout)
        if self.head_stats is not None:
            out["head_stats"] = self.head_stats
        return out
