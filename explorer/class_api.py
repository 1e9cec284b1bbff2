"""A class in the explorer, on the server: the endpoints a script calls and the page's class view.

The rules and the store are :mod:`explorer.classroom`; the browser side is ``web/classroom.js``.
A teacher's page starts a class and keeps it showing the teacher's sentence, step and view
(``show``); students' pages join with the code and follow it, each taking the class's sentence
into its own viewer (:meth:`ClassRoom.follow`). The teacher asks a question about the step on
screen, reads the tally while the class answers, and reveals.

Named endpoints (``gr.api``; bad input raises ``gr.Error`` with one line, as every endpoint of
the app does, :func:`explorer.serving.api_answer`):

- ``/class_start`` () → the code, 5 letters
- ``/class_join`` (code) → a student id (random; nothing else about the student is kept)
- ``/class_show`` (code, text, step, view, layer, head) → what the class now sees
- ``/class_ask`` (code, text, step, kind) → the question's id; kind ``next_word`` (the word step
  ``step`` writes), ``source_token`` (the source token it reads most) or ``layer`` (the first
  layer whose logit lens has its word on top); the class now sees that sentence at the step
  before, so the answer is not on screen until the reveal
- ``/class_answer`` (code, student, question, answer) → the answer as counted: a word, or the
  number of the choice (1-based) for ``source_token`` and ``layer``; a second answer replaces the first
- ``/class_tally`` (code, question) → ``{"question", "kind", "status", "answered", "students",
  "answers": [{"answer", "label", "count"}, …]}``, most answered first
- ``/class_reveal`` (code, question) → the tally; the question takes no more answers, and the
  class sees the step it asked about
- ``/class_state`` (code, student) → ``{"code", "students", "view", "question", "mine", "tally"}``:
  what a student's page follows (``mine``: that student's answer; ``tally`` once revealed)
- ``/class_end`` (code) → the code; the class and its answers are deleted

Every class request, the page's and the API's, runs in one concurrency group of its own
(:data:`CONCURRENCY` at once), so a flood of answers queues there and never in front of Translate.
"""

# (no "from __future__ import annotations": gr.api reads each endpoint's inputs and output from
# the real annotations)
import logging
import threading
from collections import OrderedDict
from concurrent.futures import Future

import gradio as gr

from .blocks import message, view_host
from .classroom import (
    ALPHABET,
    CODE_LENGTH,
    MAX_ANSWER_CHARS,
    ClassError,
    ClassStore,
    View,
    check_code,
    check_kind,
    current_store,
    whole,
)
from .errors import GENERIC_ERROR, answer
from .panels.base import Asked
from .serving import api_answer

log = logging.getLogger("app.classroom")
CONCURRENCY = 4  # class requests run at once; the rest wait in the class's own queue
# how often a page asks, in seconds: the teacher's tally while a question is open (at least once
# a second), a student's state, and the teacher's count of students between questions; a class of
# more than 75 asks less often, so that its phones send about `perSecond` requests a second
POLL_S = {"tally": 0.5, "state": 1.5, "idle": 3.0, "perSecond": 50}
NEXT_WORD_CHOICES = 5  # a next-word question offers the model's top few candidates to pick from
TRACES_KEPT = 16
ENDPOINTS = (
    "class_start",
    "class_join",
    "class_show",
    "class_ask",
    "class_answer",
    "class_tally",
    "class_reveal",
    "class_state",
    "class_end",
)


def shown(token: str) -> str:
    """A token as a choice shows it: without the word mark (▁)."""
    return token.replace("▁", " ").strip() or token


class TraceCache:
    """Traces of the sentences classes are shown, made once for a whole class: thirty phones that
    follow the teacher to a new sentence cost the model one trace, not thirty, so Translate (which
    shares the model) never waits behind them. Keyed by (text, forced ids, origin); the latest
    :data:`TRACES_KEPT` are kept; a failure is not."""

    def __init__(self, make, size: int = TRACES_KEPT) -> None:
        self._make = make
        self._size = size
        self._lock = threading.Lock()
        self._done: OrderedDict = OrderedDict()
        self._pending: dict = {}

    def get(self, view: View):
        key = (view.text, view.forced, view.origin if view.forced else "translate")
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            future, mine = self._pending.get(key), False
            if future is None:
                future, mine = Future(), True
                self._pending[key] = future
        if not mine:
            return future.result()
        try:
            trace = self._make(*key)
        except BaseException as exc:
            with self._lock:
                del self._pending[key]
            future.set_exception(exc)
            raise
        with self._lock:
            del self._pending[key]
            self._done[key] = trace
            while len(self._done) > self._size:
                self._done.popitem(last=False)
        future.set_result(trace)
        return trace


class ClassRoom:
    """The class's part of one model's page: the view's block in the header, the events it asks
    through, and the named endpoints. ``store``: the process's store unless given (tests)."""

    view = "classroom"

    def __init__(self, app, store: ClassStore | None = None) -> None:
        self.app = app
        self._store = store
        self.traces = TraceCache(self._trace)
        teacher = self.teacher  # the teacher's own actions name the class and carry its key
        self.actions = {
            "start": lambda f: self.start(),
            "join": lambda f: self.store.join(f.get("code")),
            "show": lambda f: self.show(teacher(f), f.get("view")).to_dict(),
            "ask": lambda f: self.ask(teacher(f), f.get("kind"), f.get("view")).to_dict(),  # the next step
            "answer": lambda f: self.store.answer(f.get("code"), f.get("student"), f.get("question"), f.get("answer")),
            "tally": lambda f: self.store.tally(f.get("code"), f.get("question")).to_dict(),
            "reveal": lambda f: self.store.reveal(teacher(f), f.get("question")).to_dict(),
            "state": lambda f: self.store.state(f.get("code"), f.get("student")).to_dict(),
            "end": lambda f: self.store.end(teacher(f)),
        }

    @property
    def store(self) -> ClassStore:
        """The store, opened on first use: building a page opens no file."""
        return self._store or current_store()

    # --- the page -----------------------------------------------------------------------------
    def build(self, row) -> "ClassRoom":
        """The "Class" entry and the class card (web/classroom.js), last in the page's header ``row``."""
        data = {"poll": POLL_S, "alphabet": ALPHABET, "codeLength": CODE_LENGTH, "maxAnswer": MAX_ANSWER_CHARS}
        with row:
            self.host = view_host(self.view, elem_id="classroom", data=data, scale=0, min_width=90)
        return self

    def wire(self) -> None:
        """The page's two events (a class request, and following the class's sentence) and the
        named endpoints, all in the class's concurrency group."""
        app = self.app
        group = dict(concurrency_limit=CONCURRENCY, concurrency_id=app.api_name("class"))
        # "multiple": a tally read may be on its way when the teacher asks or reveals
        self.host.submit(
            self.request,
            None,
            [self.host],
            api_name=app.api_name("class_request"),
            api_visibility="private",
            show_progress="hidden",
            trigger_mode="multiple",
            **group,
        )
        followed = self.host.select(
            self.follow,
            None,
            [app.src_text, *app.outputs],
            api_name=app.api_name("class_follow"),
            api_visibility="private",
            show_progress_on=[app.translation],
            **group,
        )
        app.then_download(followed)
        for name in ENDPOINTS:
            gr.api(getattr(self, name), api_name=app.api_name(name), **group)

    def request(self, evt: Asked) -> str:
        """A request of the class view (``{"action", "asked", …}``); the answer echoes ``asked``
        (the view's serial number) with ``result`` or ``error`` (one line)."""
        fields = evt.fields
        action, asked = fields.get("action"), fields.get("asked")
        head = {"action": action, "asked": asked if isinstance(asked, int) else None}
        if action not in self.actions:
            log.warning("unknown class request %r", action)
            return message({**head, "error": GENERIC_ERROR})

        def run() -> dict:
            try:
                return {"result": self.actions[action](fields)}
            except ClassError as exc:  # its kind tells the view what to do (a class that is gone stops polling)
                return {"error": str(exc), "reason": getattr(exc, "reason", None)}

        return message({**head, **answer(log, f"class {action}", run, lambda m: {"error": m})})

    def follow(self, evt: Asked) -> dict:
        """A student's page takes the class's sentence into its viewer (``{"code"}``), as a link
        opens one; the trace is made once for the whole class (:class:`TraceCache`)."""
        app = self.app

        def shown() -> dict:
            view = self.store.state(evt.fields.get("code")).view
            if view is None:
                raise ClassError("The teacher has not shown the class a sentence yet.")
            return {app.src_text: view.text, **app.show(self.traces.get(view), origin=view.origin)}

        return answer(log, "following a class", shown, app.failed)

    # --- what the page and the endpoints share ------------------------------------------------
    def start(self) -> dict:
        """A new class: ``{"code", "teacher"}``, the teacher's key given this once."""
        code = self.store.start()
        return {"code": code, "teacher": self.store.teacher_key(code)}

    def teacher(self, fields, key=None) -> str:
        """The class code of a teacher's request (``fields``' ``code``, and its ``teacher`` key or
        ``key``), once the key is checked."""
        code = check_code(fields.get("code"))
        self.store.check_teacher(code, fields.get("teacher") if key is None else key)
        return code

    def _trace(self, text: str, forced: tuple, origin: str):
        if forced:
            return self.app.tr.trace(text, forced_prefix=list(forced))
        return self.app.batcher.trace(text)

    def view_of(self, fields) -> View:
        """A :class:`View` from the page's fields (``text``, ``step``, ``view``, ``layer``,
        ``head``, ``forced``, ``origin``), its text checked as Translate checks it."""
        if not isinstance(fields, dict):
            raise ClassError("Show the class a sentence: translate one first.")
        forced = fields.get("forced") or ()
        return View(
            self.app.check_text(fields.get("text")),
            fields.get("step", 1),
            fields.get("view", "cross"),
            fields.get("layer", 1),
            str(fields.get("head", "mean")),
            tuple(forced) if isinstance(forced, (list, tuple)) else ("?",),
            fields.get("origin") or "translate",
        ).checked()

    def show(self, code, fields) -> View:
        code = check_code(code)
        return self.store.show(code, self.view_of(fields))

    def ask(self, code, kind, fields, step=None):
        """A question about step ``step`` (by default the one after the step on screen, which the
        class sees: the answer is not on screen yet) of ``fields``' sentence, its choices read
        from the sentence's trace."""
        code, kind = check_code(code), check_kind(kind)
        self.store.state(code)  # an unknown class is said before the model runs
        view = self.view_of(fields)
        step = view.step + 1 if step is None else whole(step, "step", 1, 1024)
        trace = self.traces.get(view)
        if step > trace.steps:
            raise ClassError(
                f"There is no step {step} to ask about: this translation has {trace.steps} steps, and a "
                "question is about the step after the one on screen."
            )
        return self.store.ask(code, kind, view, step, self.choices(kind, trace, step))

    @staticmethod
    def choices(kind: str, trace, step: int) -> list[str]:
        """What a student may pick: every source token, every decoder layer, or the model's top
        few candidates for the step in alphabetical order (their order gives nothing away)."""
        if kind == "source_token":
            return [shown(t) for t in trace.src_tokens]
        if kind == "layer":
            return [f"layer {layer}" for layer in range(1, trace.cross_attn.shape[0] + 1)]
        words = dict.fromkeys(shown(t) for t in trace.topk_tokens[step - 1][:NEXT_WORD_CHOICES])
        return sorted(words, key=str.casefold)

    # --- the named endpoints (docstrings: the API page) ---------------------------------------------
    def class_start(self) -> dict:
        """Start a class; returns ``{"code": 5 letters, "teacher": the key that showing, asking,
        revealing and ending it take}``."""
        return api_answer(log, "/class_start", self.start)

    def class_join(self, code: str) -> str:
        """Join class ``code``; returns a new student id."""
        return api_answer(log, "/class_join", lambda: self.store.join(code))

    def class_show(
        self, code: str, teacher: str, text: str, step: int = 1, view: str = "cross", layer: int = 1, head: str = "mean"
    ) -> dict:
        """Show class ``code`` (``teacher``: its key) a sentence, a step (1-based) and a view;
        returns what it now sees."""
        fields = {"text": text, "step": step, "view": view, "layer": layer, "head": head}
        return api_answer(
            log, "/class_show", lambda: self.show(self.teacher({"code": code}, teacher), fields).to_dict()
        )

    def class_ask(self, code: str, teacher: str, text: str, step: int, kind: str) -> int:
        """Ask class ``code`` (``teacher``: its key) a question of ``kind`` about step ``step``
        (1-based) of ``text`` (the class sees the step before it); returns the question's id."""

        def asked() -> int:
            now = self.store.state(self.teacher({"code": code}, teacher)).view
            fields = now.to_dict() if now is not None else {}
            if now is None or now.text != text:
                fields = {**fields, "forced": [], "origin": "translate"}
            at = whole(step, "step", 1, 1024)
            return self.ask(code, kind, {**fields, "text": text, "step": max(1, at - 1)}, at).id

        return api_answer(log, "/class_ask", asked)

    def class_answer(self, code: str, student: str, question: int, answer: str) -> str:
        """Answer ``question`` as ``student``; returns the answer as counted."""
        return api_answer(log, "/class_answer", lambda: self.store.answer(code, student, question, answer))

    def class_tally(self, code: str, question: int) -> dict:
        """Each answer to ``question`` with its count, and how many students answered."""
        return api_answer(log, "/class_tally", lambda: self.store.tally(code, question).to_dict())

    def class_reveal(self, code: str, teacher: str, question: int) -> dict:
        """Close ``question`` and show the class its answer (``teacher``: the class's key); returns the tally."""
        return api_answer(
            log, "/class_reveal", lambda: self.store.reveal(self.teacher({"code": code}, teacher), question).to_dict()
        )

    def class_state(self, code: str, student: str = "") -> dict:
        """What class ``code`` sees now, and ``student``'s own answer to the current question."""
        return api_answer(log, "/class_state", lambda: self.store.state(code, student or None).to_dict())

    def class_end(self, code: str, teacher: str) -> str:
        """End class ``code`` (``teacher``: its key): it and its answers are deleted."""

        def ended() -> str:
            self.store.end(self.teacher({"code": code}, teacher))
            return check_code(code)

        return api_answer(log, "/class_end", ended)
