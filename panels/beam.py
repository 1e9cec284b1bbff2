"""Beam search with a beam tree, and attention across training snapshots (issue 9).

Two views, both following the app's rule "the server computes, the browser draws":

* **Beam tree.** ``/beam`` runs :func:`transformer.beam.beam_tree` once and sends the whole
  tree (schema ``"transformer-beam-tree/1"``, documented in ``transformer/beam.py``) to
  ``web/beam-tree.js``, which draws it; zoom, hiding pruned branches and hover never call
  the server. Clicking a finished hypothesis re-traces the sentence with that hypothesis
  forced (``Translator.trace(text, forced_prefix=ids)``), so every attention view of the
  main viewer works for it.
* **Attention across training.** The checkpoint's ``snapshots/epoch-NNN`` models are loaded
  once at start-up. When the browser asks (``web/epochs.js``, only while its panel is open),
  the server traces the main viewer's sentence with every snapshot, *forcing the main
  viewer's own target tokens* so that step t is the same token for every epoch and the
  small multiples compare like with like; each snapshot's own free-running translation is
  shown beside its validation scores. Both are cached per (sentence, target, epoch), so a
  sentence is traced once per snapshot; the browser keeps what it received, so switching
  epochs afterwards makes no server call at all.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from pathlib import Path
from urllib.parse import quote

import gradio as gr

from transformer.beam import APP_MAX_BEAM, beam_tree
from transformer.checkpoint import CheckpointError, list_snapshots
from transformer.payload import encode_trace
from transformer.translator import Translator, load_translator

log = logging.getLogger("app.beam")
WEB = Path(__file__).resolve().parent.parent / "transformer" / "web"
DEFAULT_BEAM = 4
EPOCH_SCHEMA = "attention-explorer-epochs/1"
EPOCH_CACHE_SIZE = 256  # (sentence, target, epoch) entries kept; each is a few tens of KB
GENERIC_ERROR = "Something went wrong on the server; the error has been logged. Please try another sentence."


def web_file(name: str) -> str:
    return (WEB / name).read_text(encoding="utf-8")


def to_json(obj) -> str:
    """JSON for a gr.HTML value, with '<' escaped so no text can look like markup."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def beam_size(k, clamp: bool) -> int:
    """The beam size as an int in 1..APP_MAX_BEAM. ``clamp``: the UI's slider value is pulled
    into range; otherwise (the API) an out-of-range value is refused with a clear message."""
    if isinstance(k, bool) or k is None:
        raise ValueError(f"The beam size must be a whole number from 1 to {APP_MAX_BEAM}, got {k!r}.")
    try:
        value = float(k)
    except (TypeError, ValueError):
        raise ValueError(f"The beam size must be a whole number from 1 to {APP_MAX_BEAM}, got {k!r}.") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"The beam size must be a whole number from 1 to {APP_MAX_BEAM}, got {k!r}.")
    if clamp:
        return int(min(APP_MAX_BEAM, max(1, round(value))))
    if not value.is_integer() or not 1 <= value <= APP_MAX_BEAM:
        raise ValueError(f"The beam size must be a whole number from 1 to {APP_MAX_BEAM}, got {k!r}.")
    return int(value)


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


def load_snapshots(directory) -> list[SnapshotModel]:
    """Every loadable snapshot of the checkpoint folder, by epoch; [] without a folder or
    snapshots. A broken snapshot is logged and skipped: it must not stop the app."""
    if directory is None:
        return []
    out = []
    for snap in list_snapshots(directory):
        try:
            out.append(SnapshotModel(snap.epoch, load_translator(snap.path), snap.metrics))
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


class BeamPanel:
    def __init__(self, app) -> None:
        self.app = app
        t0 = time.perf_counter()
        self.snapshots = load_snapshots(getattr(app.tr, "directory", None))
        if self.snapshots:
            log.info("loaded %d snapshots (epochs %s) in %.2f s", len(self.snapshots),
                     ", ".join(str(s.epoch) for s in self.snapshots), time.perf_counter() - t0)
        self.cache = EpochCache()

    # --- beam tree -----------------------------------------------------------------------
    def run_beam(self, text, k, clamp: bool) -> tuple[str, dict]:
        text = self.app.check_text(text)  # empty / too long: ValueError with the app's message
        return beam_tree(self.app.tr, text, beam_size(k, clamp))

    def show_beam(self, text, k) -> dict:
        """The Beam-search button: draw the tree in the browser, or say plainly what is wrong."""
        t0 = time.perf_counter()
        try:
            best, tree = self.run_beam(text, k, clamp=True)
        except ValueError as exc:
            return self.beam_failed(str(exc))
        except Exception:
            log.exception("beam search failed for input of %d chars", len(text or ""))
            return self.beam_failed(GENERIC_ERROR)
        log.info("beam: k=%d, %d nodes, %.0f ms", tree["beam_size"], len(tree["nodes"]),
                 (time.perf_counter() - t0) * 1000)
        note = "⚠️ The sentence was cut at the model's token limit." if tree.get("truncated") else ""
        return {self.beam_state: {"text": tree["src_text"], "k": tree["beam_size"],
                                  "hyps": [list(h["ids"]) for h in tree["hypotheses"]]},
                self.beam_translation: best, self.beam_view: to_json(tree), self.beam_notice: note}

    def beam_failed(self, message: str) -> dict:
        return {self.beam_state: None, self.beam_translation: "", self.beam_view: "",
                self.beam_notice: f"⚠️ {message}"}

    def api_beam(self, text: str, k: int = DEFAULT_BEAM) -> tuple[str, dict]:
        """Beam search on one English sentence with beam size k (1-8); returns (best translation,
        beam tree as JSON, schema "transformer-beam-tree/1" documented in transformer/beam.py)."""
        try:
            return self.run_beam(text, k, clamp=False)
        except ValueError as exc:
            raise gr.Error(str(exc)) from None

    def open_hypothesis(self, state, index) -> dict:
        """Open kept hypothesis ``index`` (0 = best) in the attention viewer: the sentence is
        traced with the whole hypothesis forced, so its every step can be inspected."""
        app = self.app
        if not state or not state.get("hyps"):
            return {app.notice: "⚠️ Run beam search first, then click a finished hypothesis."}
        try:
            i = int(index)
        except (TypeError, ValueError):
            i = -1
        if not 0 <= i < len(state["hyps"]):
            return {app.notice: f"⚠️ There is no hypothesis {index!r} in this beam."}
        try:
            trace = app.tr.trace(state["text"], forced_prefix=state["hyps"][i])
            out = app.show(trace, origin="beam")
        except ValueError as exc:
            return {app.notice: f"⚠️ {exc}"}
        except Exception:
            log.exception("opening beam hypothesis failed")
            return {app.notice: f"⚠️ {GENERIC_ERROR}"}
        out[app.translation] = gr.Textbox(
            value=trace.translation,
            label=f"Italian translation (beam hypothesis {i + 1} of {len(state['hyps'])}, beam size {state['k']})")
        return out

    # --- attention across training -----------------------------------------------------------
    def epoch_entry(self, snap: SnapshotModel, text: str, target: tuple[int, ...]) -> dict:
        """One snapshot on one sentence: its own translation and its attention with the main
        viewer's target tokens forced (so rows line up with the main viewer's steps)."""
        def make():
            t0 = time.perf_counter()
            own = snap.tr.translate([text])[0]
            trace = snap.tr.trace(text, forced_prefix=list(target))
            p = encode_trace(trace, origin="epoch")
            ms = (time.perf_counter() - t0) * 1000
            log.info("epoch %d snapshot traced in %.0f ms", snap.epoch, ms)
            return {"epoch": snap.epoch, "translation": own, "scores": scores_of(snap.metrics),
                    "trace_ms": round(ms, 1), "src_tokens": p["src_tokens"], "tgt_tokens": p["tgt_tokens"],
                    "special_tokens": p["special_tokens"], "steps": p["steps"], "heads": p["heads"],
                    "attn": p["attn"]}
        return self.cache.get((text, target, snap.epoch), make)

    def epoch_data(self, trace) -> dict:
        """Every snapshot's view of the main viewer's sentence (schema attention-explorer-epochs/1)."""
        if trace is None:
            return {"schema": EPOCH_SCHEMA, "error": "Translate a sentence first."}
        target = tuple(int(i) for i in trace.tgt_ids[1:])
        final_metrics = self.app.tr.metrics
        final_translation = trace.translation if not trace.forced_prefix else self.cache.get(
            (trace.src_text, (), "final"), lambda: self.app.tr.translate([trace.src_text])[0])
        return {
            "schema": EPOCH_SCHEMA,
            "key": [trace.src_text, list(trace.tgt_tokens)],
            "snapshots": [self.epoch_entry(s, trace.src_text, target) for s in self.snapshots],
            "final": {"epoch": final_metrics.get("epoch"), "translation": final_translation,
                      "scores": scores_of(final_metrics)},
        }

    def load_epochs(self, trace) -> dict:
        try:
            data = self.epoch_data(trace)
        except ValueError as exc:
            data = {"schema": EPOCH_SCHEMA, "error": str(exc)}
        except Exception:
            log.exception("tracing snapshots failed")
            data = {"schema": EPOCH_SCHEMA, "error": GENERIC_ERROR}
        data["nonce"] = time.time()  # a new value every time, so the browser always hears back
        return {self.epoch_view: to_json(data)}

    def epoch_meta(self) -> dict:
        """What the epoch control shows before any sentence: the epochs and their scores."""
        m = self.app.tr.metrics
        return {"schema": EPOCH_SCHEMA, "meta": True,
                "snapshots": [{"epoch": s.epoch, "scores": scores_of(s.metrics)} for s in self.snapshots],
                "final": {"epoch": m.get("epoch"), "scores": scores_of(m)}}

    # --- layout ---------------------------------------------------------------------------------
    def build(self) -> None:
        """Called inside the page's ``gr.Blocks`` context, after the analysis panel."""
        app = self.app
        with gr.Accordion("Beam search: what else the decoder considered", open=True, elem_id="beam-panel"):
            gr.Markdown(
                "Greedy decoding keeps only the most likely token at each step. Beam search keeps the *k* best "
                "partial translations and ranks the finished ones by log-probability divided by a length penalty. "
                "The tree shows every candidate it weighed: one column per output position, edges as thick as the "
                "token's probability. Click a finished hypothesis to step through it in the viewer above.")
            with gr.Row(equal_height=True):
                self.beam_size = gr.Slider(1, APP_MAX_BEAM, value=DEFAULT_BEAM, step=1, label="Beam size (k)",
                                           elem_id="beam-size", scale=3)
                beam_btn = gr.Button("Beam search", variant="secondary", elem_id="beam-btn", scale=1)
            self.beam_notice = gr.Markdown(elem_id="beam-notice")
            self.beam_translation = gr.Textbox(label="Best beam translation", interactive=False,
                                               elem_id="beam-translation")
            self.beam_view = gr.HTML(
                "", html_template='<div class="bt-host"></div>', js_on_load=web_file("beam-on-load.js"),
                apply_default_css=False, elem_id="beam-view",
                module_url="gradio_api/file=" + quote(str(WEB / "beam-tree.js")))
            self.beam_state = gr.State(None)
            hyp_index = gr.Number(0, visible=False, precision=0, label="hypothesis (0 = best)")
            # clicked by web/beam-tree.js when a finished hypothesis is chosen
            open_btn = gr.Button("Open hypothesis", visible="hidden", elem_id="beam-open-btn")
        outputs = [self.beam_state, self.beam_translation, self.beam_view, self.beam_notice]
        beam_btn.click(self.show_beam, [app.src_text, self.beam_size], outputs, api_name="beam_show",
                       api_visibility="private")
        app.then_download(open_btn.click(self.open_hypothesis, [self.beam_state, hyp_index], app.outputs,
                                         js=web_file("beam-open-inputs.js"), api_name="beam_open",
                                         api_visibility="private"))
        gr.api(self.api_beam, api_name="beam")

        if not self.snapshots:
            return  # no snapshots: no epoch control at all
        with gr.Accordion("Attention across training", open=True, elem_id="epoch-panel"):
            gr.Markdown(
                "The same sentence through snapshots saved during training. Each small map is the view, layer, "
                "head and step of the viewer above, computed by that snapshot on the viewer's own output tokens "
                "(so step N is the same token everywhere); the text is the snapshot's own translation.")
            self.epoch_view = gr.HTML(
                to_json(self.epoch_meta()), html_template='<div class="ep-host"></div>',
                js_on_load=web_file("epochs-on-load.js"), apply_default_css=False, elem_id="epoch-view",
                module_url="gradio_api/file=" + quote(str(WEB / "epochs.js")))
            load_btn = gr.Button("Trace snapshots", visible="hidden", elem_id="epoch-load-btn")
        load_btn.click(self.load_epochs, [app.trace_state], [self.epoch_view], api_name="epochs",
                       api_visibility="private")
