"""How a run measures its model: the validation loss over the whole validation split, and
greedy BLEU/chrF on its first ``limit`` pairs, translated in the batches
``Translator.translate`` makes. ``Trainer.evaluate_and_save`` keeps the record and rewrites
best/ when chrF improves.

    validation = Validation(data.validation, src_tok, tgt_tok, cfg, limit=1000, batch_tokens=6000)
    measured = validation.measure(model.eval(), stop)     # EvaluationStopped on a stop request
    seconds = validation.seconds(model)                   # what one measure will cost
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from tokenizers import Tokenizer

from transformer.core import stepping
from transformer.core.config import TransformerConfig
from transformer.core.decoding import greedy_decode
from transformer.core.metrics import corpus_scores
from transformer.core.model import Transformer
from transformer.core.translator import Translator
from transformer.training.data import encode_pairs, make_batch, token_budget_batches
from transformer.training.optim import to_device

# sentences per greedy batch in an evaluation (``Translator.translate``'s batch); a stop
# request is looked at between batches
EVAL_BATCH = 64


class EvaluationStopped(Exception):
    """A stop request arrived during an evaluation, which is given up (see ``Validation.measure``)."""


@dataclass
class Measured:
    """One measurement of a model on the validation split."""

    val_loss: float
    scores: dict  # corpus BLEU and chrF of the greedy translations
    samples: list[tuple[str, str, str]]  # (source, reference, hypothesis) of each pair translated

    def record(self, tag: dict, step: int, minutes: float, train_loss: float | None) -> dict:
        """The line history.json keeps of this evaluation; ``tag`` says what was evaluated:
        ``{"epoch": n}`` or ``{"averaged": [dirs]}``."""
        val_loss = round(self.val_loss, 4)
        if "epoch" not in tag:
            return {**tag, "val_loss": val_loss, **self.scores, "minutes": minutes}
        return {
            "epoch": tag["epoch"],
            "step": step,
            "minutes": minutes,
            "train_loss": round(train_loss, 4) if train_loss is not None else None,
            "val_loss": val_loss,
            **self.scores,
        }

    def metrics(self, tag: dict, step: int, minutes: float, n_params: int) -> dict:
        """What metrics.json says of the checkpoint evaluated as ``tag``."""
        return {
            "validation": self.scores,
            "val_loss": self.val_loss,
            **tag,
            "step": step,
            "train_minutes": minutes,
            "parameters": n_params,
        }


@dataclass
class Evaluation:
    """One evaluate-and-save step: the history record, the metrics written beside the
    weights, validation samples (source, reference, hypothesis) and whether it became best/."""

    record: dict
    metrics: dict
    samples: list[tuple[str, str, str]]
    is_best: bool


@torch.no_grad()
def validation_loss(model, encoded, cfg, batch_tokens: int, device: str) -> float:
    """Token-averaged cross-entropy (no label smoothing) over a whole split, in the same
    token-budget batches as training. The sum over tokens does not depend on how the pairs
    are grouped, so any fixed seed gives the same loss (up to float rounding)."""
    model.eval()
    total, count = 0.0, 0
    for idx in token_budget_batches(encoded, batch_tokens, seed=0, epoch=0):
        batch = to_device(make_batch([encoded[i] for i in idx], cfg), device)
        logits = model(batch.src, batch.tgt_in).logits
        loss = F.cross_entropy(
            logits.float().reshape(-1, logits.shape[-1]),
            batch.tgt_out.reshape(-1),
            ignore_index=cfg.tgt_pad_id,
            reduction="sum",
        )
        total += float(loss)
        count += batch.n_tgt_tokens
    return total / max(1, count)


class Validation:
    """A run's validation split as the Trainer measures a model on it: ``pairs`` (source,
    reference), encoded once; the loss runs over all of them, greedy decoding over the first
    ``limit``."""

    def __init__(
        self,
        pairs: list[tuple[str, str]],
        src_tok: Tokenizer,
        tgt_tok: Tokenizer,
        cfg: TransformerConfig,
        limit: int,
        batch_tokens: int,
        device: str = "cpu",
    ) -> None:
        self.pairs, self.src_tok, self.tgt_tok, self.cfg = pairs, src_tok, tgt_tok, cfg
        self.limit, self.batch_tokens, self.device = limit, batch_tokens, device
        self.encoded = encode_pairs(pairs, src_tok, tgt_tok, cfg)

    def measure(self, model: Transformer, stop) -> Measured:
        """The loss and the greedy scores of ``model`` (in eval mode). ``stop`` (a
        ``StopSignals``) is looked at between translation batches: a request gives the
        evaluation up (:class:`EvaluationStopped`) instead of keeping every rank waiting."""
        val_loss = validation_loss(model, self.encoded, self.cfg, self.batch_tokens, self.device)
        pairs = self.pairs[: self.limit]
        hyps = self.translate(model, [s for s, _ in pairs], stop)
        scores = corpus_scores(hyps, [t for _, t in pairs])
        return Measured(val_loss, scores, [(s, t, h) for (s, t), h in zip(pairs, hyps)])

    def translate(self, model: Transformer, sources: list[str], stop) -> list[str]:
        """Greedy translations of ``sources`` in the very batches ``Translator.translate``
        makes (sorted by length, so the scores are the same), handed to it one batch at a
        time, so that a stop request can end the evaluation between two of them."""
        translator = Translator(model, self.src_tok, self.tgt_tok)
        order = sorted(range(len(sources)), key=lambda i: len(translator.encode_source(sources[i]).ids))
        hyps = [""] * len(sources)
        for start in range(0, len(order), EVAL_BATCH):
            if stop.signum:
                raise EvaluationStopped
            part = order[start : start + EVAL_BATCH]
            for i, hyp in zip(part, translator.translate([sources[i] for i in part], batch_size=EVAL_BATCH)):
                hyps[i] = hyp
        return hyps

    @torch.no_grad()
    def seconds(self, model: Transformer, sample: int = EVAL_BATCH) -> float:
        """Seconds one :meth:`measure` will take, timed on ``sample`` pairs (no random
        numbers drawn, no weights changed): the validation loss over them, scaled to the
        split, and greedy decoding of one batch of them for as many steps as its longest
        reference, scaled to every batch of the evaluation. An untrained model would decode
        each sentence to the length limit; a trained one stops about where its reference
        does, and that is what most of the run's evaluations cost."""
        model = model.eval()
        cfg, pairs = self.cfg, self.encoded[: self.limit]
        t0 = time.perf_counter()
        validation_loss(model, pairs[:sample], cfg, self.batch_tokens, self.device)
        loss_seconds = (time.perf_counter() - t0) * len(self.encoded) / min(sample, len(pairs))
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))  # as the evaluation batches them
        batches = [order[i : i + EVAL_BATCH] for i in range(0, len(order), EVAL_BATCH)]
        steps = [max(len(pairs[i][1]) for i in b) + 1 for b in batches]  # the longest reference and </s>
        timed = batches[len(batches) // 2][:sample]
        src = stepping.source_batch(cfg, [stepping.frame_source(cfg, pairs[i][0]) for i in timed])  # (B, S)
        t0 = time.perf_counter()
        out = greedy_decode(model, src.to(self.device), max_steps=steps[len(batches) // 2])
        per_step = (time.perf_counter() - t0) / max(1, max(len(ids) for ids in out.ids))
        return loss_seconds + per_step * sum(steps)
