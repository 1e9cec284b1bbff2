"""The class's endpoints and page requests (explorer/class_api.py), called directly on the app of
the tiny checkpoint (no server): a whole class through the named endpoints, each kind of bad input
as one line (``gr.Error``), the page's requests and its following of the class's sentence, one
trace for a whole class, and the endpoints' own concurrency group. The browser side is
tests/browser/test_classroom.py; a live server through gradio_client is the last test (slow)."""

from __future__ import annotations

import json
import threading
import time

import gradio as gr
import pytest

from explorer import page as explorer_page
from explorer.class_api import CONCURRENCY, ENDPOINTS, ClassRoom, TraceCache
from explorer.classroom import SqliteClassStore, View
from explorer.errors import GENERIC_ERROR
from explorer.panels.base import Asked
from tests.helpers import serve_app

SENTENCE = "the black cat sleeps."


@pytest.fixture
def room(app, tmp_path):
    store = SqliteClassStore(tmp_path / "classes.sqlite3")
    yield ClassRoom(app, store)
    store.close()


def asked(room, **fields) -> dict:
    """A request of the page's class view, answered as the view reads it."""
    return json.loads(room.request(Asked(None, fields)))


def test_a_whole_class_through_the_named_endpoints(room, app):
    started = room.class_start()
    code, key = started["code"], started["teacher"]
    a, b = room.class_join(code.lower()), room.class_join(code)
    trace = app.tr.trace(SENTENCE)
    q = room.class_ask(code, key, SENTENCE, 2, "source_token")
    state = room.class_state(code, a)
    assert state["question"]["choices"] == [t.replace("▁", " ").strip() or t for t in trace.src_tokens]
    assert state["view"]["step"] == 1  # the class sees the step before the one asked about
    assert room.class_answer(code, a, q, "2") == "2"
    assert room.class_answer(code, b, q, "3") == "3"
    assert room.class_answer(code, b, q, "2") == "2"  # b changes their mind
    tally = room.class_tally(code, q)
    assert tally["answered"] == 2 and tally["answers"] == [
        {"answer": "2", "label": state["question"]["choices"][1], "count": 2}
    ]
    assert room.class_reveal(code, key, q)["status"] == "revealed"
    assert room.class_state(code, b)["view"]["step"] == 2 and room.class_state(code, b)["mine"] == "2"
    room.class_ask(code, key, SENTENCE, 2, "layer")
    assert room.class_state(code)["question"]["choices"] == [f"layer {n}" for n in range(1, 3)]
    words = room.class_ask(code, key, SENTENCE, 2, "next_word")
    choices = room.class_state(code)["question"]["choices"]
    assert 1 <= len(choices) <= 5 and choices == sorted(choices, key=str.casefold)
    assert room.class_answer(code, a, words, "<b>Gatto</b>") == "gatto"
    shown = room.class_show(code, key, SENTENCE, 3, "decoder", 2, "1")
    assert (shown["step"], shown["view"], shown["layer"], shown["head"]) == (3, "decoder", 2, "1")
    assert room.class_end(code, key) == code
    with pytest.raises(gr.Error, match="There is no class"):
        room.class_state(code)


def test_only_the_teacher_shows_asks_reveals_and_ends(room, tmp_path):
    """A student (or anyone with the code) is refused the teacher's four actions, by the API and by
    the page, with one line; the key survives a restart of the server (the store reopened)."""
    started = room.class_start()
    code, key = started["code"], started["teacher"]
    other = room.class_start()["teacher"]  # another class's key opens nothing here
    q = room.class_ask(code, key, SENTENCE, 2, "layer")
    for wrong in ("", other, key.upper(), None):
        for name, args in (
            ("class_show", (code, wrong, SENTENCE, 1)),
            ("class_ask", (code, wrong, SENTENCE, 2, "next_word")),
            ("class_reveal", (code, wrong, q)),
            ("class_end", (code, wrong)),
        ):
            with pytest.raises(gr.Error, match="Only the teacher who started this class") as exc:
                getattr(room, name)(*args)
            assert "\n" not in str(exc.value)
    for action in ("show", "ask", "reveal", "end"):
        refused = asked(room, action=action, code=code, teacher=other, question=q, kind="layer", view={}, asked=1)
        assert refused["reason"] == "teacher" and "result" not in refused
    assert room.class_state(code)["question"]["status"] == "open"  # nothing happened
    reopened = SqliteClassStore(room.store.path)
    try:
        assert reopened.teacher_key(code) == key
        reopened.check_teacher(code, key)
    finally:
        reopened.close()
    assert room.class_end(code, key) == code


def bad_input(room):
    """(endpoint, arguments, what its one line says) for every kind of bad input."""
    started = room.class_start()
    code, key = started["code"], started["teacher"]
    student = room.class_join(code)
    q = room.class_ask(code, key, SENTENCE, 2, "next_word")
    room.class_ask(code, key, SENTENCE, 2, "layer")  # q closes
    open_q = room.class_ask(code, key, SENTENCE, 3, "source_token")
    return [
        ("class_join", ("",), "Type the class code"),
        ("class_join", ("KTX0P",), "A class code is 5 letters"),
        ("class_join", ("XXXXX",), "There is no class “XXXXX”"),
        ("class_ask", (code, key, "", 2, "next_word"), "Please type"),
        ("class_ask", (code, key, SENTENCE, 999, "next_word"), "There is no step 999 to ask about"),
        ("class_ask", (code, key, SENTENCE, 0, "next_word"), "The step must be a whole number from 1"),
        ("class_ask", (code, key, SENTENCE, 2, "colour"), "A question is one of next_word, source_token, layer"),
        ("class_answer", (code, "nobody", open_q, "2"), "join the class with its code"),
        ("class_answer", (code, "A" * 16, open_q, "2"), f"You are not in class {code}"),
        ("class_answer", (code, student, q, "gatto"), "That question is closed"),
        ("class_answer", (code, student, open_q, "x" * 41), "at most 40 characters"),
        ("class_answer", (code, student, open_q, "99"), "Pick one of the"),
        ("class_tally", (code, 10**9), f"Class {code} has no question"),
        ("class_tally", (code, "first"), "has no question “first”"),
        ("class_show", (code, key, SENTENCE, 1, "sideways", 1, "mean"), "The view is one of"),
        ("class_show", (code, key, SENTENCE, 1, "cross", 1, "nine"), "The head is mean, max"),
        ("class_state", ("KTXAP",), "There is no class"),
        ("class_end", ("KTX0P", key), "A class code is 5 letters"),
        ("class_end", (code, "not the key"), "Only the teacher who started this class"),
    ]


def test_bad_input_to_every_endpoint_is_one_line(room):
    cases = bad_input(room)
    assert {name for name, _, _ in cases} >= set(ENDPOINTS) - {"class_start", "class_reveal"}
    for name, args, said in cases:
        with pytest.raises(gr.Error) as exc:
            getattr(room, name)(*args)
        message = str(exc.value)
        assert said in message and "\n" not in message and "Traceback" not in message, (name, args, message)


def test_the_page_asks_through_one_request_that_echoes_its_number(room):
    started = asked(room, action="start", asked=1)["result"]
    code, key = started["code"], started["teacher"]
    view = {"text": SENTENCE, "step": 1, "view": "cross", "layer": 1, "head": "mean", "forced": [], "origin": None}
    shown = asked(room, action="show", code=code, teacher=key, view=view, asked=2)
    assert shown["asked"] == 2 and shown["result"]["text"] == SENTENCE
    q = asked(room, action="ask", code=code, teacher=key, kind="next_word", view=view, asked=3)["result"]
    assert q["step"] == 2 and q["status"] == "open"  # the step after the one on screen
    gone = asked(room, action="state", code="KTXAP", asked=4)
    assert gone["reason"] == "gone" and gone["error"].startswith("There is no class")
    stranger = asked(room, action="answer", code=code, student="B" * 16, question=q["id"], answer="x")
    assert stranger["reason"] == "stranger"
    unknown = asked(room, action="drop_tables", asked=5)
    assert (unknown["asked"], unknown["error"]) == (5, GENERIC_ERROR) and "result" not in unknown


def test_a_student_page_takes_the_class_sentence_into_its_viewer(room, app):
    started = room.class_start()
    code = started["code"]
    out = room.follow(Asked(None, {"code": code}))
    assert "has not shown the class a sentence" in out[app.notice]
    room.class_show(code, started["teacher"], SENTENCE, 2)
    out = room.follow(Asked(None, {"code": code}))
    assert out[app.src_text] == SENTENCE and out[app.trace_state].src_text == SENTENCE
    assert json.loads(out[app.viewer])["src_text"] == SENTENCE


def test_a_class_that_follows_a_sentence_costs_one_trace(room, app, monkeypatch):
    calls = []
    real = app.batcher.trace

    def counted(text):
        calls.append(text)
        time.sleep(0.2)  # every follower arrives while the first trace runs
        return real(text)

    monkeypatch.setattr(app.batcher, "trace", counted)
    started = room.class_start()
    code = started["code"]
    room.class_show(code, started["teacher"], SENTENCE, 1)
    outs = []
    threads = [threading.Thread(target=lambda: outs.append(room.follow(Asked(None, {"code": code})))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert calls == [SENTENCE] and len({id(o[app.trace_state]) for o in outs}) == 1


def test_a_failed_trace_is_not_kept():
    tries = []

    def make(text, forced, origin):
        tries.append(text)
        if len(tries) == 1:
            raise ValueError("busy")
        return text.upper()

    cache = TraceCache(make, size=2)
    with pytest.raises(ValueError):
        cache.get(View("a"))
    assert cache.get(View("a")) == "A" and cache.get(View("a")) == "A" and tries == ["a", "a"]
    cache.get(View("b")), cache.get(View("c"))
    cache.get(View("a"))
    assert tries == ["a", "a", "b", "c", "a"]  # the oldest went


def test_class_requests_run_in_their_own_concurrency_group(translator):
    page = explorer_page.App(translator)
    demo = page.build()
    fns = {fn.api_name: fn for fn in demo.fns.values()}
    for name in (*ENDPOINTS, "class_request", "class_follow"):
        assert fns[name].concurrency_id == "class" and fns[name].concurrency_limit == CONCURRENCY, name
    assert fns["translate"].concurrency_id == "translate"


@pytest.mark.slow  # starts a server
def test_a_script_runs_a_class_with_gradio_client(tmp_path, tiny_checkpoint):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    db = tmp_path / "classes.sqlite3"
    with serve_app(tiny_checkpoint, tmp_path / "app.log", extra=("--class-db", str(db))) as app:
        client = Client(app.url, verbose=False)
        started = client.predict(api_name="/class_start")
        code, key = started["code"], started["teacher"]
        student = client.predict(code, api_name="/class_join")
        with pytest.raises(AppError, match="Only the teacher who started this class"):
            client.predict(code, student, SENTENCE, 2, "source_token", api_name="/class_ask")
        q = client.predict(code, key, SENTENCE, 2, "source_token", api_name="/class_ask")
        assert client.predict(code, student, q, "2", api_name="/class_answer") == "2"
        tally = client.predict(code, q, api_name="/class_tally")
        assert tally["answered"] == 1 and tally["answers"][0]["count"] == 1
        assert client.predict(code, key, q, api_name="/class_reveal")["status"] == "revealed"
        with pytest.raises(AppError, match="That question is closed"):
            client.predict(code, student, q, "3", api_name="/class_answer")
        log = app.log.read_text()
    assert db.is_file() and SqliteClassStore(db).state(code).students == 1
    assert "/class_answer refused: That question is closed" in log and "Traceback" not in log
