"""Junk input in the real app: keyboard mashing is still translated, and the notice beside the
translation says that translation is meaningless; a plain English sentence gets no such notice.
An empty box is not translated at all (not even the grey example it shows): one line asks for a
sentence.
The app is a real `python app.py` (tests/browser/conftest.py) in headless Chromium. Run alone
with `python -m pytest -m browser tests/browser/test_junk.py`.
"""

import pytest

from tests.helpers import translate

pytestmark = pytest.mark.browser

MEANINGLESS = "() => document.querySelector('#notice').innerText.includes('meaningless')"
# the notice is an output of the same event as the viewer, but its Markdown renders after the
# viewer has drawn, which on a loaded machine can take longer than 10 s
NOTICE_MS = 30_000


@pytest.mark.parametrize("junk", ["asdkjh qwe zzz", "lalala bababa"])
def test_keyboard_mashing_is_translated_and_told_its_translation_is_meaningless(desktop, junk):
    page = desktop
    translate(page, junk, step=None)
    page.wait_for_function(MEANINGLESS, timeout=NOTICE_MS)
    notice = page.inner_text("#notice")
    assert "most words of this text are not English" in notice and page.is_visible("#notice")
    assert page.input_value("#translation textarea").strip()  # a notice, not a refusal
    # a plain English sentence next: its notice has no such warning
    translate(page, "I have a red car.", step=None)
    page.wait_for_function(f"() => !({MEANINGLESS})()", timeout=NOTICE_MS)
    assert "not English" not in page.inner_text("#notice")
    assert page.input_value("#translation textarea").strip()


@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_an_empty_box_asks_for_a_sentence_and_translates_nothing(request, device):
    page = request.getfixturevalue(device)
    box = page.locator("#src-text textarea")
    # the page opens on an example, in the box and drawn
    assert box.input_value() == page.evaluate("() => window.__explorer.getState().trace.srcText")
    box.fill("")
    assert box.get_attribute("placeholder")  # a grey example shows in the box: it is not what is sent
    if device == "desktop":
        page.click("#translate-btn")
    else:
        box.tap()
        box.press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#notice').innerText.includes('Please type')", timeout=NOTICE_MS
    )
    assert page.inner_text("#notice").strip() == "⚠️ Please type an English sentence to translate."
    assert box.input_value() == "" and page.input_value("#translation textarea") == ""
    assert page.evaluate("() => window.__explorer.getState().trace") is None and page.is_visible("#viewer-empty")
