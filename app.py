"""Attention explorer: translate a sentence and look inside the Transformer while it does.

    python app.py [--checkpoint checkpoints/en-it] [--host 127.0.0.1] [--port 7860]

The server computes, the browser draws. Python runs the model once per Translate or
What-if and sends one compact payload (``transformer/payload.py``) to the ``#viewer``
block; the viewer's ES modules (``transformer/web/``, served as static files, no CDN)
draw every view, so stepping, Play and view changes never call the server. Each
visitor's trace lives in their own ``gr.State``; the model is only read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import gradio as gr

from panels.analysis import AnalysisPanel
from panels.beam import BeamPanel
from transformer import viewer
from transformer.checkpoint import write_file_atomic
from transformer.cli import fail, load_translator_or_exit
from transformer.payload import encode_trace
from transformer.serving import TraceBatcher
from transformer.translator import Translator

log = logging.getLogger("app")
WEB = Path(__file__).resolve().parent / "transformer" / "web"
TRACE_DIR = Path(tempfile.gettempdir()) / "attention-explorer-traces"
TRACE_MAX_AGE_S = 24 * 3600  # pruned at start-up only, when no visitor can be waiting for a file
DEFAULT_CHECKPOINT = "checkpoints/en-it"
CHARS_PER_TOKEN = 16  # a subword token covers at most about this many characters of real text
GREEDY_LABEL = "Italian translation (greedy)"
GENERIC_ERROR = "Something went wrong on the server; the error has been logged. Please try another sentence."
EXAMPLES = [
    ["I have a red car.", "Adjective-noun reordering: 'red car' becomes 'macchina rossa'. In cross-attention, "
     "which source token does each Italian word look at? In decoder self-attention, layer 1, heads 2 and 7 look "
     "only at the token just read (same-token heads)."],
    ["I don't like coffee.", "Negation and restructuring: 'non' comes first, and 'I like' becomes 'mi piace' "
     "(coffee is the subject in Italian). Follow the rows of cross-attention."],
    ["The book that I bought yesterday is very interesting.", "Long-range dependency: at the step that emits 'è', "
     "does any head still look at 'book' across the relative clause?"],
    ["Tom gave Mary a beautiful present for her birthday.", "Names are copied: cross-attention is sharp on 'Tom' "
     "and 'Mary'. Head importance ranks cross-attention layer 2, head 3 first: knock it out and 'a Mary' disappears. "
     "The logit lens: at step 7 layer 1 still says 'un' (the token just read); 'bel' appears from layer 2."],
    ["We will go to the beach tomorrow if it doesn't rain.", "A failure to study: the model loses its place and "
     "repeats itself. At step 8 cross-attention (layer 2, mean of the heads: 0.88) goes back to 'beach', and 'spiaggia' comes "
     "a second time."],
    ["My sister is tall.", "A mistake to study: the model says 'alto' instead of 'alta'. At step 5 it chose 'to.' "
     "over 'ta.' (0.57 against 0.37): use What if? to force 'ta.' and explore that version."],
]


def web_file(name: str) -> str:
    return (WEB / name).read_text(encoding="utf-8")


def payload_json(trace, origin: str) -> str:
    """The viewer's value: the payload as JSON, with '<' escaped so no text can look like markup."""
    return json.dumps(encode_trace(trace, origin=origin), ensure_ascii=False, separators=(",", ":")).replace(
        "<", "\\u003c")


def gr_escape(text: str) -> str:
    """Markdown output is sanitised by Gradio; escaping markup characters also keeps user
    text from being read as formatting."""
    return "".join("\\" + c if c in "\\`*_{}[]<>()#+-!|~" else c for c in text)


def write_trace_file(trace) -> str:
    """The full-precision trace JSON for the download button.

    The name is the hash of the content, and files are never deleted while the app runs
    (only at start-up, see :func:`prune_trace_files`), so a file another visitor is about
    to download can never disappear; identical traces share one file. Written to a
    temporary name and renamed, so a reader never sees half a file."""
    data = json.dumps(trace.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    path = TRACE_DIR / f"trace-{hashlib.sha256(data).hexdigest()[:24]}.json"
    if not path.exists():
        TRACE_DIR.mkdir(parents=True, exist_ok=True)
        write_file_atomic(path, data)
    return str(path)


def prune_trace_files(max_age_s: float = TRACE_MAX_AGE_S) -> int:
    """Remove old trace files; called once before the server starts serving."""
    removed, cutoff = 0, time.time() - max_age_s
    if TRACE_DIR.is_dir():
        for old in TRACE_DIR.iterdir():
            if old.is_file() and old.stat().st_mtime < cutoff:
                old.unlink(missing_ok=True)
                removed += 1
    return removed


class App:
    """The UI and its callbacks. Holds only the read-only translator; per-visitor data goes
    in and out through ``gr.State``. Callbacks return dicts keyed by component."""

    def __init__(self, tr: Translator, max_batch: int = 8) -> None:
        self.tr = tr
        # Translate and /translate trace through this: visitors who click at the same time
        # share one batched decode (transformer/serving.py says why)
        self.batcher = TraceBatcher(tr, max_batch=max_batch)

    @property
    def max_chars(self) -> int:
        """Character limit that agrees with the token cap: text this long always has more
        than ``max_source_tokens`` subwords, so nothing under it is refused that the model could read."""
        return CHARS_PER_TOKEN * self.tr.max_source_tokens

    # --- translate ---------------------------------------------------------------------
    def check_text(self, text: str | None) -> str:
        text = text or ""
        if not text.strip():
            raise ValueError("Please type an English sentence to translate.")
        if len(text) > self.max_chars:
            raise ValueError(f"That text has {len(text):,} characters, far more than the model can read: it takes at "
                             f"most {self.tr.max_source_tokens} subword tokens (about {self.max_chars:,} characters "
                             "at the very most). Paste a sentence or two.")
        return text

    def translate(self, text: str | None) -> dict:
        """Run the model once and send the whole trace to the browser."""
        t0 = time.perf_counter()
        try:
            trace = self.batcher.trace(self.check_text(text))
            out = self.show(trace, origin="translate")
        except ValueError as exc:  # bad input: say what is wrong
            return self.failed(str(exc))
        except Exception:  # a bug: log it, never show a stack trace on the page
            log.exception("translate failed for input of %d chars", len(text or ""))
            return self.failed(GENERIC_ERROR)
        log.info("translate: %d src tokens, %d steps, %.0f ms", len(trace.src_tokens), trace.steps,
                 (time.perf_counter() - t0) * 1000)
        return out

    def show(self, trace, origin: str) -> dict:
        """Everything a new trace changes; the previous sentence's What-if is dropped."""
        forced = viewer.forced_label(trace)
        return {
            self.trace_state: trace,
            self.alt_state: None,
            self.translation: gr.Textbox(value=trace.translation,
                                         label=f"Italian translation ({forced})" if forced else GREEDY_LABEL),
            self.notice: "\n\n".join(viewer.notices(trace, self.tr.max_source_tokens)),
            self.viewer: payload_json(trace, origin),
            # the full-precision file is written by prepare_download, chained after this
            # event, so the views paint without waiting for it (about 0.4 s at 126 tokens)
            self.download: gr.DownloadButton(value=None, interactive=False),
            self.whatif_btn: gr.Button(interactive=True),
            self.open_btn: gr.Button(interactive=False),
            self.whatif_md: "",
        }

    def prepare_download(self, trace) -> dict:
        """The download button for the trace on screen (run after the event that showed it)."""
        if trace is None:
            return {self.download: gr.DownloadButton(value=None, interactive=False)}
        try:
            return {self.download: gr.DownloadButton(value=write_trace_file(trace), interactive=True)}
        except OSError:
            log.exception("could not write the trace file")
            return {self.download: gr.DownloadButton(value=None, interactive=False)}

    def then_download(self, event) -> None:
        """Chain prepare_download after an event that may have shown a new trace."""
        event.then(self.prepare_download, [self.trace_state], [self.download], api_visibility="private")

    def failed(self, message: str) -> dict:
        """Bad input clears the previous sentence's results, so nothing stale looks current."""
        return {
            self.trace_state: None,
            self.alt_state: None,
            self.translation: gr.Textbox(value="", label=GREEDY_LABEL),
            self.notice: f"⚠️ {message}",
            self.viewer: "",
            self.download: gr.DownloadButton(value=None, interactive=False),
            self.whatif_btn: gr.Button(interactive=False),
            self.open_btn: gr.Button(interactive=False),
            self.whatif_md: "",
        }

    # --- what if ---------------------------------------------------------------------------
    def whatif(self, trace, step, rank) -> dict:
        """Decode again with candidate ``rank`` (0-based) forced at ``step`` (1-based)."""
        if trace is None:
            return {self.alt_state: None, self.whatif_md: "Translate a sentence first, then pick a candidate.",
                    self.open_btn: gr.Button(interactive=False)}
        try:
            step = min(max(1, int(step)), trace.steps)
            rank = min(max(0, int(rank)), len(trace.topk_tokens[step - 1]) - 1)
            alt = self.tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, step, rank))
        except (TypeError, ValueError) as exc:
            return {self.alt_state: None, self.whatif_md: f"⚠️ {gr_escape(str(exc))}",
                    self.open_btn: gr.Button(interactive=False)}
        except Exception:
            log.exception("what-if failed")
            return {self.alt_state: None, self.whatif_md: f"⚠️ {GENERIC_ERROR}",
                    self.open_btn: gr.Button(interactive=False)}
        chosen = viewer.display_token(trace.topk_tokens[step - 1][rank])
        return {
            self.alt_state: alt,
            self.whatif_md: f"**Original:** {gr_escape(trace.translation)}\n\n"
                            f"**Step {step} forced to “{gr_escape(chosen)}”:** {gr_escape(alt.translation)}",
            self.open_btn: gr.Button(interactive=True),
        }

    def open_whatif(self, alt) -> dict:
        if alt is None:
            return {self.notice: "⚠️ Compute a What-if translation first."}
        return self.show(alt, origin="whatif")

    # --- API and links -----------------------------------------------------------------------
    def api_translate(self, text: str) -> tuple[str, dict]:
        """Translate one English sentence; returns (translation, trace as JSON: schema in README,
        float arrays packed, see ``transformer.trace.pack_array``)."""
        try:
            trace = self.batcher.trace(self.check_text(text))
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return trace.translation, trace.to_dict(packed=True)

    def from_url(self, text: str | None, request: gr.Request) -> dict:
        """A shared link: the fragment's text (handed over by web/url-text.js) or ``?text=``."""
        text = text or (request.query_params.get("text") if request is not None else None) or ""
        if not text.strip():
            return {self.src_text: gr.skip()}  # nothing to open (Gradio reads an empty dict as one value)
        return {self.src_text: text, **self.translate(text)}

    # --- layout -------------------------------------------------------------------------------
    def build(self) -> gr.Blocks:
        cfg, n_tok = self.tr.cfg, self.tr.max_source_tokens
        metrics = self.tr.metrics.get("test") or self.tr.metrics.get("validation") or {}
        score = f" Test BLEU {metrics['bleu']}, chrF {metrics['chrf']}." if metrics else ""
        gr.set_static_paths([str(WEB)])  # the viewer's modules, served as files (offline, cacheable)
        with gr.Blocks(title="Inside the Transformer: en→it attention explorer") as demo:
            self.trace_state = gr.State(None)
            self.alt_state = gr.State(None)
            gr.Markdown(
                "# Inside the Transformer\n"
                f"A {cfg.n_encoder_layers}+{cfg.n_decoder_layers}-layer, {cfg.h}-head encoder-decoder Transformer "
                f"(d_model {cfg.d_model}) trained from scratch for {cfg.src_lang}→{cfg.tgt_lang}.{score} "
                "Type a sentence, translate it, then step through greedy decoding and look at every attention map."
            )
            with gr.Row():
                self.src_text = gr.Textbox(
                    label="English sentence", placeholder="I have a red car.", scale=5, max_lines=3,
                    elem_id="src-text", max_length=self.max_chars,
                    info=f"The model reads up to {n_tok} subword tokens (roughly {n_tok * 3 // 4} words); "
                         "longer text is cut there and the notice says how many tokens were dropped.")
                translate_btn = gr.Button("Translate", variant="primary", scale=1, elem_id="translate-btn")
            hint = gr.Textbox(label="What to look for", interactive=False, max_lines=3, elem_id="hint",
                              placeholder=" ")  # hidden by app.css while empty
            gr.Examples(EXAMPLES, inputs=[self.src_text, hint], label="Examples (click one, then Translate)")
            self.notice = gr.Markdown(elem_id="notice")
            self.translation = gr.Textbox(label=GREEDY_LABEL, interactive=False, elem_id="translation")
            gr.Markdown("## Step through decoding")
            self.viewer = gr.HTML(
                "", html_template='<div class="ax-host"></div>', js_on_load=web_file("gradio-on-load.js"),
                apply_default_css=False, elem_id="viewer",
                module_url="gradio_api/file=" + quote(str(WEB / "viewer.js")),
            )
            with gr.Accordion("What if? Force another candidate at this step", open=True):
                with gr.Row(equal_height=True):
                    gr.HTML("", html_template='<label class="ax-cand">Candidate at the current step '
                                              '<select aria-label="Candidate at the current step" disabled></select>'
                                              '</label>', js_on_load=None, elem_id="candidate", scale=3)
                    self.whatif_btn = gr.Button("Decode with this token", scale=1, interactive=False,
                                                elem_id="whatif-btn")
                    self.open_btn = gr.Button("Explore that version", scale=1, interactive=False,
                                              elem_id="open-whatif-btn")
                self.whatif_md = gr.Markdown(elem_id="whatif-text")
                # filled in the browser by web/whatif-inputs.js from the viewer's step and the candidate list
                whatif_step = gr.Number(1, visible=False, precision=0, label="step (1-based)")
                whatif_rank = gr.Number(1, visible=False, precision=0, label="candidate rank (0 = most likely)")
            self.download = gr.DownloadButton("Download trace (JSON, full precision)", value=None,
                                              interactive=False, elem_id="download-trace")

            outputs = [self.trace_state, self.alt_state, self.translation, self.notice, self.viewer, self.download,
                       self.whatif_btn, self.open_btn, self.whatif_md]
            # the translate handlers mostly wait for the batcher, which runs the model in one
            # thread: let in two batches' worth, in their own queue (concurrency_id), so the
            # next batch gathers while one runs
            batched = dict(concurrency_limit=2 * self.batcher.max_batch, concurrency_id="translate")
            self.then_download(translate_btn.click(self.translate, [self.src_text], outputs, api_name="show",
                                                   api_visibility="private", **batched))
            self.then_download(self.src_text.submit(  # named, or it would take the name "translate"
                self.translate, [self.src_text], outputs, api_name="show_on_enter", api_visibility="private", **batched))
            self.whatif_btn.click(self.whatif, [self.trace_state, whatif_step, whatif_rank],
                                  [self.alt_state, self.whatif_md, self.open_btn], js=web_file("whatif-inputs.js"),
                                  api_name="whatif")
            self.then_download(self.open_btn.click(self.open_whatif, [self.alt_state], outputs, api_name="open_whatif",
                                                   api_visibility="private"))
            self.then_download(demo.load(self.from_url, [self.src_text], [self.src_text, *outputs],
                                         js=web_file("url-text.js"), api_visibility="private"))
            gr.api(self.api_translate, api_name="translate", **batched)
            self.outputs = outputs  # what App.show / App.failed update, for the panels' own handlers
            self.analysis_panel = AnalysisPanel(self)
            self.analysis_panel.build()
            self.beam_panel = BeamPanel(self)
            self.beam_panel.build()
        return demo


def build_ui(tr: Translator, max_batch: int = 8) -> gr.Blocks:
    return App(tr, max_batch=max_batch).build()


def page_css() -> str:
    """The page's styles: app.css and viewer.css first, then each panel's own stylesheet."""
    first = ["app.css", "viewer.css"]
    rest = sorted(p.name for p in WEB.glob("*.css") if p.name not in first)
    return "".join(web_file(name) for name in first + rest)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Serve the attention explorer (a Gradio app).")
    p.add_argument("--checkpoint", default=os.environ.get("CHECKPOINT", DEFAULT_CHECKPOINT),
                   help="checkpoint directory or hub repo id (env CHECKPOINT)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="interface to listen on (env GRADIO_SERVER_NAME; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                   help="port to listen on (env GRADIO_SERVER_PORT)")
    p.add_argument("--concurrency", type=int, default=int(os.environ.get("APP_CONCURRENCY", "2")),
                   help="requests of the other model endpoints (What if?, analyses, beam) run at once "
                        "(env APP_CONCURRENCY); more queue up. Translate has its own queue (--max-batch)")
    p.add_argument("--max-batch", type=int, default=int(os.environ.get("APP_MAX_BATCH", "8")),
                   help="most sentences traced together when visitors translate at the same time "
                        "(env APP_MAX_BATCH; 1 turns batching off)")
    p.add_argument("--torch-threads", type=int, default=int(os.environ.get("APP_TORCH_THREADS", "0")),
                   help="torch CPU threads per process, 0 = torch's default (env APP_TORCH_THREADS)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Serve until stopped; bad flags or a missing/corrupt checkpoint exit with code 2 and a
    one-line message (``transformer.cli``)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    if args.concurrency < 1 or args.max_batch < 1 or args.torch_threads < 0:
        fail("--concurrency and --max-batch must be >= 1 and --torch-threads >= 0")
    tr = load_translator_or_exit(args.checkpoint)
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    pruned = prune_trace_files()
    if pruned:
        log.info("removed %d trace files older than a day", pruned)
    demo = build_ui(tr, max_batch=args.max_batch)
    demo.queue(default_concurrency_limit=args.concurrency)
    demo.launch(server_name=args.host, server_port=args.port, show_error=False, css=page_css())
    return 0


if __name__ == "__main__":
    sys.exit(main())
