"""DecoderLens: what the decoder would write if the encoder stopped at layer l.

Langedijk, Mohebbi, Sarti, Zuidema & Jumelet, "DecoderLens: Layerwise Interpretation of
Encoder-Decoder Transformers", Findings of NAACL 2024. The decoder is left as trained and
reads, in place of the encoder's final output, the output of encoder layer l (0-based); it then
decodes greedily as usual. For a pre-LN model the layer's output first goes through the
encoder's final LayerNorm (``encoder_norm``), as the real encoder output does, so the decoder
reads vectors on the scale it was trained on (for post-LN, ``encoder_norm`` is the identity and
each layer already ends with a norm). The last row reads the full encoder: it is the model's
own greedy translation (``Translator.translate``), token for token.

The encoder runs once (its layers' outputs read with forward hooks that are removed on return
and ignore other threads). The last layer's row is decoded as a batch of one with the KV cache,
the very computation of ``transformer.core.decoding.greedy_decode``; the earlier layers' rows
are decoded together as one batch (the same steps, equal to decoding each alone up to float
rounding, and about twice as fast for four layers). Every row has greedy decoding's step limit
(``transformer.core.decoding.max_new_tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch

from transformer.core import stepping
from transformer.core.decoding import max_new_tokens
from transformer.core.model import Transformer
from transformer.core.recording import Recording, recording

SCHEMA = "decoder-lens/1"


@dataclass
class LensRow:
    """The greedy translation read from encoder layer ``layer`` (0-based)."""

    layer: int
    ids: list[int]  # output ids, [EOS] included when it came
    tokens: list[str]
    text: str
    finished: bool  # ended on [EOS] (False: hit the step limit)

    def to_dict(self) -> dict:
        return {
            "layer": self.layer,
            "ids": self.ids,
            "tokens": self.tokens,
            "text": self.text,
            "finished": self.finished,
        }


@dataclass
class DecoderLens:
    """One row per encoder layer, in order; ``rows[-1]`` is the model's own translation."""

    src_text: str
    src_tokens: list[str]
    rows: list[LensRow]

    @property
    def first_layer_like_final(self) -> int | None:
        """The first layer (0-based) from which every row already gives the final translation."""
        final = self.rows[-1].ids
        first = None
        for row in self.rows:
            if row.ids != final:
                first = None
            elif first is None:
                first = row.layer
        return first

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "method": "DecoderLens (Langedijk et al., Findings of NAACL 2024)",
            "src_text": self.src_text,
            "src_tokens": self.src_tokens,
            "rows": [r.to_dict() for r in self.rows],
            "first_layer_like_final": self.first_layer_like_final,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    def figure(self):
        """The table (:func:`decoder_lens_figure`)."""
        return decoder_lens_figure(self)


def output_text(translator, ids: list[int]) -> str:
    """Target ids as text, the special tokens left out (as ``Translator.translate`` writes it)."""
    return translator.tgt_tok.decode(stepping.words_of(translator.cfg, ids), skip_special_tokens=False)


@torch.no_grad()
def greedy_from_memory(
    model: Transformer, memory: torch.Tensor, src_mask: torch.Tensor, limit: int, tgt_lang: str | None = None
) -> list[list[int]]:
    """Greedy decoding from encoder memories (B, S, D) of one sentence (``src_mask`` (1, 1, 1, S)),
    one row per memory, each up to and including its end token (at most ``limit`` steps), by the
    decoding core's rules (start token, forced start, banned ids). A row that has finished keeps
    decoding with the others until all have (its later outputs are dropped)."""
    cfg = model.cfg
    B = memory.shape[0]
    mask = src_mask.expand(B, *src_mask.shape[1:])  # (B, 1, 1, S)
    last = stepping.start_tokens(cfg, B)
    forced = stepping.forced_start(cfg, tgt_lang)
    cache, out, done = None, [[] for _ in range(B)], [False] * B
    for t in range(max(limit, len(forced))):
        dec, logits = stepping.step(model, last, memory, mask, cache)
        cache = dec.cache
        nxt = stepping.pick_at(cfg, logits, forced, t)  # (B,)
        for b, i in enumerate(nxt.tolist()):
            if not done[b]:
                out[b].append(i)
                done[b] = i == cfg.tgt_eos_id
        if all(done):
            break
        last = nxt[:, None]
    return out


@torch.no_grad()
def decoder_lens(
    translator, text: str, max_steps: int | None = None, src_lang: str | None = None, tgt_lang: str | None = None
) -> DecoderLens:
    """DecoderLens of ``text``: one :class:`LensRow` per encoder layer (see the module docstring).

    ``translator``: a :class:`~transformer.core.translator.Translator`; ``max_steps``: a step
    limit per row (default: the decoder's own, ``max_new_tokens``); ``src_lang`` / ``tgt_lang``:
    a multilingual model's languages. An empty sentence raises ``ValueError``."""
    model = translator.model
    if model.training:
        raise ValueError("the model is in training mode (dropout on): call model.eval() first")
    stepping.check_languages(model.cfg, src_lang, tgt_lang)
    src_ids = translator.encode_source(text, src_lang).ids
    src = torch.tensor([src_ids])  # (1, S)
    rec = Recording(keep=["encoder_ffn.*.output"])  # each encoder layer's output (transformer.core.recording)
    with recording(rec):
        src_mask, _, _ = stepping.encode(model, src)
    outputs = [rec[f"encoder_ffn.{l}.output"] for l in range(len(model.encoder_layers))]  # each (1, S, D)
    limit = (
        max_new_tokens(model, len(src_ids))
        if max_steps is None
        else max(1, min(int(max_steps), model.cfg.max_positions))
    )
    tok = translator.tgt_tok.id_to_token
    memories = [model.encoder_norm(x) for x in outputs]  # each (1, S, D); encoder_norm is the identity for post-LN
    # the earlier layers in one batch; the last alone, the very computation of greedy_decode
    outs = greedy_from_memory(model, torch.cat(memories[:-1]), src_mask, limit, tgt_lang) if len(memories) > 1 else []
    outs.append(greedy_from_memory(model, memories[-1], src_mask, limit, tgt_lang)[0])
    rows = []
    for l, ids in enumerate(outs):
        rows.append(
            LensRow(
                layer=l,
                ids=ids,
                tokens=[tok(i) for i in ids],
                text=output_text(translator, ids),
                finished=bool(ids) and ids[-1] == model.cfg.tgt_eos_id,
            )
        )
    return DecoderLens(src_text=text, src_tokens=[translator.src_tok.id_to_token(i) for i in src_ids], rows=rows)


def decoder_lens_figure(lens: DecoderLens):
    """DecoderLens as a table: one row per encoder layer (1-based), its greedy translation, and
    whether it is already the final one. Drawn with the kit of transformer/interpret/figures.py,
    imported (with plotly) only when the figure is asked for."""
    import plotly.graph_objects as go

    from transformer.interpret import figures as F

    final = lens.rows[-1].ids
    layers = [f"{r.layer + 1}" for r in lens.rows]
    texts = [r.text + ("" if r.finished else " …") for r in lens.rows]
    same = ["yes" if r.ids == final else "" for r in lens.rows]
    fig = go.Figure(
        go.Table(
            columnwidth=[70, 460, 80],
            header=dict(
                values=["encoder layer", "the decoder would write", "= final"],
                align="left",
                fill_color="#eef3f8",
                font=dict(color=F.TEXT),
            ),
            cells=dict(
                values=[layers, texts, same], align="left", fill_color="#fff", font=dict(color=F.TEXT), height=26
            ),
        )
    )
    fig.update_layout(
        **F.frame(f"DecoderLens (Langedijk et al. 2024): the decoder reading encoder layer l<br>{lens.src_text}"),
        width=720,
        height=26 * len(lens.rows) + 190,
        meta=dict(view="decoder_lens"),
    )
    return fig
