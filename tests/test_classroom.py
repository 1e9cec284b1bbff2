"""The class store (explorer/classroom.py) on its own, no server: codes, the limits, one answer per
student per question, what an answer may hold, expiry by an injected clock, a restart of the app
(the file closed and opened again) and many threads at once, as Gradio's workers call it."""

from __future__ import annotations

import sqlite3
from concurrent.futures import ThreadPoolExecutor

import pytest

from explorer import classroom
from tests.helpers import exit_2
from explorer.classroom import (
    ALPHABET,
    EXPIRY_S,
    MAX_STUDENTS,
    ClassError,
    ClassGone,
    NotInClass,
    SqliteClassStore,
    View,
    check_code,
)

SENTENCE = "I have a red car."
TOKENS = ["[SOS]", "I", "have", "a", "red", "car", "the", "the", "[EOS]"]


class Clock:
    """Seconds that a test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path):
    s = SqliteClassStore(tmp_path / "classes.sqlite3")
    yield s
    s.close()


def a_class(store, students: int = 1, kind: str = "next_word", choices=("casa", "macchina")):
    """A class with ``students`` students and one open question: (code, [student ids], question)."""
    code = store.start()
    ids = [store.join(code) for _ in range(students)]
    question = store.ask(code, kind, View(SENTENCE, step=2), 3, list(choices))
    return code, ids, question


def rows(path, table: str) -> int:
    with sqlite3.connect(path) as db:
        return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


# --- codes ------------------------------------------------------------------------------------------
def test_codes_are_five_letters_with_no_look_alikes(store):
    assert not set("0O1IL5S2Z8B6GQUV") & set(ALPHABET)
    codes = {store.start() for _ in range(50)}
    assert len(codes) == 50
    assert all(len(c) == 5 and set(c) <= set(ALPHABET) for c in codes)


@pytest.mark.parametrize("typed, stored", [("KTXAP", "KTXAP"), (" ktx-ap ", "KTXAP"), ("k t x a p", "KTXAP")])
def test_a_typed_code_is_read_as_the_projector_shows_it(typed, stored):
    assert check_code(typed) == stored


@pytest.mark.parametrize("typed", ["KTXA0", "ABCDE", "KTXAPP", "KTX", "", None, 12345, "KTXÀP"])
def test_a_code_that_cannot_be_one_is_refused_in_one_line(typed):
    with pytest.raises(ClassError) as exc:
        check_code(typed)
    assert "A class code is 5 letters" in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_code_is_said_to_be_no_class(store):
    with pytest.raises(ClassGone, match="There is no class “KTXAP”"):
        store.join("KTXAP")
    with pytest.raises(ClassGone):
        store.state("KTXAP")


# --- answers ------------------------------------------------------------------------------------------
def test_answers_are_counted_once_per_student_and_a_second_replaces_the_first(store):
    code, (a, b, c), q = a_class(store, 3)
    store.answer(code, a, q.id, "casa")
    store.answer(code, b, q.id, "Casa")  # one bar, whatever the case
    store.answer(code, c, q.id, "casa")
    store.answer(code, c, q.id, "macchina")  # c changes their mind
    tally = store.tally(code, q.id).to_dict()
    assert tally["answered"] == 3 and tally["students"] == 3
    assert [(x["answer"], x["count"]) for x in tally["answers"]] == [("casa", 2), ("macchina", 1)]
    assert store.state(code, c).mine == "macchina"


@pytest.mark.parametrize(
    "typed, counted",
    [
        ("<b>Casa</b>", "casa"),
        ("<script>alert(1)</script>gatto", "gatto"),
        ("\x1b[31mrossa\x1b[0m\x07", "rossa"),
        ("\u202eauto\u200b", "auto"),
        ("&lt;i&gt;nera", "nera"),
        ("▁una   casa ", "una casa"),
        ("x" * 40, "x" * 40),
    ],
)
def test_an_answer_loses_its_markup_and_control_characters(store, typed, counted):
    code, (a,), q = a_class(store)
    assert store.answer(code, a, q.id, typed) == counted
    assert store.tally(code, q.id).counts == ((counted, 1),)


@pytest.mark.parametrize(
    "typed, said",
    [("x" * 41, "at most 40 characters"), ("", "Type an answer"), ("<br>  \x07", "Type an answer"), (None, "Type")],
)
def test_an_answer_too_long_or_empty_is_refused_and_not_counted(store, typed, said):
    code, (a,), q = a_class(store)
    with pytest.raises(ClassError, match=said):
        store.answer(code, a, q.id, typed)
    assert store.tally(code, q.id).answered == 0


def test_a_choice_is_answered_by_its_number_or_its_only_label(store):
    code, (a, b, c), q = a_class(store, 3, kind="source_token", choices=TOKENS)
    assert store.answer(code, a, q.id, "6") == "6"
    assert store.answer(code, b, q.id, "CAR") == "6"  # named by its text: the one choice that has it
    with pytest.raises(ClassError, match="choice 7 or 8"):  # "the" is there twice
        store.answer(code, c, q.id, "the")
    for wrong in ("0", "10", "bicycle"):
        with pytest.raises(ClassError, match="Pick one of the 9 choices"):
            store.answer(code, c, q.id, wrong)
    tally = store.tally(code, q.id).to_dict()
    assert tally["answers"] == [{"answer": "6", "label": "car", "count": 2}]


def test_a_revealed_or_replaced_question_takes_no_more_answers(store):
    code, (a,), q = a_class(store)
    store.reveal(code, q.id)
    with pytest.raises(ClassError, match="closed: the teacher has shown the answer"):
        store.answer(code, a, q.id, "casa")
    q2 = store.ask(code, "layer", View(SENTENCE, step=2), 3, ["layer 1", "layer 2"])
    store.ask(code, "next_word", View(SENTENCE, step=3), 4, ["rossa"])
    with pytest.raises(ClassError, match="closed: the teacher asked another one"):
        store.answer(code, a, q2.id, "1")
    assert store.tally(code, q2.id).question.status == "closed"


def test_reveal_shows_the_class_the_step_asked_about(store):
    code, _, q = a_class(store)
    assert store.state(code).view.step == 2 and store.state(code).tally is None
    store.reveal(code, q.id)
    state = store.state(code)
    assert state.view.step == q.step == 3 and state.tally.question.status == "revealed"


def test_students_questions_and_views_are_checked(store):
    code, (a,), q = a_class(store)
    other, _, q_other = a_class(store)
    with pytest.raises(NotInClass, match="not in class"):
        store.answer(other, a, q_other.id, "casa")  # a student of the first class
    with pytest.raises(ClassError, match="join the class"):
        store.answer(code, "not an id!", q.id, "casa")
    with pytest.raises(ClassError, match=f"has no question {q_other.id}"):
        store.answer(code, a, q_other.id, "casa")
    with pytest.raises(ClassError, match="has no question “first”"):
        store.tally(code, "first")
    for bad, said in [
        (View(SENTENCE, view="sideways"), "The view is one of"),
        (View(SENTENCE, head="9x"), "The head is mean, max"),
        (View(SENTENCE, step=0), "The step must be a whole number from 1"),
        (View(" "), "Show the class a sentence"),
        (View("x" * 2001), "at most 2,000 characters"),
    ]:
        with pytest.raises(ClassError, match=said):
            store.show(code, bad)
    with pytest.raises(ClassError, match="A question is one of"):
        store.ask(code, "favourite_colour", View(SENTENCE), 2, [])


def test_a_class_holds_at_most_300_students(store):
    code = store.start()
    for _ in range(MAX_STUDENTS):
        store.join(code)
    with pytest.raises(ClassError, match=f"Class {code} is full: it has 300 students"):
        store.join(code)
    assert store.state(code).students == MAX_STUDENTS


# --- expiry, restart, threads ------------------------------------------------------------------------------
def test_a_class_and_its_answers_go_six_hours_after_the_last_activity(tmp_path):
    clock, path = Clock(), tmp_path / "classes.sqlite3"
    store = SqliteClassStore(path, clock=clock)
    code, (a,), q = a_class(store)
    clock.now += 5 * 3600
    store.answer(code, a, q.id, "casa")  # activity: the six hours start again
    clock.now += EXPIRY_S - 1
    assert store.tally(code, q.id).answered == 1
    clock.now += 2
    with pytest.raises(ClassGone):
        store.state(code)  # gone at once, before anything deletes it
    assert rows(path, "answers") == 1
    assert store.purge() == 1
    assert [rows(path, t) for t in ("classes", "students", "questions", "answers")] == [0, 0, 0, 0]
    store.close()


def test_every_class_and_answer_survives_a_restart(tmp_path):
    path = tmp_path / "classes.sqlite3"
    first = SqliteClassStore(path)
    code, (a, b), q = a_class(first, 2)
    first.answer(code, a, q.id, "casa")
    first.answer(code, b, q.id, "macchina")
    first.reveal(code, q.id)
    first.close()
    with pytest.raises(sqlite3.ProgrammingError):
        first.state(code)  # closed means closed
    again = SqliteClassStore(path)
    state = again.state(code, b).to_dict()
    assert state["students"] == 2 and state["mine"] == "macchina" and state["question"]["status"] == "revealed"
    assert state["tally"]["answers"] == [
        {"answer": "casa", "label": "casa", "count": 1},
        {"answer": "macchina", "label": "macchina", "count": 1},
    ]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again.close()


def test_threads_joining_and_answering_at_once_are_each_counted_once(store):
    """Twenty more students than a class holds join at once, then every one that got in answers
    twice at once: exactly 300 join, and each is counted once, with their second answer."""
    code = store.start()
    view = store.show(code, View(SENTENCE, step=2))

    def join(_):
        try:
            return store.join(code)
        except ClassError as exc:
            return exc

    with ThreadPoolExecutor(16) as pool:
        joined = list(pool.map(join, range(MAX_STUDENTS + 20)))
    ids = [x for x in joined if isinstance(x, str)]
    assert len(ids) == MAX_STUDENTS and all("is full" in str(x) for x in joined if not isinstance(x, str))
    q = store.ask(code, "next_word", view, 3, ["casa"])

    def answer_twice(i_student):
        i, student = i_student
        store.answer(code, student, q.id, "first")
        return store.answer(code, student, q.id, f"w{i % 3}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(answer_twice, enumerate(ids)))
    tally = store.tally(code, q.id)
    assert tally.answered == MAX_STUDENTS
    assert dict(tally.counts) == {"w0": 100, "w1": 100, "w2": 100}


def test_the_process_store_is_the_one_the_flag_opened(tmp_path, monkeypatch):
    monkeypatch.setattr(classroom, "_current", None)
    monkeypatch.setenv(classroom.DB_ENV, str(tmp_path / "from-env.sqlite3"))
    assert classroom.default_db_path() == tmp_path / "from-env.sqlite3"
    opened = classroom.use_store(tmp_path / "flag.sqlite3")
    assert classroom.current_store() is opened and (tmp_path / "flag.sqlite3").is_file()
    opened.close()
    monkeypatch.setattr(classroom, "_current", None)


def test_a_class_db_where_no_file_can_be_kept_is_one_line_before_the_model_loads(tmp_path, capfd):
    import app as app_module
    from explorer.launch import free_port

    (tmp_path / "a-file").write_text("not a folder")
    bad = tmp_path / "a-file" / "classes.sqlite3"
    line = exit_2(capfd, app_module.main, ["--class-db", str(bad), "--port", str(free_port())])
    assert line.startswith(f"error: --class-db {bad}: cannot keep classes there (")
