"""Attention across training: the viewer's sentence through the checkpoint's training snapshots.

The checkpoint's ``snapshots/epoch-NNN`` models are loaded once at start-up. When the
browser view ``explorer/web/epochs.js`` asks (once its panel is opened), the
server traces the viewer's sentence with every snapshot, *forcing the viewer's own target
tokens* so that step t is the same token for every epoch and the small multiples compare
like with like; each snapshot's own free-running translation is shown beside its
validation scores. Each snapshot's trace travels as the attention part of the viewer's
payload (:func:`explorer.payload.encode_attention`), so one decoder reads both.

Answers are cached per (sentence, target, epoch), so a sentence is traced once per
snapshot; the browser keeps what it received, so switching epochs afterwards makes no
server call at all.

Schema ``attention-explorer-epochs/1``: ``{"schema", "key": [src_text, tgt_tokens],
"snapshots": [{"epoch", "translation", "scores", "trace_ms", "trace": attention part}],
"final": {"epoch", "translation", "scores"}}``, or ``{"schema", "key", "error"}``. The page
also gets ``{"schema", "meta": true, "snapshots": [{"epoch", "scores"}], "final"}`` once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict

import gradio as gr

from transformer.core.checkpoint import CheckpointError, list_snapshots
from transformer.core.translator import Translator

from ..errors import answer
from ..blocks import message, view_host
from ..payload import encode_attention
from .base import Panel

log = logging.getLogger("app.epochs")
EPOCH_SCHEMA = "attention-explorer-epochs/1"
EPOCH_CACHE_SIZE = 256  # (sentence, target, epoch) entries kept; each is a few tens of KB


def scores_of(metrics: dict) -> dict:
    """The validation scores shown beside a snapshot (missing ones are left out)."""
    val = metrics.get("validation") or {}
    out = {k: val[k] for k in ("bleu", "chrf") if isinstance(val.get(k), (int, float))}
    if isinstance(metrics.get("val_loss"), (int, float)):
        out["val_loss"] = round(float(metrics["val_loss"]), 4)
    return out


class SnapshotModel:
    """One loaded snapshot: its epoch, translator and validation scores."""

    def __init__(self, epoch: int, tr: Translator, metrics: dict) -> None:
        self.epoch, self.tr, self.metrics = epoch, tr, metrics


def final_epoch(metrics: dict) -> dict:
    """The final model's epoch, and for a fine-tune the epochs of the model it started from
    (the snapshots are that model's, so the epoch control reads "epoch 13 + 3 of fine-tuning")."""
    return {"epoch": metrics.get("epoch"), "epochs_before": metrics.get("epochs_before")}


def load_snapshots(directory) -> list[SnapshotModel]:
    """Every loadable snapshot of the checkpoint folder, by epoch; [] without a folder or
    snapshots. A broken snapshot is logged and skipped: it must not stop the app."""
    if directory is None:
        return []
    out = []
    for snap in list_snapshots(directory):
        try:
            out.append(SnapshotModel(snap.epoch, Translator.load(snap.path), snap.metrics))
        except (CheckpointError, OSError, ValueError) as exc:
            log.warning("skipping snapshot %s: %s", snap.path, exc)
    return out


class EpochCache:
    """Thread-safe LRU of per-(sentence, target, epoch) results. Visitors share it: the
    models are read-only, so the same key always gives the same result."""

    def __init__(self, size: int = EPOCH_CACHE_SIZE) -> None:
        self.size, self.data, self.lock = size, OrderedDict(), threading.Lock()
        self.misses = 0

    def get(self, key, make):
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
        value = make()  # outside the lock: two visitors may trace at once
        with self.lock:
            self.misses += 1
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)
        return value


class EpochPanel(Panel):
    view = "epochs"

    def __init__(self, app) -> None:
        super().__init__(app)
        t0 = time.perf_counter()
        self.snapshots = load_snapshots(getattr(app.tr, "directory", None))
        if self.snapshots:
            log.info(
                "loaded %d snapshots (epochs %s) in %.2f s",
                len(self.snapshots),
                ", ".join(str(s.epoch) for s in self.snapshots),
                time.perf_counter() - t0,
            )
        self.cache = EpochCache()

    def epoch_entry(self, snap: SnapshotModel, text: str, target: tuple[int, ...]) -> dict:
        """One snapshot on one sentence: its own translation and its attention with the
        viewer's target tokens forced (so rows line up with the viewer's steps)."""

        def make():
            t0 = time.perf_counter()
            own = snap.tr.translate([text])[0]
            attention = encode_attention(snap.tr.trace(text, forced_prefix=list(target)))
            ms = (time.perf_counter() - t0) * 1000
            log.info("epoch %d snapshot traced in %.0f ms", snap.epoch, ms)
            return {
                "epoch": snap.epoch,
                "translation": own,
                "scores": scores_of(snap.metrics),
                "trace_ms": round(ms, 1),
                "trace": attention,
            }

        return self.cache.get((text, target, snap.epoch), make)

    def epoch_data(self, trace) -> dict:
        """Every snapshot's view of the viewer's sentence (schema attention-explorer-epochs/1)."""
        target = tuple(int(i) for i in trace.tgt_ids[1:])
        final_metrics = self.app.tr.metrics
        final_translation = (
            trace.translation
            if not trace.forced_prefix
            else self.cache.get((trace.src_text, (), "final"), lambda: self.app.tr.translate([trace.src_text])[0])
        )
        return {
            "schema": EPOCH_SCHEMA,
            "key": [trace.src_text, list(trace.tgt_tokens)],
            "snapshots": [self.epoch_entry(s, trace.src_text, target) for s in self.snapshots],
            "final": {
                **final_epoch(final_metrics),
                "translation": final_translation,
                "scores": scores_of(final_metrics),
            },
        }

    def load_epochs(self, trace) -> dict:
        """The view's request: trace the viewer's sentence with every snapshot."""
        if trace is None:
            return {self.host: message({"schema": EPOCH_SCHEMA, "error": "Translate a sentence first."})}
        key = [trace.src_text, list(trace.tgt_tokens)]
        data = answer(
            log,
            "tracing snapshots",
            lambda: self.epoch_data(trace),
            lambda msg: {"schema": EPOCH_SCHEMA, "key": key, "error": msg},
        )
        return {self.host: message(data)}

    def epoch_meta(self) -> dict:
        """What the epoch control shows before any sentence: the epochs and their scores."""
        m = self.app.tr.metrics
        return {
            "schema": EPOCH_SCHEMA,
            "meta": True,
            "snapshots": [{"epoch": s.epoch, "scores": scores_of(s.metrics)} for s in self.snapshots],
            "final": {**final_epoch(m), "scores": scores_of(m)},
        }

    def build(self) -> None:
        """Called inside the page's ``gr.Blocks`` context, after the beam panel; without
        snapshots there is no epoch panel at all."""
        self.host = None
        if not self.snapshots:
            return
        with gr.Accordion("Attention across training", open=False, elem_id="epoch-panel"):
            gr.Markdown(
                "The same sentence through snapshots saved during training. Each small map is the view, layer, "
                "head and step of the viewer above, computed by that snapshot on the viewer's own output tokens "
                "(so step N is the same token everywhere); the text is the snapshot's own translation."
            )
            self.host = view_host(self.view, elem_id="epoch-view", data=self.epoch_meta())

    def wire(self) -> None:
        if self.host is not None:
            self.host.submit(
                self.load_epochs,
                [self.app.trace_state],
                [self.host],
                api_name=self.app.api_name("epochs"),
                api_visibility="private",
            )
