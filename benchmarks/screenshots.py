"""Screenshots of every view of the explorer at the three screens it is made for.

    python benchmarks/screenshots.py [--checkpoint checkpoints/en-it] [--out figures/screens]
                                     [--url http://127.0.0.1:7860/] [--schemes light dark]

Starts ``python app.py`` on a free port (or uses --url) and, in a headless Chromium, translates
one sentence at 1366×900 (a laptop), 1920×1080 (a projector) and 390×844 (a phone). For each
screen and colour scheme the browser prefers it saves one PNG per view, named ``{screen}-{view}.png``
(``{screen}-dark-{view}.png`` in the dark scheme): the page as a first visit meets it, the main
view as a map and as lines, presentation mode, the explanation beside the map, the viewer's
closed sections, and every panel opened and run. The images are for a person
to look at (docs/maintaining.md says when); the script prints each file and checks nothing.
Exit code 0 when every screenshot was taken, 2 on bad flags or an app that does not start.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ui_latency import CHROME_ARGS, ROOT, app_server

SCREENS = {
    "laptop": {"width": 1366, "height": 900},
    "projector": {"width": 1920, "height": 1080},
    "phone": {"width": 390, "height": 844},
}
SENTENCE = "Tom gave Mary a beautiful present for her birthday."
NO_TOUR = "try { localStorage.setItem('explorer-tour-seen', '1'); } catch (e) {}"


def open_panel(page, elem_id: str) -> None:
    label = page.locator(f"#{elem_id} > .label-wrap")
    if "open" not in (label.get_attribute("class") or "").split():
        label.click()
    page.wait_for_selector(f"#{elem_id} > .label-wrap.open")
    page.locator(f"#{elem_id}").scroll_into_view_if_needed()


def run_panel(page, elem_id: str, button: str, done: str) -> None:
    """Open a panel, press its main button and wait for its answer to be drawn."""
    open_panel(page, elem_id)
    page.click(button)
    page.wait_for_selector(done, state="attached", timeout=120_000)
    page.wait_for_timeout(300)


def shoot(page, out: Path, screen: str, view: str, element: str | None = None) -> None:
    path = out / f"{screen}-{view}.png"
    if element:
        page.locator(element).screenshot(path=str(path))
    else:
        page.screenshot(path=str(path))
    print(path, flush=True)


def views(page, out: Path, screen: str) -> None:
    """Every view of one screen, in the order a visitor finds them."""
    shoot(page, out, screen, "first-visit")
    page.locator("#src-text textarea").fill(SENTENCE)
    page.click("#translate-btn")
    page.wait_for_function("(t) => window.__explorer.getState().sentence === t", arg=SENTENCE)
    page.wait_for_selector("#attn-plot[data-step]", state="attached")
    page.locator("#viewer").scroll_into_view_if_needed()
    shoot(page, out, screen, "map")
    page.click("#picture-lines")
    page.wait_for_selector("#attn-lines .ln-svg")
    shoot(page, out, screen, "lines")
    page.click("#picture-map")
    page.click("#explain-btn")
    page.wait_for_selector(".ar-root[data-state='done']", state="attached")  # beside the map, or under it on a phone
    page.wait_for_timeout(300)
    shoot(page, out, screen, "explain")
    page.click("#explain-btn")
    if screen != "phone":
        page.click("#present-btn")
        page.wait_for_function("() => window.__explorer.getState().presenting")
        page.wait_for_timeout(300)
        shoot(page, out, screen, "present")
        page.keyboard.press("Escape")
        page.wait_for_function("() => !window.__explorer.getState().presenting")
    page.evaluate(
        "() => { for (const d of document.querySelectorAll('#viewer details[data-section]')) d.open = true; }"
    )
    page.wait_for_selector("#mosaic[data-step]", state="attached")
    shoot(page, out, screen, "sections", "#viewer")
    run_panel(page, "analysis-panel", "#importance-btn", "#analysis-panel canvas")
    shoot(page, out, screen, "analysis", "#analysis-panel")
    run_panel(page, "attribution-panel", "#attr-go", "#attr-dla[data-state='done']")
    shoot(page, out, screen, "attribution", "#attribution-panel")
    run_panel(page, "beam-panel", "#beam-btn", "#beam-tree svg g.bt-node")
    shoot(page, out, screen, "beam", "#beam-panel")
    open_panel(page, "pairs-panel")
    page.click("#pairs-curated button[data-pair='0']")
    page.wait_for_function(
        "() => { const p = window.__explorer.getState().pair; return p && p.status === 'done'; }", timeout=120_000
    )
    page.wait_for_timeout(300)
    shoot(page, out, screen, "pairs", "#pairs-panel")
    run_panel(page, "whatif-panel", "#whatif-btn", "#whatif-text")
    shoot(page, out, screen, "whatif", "#whatif-panel")
    open_panel(page, "epoch-panel")
    page.wait_for_timeout(1500)
    shoot(page, out, screen, "epochs", "#epoch-panel")
    shoot(page, out, screen, "page-full")


def run(url: str, out: Path, only: list[str], schemes: tuple[str, ...] = ("light",)) -> None:
    from playwright.sync_api import sync_playwright

    from explorer.launch import find_chromium

    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=find_chromium(), args=CHROME_ARGS, headless=True)
        for scheme in schemes:
            for screen in only:
                phone = screen == "phone"
                device = dict(viewport=SCREENS[screen], device_scale_factor=1, is_mobile=phone, has_touch=phone)
                ctx = browser.new_context(**device, color_scheme=scheme)
                ctx.add_init_script(NO_TOUR)
                page = ctx.new_page()
                page.set_default_timeout(60_000)
                page.goto(url)
                page.wait_for_selector("#viewer .ax-root")
                views(page, out, screen if scheme == "light" else f"{screen}-{scheme}")
                ctx.close()
        browser.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default="checkpoints/en-it", help="model folder the app loads")
    ap.add_argument("--out", type=Path, default=ROOT / "figures" / "screens", help="folder for the PNG files")
    ap.add_argument("--url", help="use an app already running at this address instead of starting one")
    ap.add_argument("--screens", nargs="+", choices=list(SCREENS), default=list(SCREENS), help="which screens")
    ap.add_argument(
        "--schemes",
        nargs="+",
        choices=["light", "dark"],
        default=["light", "dark"],
        help="the colour schemes the browser prefers (dark files are named {screen}-dark-{view}.png)",
    )
    args = ap.parse_args(argv)
    from explorer.launch import NO_CHROMIUM, find_chromium

    if find_chromium() is None:
        print(f"error: {NO_CHROMIUM}", file=sys.stderr)
        return 2
    if args.url:
        run(args.url, args.out, args.screens, tuple(args.schemes))
        return 0
    try:
        with app_server(args.checkpoint, [], timeout=180) as (url, _):
            run(url, args.out, args.screens, tuple(args.schemes))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
