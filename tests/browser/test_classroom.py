"""A whole class in real browsers: a teacher at a 1920×1080 projector starts a class, three students
join (a 390×844 phone typing the code, a laptop pressing Enter, a tablet opening the ?class= link)
and follow the teacher's sentence and step; the teacher asks a question of each kind about the
next step, the students answer (one changes their mind), the teacher's tally counts each once, and
the reveal reaches every screen: the class's chart beside the model's on the projector, each
student's answer beside the model's on their own. The model's answers the screens must show are
read from the model here (the app serves the same checkpoint).

The app is its own (``--class-db`` in the test's folder), so classes never reach the user's cache.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import SHIPPED, go_to_step, screen_page, serve_app, slow, state, translate

KINDS = ("next_word", "source_token", "layer")
STEP = 3  # the step on screen; the questions are about the next one


@pytest.fixture(scope="module")
def class_app(tmp_path_factory, request):
    checkpoint = SHIPPED if (SHIPPED / "config.json").is_file() else request.getfixturevalue("tiny_checkpoint")
    folder = tmp_path_factory.mktemp("class-app")
    extra = ("--class-db", str(folder / "classes.sqlite3"))
    with serve_app(checkpoint, folder / "app.log", extra=extra) as app:
        yield app


@pytest.fixture(scope="module")
def model(class_app):
    from transformer import load_translator

    return load_translator(class_app.checkpoint)


def sentence_of(app) -> str:
    return "I have a red car." if app.checkpoint == SHIPPED else "the black cat sleeps."


def expected(model, text: str, step: int, view: dict) -> dict:
    """The key of the model's answer to each kind of question about ``step`` (1-based), as the
    charts mark it: the word, the source token's number, the first layer of the lens."""
    tr = model.trace(text)
    t, out = step - 1, tr.tgt_tokens[step]
    heads = tr.cross_attn[view["layer"] - 1, :, t] if view["view"] == "cross" else tr.cross_attn[-1, :, t]
    row = heads.mean(axis=0) if view["view"] != "cross" or view["head"] == "mean" else heads[int(view["head"]) - 1]
    lens = [top[0] for top in tr.logit_lens_tokens[t]]
    first = len(lens)
    while first > 0 and lens[first - 1] == out:
        first -= 1
    return {
        "next_word": out.replace("▁", " ").strip().lower(),
        "source_token": str(int(np.argmax(row)) + 1),
        "layer": str(first + 1),
    }


def classroom(page) -> dict:
    return state(page)["classroom"]


def until(page, js: str, arg=None, timeout_ms: int = 30_000):
    page.wait_for_function(js, arg=arg, timeout=timeout_ms)


IN_CLASS = "(code) => { const c = window.__explorer.getState().classroom; return c && c.code === code && c.student; }"
FOLLOWS = "([t, s]) => { const x = window.__explorer.getState(); return x.sentence === t && x.step === s; }"
ASKED = "(k) => { const c = window.__explorer.getState().classroom; return c && c.question && c.question.kind === k"
HIDDEN = "() => getComputedStyle(document.querySelector('#translation textarea')).visibility"


def press(page, sel: str):
    page.locator(sel).scroll_into_view_if_needed()
    page.tap(sel) if page.device == "phone" else page.click(sel)


def choose(page, kind: str, key: str):
    """Answer with the choice whose key (as the tally counts it) is ``key``, or type it."""
    q = classroom(page)["question"]
    if kind != "next_word":
        press(page, f"#class-choice-{key}")
        return
    labels = [c.lower() for c in q["choices"]]
    if key in labels:
        press(page, f"#class-choice-{labels.index(key) + 1}")
    else:
        page.fill("#class-word-input", key)
        press(page, "#class-word-send")
    until(page, "(k) => window.__explorer.getState().classroom.mine === k", key)


def join(teacher_code: str, students: list):
    """The three ways in: typing the code on a phone (in small letters, with a space), typing it on
    a laptop and pressing Enter, and opening the link (already open)."""
    phone, laptop, _ = students
    press(phone, "#class-btn")
    phone.fill("#class-code-input", f"{teacher_code[:2].lower()} {teacher_code[2:].lower()}")
    press(phone, "#class-join-btn")
    laptop.click("#class-btn")
    laptop.fill("#class-code-input", teacher_code)
    laptop.press("#class-code-input", "Enter")
    for s in students:
        until(s, IN_CLASS, teacher_code)


def ask_answer_reveal(teacher, students, kind: str, want: str, text: str):
    """One question: asked, answered by each student (the last one changing their mind), counted
    once each on the projector, then revealed on every screen."""
    teacher.click(f"#class-ask-{kind}")
    for s in students:
        until(s, ASKED + " && c.question.status === 'open'; }", kind)
        s.wait_for_selector("#class-choice-1")
    # the answer is not on any screen while the question is open (a layer question names its word)
    assert teacher.evaluate(HIDDEN) == ("visible" if kind == "layer" else "hidden")
    assert students[0].evaluate(HIDDEN) == ("visible" if kind == "layer" else "hidden")
    wrong = {"next_word": "bicicletta", "source_token": "1", "layer": "1"}[kind]
    wrong = wrong if wrong != want else "2"
    phone, laptop, tablet = students
    choose(phone, kind, want)
    choose(laptop, kind, wrong)
    choose(tablet, kind, wrong)
    choose(tablet, kind, want)  # a second answer replaces the first
    until(teacher, "() => { const t = window.__explorer.getState().classroom.tally; return t && t.answered === 3; }")
    counted = "(k) => [...document.querySelectorAll('#class-chart-class li')].find((li) => li.dataset.key === k)"
    until(
        teacher,
        f"(k) => {{ const li = ({counted})(k); return li && li.querySelector('.cl-num').textContent === '2'; }}",
        want,
    )
    teacher.click("#class-reveal")
    mark = teacher.wait_for_selector("#class-chart-model li.cl-mark")
    assert mark.get_attribute("data-key") == want
    assert teacher.inner_text("#class-verdict").startswith(("The model writes", "The model reads", "The logit lens"))
    assert teacher.evaluate(HIDDEN) == "visible"
    for s in students:
        until(s, "() => (document.querySelector('#class-verdict') || {}).textContent.startsWith('You said')")
        until(s, FOLLOWS, [text, STEP + 1])  # the class now sees the step it was asked about
        assert s.locator("#class-chart-model li.cl-mark").get_attribute("data-key") == want
    assert phone.inner_text("#class-verdict").endswith("The same as yours!")
    assert not laptop.inner_text("#class-verdict").endswith("The same as yours!")
    go_to_step(teacher, STEP)  # back to the step before, for the next question
    for s in students:
        until(s, FOLLOWS, [text, STEP])


def test_a_whole_class_on_a_projector_a_phone_a_laptop_and_a_tablet(browser, class_app, model):
    text, opened = sentence_of(class_app), []
    try:
        ctx, teacher = screen_page(browser, class_app.url, (1920, 1080))
        opened.append((ctx, teacher))
        translate(teacher, text, step=STEP)
        teacher.click("#class-btn")
        teacher.click("#class-start-btn")
        until(teacher, "() => { const c = window.__explorer.getState().classroom; return c && c.code; }")
        code = classroom(teacher)["code"]
        assert teacher.inner_text("#class-code") == code and f"?class={code}" in teacher.inner_text("#class-link")
        for size, path in (((390, 844), ""), ((1366, 900), ""), ((768, 1024), f"?class={code}")):
            opened.append(screen_page(browser, class_app.url, size, path=path))
        students = [pg for _, pg in opened[1:]]
        join(code, students)
        until(teacher, "() => window.__explorer.getState().classroom.students === 3")
        for s in students:
            until(s, FOLLOWS, [text, STEP])  # the teacher's sentence and step, traced once for the class
        phone_dock = students[0].locator("#class-dock").bounding_box()
        assert phone_dock["height"] <= 0.5 * 844 + 1  # the phone keeps half its screen for the picture
        teacher.click("#present-btn")  # on the projector, full screen: the card stays in view
        until(teacher, "() => !!document.querySelector('.ax-root.ax-presenting #class-dock')")
        assert teacher.locator("#class-dock").is_visible() and teacher.inner_text("#class-code") == code
        teacher.click("#present-btn")
        until(teacher, "() => document.querySelector('#class-dock').parentNode === document.body")
        view = {k: state(teacher)[k] for k in ("view", "layer", "head")}
        want = expected(model, text, STEP + 1, view)
        for kind in KINDS:
            ask_answer_reveal(teacher, students, kind, want[kind], text)
        teacher.click("#class-leave")  # ends the class for everyone
        for s in students:
            until(s, "() => window.__explorer.getState().classroom.ended", timeout_ms=15_000)
            assert s.inner_text("#class-status") == "This class has ended."
    finally:
        for ctx, pg in opened:
            ctx.close()
    for _, pg in opened:
        assert not pg.errors, pg.errors


@pytest.mark.parametrize(
    "typed, said, link",
    [
        ("ABCDE", "A class code is 5 letters", False),
        slow("KTXAP", "There is no class", False),
        ("KTXAP", "There", True),
    ],
)
def test_a_wrong_code_on_a_phone_is_one_line(browser, class_app, typed, said, link):
    """Typed (B is not a code's letter; no class has KTXAP) or in a ?class= link."""
    ctx, phone = screen_page(browser, class_app.url, (390, 844), path=f"?class={typed}" if link else "")
    try:
        if not link:
            phone.tap("#class-btn")
            phone.fill("#class-code-input", typed)
            phone.tap("#class-join-btn")
        phone.wait_for_selector("#class-dock:not([hidden]) #class-error:not([hidden])")
        line = phone.inner_text("#class-error")
        assert line.startswith(said) and "\n" not in line and classroom(phone) is None
    finally:
        ctx.close()
    assert not phone.errors, phone.errors
