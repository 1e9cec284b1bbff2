"""Attention explorer: translate a sentence and look inside the Transformer while it does.

    python app.py [--checkpoint checkpoints/en-it] [--host 127.0.0.1] [--port 7860]

The model is loaded once and only read afterwards; each visitor's trace lives in their
own ``gr.State``. Every figure comes from ``transformer/viewer.py`` (built on
``transformer/viz.py``) out of the trace that ``Translator.trace`` returns.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import gradio as gr

from transformer import viewer
from transformer.checkpoint import CheckpointError
from transformer.translator import Translator, load_translator

log = logging.getLogger("app")
MAX_CHARS = 2000
TRACE_DIR = Path(tempfile.gettempdir()) / "attention-explorer-traces"
DEFAULT_CHECKPOINT = "checkpoints/en-it"
EXAMPLES = [
    ["I have a red car.", "Adjective-noun reordering: 'red car' becomes 'macchina rossa'. In cross-attention, "
     "which source token does each Italian word look at? 'rossa' also agrees with the feminine 'macchina'."],
    ["I don't like coffee.", "Negation and restructuring: 'non' comes first, and 'I like' becomes 'mi piace' "
     "(coffee is the subject in Italian). Follow the rows of cross-attention."],
    ["The book that I bought yesterday is very interesting.", "Long-range dependency: at the step that emits 'è', "
     "does any head still look at 'book' across the relative clause?"],
    ["Tom gave Mary a beautiful present for her birthday.", "Names are copied: cross-attention is sharp on 'Tom' "
     "and 'Mary' at the steps that emit them."],
    ["We will go to the beach tomorrow if it doesn't rain.", "'will go' becomes one word, 'Andremo'; "
     "and this model drops 'tomorrow': which source tokens get little cross-attention?"],
    ["My sister is tall.", "A mistake to study: the model says 'alto' instead of 'alta'. Use What if? to force 'alta' "
     "and see how likely the model found it."],
]
N_TRACE_OUTPUTS = 21  # components a full render updates: see trace_outputs in build_ui
CHIP_COLORS = {"special": "#d0d0d0", "current": "#ffb347"}


GENERIC_ERROR = "Something went wrong on the server; the error has been logged. Please try another sentence."


class App:
    """Callbacks for the UI. Holds only the read-only translator; per-user data is passed
    in and out through ``gr.State``."""

    def __init__(self, tr: Translator) -> None:
        self.tr = tr

    # --- translate ---------------------------------------------------------------------
    def check_text(self, text: str | None) -> str:
        text = text or ""
        if not text.strip():
            raise ValueError("Please type an English sentence to translate.")
        if len(text) > MAX_CHARS:
            raise ValueError(f"That text has {len(text):,} characters; paste at most {MAX_CHARS:,} "
                             f"(the model reads up to {self.tr.max_source_tokens} subword tokens).")
        return text

    def translate(self, text, view, layer, head, hide_special):
        """Run the model once, then draw step 0."""
        t0 = time.perf_counter()
        try:
            trace = self.tr.trace(self.check_text(text))
        except ValueError as exc:  # bad input: say what is wrong
            return self._failed(str(exc))
        except Exception:  # a bug: log it, never show a stack trace on the page
            log.exception("translate failed for input of %d chars", len(text or ""))
            return self._failed(GENERIC_ERROR)
        try:
            out = self._render_trace(trace, view, layer, head, hide_special)
        except Exception:
            log.exception("rendering failed for input of %d chars", len(text or ""))
            return self._failed(GENERIC_ERROR)
        log.info("translate: %d src tokens, %d steps, %.0f ms", len(trace.src_tokens), trace.steps,
                 (time.perf_counter() - t0) * 1000)
        return out

    def _notice(self, trace) -> str:
        notes = []
        if trace.truncated:
            notes.append(f"⚠️ The sentence was too long: only its first {self.tr.max_source_tokens} subword tokens "
                         f"were translated ({trace.n_src_tokens_dropped} dropped).")
        if not trace.finished:
            notes.append("⚠️ Decoding stopped at the length limit before the model emitted [EOS].")
        if "[UNK]" in trace.src_tokens:
            notes.append("Some characters are unknown to the tokenizer and were read as [UNK].")
        return "\n\n".join(notes)

    def _render_trace(self, trace, view, layer, head, hide_special):
        last = trace.steps - 1
        _, *step_out = self.render_step(trace, 0, view, layer, head, hide_special)
        return (
            trace,
            trace.translation,
            self._notice(trace),
            viewer.token_chips(trace.src_tokens, trace.special_tokens),
            viewer.token_chips(trace.tgt_tokens, trace.special_tokens),
            gr.Dropdown(choices=viewer.layer_choices(trace.n_layers), value=min(int(layer), trace.n_layers - 1)),
            gr.Dropdown(choices=viewer.head_choices(trace.n_heads), value=head),
            self.trace_file(trace),
            gr.Slider(minimum=0, maximum=max(1, last), value=0, step=1, interactive=last > 0),
            *step_out,
            *self.pe(trace, len(trace.src_tokens), 0),
            len(trace.src_tokens),  # positions shown: the sentence's length
            0,  # position followed
        )

    def _failed(self, message: str):
        # keep whatever the user had on screen; only the notice changes
        skip = gr.skip()
        return (skip, skip, f"⚠️ {message}") + (skip,) * (N_TRACE_OUTPUTS - 3)

    # --- one step ------------------------------------------------------------------------
    def render_step(self, trace, t, view, layer, head, hide_special):
        """Step t: prefix chips, explanation, top-k bars, attention views, what-if choices.
        Pure slicing of the stored trace; the model does not run."""
        t = int(min(max(0, int(t)), trace.steps - 1))
        layer = int(min(int(layer), trace.n_layers - 1))
        head = head if head in ("mean", "max") else str(min(int(head), trace.n_heads - 1))
        return (
            t,
            viewer.token_chips(trace.tgt_tokens[: t + 2], trace.special_tokens, current=t + 1),
            viewer.step_text(trace, t),
            viewer.topk_figure(trace, t),
            viewer.attention_figure(trace, view, t, layer, head, hide_special),
            viewer.grid_figure(trace, view, t, layer),
            gr.Dropdown(choices=viewer.candidate_choices(trace, t), value=min(1, len(trace.topk_tokens[t]) - 1)),
        )

    def step(self, trace, t, view, layer, head, hide_special):
        if trace is None:
            return (gr.skip(),) * 7
        try:
            return self.render_step(trace, t, view, layer, head, hide_special)
        except Exception:
            log.exception("step render failed")
            return (gr.skip(),) * 7

    def move(self, trace, t, delta, view, layer, head, hide_special):
        return self.step(trace, int(t) + delta, view, layer, head, hide_special)

    def tick(self, trace, t, view, layer, head, hide_special):
        """Play: advance one step per timer tick, stop at the end."""
        if trace is None or int(t) >= trace.steps - 1:
            return (gr.Timer(active=False), "▶ Play", False, *(gr.skip(),) * 7)
        return (gr.skip(), gr.skip(), gr.skip(), *self.step(trace, int(t) + 1, view, layer, head, hide_special))

    @staticmethod
    def toggle_play(trace, playing):
        if trace is None:
            return False, gr.Timer(active=False), "▶ Play"
        playing = not playing
        return playing, gr.Timer(active=playing), "⏸ Pause" if playing else "▶ Play"

    # --- what if ---------------------------------------------------------------------------
    def whatif(self, trace, t, rank):
        if trace is None or rank is None:
            return None, "Translate a sentence first, then pick a candidate."
        try:
            prefix = viewer.whatif_prefix(trace, int(t), int(rank))
            alt = self.tr.trace(trace.src_text, forced_prefix=prefix)
        except ValueError as exc:
            return None, f"⚠️ {exc}"
        except Exception:
            log.exception("what-if failed")
            return None, f"⚠️ {GENERIC_ERROR}"
        chosen = trace.topk_tokens[int(t)][int(rank)]
        return alt, (f"**Original:** {gr_escape(trace.translation)}\n\n"
                     f"**If step {int(t) + 1} had emitted `{chosen}`:** {gr_escape(alt.translation)}")

    def open_whatif(self, alt, view, layer, head, hide_special):
        if alt is None:
            return self._failed("Compute a what-if translation first.")
        return self._render_trace(alt, view, layer, head, hide_special)

    # --- positional encoding ---------------------------------------------------------------
    def pe(self, trace, length, position):
        if trace is None:
            return (gr.skip(),) * 4
        length = int(min(max(1, int(length)), trace.positional_encoding.shape[0]))
        position = int(min(max(0, int(position)), length - 1))
        return (*viewer.pe_figures(trace, length, position), viewer.position_text(trace, position))

    # --- export / API ---------------------------------------------------------------------
    @staticmethod
    def trace_file(trace) -> str:
        """Write the trace JSON for the download button (``trace.json`` in a fresh folder);
        folders older than an hour are removed so a long-running Space does not fill up."""
        TRACE_DIR.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - 3600
        for old in TRACE_DIR.iterdir():
            if old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        folder = Path(tempfile.mkdtemp(dir=TRACE_DIR))
        path = folder / "trace.json"
        path.write_text(json.dumps(trace.to_dict(), ensure_ascii=False), encoding="utf-8")
        return str(path)

    def api_translate(self, text: str) -> tuple[str, dict]:
        """Translate one English sentence; returns (translation, trace as JSON: schema in README)."""
        try:
            trace = self.tr.trace(self.check_text(text))
        except ValueError as exc:
            raise gr.Error(str(exc)) from None
        return trace.translation, trace.to_dict()

    def from_url(self, view, layer, head, hide_special, request: gr.Request):
        text = (request.query_params.get("text") if request is not None else None) or ""
        if not text.strip():
            return (gr.skip(),) * (N_TRACE_OUTPUTS + 1)
        return (text, *self.translate(text, view, layer, head, hide_special))


def gr_escape(text: str) -> str:
    """Markdown output is sanitised by Gradio; escaping markup characters also keeps user
    text from being read as formatting."""
    return "".join("\\" + c if c in "\\`*_{}[]<>()#+-!|~" else c for c in text)


def build_ui(tr: Translator) -> gr.Blocks:
    app = App(tr)
    cfg = tr.cfg
    metrics = tr.metrics.get("test") or tr.metrics.get("validation") or {}
    score = f" Test BLEU {metrics['bleu']}, chrF {metrics['chrf']}." if metrics else ""
    with gr.Blocks(title="Inside the Transformer: en→it attention explorer") as demo:
        trace_state = gr.State(None)
        alt_state = gr.State(None)
        playing = gr.State(False)
        gr.Markdown(
            "# Inside the Transformer\n"
            f"A {cfg.n_encoder_layers}+{cfg.n_decoder_layers}-layer, {cfg.h}-head encoder-decoder Transformer "
            f"(d_model {cfg.d_model}) trained from scratch for {cfg.src_lang}→{cfg.tgt_lang}.{score} "
            "Type a sentence, translate it, then step through greedy decoding and look at every attention map."
        )
        with gr.Row():
            text = gr.Textbox(label="English sentence", placeholder="I have a red car.",
                              scale=5, max_lines=3, elem_id="src-text")
            go_btn = gr.Button("Translate", variant="primary", scale=1, elem_id="translate-btn")
        hint = gr.Textbox(label="What to look for", interactive=False, visible=True, max_lines=2)
        gr.Examples(EXAMPLES, inputs=[text, hint], label="Examples (click one, then Translate)")
        notice = gr.Markdown(elem_id="notice")
        translation = gr.Textbox(label="Italian translation (greedy)", interactive=False, elem_id="translation")
        with gr.Row():
            src_chips = gr.HighlightedText(label="Source tokens", color_map=CHIP_COLORS, elem_id="src-chips")
            tgt_chips = gr.HighlightedText(label="Target tokens", color_map=CHIP_COLORS, elem_id="tgt-chips")

        gr.Markdown("## Step through decoding")
        with gr.Row(equal_height=True):
            prev_btn = gr.Button("◀", scale=0, min_width=60, elem_id="prev-btn")
            step = gr.Slider(0, 1, value=0, step=1, label="Step", interactive=False, scale=6, elem_id="step")
            next_btn = gr.Button("▶", scale=0, min_width=60, elem_id="next-btn")
            play_btn = gr.Button("▶ Play", scale=0, min_width=100, elem_id="play-btn")
        timer = gr.Timer(0.9, active=False)
        prefix = gr.HighlightedText(label="Generated so far (the token emitted at this step is highlighted)",
                                    color_map=CHIP_COLORS, elem_id="prefix")
        step_md = gr.Markdown(elem_id="step-text")
        topk = gr.Plot(show_label=False, elem_id="topk")

        gr.Markdown("## Attention")
        with gr.Row():
            view = gr.Radio(viewer.VIEWS, value=viewer.CROSS, label="Attention type", elem_id="view", scale=3)
            layer = gr.Dropdown(viewer.layer_choices(cfg.n_encoder_layers), value=0, label="Layer", scale=1)
            head = gr.Dropdown(viewer.head_choices(cfg.h), value="mean", label="Head", scale=1)
            hide_special = gr.Checkbox(False, label="Hide [SOS] [EOS] [PAD]", scale=1,
                                       info="weights of hidden tokens are not renormalised")
        attn_plot = gr.Plot(show_label=False, elem_id="attn-plot")
        grid_plot = gr.Plot(show_label=False, elem_id="grid-plot")

        with gr.Accordion("What if? Force another candidate at this step", open=True):
            with gr.Row():
                candidate = gr.Dropdown([], label="Candidate at the current step", scale=3, elem_id="candidate")
                whatif_btn = gr.Button("Decode with this token", scale=1, elem_id="whatif-btn")
                open_btn = gr.Button("Explore that version", scale=1)
            whatif_md = gr.Markdown(elem_id="whatif-text")

        with gr.Accordion("Positional encoding", open=False, elem_id="pe-accordion"):
            with gr.Row():
                pe_len = gr.Slider(1, cfg.max_positions, value=12, step=1, label="Positions shown")
                pe_pos = gr.Slider(0, cfg.max_positions - 1, value=0, step=1, label="Position to follow")
            pe_pos_md = gr.Markdown()
            pe_heat = gr.Plot(show_label=False, elem_id="pe-heat")
            with gr.Row():
                pe_sim = gr.Plot(show_label=False, elem_id="pe-sim")
                pe_curves = gr.Plot(show_label=False, elem_id="pe-curves")

        with gr.Row():
            download = gr.DownloadButton("Download trace (JSON)", value=None, elem_id="download-trace")

        view_inputs = [view, layer, head, hide_special]
        step_outputs = [step, prefix, step_md, topk, attn_plot, grid_plot, candidate]
        pe_outputs = [pe_heat, pe_sim, pe_curves, pe_pos_md]
        trace_outputs = [trace_state, translation, notice, src_chips, tgt_chips, layer, head, download,
                         *step_outputs, *pe_outputs, pe_len, pe_pos]

        assert len(trace_outputs) == N_TRACE_OUTPUTS
        go_btn.click(app.translate, [text, *view_inputs], trace_outputs, api_name="show")
        text.submit(app.translate, [text, *view_inputs], trace_outputs, api_name="show_on_enter",
                    api_visibility="private")
        step.input(app.step, [trace_state, step, *view_inputs], step_outputs, api_name="step",
                   trigger_mode="always_last")
        prev_btn.click(lambda tr, t, *v: app.move(tr, t, -1, *v), [trace_state, step, *view_inputs], step_outputs,
                       api_visibility="private")
        next_btn.click(lambda tr, t, *v: app.move(tr, t, +1, *v), [trace_state, step, *view_inputs], step_outputs,
                       api_visibility="private")
        for control in view_inputs:
            control.input(app.step, [trace_state, step, *view_inputs], step_outputs, api_visibility="private",
                          trigger_mode="always_last")
        play_btn.click(app.toggle_play, [trace_state, playing], [playing, timer, play_btn], api_visibility="private")
        timer.tick(app.tick, [trace_state, step, *view_inputs], [timer, play_btn, playing, *step_outputs],
                   api_visibility="private")
        whatif_btn.click(app.whatif, [trace_state, step, candidate], [alt_state, whatif_md], api_name="whatif")
        open_btn.click(app.open_whatif, [alt_state, *view_inputs], trace_outputs, api_visibility="private")
        for control in (pe_len, pe_pos):
            control.input(app.pe, [trace_state, pe_len, pe_pos], pe_outputs, api_visibility="private",
                          trigger_mode="always_last")
        demo.load(app.from_url, view_inputs, [text, *trace_outputs], api_visibility="private")
        gr.api(app.api_translate, api_name="translate")
    return demo


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Serve the attention explorer (a Gradio app).")
    p.add_argument("--checkpoint", default=os.environ.get("CHECKPOINT", DEFAULT_CHECKPOINT),
                   help="checkpoint directory or hub repo id (env CHECKPOINT)")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="interface to listen on (env GRADIO_SERVER_NAME; 0.0.0.0 for all)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")),
                   help="port to listen on (env GRADIO_SERVER_PORT)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        tr = load_translator(args.checkpoint)
    except (CheckpointError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    demo = build_ui(tr)
    demo.queue(default_concurrency_limit=4)
    demo.launch(server_name=args.host, server_port=args.port, show_error=False,
                css=".gradio-container {max-width: 1280px !important}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
