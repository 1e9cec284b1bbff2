"""The course inside the explorer, done as a learner does it: every lesson from empty browser
storage, its guess committed (or skipped) and its task performed with clicks, at 1366×900 and
390×844, in the light and the dark theme; progress kept, ``?lesson=N`` links, and leaving gives
the explorer back as it was.

The cells a task asks for (the darkest of a row) are found as a learner finds them, by looking:
here by reading the same weights from the model (the app serves the shipped checkpoint).
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import SHIPPED, click_cell, frames, opened_page, painted, slow, state, translate

LESSONS = json.loads((SHIPPED / "lessons.json").read_text(encoding="utf-8"))["lessons"]
NO_TOUR = "try { localStorage.setItem('explorer-tour-seen', '1'); } catch (e) {}"


@pytest.fixture(scope="module")
def model():
    from transformer import load_translator

    return load_translator(SHIPPED)


def lesson_state(page) -> dict:
    return state(page)["lesson"]


def wait_phase(page, phase: str, timeout_ms: int = 120_000):
    page.wait_for_function(
        "(p) => { const l = window.__explorer.getState().lesson; return l && l.phase === p; }",
        arg=phase,
        timeout=timeout_ms,
    )


def wait_lesson(page, n: int):
    """Lesson ``n`` (1-based) is open on its own sentence and view."""
    lesson = LESSONS[n - 1]
    page.wait_for_function(
        "([i, text, step]) => { const s = window.__explorer.getState();"
        " return s.lesson && s.lesson.index === i && s.sentence === text && s.step === step; }",
        arg=[n - 1, lesson["sentence"], lesson["view"]["step"]],
    )
    painted(page)


def darkest(model, lesson, view: str = "cross") -> int:
    """The column of the darkest cell of the lesson's row, as the map draws it (no marker hidden)."""
    v = lesson["view"]
    trace = model.trace(lesson["sentence"])
    heads = trace.cross_attn[v["layer"] - 1, :, v["step"] - 1]
    row = heads.mean(axis=0) if v["head"] == "mean" else heads[int(v["head"]) - 1]
    return int(row.argmax())


# where the current row of the map and the lesson's task are on screen
ROW_AND_TASK = """() => { const fig = document.querySelector('#attn-plot'), g = JSON.parse(fig.dataset.grid);
  const c = fig.querySelector('canvas').getBoundingClientRect(), s = window.__explorer.getState();
  const top = c.top + g.top + (s.step - 1) * g.cell, dock = document.querySelector('#lesson-dock');
  const task = document.querySelector('#lesson-task').getBoundingClientRect();
  return { rowTop: top, rowBottom: top + g.cell, cardTop: dock.getBoundingClientRect().top, taskTop: task.top,
           taskBottom: task.bottom, height: innerHeight }; }"""


def task_and_row_on_one_screen(page):
    """The map's current row above the lesson card, the card's task on screen: no scrolling
    between what the lesson asks and where it is done."""
    frames(page)
    page.wait_for_selector("#viewer .ax-root:not([data-redraw])", state="attached")
    frames(page)
    at = page.evaluate(ROW_AND_TASK)
    assert 0 <= at["rowTop"] and at["rowBottom"] <= at["cardTop"] + 1, at
    assert at["cardTop"] - 1 <= at["taskTop"] and at["taskBottom"] <= at["height"] + 1, at


def press(page, sel: str):
    page.locator(sel).scroll_into_view_if_needed()
    page.tap(sel) if page.device == "phone" else page.click(sel)


def guess(page, n: int):
    """Commit the lesson's guess: a word typed, or the first choice; lesson 3 skips it."""
    page.wait_for_selector("#lesson-guess:not([hidden])")
    if n == 3:
        press(page, "#lesson-skip")
    elif page.locator("#lesson-guess-input").count():
        page.fill("#lesson-guess-input", "ombrello")
        press(page, "#lesson-guess-submit")
    else:
        press(page, "#lesson-choice-1")
    wait_phase(page, "task")


def do_task(page, n: int, model):
    lesson, kind = LESSONS[n - 1], LESSONS[n - 1]["task"]["kind"]
    step = lesson["view"]["step"]
    if kind == "piece":
        src = state(page)["trace"]["src"]
        i = next(i for i, t in enumerate(src) if not t.startswith("▁") and t.isalpha())
        press(page, f"#src-chips .chip:nth-child({i + 1})")
    elif kind == "step":
        press(page, "#next-btn")
    elif kind == "top-cell":
        task_and_row_on_one_screen(page)
        click_cell(page, step - 1, darkest(model, lesson))
    elif kind == "sink-head":
        # a learner tries the heads one by one
        for head in range(1, 9):
            press(page, f"#head-btn-{head}")
            frames(page)
            if lesson_state(page)["phase"] == "done":
                break
    elif kind == "masked-cell":
        click_cell(page, 1, 3)  # row 2 reading input 4: written later
    elif kind == "pe-follow":
        at = [t.replace("▁", "") for t in state(page)["trace"]["src"]].index(lesson["task"]["token"])
        page.locator("#pe-pos").scroll_into_view_if_needed()
        page.eval_on_selector("#pe-pos", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(at))
    elif kind == "explain-cell":
        press(page, "#explain-btn")
        frames(page)
        click_cell(page, step - 1, darkest(model, lesson))
    elif kind == "open":
        press(page, f"#sec-{lesson['task']['section']} > summary")
    elif kind == "knockout":
        page.wait_for_selector("#knockout-btn:not([disabled])")
        press(page, "#knockout-btn")
    elif kind == "beam":
        press(page, "#beam-btn")
    wait_phase(page, "done")


def walk(page, model):
    """Every lesson in turn, from the header's list to the last one's end."""
    assert page.inner_text("#lessons-btn") == f"Lessons 0/{len(LESSONS)}"
    press(page, "#lessons-btn")
    press(page, "#lesson-item-1")
    for n in range(1, len(LESSONS) + 1):
        wait_lesson(page, n)
        lesson = LESSONS[n - 1]
        text = page.inner_text("#lesson-text")
        assert "{" not in text and "[[" not in text, text  # every fact and glossary mark filled in
        if lesson.get("guess"):
            guess(page, n)
        # "Show me" points at the place the task is done
        press(page, "#lesson-showme")
        assert page.is_visible("#lesson-hint") and page.locator(".ls-target").count() == 1
        do_task(page, n, model)
        feedback = page.inner_text("#lesson-feedback")
        assert any(ch.isdigit() for ch in feedback) or lesson["task"]["kind"] == "open", feedback
        if lesson.get("guess"):
            reveal = page.inner_text("#lesson-reveal")
            assert ("No guess" in reveal) if n == 3 else reveal.startswith("You guessed"), reveal
        assert page.inner_text("#lesson-count").endswith("✓")
        if n < len(LESSONS):
            press(page, "#lesson-continue")
    assert page.inner_text("#lessons-btn") == f"Lessons {len(LESSONS)}/{len(LESSONS)}"
    done = page.evaluate("() => JSON.parse(localStorage.getItem('explorer-lessons-done'))")
    assert sorted(done) == sorted(lesson["id"] for lesson in LESSONS)


@pytest.mark.parametrize(
    "device, scheme", [("desktop", "light"), ("phone", "dark"), slow("desktop", "dark"), slow("phone", "light")]
)
def test_every_lesson_can_be_done_by_doing_its_task(browser, app_server, model, device, scheme):
    with opened_page(
        browser, app_server.url, device, init_script=NO_TOUR, timeout_ms=120_000, color_scheme=scheme
    ) as page:
        painted(page)
        walk(page, model)


def test_a_lesson_link_opens_its_lesson(browser, app_server):
    # a teacher hands out ?lesson=5
    with opened_page(browser, app_server.url + "?lesson=5", "desktop", init_script=NO_TOUR, timeout_ms=120_000) as page:
        wait_lesson(page, 5)
        assert page.is_visible("#lesson-dock") and "lesson=5" in page.url
        assert state(page)["view"] == LESSONS[4]["view"]["view"]


def test_leaving_a_lesson_gives_the_explorer_back_as_it_was(desktop):
    page = desktop
    translate(page, "We need to buy bread, milk and eggs.", step=None)
    page.click("#layer-btn-4")
    page.click("#head-btn-7")
    before_box = "Half-typed, never translated"
    page.locator("#src-text textarea").fill(before_box)
    before = state(page)
    press(page, "#lessons-btn")
    press(page, "#lesson-item-2")
    wait_lesson(page, 2)
    assert "lesson=2" in page.url
    press(page, "#lesson-close")
    page.wait_for_function(
        "(t) => { const s = window.__explorer.getState(); return s.sentence === t && !s.lesson; }",
        arg=before["sentence"],
    )
    painted(page)
    after = state(page)
    for key in ("view", "layer", "head", "step", "open"):
        assert after[key] == before[key], key
    assert not page.is_visible("#lesson-dock") and "lesson=" not in page.url
    page.wait_for_function("(t) => document.querySelector('#src-text textarea').value === t", arg=before_box)
