"""The explorer's page: translate a sentence and look inside the Transformer while it does.

The server computes, the browser draws. Python runs the model once per Translate (or link,
What-if, beam hypothesis) and sends one compact payload (:mod:`explorer.payload`) to the
viewer's block; the browser views (``explorer/web/``, served as static files, no CDN) draw
everything, so stepping, Play and view changes never call the server. Each visitor's trace
lives in their own ``gr.State``; the model is only read.

:class:`App` builds the page: the sentence box, the notice and translation, the viewer, and
below it every panel of :data:`explorer.panels.PANELS`, each closed in its own section.
A first visit sees one screen: the sentence and its translation, the step control, the
prefix, the candidates and one attention map; the rest opens when asked for, and a guided
tour (``web/tour.js``) walks through it on the visitor's own sentence. Whenever the viewer gets a new trace
or loses it (:meth:`App.show`, :meth:`App.failed`), each panel's ``sentence_changed`` goes
into the same answer, so no panel keeps anything of the old sentence.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from transformer.core import stepping
from transformer.core.languages import language_name
from transformer.core.translator import Translator
from transformer.interpret.habits import with_habits

from . import texts
from .assets import WEB
from .claims import default as default_claims, for_checkpoint, is_generic
from . import lessons as course
from .downloads import write_trace_file
from .errors import answer
from .blocks import message, view_host
from .class_api import ClassRoom
from .panels import PANELS
from .panels.analysis import load_test_stats
from .payload import encode_trace
from .serving import TraceBatcher, api_answer
from .models import Model
from .names import OURS, Names, of_trace, of_translator
from .panels.base import Asked

log = logging.getLogger("app")
# Text longer than this is refused outright (tokenising it would cost more than it can be
# worth); anything shorter is read up to the model's token cap, which is the one place text
# is cut, and the notice says what was dropped.
MAX_CHARS = 50_000
GREEDY_LABEL = OURS.translation("greedy")  # the shipped model's; another model's names its own language
LINK_ORIGINS = ("whatif", "beam")  # versions a link can reopen, besides the greedy one
# the examples and their hints come from the checkpoint's claims.json (explorer/claims.py), so the
# figures they state are the ones tests/test_claims_measured.py measures; EXAMPLES are those of the default
# checkpoint (what `python app.py` shows), App.claims those of the App's own
EXAMPLES = default_claims().examples()


def opening_sentence(examples: list[list[str]]) -> str:
    """The example a first visit sees drawn: the one with the most words (a longer sentence
    shows more of what attention does), the first of those."""
    return max((sentence for sentence, _hint in examples), key=lambda t: len(t.split()), default="I have a red car.")


def link_prefix(forced) -> list[int]:
    """The forced token ids a link carries, as ints; a malformed list is a ValueError."""
    if not isinstance(forced, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in forced):
        raise ValueError("malformed forced tokens")
    return forced


class App:
    """The page and its callbacks. Holds only the read-only translator; per-visitor data goes
    in and out through ``gr.State``. Callbacks return dicts keyed by component."""

    def __init__(self, tr: Translator, max_batch: int = 8, model: Model | None = None, models: tuple = ()) -> None:
        self.tr = tr
        # which model this page shows, and every model the app serves (the model switch);
        # the first model's page is "/", its endpoints keep their plain names
        self.model = model or Model.of(tr)
        self.models = models or (self.model,)
        # what every label calls this model's languages and special tokens (explorer/names.py)
        self.names = of_translator(tr)
        # a multilingual model's language codes (the pickers beside the sentence); [] for one pair
        self.lang_codes = stepping.language_codes(tr.cfg)
        # Translate and /translate trace through this: visitors who click at the same time
        # share one batched decode (explorer/serving.py says why)
        self.batcher = TraceBatcher(tr, max_batch=max_batch)
        self.max_chars = MAX_CHARS
        # the examples and hints for this model (generic ones for a checkpoint without claims.json)
        self.claims = for_checkpoint(tr.directory, tgt_lang=tr.cfg.tgt_lang)
        # the course beside its weights (explorer/lessons.py), or None: no Lessons entry
        self.lessons = course.for_checkpoint(getattr(tr, "directory", None))
        # the checkpoint's test-set head diagnostics: a new sentence opens on the head that
        # aligns best over them (payload.focus_head), the same head for every sentence
        self.test_stats = load_test_stats(getattr(tr, "directory", None))
        self.panels = [panel(self) for panel in PANELS]
        texts.english_words()  # the junk check's word list, read now rather than on the first Translate
        # a first visit opens on an example already translated and drawn: traced once here, at
        # start-up, and sent with the page, so a visitor costs the model nothing until they ask
        self.opening = self.tr.trace(opening_sentence(self.claims.examples()))

    def panel(self, view: str):
        """The panel of browser view ``view`` (e.g. "analysis")."""
        return next(p for p in self.panels if p.view == view)

    def names_for(self, trace=None) -> Names:
        """The names of ``trace``'s languages and special tokens (a multilingual model's trace
        names the languages of its own request); the model's without a trace."""
        return of_trace(self.names, trace)

    # --- languages (a multilingual model) ----------------------------------------------------
    def languages(self, src_lang=None, tgt_lang=None) -> dict:
        """The languages a request asked for, as the library's ``src_lang``/``tgt_lang`` keywords
        (none asked, or a model of one pair: ``{}``). A code the model does not know (a
        hand-edited link, an API call) is a ``ValueError`` in one line."""
        asked = {"src_lang": src_lang or None, "tgt_lang": tgt_lang or None}
        if any(v is not None and not isinstance(v, str) for v in asked.values()):
            raise ValueError("A language must be given by its code, e.g. 'fr' or 'fra_Latn'.")
        stepping.check_languages(self.tr.cfg, **asked)
        return {k: v for k, v in asked.items() if v} if self.lang_codes else {}

    def trace_languages(self, trace) -> dict:
        """The languages ``trace`` was read and written in, for a library call that redoes it
        (What if?, a beam hypothesis, the analyses); ``{}`` for a model of one pair."""
        if trace is None or not self.lang_codes:
            return {}
        return {"src_lang": trace.src_lang, "tgt_lang": trace.tgt_lang}

    # --- translate ---------------------------------------------------------------------
    def check_text(self, text: str | None) -> str:
        text = text or ""
        if not text.strip():
            raise ValueError(f"Please type {self.names.a_sentence()} to translate.")
        if len(text) > self.max_chars:
            raise ValueError(
                f"That text has {len(text):,} characters, far more than the model can read: it takes at "
                f"most {self.tr.max_source_tokens} subword tokens (a sentence or two). Paste less text."
            )
        return texts.clean_input(text)[0]  # markup and control characters out; nothing left: ValueError

    def translate(self, text: str | None, src_lang: str | None = None, tgt_lang: str | None = None) -> dict:
        """Run the model once and send the whole trace to the browser (a multilingual model: in
        the languages asked, the config's when None)."""
        t0 = time.perf_counter()

        def shown() -> dict:
            trace = self.batcher.trace(self.check_text(text), **self.languages(src_lang, tgt_lang))
            log.info(
                "translate: %d src tokens, %d steps, %.0f ms",
                len(trace.src_tokens),
                trace.steps,
                (time.perf_counter() - t0) * 1000,
            )
            notice = texts.clean_input(text)[1]  # what cleaning took out, said beside the translation
            return self.show(trace, origin="translate", notes=(notice,) if notice else ())

        return answer(log, f"translate of {len(text or '')} chars", shown, self.failed)

    def show(self, trace, origin: str, label: str | None = None, notes: tuple[str, ...] = ()) -> dict:
        """Everything a new trace in the viewer changes, every panel's part included."""
        forced, names = texts.forced_label(trace), self.names_for(trace)
        dropped = (
            texts.dropped_text(self.tr.src_tok, trace.src_text, self.tr.max_source_tokens) if trace.truncated else ""
        )
        out = {
            self.trace_state: trace,
            self.translation: gr.Textbox(value=trace.translation, label=label or names.translation(forced or "greedy")),
            self.notice: "\n\n".join(
                [
                    *notes,
                    *texts.notices(
                        trace,
                        self.tr.max_source_tokens,
                        dropped,
                        self.tr.metrics.get("test"),
                        src_tok=self.tr.src_tok,
                        names=names,
                    ),
                ]
            ),
            self.viewer: message(encode_trace(trace, origin=origin, test_stats=self.test_stats, names=names)),
            # the full-precision file is written by prepare_download, chained after this
            # event, so the views paint without waiting for it (about 0.4 s at 126 tokens)
            self.download: gr.DownloadButton(value=None, interactive=False),
        }
        # the pickers say the languages of the sentence on screen (a link's, a retranslation's)
        out.update({self.src_lang: trace.src_lang, self.tgt_lang: trace.tgt_lang})
        for panel in self.panels:
            out.update(panel.sentence_changed(origin))
        return out

    def retarget(self, trace, text, src_lang, tgt_lang) -> dict:
        """A target language picked: the sentence on screen translated into it (before any is
        shown, the sentence in the box; nothing to translate, nothing happens)."""
        text = trace.src_text if trace is not None else text
        if not isinstance(text, str) or not text.strip():
            return {}
        return {self.src_text: text, **self.translate(text, src_lang, tgt_lang)}

    def failed(self, message_text: str) -> dict:
        """Bad input clears the previous sentence's results, so nothing stale looks current."""
        out = {
            self.trace_state: None,
            self.translation: gr.Textbox(value="", label=self.names.translation("greedy")),
            self.notice: f"⚠️ {message_text}",
            self.viewer: "",
            self.download: gr.DownloadButton(value=None, interactive=False),
            # the pickers keep what the visitor chose, so they can mend a bad language there
            self.src_lang: gr.skip(),
            self.tgt_lang: gr.skip(),
        }
        for panel in self.panels:
            out.update(panel.sentence_changed(None))
        return out

    def trace_file(self, trace) -> str | None:
        """The path of the trace's download file; None without a trace, or when it cannot be written."""
        if trace is None:
            return None
        try:
            return write_trace_file(trace)
        except OSError:
            log.exception("could not write the trace file")
            return None

    def prepare_download(self, trace) -> dict:
        """The download button for the trace on screen (run after the event that showed it)."""
        path = self.trace_file(trace)
        return {self.download: gr.DownloadButton(value=path, interactive=path is not None)}

    def then_download(self, event) -> None:
        """Chain prepare_download after an event that may have shown a new trace."""
        event.then(self.prepare_download, [self.trace_state], [self.download], api_visibility="private")

    # --- API and links -----------------------------------------------------------------------
    def api_translate(self, text: str, src_lang: str = "", tgt_lang: str = "") -> tuple[str, dict]:
        """Translate one sentence; returns (translation, trace as JSON: schema in README, float
        arrays encoded exactly, see ``transformer.core.wire``). ``src_lang``/``tgt_lang``: a
        multilingual model's language codes ("": the config's). Bad input, an unknown language
        included: ``gr.Error`` (:func:`explorer.serving.api_answer`)."""

        def run() -> tuple[str, dict]:
            trace = self.batcher.trace(self.check_text(text), **self.languages(src_lang, tgt_lang))
            content = trace.to_dict(packed=True)
            if content.get("head_stats") is not None:  # each head named by its habit, as the viewer shows it
                content["head_stats"] = with_habits(content["head_stats"])
            return trace.translation, content

        return api_answer(log, "/translate", run)

    def run_example(self, evt: Asked, src_lang: str | None = None, tgt_lang: str | None = None) -> dict:
        """An example clicked in the browser (``web/hint.js``: ``{"text"}``): translate it at
        once, in the languages picked."""
        text = evt.fields.get("text")
        return self.translate(text if isinstance(text, str) else "", src_lang, tgt_lang)

    def open_link(self, evt: Asked) -> dict:
        """A shared link (read in the browser, web/url.js): ``{"text", "forced", "origin"}``,
        and a multilingual model's ``"src"``/``"tgt"`` language codes. A link to a What-if or
        beam version traces that version again."""
        link = evt.fields
        text = link.get("text")

        def opened() -> dict:
            langs = self.languages(link.get("src"), link.get("tgt"))
            return self.linked(text, link.get("forced"), link.get("origin"), langs)

        shown = text if isinstance(text, str) else ""
        return {self.src_text: shown, **answer(log, "opening a link", opened, self.failed)}

    def linked(self, text, forced, origin, langs: dict | None = None) -> dict:
        text, langs = self.check_text(text), langs or {}
        if origin not in LINK_ORIGINS or not forced:
            return self.show(self.batcher.trace(text, **langs), origin="translate")
        try:
            trace = self.tr.trace(text, forced_prefix=link_prefix(forced), **langs)
        except ValueError:
            note = "⚠️ This link's forced tokens do not fit this model, so the greedy translation is shown instead."
            return self.show(self.batcher.trace(text, **langs), origin="translate", notes=(note,))
        label = self.names_for(trace).translation("beam hypothesis, from a link") if origin == "beam" else None
        return self.show(trace, origin=origin, label=label)

    # --- layout -------------------------------------------------------------------------------
    def api_name(self, name: str) -> str:
        """An endpoint's name: plain on the first model's page, suffixed with the model's key on
        another's (``translate_opus_mt_en_it``), as one app serves both."""
        return f"{name}_{self.model.key}" if self.model.key else name

    def build(self) -> gr.Blocks:
        gr.set_static_paths([str(WEB)])  # the browser modules, served as files (offline, cacheable)
        cfg = self.tr.cfg
        with gr.Blocks(
            title=f"Inside the Transformer: {cfg.src_lang}→{cfg.tgt_lang} attention explorer", fill_width=True
        ) as demo:
            self.build_page()
        return demo

    def build_page(self) -> None:
        """The page's blocks, inside the current ``gr.Blocks`` or route."""
        self.trace_state = gr.State(self.opening)
        self.build_header()
        self.classroom = ClassRoom(self).build(self.tools_row)  # "Class", last in the header's row (web/classroom.js)
        # the opening example's payload travels with the page ("first": a link's own sentence replaces it)
        first = encode_trace(
            self.opening, origin="translate", test_stats=self.test_stats, names=self.names_for(self.opening)
        )
        first["first"] = True
        self.viewer = view_host("viewer", elem_id="viewer", value=message(first))
        # the "Why?" tools: every panel, each in its own closed section (its build() makes it)
        with gr.Column(elem_id="why-tools"):
            gr.Markdown("### Why did it say that? Tools that ask the model again", elem_id="why-title")
            for panel in self.panels:
                panel.build()
        # what App.show / App.failed update: the core, then each panel's sentence state
        self.outputs = [
            self.trace_state,
            self.translation,
            self.notice,
            self.viewer,
            self.download,
            self.src_lang,
            self.tgt_lang,
            *(c for panel in self.panels for c in panel.sentence_outputs()),
        ]
        self.wire()
        for panel in self.panels:
            panel.wire()

    def unmeasured(self) -> str:
        """What the page says when this model's claims or test-set head stats were never measured
        (a model of one's own, a converted one): the examples' hints and the whole-test-set
        diagnostics belong to the model they were measured on."""
        missing = [
            *(["what the examples' hints claim (they are general)"] if is_generic(self.claims) else []),
            *(["its heads' test-set habits (python -m transformer.cli.head_stats)"] if self.test_stats is None else []),
        ]
        return f" Not measured on this model: {'; '.join(missing)}." if missing else ""

    def intro(self) -> str:
        """The line under the title: the model, what it was made from, and what to do."""
        cfg, n_tok = self.tr.cfg, self.tr.max_source_tokens
        metrics = self.tr.metrics.get("test") or self.tr.metrics.get("validation") or {}
        score = f" ({metrics['bleu']} BLEU on its test set)" if metrics else ""
        # a converted model says where it comes from (its config names the source model)
        origin = cfg.extra.get("converted_from") if isinstance(cfg.extra, dict) else None
        made = f"converted from {origin}" if origin else "trained from scratch"
        return (
            f"A Transformer ({cfg.n_encoder_layers}+{cfg.n_decoder_layers} layers, {cfg.h} heads) {made} "
            f"for {cfg.src_lang}→{cfg.tgt_lang}{score}. Type {self.names.src} (up to {n_tok} subword tokens, about "
            f"{n_tok * 3 // 4} words) and watch it write, one token at a time.{self.unmeasured()}"
        )

    def sentence_placeholder(self) -> str:
        """The sentence box's grey text: an example where the model reads English, as the examples are."""
        example = ", e.g. “I have a red car.”" if self.names.src_lang == "en" else ""
        return f"Type {self.names.a_sentence()}{example}"

    def build_input_row(self) -> None:
        """The sentence, its language, Translate, the target language and the translation in
        one row (stacked on a phone); the language pickers only for a multilingual model."""
        with gr.Row(elem_id="input-row", equal_height=True):
            self.src_text = gr.Textbox(
                value=self.opening.src_text,
                label=f"{self.names.src} sentence",
                placeholder=self.sentence_placeholder(),
                scale=4,
                min_width=260,
                max_lines=3,
                elem_id="src-text",
                elem_classes=["ex-inline-label"],
            )
            self.src_lang = self.language_picker("src")
            self.translate_btn = gr.Button(
                "Translate", variant="primary", scale=0, min_width=120, elem_id="translate-btn"
            )
            self.tgt_lang = self.language_picker("tgt")
            self.translation = gr.Textbox(
                value=self.opening.translation,
                label=self.names_for(self.opening).translation("greedy"),
                interactive=False,
                elem_id="translation",
                scale=4,
                min_width=260,
                elem_classes=["ex-inline-label"],
            )

    def language_picker(self, side: str) -> gr.Dropdown:
        """A picker of ``side``'s language ("src", "tgt"), the config's by default: every code of
        a multilingual model, named ("Italian (ita_Latn)"); hidden for a model of one pair."""
        default = getattr(self.tr.cfg, f"{side}_lang")
        return gr.Dropdown(
            choices=[(f"{language_name(c)} ({c})", c) for c in self.lang_codes] or [default],
            value=default,
            label="Source language" if side == "src" else "Target language",
            visible=bool(self.lang_codes),
            filterable=True,
            scale=1,
            min_width=150,
            elem_id=f"{side}-lang",
        )

    def build_header(self) -> None:
        """The header takes little height, so the picture below owns the first screen: a title
        line, then the sentence, Translate and the translation in one row (stacked on a phone),
        the examples in one line, and the notice only when there is one."""
        gr.Markdown("# Inside the Transformer\n" + self.intro(), elem_id="intro")
        self.build_input_row()
        # the examples (one line) and the hint of the one clicked, drawn by web/hint.js: one click
        # translates it; the tour and the trace's download at the end of the same line
        with gr.Row(elem_id="tools-row", equal_height=False) as self.tools_row:
            self.examples = view_host(
                "hint",
                elem_id="hint",
                data=self.claims.examples(),
                label="What to look for",
                show_label=False,
                scale=1,
                min_width=300,
            )
            view_host("tour", elem_id="tour", scale=0, min_width=150)  # "Take the tour" (web/tour.js)
            if self.lessons:  # "Lessons" and the lesson card (web/lessons.js): it opens a lesson's sentence as a link
                self.lessons_host = view_host(
                    "lessons", elem_id="lessons", data=self.lessons.payload(), scale=0, min_width=130
                )
            if len(self.models) > 1:  # one page per model: the switch between them (web/models.js)
                switch = [{"label": m.label, "path": m.path, "current": m == self.model} for m in self.models]
                view_host("models", elem_id="model-switch", data={"models": switch}, scale=0, min_width=200)
            # the opening example's file is written now, so its download works from the first screen
            opening = self.trace_file(self.opening)
            self.download = gr.DownloadButton(
                "Download trace (JSON)",
                value=opening,
                interactive=opening is not None,
                elem_id="download-trace",
                size="sm",
                scale=0,
                min_width=170,
            )
        self.notice = gr.Markdown(elem_id="notice")

    def wire(self) -> None:
        # the translate handlers mostly wait for the batcher, which runs the model in one
        # thread: let in two batches' worth, in their own queue (concurrency_id), so the
        # next batch gathers while one runs
        batched = dict(concurrency_limit=2 * self.batcher.max_batch, concurrency_id=self.api_name("translate"))
        # the pending animation on the translation box only: drawn on every output, it costs
        # the page a re-layout of each view while the model runs, and another when it is removed
        shown = dict(batched, show_progress_on=[self.translation])
        outputs, linked = self.outputs, [self.src_text, *self.outputs]
        langs = [self.src_lang, self.tgt_lang]
        # every event that shows a new trace in the viewer: its trigger, handler, inputs, outputs
        # and name (each named, or Enter's would take the name "translate")
        events = [
            (self.translate_btn.click, self.translate, [self.src_text, *langs], outputs, "show"),
            (self.src_text.submit, self.translate, [self.src_text, *langs], outputs, "show_on_enter"),
            (self.examples.submit, self.run_example, langs, outputs, "run_example"),
            (self.viewer.submit, self.open_link, None, linked, "open_link"),
            # a target language picked (by the visitor: .input, not the pickers' own updates)
            (self.tgt_lang.input, self.retarget, [self.trace_state, self.src_text, *langs], linked, "retarget"),
        ]
        if self.lessons:  # a lesson opens its sentence as a link does
            events.append((self.lessons_host.submit, self.open_link, None, linked, "open_lesson"))
        for trigger, handler, inputs, outs, name in events:
            event = trigger(handler, inputs, outs, api_name=self.api_name(name), api_visibility="private", **shown)
            self.then_download(event)
        gr.api(self.api_translate, api_name=self.api_name("translate"), **batched)
        self.classroom.wire()  # the class's requests and endpoints, in a concurrency group of their own


def build_ui(tr: Translator | list[Translator], max_batch: int = 8) -> gr.Blocks:
    """The app's page for one model, or one page per model with a switch between them (the
    first model's at "/", each other at "/<its key>"): each page is the whole explorer for its
    model, with its own batcher, examples and test-set stats."""
    translators = tr if isinstance(tr, list) else [tr]
    models = Model.all_of(translators)
    apps = [App(t, max_batch=max_batch, model=m, models=models) for t, m in zip(translators, models)]
    demo = apps[0].build()
    for app in apps[1:]:
        with demo.route(app.model.label, app.model.key.replace("_", "-"), show_in_navbar=False):
            app.build_page()
    return demo
