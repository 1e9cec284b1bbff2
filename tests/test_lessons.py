"""The lessons file (``explorer/lessons.py``): what it must hold, how its texts are filled in for
the page, and every fact its texts state, measured on the shipped model.

A retrained model must fail here rather than teach something false: the last tests measure
every fact of ``checkpoints/en-it/lessons.json`` and show that a fact the model does not bear
out is caught."""

from __future__ import annotations

import copy
import json

import pytest

from explorer import lessons as course
from tests.helpers import SHIPPED

FILE = SHIPPED / course.FILE


@pytest.fixture(scope="module")
def data() -> dict:
    return json.loads(FILE.read_text(encoding="utf-8"))


def broken(data: dict, change) -> str:
    """The one-line problem ``parse`` reports for ``data`` changed by ``change(copy)``."""
    bad = copy.deepcopy(data)
    change(bad)
    with pytest.raises(course.LessonsError) as exc:
        course.parse(bad)
    return str(exc.value)


def test_the_shipped_course_has_ten_lessons_of_few_words_each_with_a_task_and_a_hint(data):
    lessons = course.load(FILE).lessons
    assert len(lessons) == 10 and len({x["id"] for x in lessons}) == 10
    for lesson in lessons:
        assert len(lesson["text"].split()) <= course.MAX_WORDS
        assert lesson["task"]["kind"] in course.TASKS and lesson["hint"]["target"].startswith("#")
    # predict, then reveal: at least four lessons ask for a guess, of each kind the course needs
    kinds = [x["guess"]["kind"] for x in lessons if x.get("guess")]
    assert len(kinds) >= 4 and {"next", "source", "layer", "choice"} <= set(kinds)


@pytest.mark.parametrize(
    "change, said",
    [
        (lambda d: d.update(schema="other"), "schema"),
        (lambda d: d["lessons"][0].update(text="word " * 120), "more than"),
        (lambda d: d["lessons"][0]["task"].update(kind="dance"), "task"),
        (lambda d: d["lessons"][0].update(text="It reads {nothing}."), "{nothing} is not one of its facts"),
        (lambda d: d["lessons"][1].update(id=d["lessons"][0]["id"]), "used twice"),
        (lambda d: d["lessons"][0]["facts"].update(x={"kind": "pieces", "is": []}), "missing word"),
        (lambda d: d["lessons"][0]["view"].update(view="sideways"), "view"),
        (lambda d: d["lessons"][9]["guess"].update(choices=["one"]), "choices"),
    ],
)
def test_a_malformed_file_is_refused_in_one_line_naming_the_place(data, change, said):
    message = broken(data, change)
    assert said in message and "\n" not in message


def test_the_page_gets_every_text_with_its_facts_filled_in(data):
    payload = course.load(FILE).payload()
    assert [x["id"] for x in payload] == [x["id"] for x in data["lessons"]]
    for lesson in payload:
        texts = [lesson["text"], lesson["task"]["do"], lesson["hint"]["say"], lesson.get("after", "")]
        texts += [lesson["guess"]["ask"]] if lesson.get("guess") else []
        assert all(not course.FACT.search(t) for t in texts), lesson["id"]
        assert "facts" not in lesson
    violin = payload[0]
    assert "“viol” + “in”" in violin["text"]


def test_a_checkpoint_without_a_course_or_with_a_broken_one_gets_no_lessons(tmp_path, caplog):
    assert course.for_checkpoint(tmp_path) is None and course.for_checkpoint(None) is None
    (tmp_path / course.FILE).write_text("{not json", encoding="utf-8")
    assert course.for_checkpoint(tmp_path) is None
    assert "no lessons" in caplog.text


def test_every_fact_a_lesson_states_holds_on_the_shipped_model(shipped):
    assert course.stale(shipped, course.load(FILE)) == []


def test_a_fact_the_model_does_not_bear_out_is_caught(shipped, data):
    wrong = copy.deepcopy(data)
    wrong["lessons"] = [wrong["lessons"][1], wrong["lessons"][8]]  # one-token, knockout
    wrong["lessons"][0]["facts"]["next"]["is"] = "ombrello"  # the model writes "nuovo"
    wrong["lessons"][1]["facts"]["knocked"]["is"] = wrong["lessons"][1]["facts"]["translation"]["is"]
    found = course.stale(shipped, course.parse(wrong))
    assert len(found) == 2 and found[0].startswith("one-token.next:") and "'nuovo'" in found[0]


def test_the_command_lists_stale_facts_and_refuses_a_broken_file(tmp_path, capsys):
    assert course.main(["--checkpoint", str(tmp_path)]) == 2
    assert "no such file" in capsys.readouterr().err
