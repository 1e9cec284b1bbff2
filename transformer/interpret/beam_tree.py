"""The beam tree: what a beam search considered for one sentence, as the JSON the app's beam
panel draws (``explorer/panels/beam.py``, ``explorer/web/beam-tree.js``).

The search itself is :func:`transformer.core.beam.beam_search`; asked with
``return_records=True`` it keeps a :class:`~transformer.core.beam.SearchRecord` per sentence,
and :func:`build_tree` turns one record into a tree, placing the greedy decoding in it too
(free while greedy stays inside the beam, else one extra greedy decoding).

    best, tree = beam_tree(translator, "I have a red car.", 4)       # one sentence, for the app
    res = beam_search(model, src, 4, return_records=True)            # a batch
    trees = [tree_of(model, src, res, b, tgt_tok) for b in range(len(res.ids))]

The beam tree, schema ``"transformer-beam-tree/1"``, one JSON-ready dict per sentence::

    {
      "schema": "transformer-beam-tree/1",
      "beam_size": k, "length_penalty": alpha, "early_stopping": bool,
      "max_steps": int,              # the sentence's limit on emitted tokens
      "candidates_per_step": 2k,     # candidates recorded per step (fewer if the vocab is tiny)
      "steps": int,                  # steps decoded for this sentence (= deepest node step)
      "score_formula": "logprob / ((5 + length) / 6) ** length_penalty",
      "nodes": [                     # in creation order: parents come before children
        {"id": int,                  # == index in "nodes"; the root ([SOS]) is 0
         "parent": int | None,       # None only for the root
         "step": int,                # position of the token in the output; root 0.
                                     # Decoding step s-1 (0-based, as in the trace) emits step s
         "token_id": int,
         "token": str | None,        # tokenizer string when a tokenizer was given
         "logprob": float,           # cumulative log P(prefix up to this token)
         "prob": float,              # P(this token | parent prefix) under the model
         "rank": int | None,         # rank among the step's candidates (0 = best);
                                     # None for the root and for greedy-only nodes
         "status": "kept" | "pruned" | "finished",
                                     # kept: alive in the beam after its step (the root too);
                                     # pruned: a candidate that did not make the beam, or a
                                     #   greedy-only node the beam never expanded;
                                     # finished: ends a hypothesis ([EOS], or cut at max_steps)
         "score": float | None,      # the length-normalised score, for finished nodes
         "eos": bool,                # the token is [EOS]
         "source": "beam" | "greedy",# greedy: on the greedy path but never a beam candidate
         "on_best": bool, "on_greedy": bool},
        ...
      ],
      "best": int,                   # node that ends the best hypothesis
      "best_path": [int, ...],       # root .. best
      "greedy": int,                 # node that ends the greedy decoding
      "greedy_path": [int, ...],     # root .. greedy
      "greedy_logprob": float, "greedy_score": float,
      "hypotheses": [                # the k kept finished hypotheses, best first
        {"node": int, "ids": [int], "logprob": float, "score": float, "length": int, "eos": bool}, ...
      ]
    }

:func:`beam_tree` (one sentence, for the app) adds ``src_text``, ``src_tokens``,
``truncated``, ``translation``, ``greedy_translation`` and a ``text`` per hypothesis.
Log-probs and scores in the tree are rounded to 6 decimals, probabilities to 6 significant
digits; :class:`BeamResult` keeps full precision.
"""

from __future__ import annotations

import math

import torch

from transformer.core import stepping
from transformer.core.beam import (
    BeamResult,
    Hypothesis,
    SearchRecord,
    SearchSettings,
    beam_search,
    check_beam_size,
    hypothesis_score,
)
from transformer.core.decoding import greedy_decode

TREE_SCHEMA = "transformer-beam-tree/1"
# a tree records every ranked candidate (2k per alive hypothesis and step); past k = 8 it is
# too large to read as a picture or to send to a browser
MAX_TREE_BEAM = 8


def tree_of(model, src, result: BeamResult, b: int, tokenizer=None) -> dict:
    """The tree of sentence ``b`` of a search made with ``return_records=True`` over the
    padded batch ``src`` (B, S); ``tokenizer``: the target tokenizer, for token strings."""
    if result.records is None:
        raise ValueError("the search kept no records: call beam_search with return_records=True")
    return build_tree(model, src[b : b + 1], result.records[b], result.hypotheses[b], result.settings, tokenizer)


class _Tree:
    """Nodes of one sentence's tree while it is built."""

    def __init__(self, root_token: int, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.nodes: list[dict] = []
        self.children: dict[tuple[int, int], int] = {}
        self.add(None, 0, root_token, 0.0, 1.0, None, "kept")

    def add(self, parent, step, token_id, logprob, prob, rank, status, eos=False, source="beam") -> int:
        nid = len(self.nodes)
        self.nodes.append(
            {
                "id": nid,
                "parent": parent,
                "step": step,
                "token_id": int(token_id),
                "token": self.tokenizer.id_to_token(int(token_id)) if self.tokenizer is not None else None,
                "logprob": round(float(logprob), 6),
                "prob": float(f"{float(prob):.6g}"),
                "rank": rank,
                "status": status,
                "score": None,
                "eos": bool(eos),
                "source": source,
                "on_best": False,
                "on_greedy": False,
            }
        )
        if parent is not None:
            self.children.setdefault((parent, int(token_id)), nid)
        return nid

    def path(self, nid: int) -> list[int]:
        out = []
        while nid is not None:
            out.append(nid)
            nid = self.nodes[nid]["parent"]
        return out[::-1]


@torch.no_grad()
def build_tree(
    model, src_row, record: SearchRecord, hypotheses: list[Hypothesis], settings: SearchSettings, tokenizer=None
) -> dict:
    """One sentence's ``"transformer-beam-tree/1"`` dict (module docstring) from what its
    search recorded: node i is the record's hypothesis id i, then the greedy path is placed,
    and the best and greedy paths are marked. ``src_row`` (1, S) is the sentence, needed
    only if greedy leaves the beam."""
    eos_id = model.cfg.tgt_eos_id
    tree = _Tree(stepping.start_id(model.cfg), tokenizer)
    for c in record.candidates:
        tree.add(
            c.parent,
            c.step,
            c.token_id,
            c.logprob,
            math.exp(c.token_logprob),
            c.rank,
            c.status,
            eos=c.token_id == eos_id,
        )
    greedy_ids, greedy_node, greedy_logprob = _greedy_path(model, src_row, tree, record, settings.max_steps)
    best = hypotheses[0].node
    best_path, greedy_path = tree.path(best), tree.path(greedy_node)
    _mark_tree(tree, best_path, greedy_path, hypotheses, settings.length_penalty)
    k, alpha = settings.beam_size, settings.length_penalty
    return {
        "schema": TREE_SCHEMA,
        "beam_size": k,
        "length_penalty": alpha,
        "early_stopping": bool(settings.early_stopping),
        "max_steps": int(record.limit),
        "candidates_per_step": 2 * k,
        "steps": max(n["step"] for n in tree.nodes),
        "score_formula": "logprob / ((5 + length) / 6) ** length_penalty",
        "nodes": tree.nodes,
        "best": best,
        "best_path": best_path,
        "greedy": greedy_node,
        "greedy_path": greedy_path,
        "greedy_logprob": round(greedy_logprob, 6),
        "greedy_score": round(hypothesis_score(greedy_logprob, max(1, len(greedy_ids)), alpha), 6),
        "hypotheses": [
            {
                "node": f.node,
                "ids": f.ids,
                "logprob": round(f.logprob, 6),
                "score": round(f.score, 6),
                "length": len(f.ids),
                "eos": f.eos,
            }
            for f in hypotheses
        ],
    }


def _mark_tree(tree: _Tree, best_path, greedy_path, hypotheses: list[Hypothesis], alpha: float) -> None:
    """Flag the nodes on the best and greedy paths, and score every finished node."""
    for n in best_path:
        tree.nodes[n]["on_best"] = True
    for n in greedy_path:
        tree.nodes[n]["on_greedy"] = True
    for f in hypotheses:
        tree.nodes[f.node]["score"] = round(f.score, 6)
    for n in tree.nodes:
        if n["status"] == "finished" and n["score"] is None:  # finished, later outranked
            n["score"] = round(hypothesis_score(n["logprob"], n["step"], alpha), 6)


def _greedy_path(model, src_row, tree: _Tree, record: SearchRecord, max_steps) -> tuple[list[int], int, float]:
    """Place the greedy decoding in ``tree``: (ids, last node, log-prob).

    While greedy stays on nodes the beam expanded, its next token is the choice the search
    recorded at that node (``stepping.pick_at``), so it costs nothing. Once it leaves them, one greedy decoding
    forced through the prefix and one teacher-forced pass finish it. Greedy-only nodes are
    added with status "pruned" and source "greedy".
    """
    cfg = model.cfg
    ids: list[int] = []
    node, cum = 0, 0.0
    rest: list[tuple[int, float]] = []
    while len(ids) < record.limit:
        if node in record.greedy_next:
            tok, lp = record.greedy_next[node]
        else:
            full = greedy_decode(model, src_row, max_steps=max_steps, forced_prefix=ids).ids[0]
            if len(full) > len(ids):
                tgt_in = torch.tensor([stepping.decoder_inputs(cfg, full[:-1])], device=src_row.device)
                logp = model(src_row, tgt_in).logits[0].float().log_softmax(dim=-1)  # (T, V)
                rest = [(tok, float(logp[t, tok])) for t, tok in enumerate(full) if t >= len(ids)]
            break
        if tok == cfg.tgt_pad_id:  # greedy_decode ends its output at a [PAD]
            break
        cum += lp
        ids.append(tok)
        node = _greedy_child(tree, node, len(ids), tok, cum, lp, cfg)
        if tok == cfg.tgt_eos_id:
            break
    for tok, lp in rest:
        cum += lp
        ids.append(tok)
        node = _greedy_child(tree, node, len(ids), tok, cum, lp, cfg)
    return ids, node, cum


def _greedy_child(tree: _Tree, node: int, step: int, tok: int, cum: float, lp: float, cfg) -> int:
    child = tree.children.get((node, tok))
    if child is None:  # the beam never considered this branch
        child = tree.add(node, step, tok, cum, math.exp(lp), None, "pruned", eos=tok == cfg.tgt_eos_id, source="greedy")
    return child


@torch.no_grad()
def beam_tree(
    translator,
    text: str,
    beam_size: int,
    length_penalty: float = 0.6,
    early_stopping: bool = True,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> tuple[str, dict]:
    """Beam search on one sentence for the app's ``/beam`` endpoint.

    Returns the best translation and the tree (schema ``"transformer-beam-tree/1"``, see
    the module docstring) with token strings, the source tokens and the text of every
    kept hypothesis, so the browser can draw and switch views without a server call.
    Bad input raises ``ValueError`` with a message fit for the user.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected text, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("empty sentence: type some text to translate")
    k = check_beam_size(beam_size, MAX_TREE_BEAM)
    stepping.check_languages(translator.cfg, src_lang, tgt_lang)
    src = translator.encode_source(text, src_lang)
    src_ids = torch.tensor([src.ids])  # (1, S)
    res = beam_search(
        translator.model,
        src_ids,
        k,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        return_records=True,
        tgt_lang=tgt_lang,
    )
    tree = tree_of(translator.model, src_ids, res, 0, translator.tgt_tok)
    greedy_ids = [tree["nodes"][n]["token_id"] for n in tree["greedy_path"][1:]]
    for h in tree["hypotheses"]:
        h["text"] = translator._decode_text(h["ids"])
    translation = translator._decode_text(res.ids[0])
    tree.update(
        {
            "src_text": text,
            "src_tokens": [translator.src_tok.id_to_token(i) for i in src.ids],
            "truncated": src.truncated,
            "translation": translation,
            "greedy_translation": translator._decode_text(greedy_ids),
        }
    )
    return translation, tree
