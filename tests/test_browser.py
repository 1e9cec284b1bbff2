"""The app as a person uses it: a real `python app.py`, driven in headless Chromium.

Run alone with `python -m pytest -m browser`. Needs Debian's chromium at /usr/bin/chromium
(or CHROMIUM=path) and the `playwright` pip package; `playwright install` is not needed.
"""

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SHIPPED = ROOT / "checkpoints" / "en-it"
SCREENSHOT_DIR = Path(tempfile.gettempdir()) / "attention-explorer-screenshots"
CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-quic", "--no-first-run", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory, request):
    checkpoint = SHIPPED if (SHIPPED / "config.json").is_file() else request.getfixturevalue("tiny_checkpoint")
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "app.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "GRADIO_ANALYTICS_ENABLED": "False"}
    start = time.perf_counter()
    with log.open("w") as f:
        proc = subprocess.Popen([sys.executable, "app.py", "--checkpoint", str(checkpoint), "--port", str(port)],
                                cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(240):
            if proc.poll() is not None:
                pytest.fail(f"app.py exited early:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail(f"app.py did not serve within 60 s:\n{log.read_text()[-3000:]}")
        print(f"\napp.py serving after {time.perf_counter() - start:.1f} s (checkpoint {checkpoint})")
        yield url, log
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]


@pytest.fixture(scope="module")
def page(server):
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROME_ARGS, headless=True)
        pg = browser.new_page(viewport={"width": 1280, "height": 1800})
        pg.set_default_timeout(30_000)
        yield pg
        browser.close()


def plot_data(page, elem_id: str):
    return page.evaluate(f"""() => {{
        const gd = document.querySelector('#{elem_id} .js-plotly-plot');
        return gd && gd.data ? JSON.stringify(gd.data.map(d => d.z || d.x)) : null; }}""")


def wait_plot(page, elem_id: str):
    page.wait_for_function(f"() => {{ const gd = document.querySelector('#{elem_id} .js-plotly-plot');"
                           " return gd && gd.data && gd.data.length > 0; }")
    # plotly draws heatmaps into an <image> inside the SVG, bars as paths
    page.wait_for_selector(f"#{elem_id} svg.main-svg")


TRANSLATED = ("() => { const t = document.querySelector('#translation textarea');"
              " return t !== null && t.value.trim().length > 0; }")


def translation_text(page) -> str:
    return page.locator("#translation textarea").input_value()


def test_translate_step_views_and_empty_input(server, page):
    url, log = server
    page.goto(url)
    box = page.locator("#src-text textarea")
    box.fill("The black cat is sleeping on the red chair.")
    page.click("#translate-btn")
    page.wait_for_function(TRANSLATED)
    assert translation_text(page).strip()
    wait_plot(page, "attn-plot")
    assert page.locator("#attn-plot .hm image, #attn-plot .heatmaplayer").count() > 0
    wait_plot(page, "grid-plot")
    wait_plot(page, "topk")
    assert "[SOS]" in page.locator("#src-chips").inner_text()

    # stepping with the arrow button moves the highlighted token and the heatmap
    prefix_before = page.locator("#prefix").inner_text()
    heat_before = plot_data(page, "attn-plot")
    page.click("#next-btn")
    page.wait_for_function("(before) => document.querySelector('#prefix').innerText !== before", arg=prefix_before)
    page.wait_for_function("""(before) => { const gd = document.querySelector('#attn-plot .js-plotly-plot');
        return gd && JSON.stringify(gd.data.map(d => d.z || d.x)) !== before; }""", arg=heat_before)
    assert "Step 2 of" in page.locator("#step-text").inner_text()

    # switch attention types: encoder self-attention, then cross-attention again
    page.get_by_label("Encoder self-attention").check()
    page.wait_for_function("() => { const gd = document.querySelector('#attn-plot .js-plotly-plot');"
                           " return gd && gd.layout.title.text.startsWith('Encoder self-attention'); }")
    page.get_by_label("Cross-attention").check()
    page.wait_for_function("() => { const gd = document.querySelector('#attn-plot .js-plotly-plot');"
                           " return gd && gd.layout.title.text.startsWith('Cross-attention'); }")
    title = page.evaluate("() => document.querySelector('#attn-plot .js-plotly-plot').layout.yaxis.title.text")
    assert title.startswith("query")

    # the positional-encoding view renders
    page.get_by_text("Positional encoding", exact=True).first.click()
    wait_plot(page, "pe-heat")
    wait_plot(page, "pe-sim")
    wait_plot(page, "pe-curves")

    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOT_DIR / "app.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert shot.stat().st_size > 10_000

    # an empty input gets the friendly message, and the old translation stays
    old = translation_text(page)
    box.fill("")
    page.click("#translate-btn")
    page.wait_for_function("() => document.querySelector('#notice').innerText.includes('Please type')")
    assert translation_text(page) == old


def test_markup_is_shown_as_text(server, page):
    url, _ = server
    page.goto(url)
    page.evaluate("() => { window.__xss = false; }")
    page.locator("#src-text textarea").fill("<img src=x onerror=\"window.__xss=true\"><script>window.__xss=true</script>")
    page.click("#translate-btn")
    page.wait_for_function(TRANSLATED)
    wait_plot(page, "attn-plot")
    assert page.evaluate("() => window.__xss") is False


def test_query_parameter_opens_a_translated_sentence(server, page):
    url, _ = server
    page.goto(url + "?text=" + urllib.request.quote("I don't like coffee."))
    page.wait_for_function(TRANSLATED)
    assert page.locator("#src-text textarea").input_value() == "I don't like coffee."


def test_gradio_client_translate_endpoint(server):
    from gradio_client import Client

    url, _ = server
    client = Client(url, verbose=False)
    translation, trace = client.predict("The black cat is sleeping.", api_name="/translate")
    if isinstance(trace, str):
        trace = json.loads(trace)
    assert translation and trace["translation"] == translation
    assert trace["schema"] == "transformer-trace/1" and len(trace["cross_attn"]) > 0
