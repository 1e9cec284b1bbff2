"""Helpers the tests share (fixtures are in tests/conftest.py and tests/browser/conftest.py).

Plain functions and constants, imported by the test modules that need them, so no test
module imports another: the tiny corpus and config, snapshots of a checkpoint, the one-line
CLI error check, and the browser helpers that drive the real app as a person would (type,
translate, step, open a section) and read what it drew (the store through the page's test
handle ``window.__explorer``, the data-* attributes set after each paint).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import subprocess
import warnings
from pathlib import Path

import pytest
import torch

from explorer.launch import AppDidNotStart, running_app
from transformer.core.checkpoint import load_checkpoint, save_checkpoint
from transformer.core.config import TransformerConfig
from transformer.core.tokenizer import special_ids

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "checkpoints" / "en-it"

# --- the tiny corpus, config and checkpoints ---------------------------------------------------

# Hand-written for the tests (not taken from any corpus).
PAIRS = [
    ("the cat sleeps.", "il gatto dorme."),
    ("the black cat sleeps.", "il gatto nero dorme."),
    ("the dog eats.", "il cane mangia."),
    ("the white dog eats.", "il cane bianco mangia."),
    ("i see the cat.", "vedo il gatto."),
    ("i see the dog.", "vedo il cane."),
    ("we see a house.", "vediamo una casa."),
    ("you have a red car.", "hai una macchina rossa."),
    ("she reads a book.", "lei legge un libro."),
    ("he writes a letter.", "lui scrive una lettera."),
    ("the house is big.", "la casa è grande."),
    ("the car is small.", "la macchina è piccola."),
    ("i like coffee.", "mi piace il caffè."),
    ("i do not like tea.", "non mi piace il tè."),
    ("where is the station?", "dov'è la stazione?"),
    ("the book is on the table.", "il libro è sul tavolo."),
    ("my sister is tall.", "mia sorella è alta."),
    ("my brother is tall.", "mio fratello è alto."),
    ("we are happy.", "siamo felici."),
    ("they are tired.", "sono stanchi."),
    ("the children play outside.", "i bambini giocano fuori."),
    ("it is raining today.", "oggi piove."),
    ("i am going home.", "vado a casa."),
    ("open the window, please.", "apri la finestra, per favore."),
]


def write_jsonl(path: Path, pairs) -> Path:
    with path.open("w", encoding="utf-8") as f:
        for i, (en, it) in enumerate(pairs):
            f.write(json.dumps({"id": str(i), "translation": {"en": en, "it": it}}, ensure_ascii=False) + "\n")
    return path


def tiny_main(data_dir, out, *extra):
    """``train.main`` with the tiny preset cut to the fixture corpus (one thread)."""
    import train

    return train.main(
        [
            "--preset",
            "tiny",
            "--dataset",
            str(data_dir),
            "--out",
            str(out),
            "--threads",
            "1",
            "--batch-tokens",
            "600",
            "--vocab-size",
            "200",
            *extra,
        ]
    )


def tiny_config(tok_src, tok_tgt, **overrides) -> TransformerConfig:
    ids = {f"src_{k}_id": v for k, v in special_ids(tok_src).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tok_tgt).items()})
    kw = dict(
        d_model=32,
        h=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.1,
        attn_dropout=0.1,
        max_positions=40,
        src_vocab_size=tok_src.get_vocab_size(),
        tgt_vocab_size=tok_tgt.get_vocab_size(),
        tie_embeddings="decoder",
        **ids,
    )
    kw.update(overrides)
    return TransformerConfig(**kw)


def make_snapshots(src, dst, epochs=(1, 2)):
    """A copy of checkpoint `src` at `dst` with snapshots whose weights differ from the final model."""
    shutil.copytree(src, dst)
    model, *_ = load_checkpoint(src)
    for e in epochs:
        torch.manual_seed(e)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.5 * torch.randn_like(p))
        save_checkpoint(
            dst / "snapshots" / f"epoch-{e:03d}",
            model,
            None,
            None,
            include_tokenizers=False,
            metrics={"validation": {"bleu": float(e), "chrf": 10.0 * e}, "val_loss": 5.0 - e, "epoch": e},
        )
    return dst


@contextlib.contextmanager
def single_thread():
    """torch on one thread inside the block: bit-for-bit comparisons need the same kernels every time."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def lcs_length(a, b) -> int:
    """The length of a longest common subsequence: the oracle the alignment must reach."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


# --- command-line tools: bad input is one line and exit code 2 --------------------------------


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def exit_2(capfd, main, *args) -> str:
    """Run ``main(*args)``, expect exit code 2 and exactly one line on stderr; return it."""
    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(*args)
    assert exc.value.code == 2
    lines = lines_of(capfd.readouterr().err)
    assert len(lines) == 1, lines
    return lines[0]


# --- small Marian (OPUS-MT style) models, made with transformers (tests/test_marian.py) -------------

TATOEBA = ROOT / "data" / "tatoeba-en-it"


def tatoeba_pairs(split: str, n: int) -> list[tuple[str, str]]:
    """The first ``n`` (en, it) pairs of our corpus's ``split``."""
    pairs = []
    with (TATOEBA / f"{split}.jsonl").open(encoding="utf-8") as f:
        for line in f:
            t = json.loads(line)["translation"]
            pairs.append((t["en"], t["it"]))
            if len(pairs) == n:
                break
    return pairs


def train_spm(lines: list[str], vocab_size: int) -> bytes:
    """A unigram SentencePiece model as OPUS-MT's are (</s> = 0, <unk> = 1, no <s>, no <pad>)."""
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        bos_id=-1,
        eos_id=0,
        unk_id=1,
        pad_id=-1,
        minloglevel=2,
        num_threads=1,
    )
    return buf.getvalue()


def marian_vocab(*spm_models: bytes) -> dict[str, int]:
    """vocab.json as OPUS-MT builds it: </s> = 0, <unk> = 1, the pieces of each SentencePiece
    model in turn (each once), and <pad> last."""
    import sentencepiece as spm

    vocab = {"</s>": 0, "<unk>": 1}
    for proto in spm_models:
        sp = spm.SentencePieceProcessor(model_proto=proto)
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)) and sp.id_to_piece(i) not in vocab:
                vocab[sp.id_to_piece(i)] = len(vocab)
    vocab["<pad>"] = len(vocab)
    return vocab


def write_marian_tokenizer(folder: Path, source_spm: bytes, target_spm: bytes, separate_vocabs: bool):
    """source.spm, target.spm and vocab.json (and target_vocab.json for separate vocabularies)
    saved by ``MarianTokenizer.save_pretrained``; returns the tokenizer."""
    from transformers import MarianTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "source.spm").write_bytes(source_spm)
    (folder / "target.spm").write_bytes(target_spm)
    if separate_vocabs:
        (folder / "vocab.json").write_text(json.dumps(marian_vocab(source_spm), ensure_ascii=False), encoding="utf-8")
        target = folder / "target_vocab.json"
        target.write_text(json.dumps(marian_vocab(target_spm), ensure_ascii=False), encoding="utf-8")
    else:
        vocab = marian_vocab(source_spm, target_spm)
        (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
        target = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Recommended: pip install sacremoses" (not used to tokenize)
        tok = MarianTokenizer(
            str(folder / "source.spm"),
            str(folder / "target.spm"),
            str(folder / "vocab.json"),
            target_vocab_file=None if target is None else str(target),
            source_lang="en",
            target_lang="it",
            separate_vocabs=separate_vocabs,
        )
    tok.save_pretrained(folder)
    return tok


def marian_config(src_vocab: int, tgt_vocab: int, pad: int, **switches):
    """A small ``MarianConfig`` with the switches published OPUS-MT configs set (see
    transformers' convert_marian_to_pytorch.py): swish, static sinusoids, scaled embeddings,
    post-LN, decoder starting from <pad>, shared and tied embeddings (their generation
    config's ``bad_words_ids = [[pad]]`` is passed to ``generate``). ``switches`` override any."""
    from transformers import MarianConfig

    settings = dict(
        vocab_size=src_vocab,
        decoder_vocab_size=tgt_vocab,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=512,
        activation_function="swish",
        scale_embedding=True,
        share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True,
        pad_token_id=pad,
        decoder_start_token_id=pad,
        eos_token_id=0,
        forced_eos_token_id=0,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
    )
    settings.update(switches)
    return MarianConfig(**settings)


def train_marian(model, tok, pairs, steps: int, batch: int = 64, lr: float = 3e-3, seed: int = 0):
    """A few optimizer steps of teacher forcing on ``pairs``, so the model ends its sentences;
    the final logits bias is learnt too (a buffer in transformers, a parameter here), so
    the conversion has a non-zero one to carry. Returns the model in eval mode."""
    torch.manual_seed(seed)
    model.train()
    bias = torch.nn.Parameter(model.final_logits_bias.clone())
    opt = torch.optim.Adam([*model.parameters(), bias], lr=lr)
    src = [tok(s).input_ids for s, _ in pairs]
    tgt = [tok(text_target=t).input_ids for _, t in pairs]
    pad = model.config.pad_token_id
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(pairs), (batch,), generator=g).tolist()
        x = _padded([src[i] for i in idx], pad)
        y = _padded([tgt[i] for i in idx], -100)
        model.final_logits_bias = bias * 1.0  # through the buffer, so the bias learns too
        loss = model(input_ids=x, attention_mask=(x != pad).long(), labels=y).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.final_logits_bias = bias.detach().clone()
    return model.eval()


def _padded(rows: list[list[int]], pad: int) -> torch.Tensor:
    out = torch.full((len(rows), max(map(len, rows))), pad, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row)
    return out


# --- the browser ---------------------------------------------------------------------------------

CHROME_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-quic",
    "--no-first-run",
    "--disable-sync",
]
# set before a page loads: the first-visit tour stays closed (tests of the tour leave it out)
NO_TOUR = "try { localStorage.setItem('explorer-tour-seen', '1'); } catch (e) {}"


@contextlib.contextmanager
def serve_app(checkpoint, log: Path, extra: tuple[str, ...] = ()):
    """``python app.py`` on ``checkpoint`` (None: the app's default) with ``extra`` flags until
    the block ends (an ``explorer.launch.RunningApp``); the test fails if it does not start, or
    if it logged a traceback by the end."""
    try:
        with running_app(checkpoint, log, extra) as app:
            print(f"\napp.py serving after {app.seconds:.1f} s (checkpoint {checkpoint})")
            yield app
    except AppDidNotStart as exc:
        pytest.fail(str(exc))
    text = log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, text[-3000:]


def slow(*values):
    """A parameter set that runs in the slow set only: the default suite keeps one or two
    variants of a browser check, the slow set the rest (the same check on other screens)."""
    return pytest.param(*values, marks=pytest.mark.slow)


# the two viewports every view is checked on
DEVICES = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True},
}


def device_page(browser, device: str, timeout_ms: int = 60_000, **options):
    """A fresh context and page on ``device`` ("desktop" or "phone"); the page's script
    errors collect in ``page.errors`` (the fixtures assert there are none)."""
    ctx = browser.new_context(**DEVICES[device], **options)
    pg = ctx.new_page()
    pg.set_default_timeout(timeout_ms)
    pg.device = device
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    return ctx, pg


@contextlib.contextmanager
def opened_page(browser, url: str, device: str, init_script: str | None = None, **options):
    """``device_page`` at ``url`` once the viewer has mounted; closes the context afterwards
    and fails if the page raised a script error."""
    ctx, pg = device_page(browser, device, **options)
    if init_script:
        ctx.add_init_script(init_script)
    try:
        pg.goto(url)
        pg.wait_for_selector("#viewer .ax-root")
        yield pg
    finally:
        ctx.close()
    assert not pg.errors, pg.errors


def screen_page(browser, url: str, size=(390, 844), scheme: str = "light", path: str = ""):
    """A fresh context and page at ``size`` (a touch phone below 600 px wide) in ``scheme``, the
    tour already seen, the viewer mounted; its script errors collect in ``page.errors``."""
    phone = size[0] < 600
    ctx = browser.new_context(
        viewport={"width": size[0], "height": size[1]}, color_scheme=scheme, is_mobile=phone, has_touch=phone
    )
    ctx.add_init_script(NO_TOUR)
    pg = ctx.new_page()
    pg.set_default_timeout(90_000)
    pg.device = "phone" if phone else "desktop"
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(url + path)
    pg.wait_for_selector("#viewer .ax-root")
    return ctx, pg


def state(page) -> dict:
    """The store, through the page's test handle."""
    return page.evaluate("() => window.__explorer.getState()")


def server_calls(page) -> list:
    """Requests that reach the app's Python side from now on (static module files excluded)."""
    calls = []
    page.on("request", lambda r: calls.append(r.url) if "/gradio_api/" in r.url and "/file=" not in r.url else None)
    return calls


def painted(page, step: int | None = None):
    """Wait until the heatmap for `step` (1-based; any step if None) has been drawn."""
    sel = "#attn-plot[data-step]" if step is None else f"#attn-plot[data-step='{step}']"
    page.wait_for_selector(sel, state="attached")


# two animation frames: every handler of the events sent before has run, and so has what they
# left for the next frame (a view's requestAnimationFrame redraw, a resize observer's callback)
TWO_FRAMES = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def frames(page):
    """Wait two animation frames (TWO_FRAMES): the page has finished handling what came before."""
    page.evaluate(TWO_FRAMES)


# resolves once two consecutive animation frames measure the same boxes of `sels` (viewport
# coordinates, so a scroll counts), the same window and page size, and no redraw of the viewer
# is waiting for the layout to rest (viewer.js marks its root data-redraw while one is due)
SETTLED = """([sels, ms]) => new Promise((resolve, reject) => {
  const measure = () => JSON.stringify([innerWidth, innerHeight, scrollX, scrollY,
    document.documentElement.scrollHeight, ...sels.map((sel) => {
      const e = document.querySelector(sel);
      if (!e) return null;
      const r = e.getBoundingClientRect();
      return [r.left, r.top, r.width, r.height];
    })]);
  const due = () => !!document.querySelector('#viewer .ax-root[data-redraw]');
  let last = null, late = false;
  const stop = setTimeout(() => {
    late = true;
    reject(new Error(`the layout did not settle in ${ms} ms: ${last}`));
  }, ms);
  const tick = () => {
    if (late) return;
    const now = measure();
    if (now === last && !due()) { clearTimeout(stop); resolve(); return; }
    last = now;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
})"""


def settled(page, *sels: str, timeout_ms: int = 30_000):
    """Wait until the layout has come to rest (after a resize, presentation mode, a drawer, a
    scroll): the boxes of `sels` and the page's size unchanged over two consecutive animation
    frames, with no redraw of the viewer pending (its resize redraw waits for the layout to rest)."""
    page.evaluate(SETTLED, [list(sels), timeout_ms])


def attn(page) -> dict:
    return page.evaluate("() => ({...document.querySelector('#attn-plot').dataset})")


def grid(page, fig: str = "#attn-plot") -> dict:
    """Where the last drawing of a figure put its grid, in css px of its canvas."""
    return page.evaluate("(sel) => JSON.parse(document.querySelector(sel).dataset.grid)", fig)


def row_labels(page, fig: str = "#attn-plot") -> list:
    """The row labels a person reads beside a heatmap: [text, is it a row not generated yet]."""
    return page.eval_on_selector_all(
        f"{fig} .ax-rowlabel", "ls => ls.map(l => [l.textContent, l.classList.contains('future')])"
    )


def click_cell(page, row: int, col: int, fig: str = "#attn-plot"):
    """Click (tap on a phone) cell (row, col), 0-based as drawn, of a heatmap."""
    g = grid(page, fig)
    canvas = page.locator(f"{fig} canvas")
    canvas.scroll_into_view_if_needed()
    where = {"x": g["left"] + (col + 0.5) * g["cellW"], "y": g["top"] + (row + 0.5) * g["cell"]}
    canvas.tap(position=where) if getattr(page, "device", "desktop") == "phone" else canvas.click(position=where)


def go_to_step(page, step: int):
    """Move the step slider to `step` (1-based) as a drag does, and wait for the map."""
    page.eval_on_selector("#step-slider", "(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", str(step))
    painted(page, step)


def translate(page, text: str, read: str | None = None, step: int | None = 1):
    """Type ``text``, press Translate and wait until the viewer shows the sentence the model
    read (``read``: ``text`` itself unless markup or control characters were taken out), then
    go to ``step`` (None: stay on the step the viewer opened it on, its focus)."""
    page.locator("#src-text textarea").fill(text)
    before = page.evaluate("() => window.__explorer && window.__explorer.getState().sentence")
    # a new trace, even of the sentence on screen (a first visit opens on an example already drawn)
    serial = page.evaluate("() => window.__explorer ? window.__explorer.getState().sentenceId : -1")
    page.click("#translate-btn")
    page.wait_for_function(
        "([t, n]) => window.__explorer && window.__explorer.getState().sentence === t"
        " && window.__explorer.getState().sentenceId > n",
        arg=[text if read is None else read, serial],
    )
    painted(page)  # a new sentence opens on its own focus step
    # the event chained after it (the download file) ends too: a test that then counts the
    # page's requests must not see that event's own
    page.wait_for_selector("#download-trace:not([disabled])")
    if step is not None:
        go_to_step(page, step)
    return before


def steps(page) -> int:
    return state(page)["trace"]["steps"]


def open_section(page, name: str):
    """Open the viewer's collapsible section `name` (views, lens, pe): closed until asked for."""
    if not page.eval_on_selector(f"#sec-{name}", "d => d.open"):
        # on its marker: the summary's words may be glossary terms, which explain themselves instead
        page.locator(f"#sec-{name} > summary").click(position={"x": 10, "y": 10})
    page.wait_for_function("(n) => document.querySelector('#sec-' + n).open", arg=name)


def beam_tree_of(page, text: str):
    """Translate ``text``, run the beam panel's search and wait until its tree is drawn and fitted
    to its box (which the panel's opening may still widen)."""
    translate(page, text, step=None)
    open_panel(page, "beam-panel")
    page.click("#beam-btn")
    page.wait_for_function(
        "(t) => { const b = window.__explorer.getState().beam; return b && b.src_text === t; }", arg=text
    )
    page.wait_for_selector("#beam-tree svg")
    settled(page, "#beam-tree", "#beam-tree svg")


def open_panel(page, elem_id: str, tries: int = 3):
    """Open a panel's section (its gr.Accordion, e.g. "whatif-panel"): its view mounts when it first opens.

    A panel opened just before may still be growing as its content arrives; on a loaded machine
    that can move this label between Playwright's check of what lies under the pointer and the
    click itself, and the click lands on something else. So a click that leaves the panel closed
    is made again, a few times at most: a panel that never opens still fails."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    label = page.locator(f"#{elem_id} > .label-wrap")
    opened = f"#{elem_id} > .label-wrap.open"
    for _ in range(tries - 1):
        if "open" in (label.get_attribute("class") or "").split():
            return
        label.click()
        try:
            page.wait_for_selector(opened, timeout=15_000)
            return
        except PlaywrightTimeout:
            continue
    if "open" not in (label.get_attribute("class") or "").split():
        label.click()
    page.wait_for_selector(opened)


def press(page, sel: str, **where):
    """A click on a desktop, a tap on a phone (at `position`, if given)."""
    loc = page.locator(sel).first
    loc.scroll_into_view_if_needed()
    loc.tap(**where) if page.device == "phone" else loc.click(**where)


def load_script(path: str):
    """A script of the repository that is not a package module (``data/*.py``,
    ``benchmarks/*.py``), loaded from its file as a module, ``path`` relative to the root."""
    import importlib.util

    folder = str((ROOT / path).parent)  # its own folder, as when it runs: its _repo.py
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the explorer's own browser modules, run under Node.js --------------------------------------

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="needs Node.js (apt-get install nodejs) for the web modules")


def run_node(tmp_path: Path, entries: tuple[str, ...], script: str, data=None):
    """Run ``script`` (an ES module that prints one JSON value) beside the explorer's ``entries``
    and every module they import; return the printed value. ``data`` goes in on stdin as JSON."""
    from explorer.assets import module_sources

    for entry in entries:
        for name, text in module_sources(entry).items():
            (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    (tmp_path / "run.mjs").write_text(script, encoding="utf-8")
    r = subprocess.run(
        [NODE, "run.mjs"], cwd=tmp_path, input=json.dumps(data), capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


# --- small multilingual models (M2M100, NLLB-200, mBART-50), made with transformers (tests/test_convert_*.py)

# the language codes the tests translate between, as each family writes them
FAMILY_LANGS = {"m2m100": ("en", "it"), "nllb": ("eng_Latn", "ita_Latn"), "mbart50": ("en_XX", "it_IT")}


def train_fairseq_spm(lines: list[str], vocab_size: int, model_type: str) -> bytes:
    """A SentencePiece model as fairseq's multilingual models have them: SentencePiece's own
    special ids (<unk> = 0, <s> = 1, </s> = 2), which the tokenizers shift by one behind
    <s> <pad> </s> <unk> (``model_type``: "bpe" or "unigram")."""
    import io

    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=1.0,
        minloglevel=2,
        num_threads=1,
    )
    return buf.getvalue()


def write_fairseq_tokenizer(folder: Path, kind: str, spm_model: bytes):
    """The tokenizer of family ``kind`` ("m2m100", "nllb", "mbart50") over ``spm_model``, saved in
    ``folder`` as ``save_pretrained`` saves it (M2M100: vocab.json and the SentencePiece model;
    the others: tokenizer.json), with every language code of the family; returns it."""
    from transformers import M2M100Tokenizer, MBart50Tokenizer, NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    src, tgt = FAMILY_LANGS[kind]
    spm_dir = folder.parent / f".{folder.name}-spm"
    spm_dir.mkdir(parents=True, exist_ok=True)
    (spm_dir / "sentencepiece.bpe.model").write_bytes(spm_model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "m2m100":
            import sentencepiece as spm

            sp = spm.SentencePieceProcessor(model_proto=spm_model)
            vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
            for i in range(sp.get_piece_size()):
                if not (sp.is_control(i) or sp.is_unknown(i)):
                    vocab.setdefault(sp.id_to_piece(i), len(vocab))
            (spm_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
            tok = M2M100Tokenizer(
                str(spm_dir / "vocab.json"), str(spm_dir / "sentencepiece.bpe.model"), src_lang=src, tgt_lang=tgt
            )
        elif kind == "nllb":
            extra = {"extra_special_tokens": list(FAIRSEQ_LANGUAGE_CODES)}
            tok = NllbTokenizer.from_pretrained(spm_dir, src_lang=src, tgt_lang=tgt, **extra)
        else:
            # decoded as transformers decodes when a tokenizer asks for its clean-up (" ." -> ".")
            tok = MBart50Tokenizer.from_pretrained(
                spm_dir, src_lang=src, tgt_lang=tgt, clean_up_tokenization_spaces=True
            )
        tok.save_pretrained(folder)
    return tok


def load_fairseq_tokenizer(folder: Path, kind: str):
    """The transformers tokenizer saved in ``folder`` (``write_fairseq_tokenizer``), as a user loads it."""
    from transformers import M2M100Tokenizer, MBart50Tokenizer, NllbTokenizer

    cls = {"m2m100": M2M100Tokenizer, "nllb": NllbTokenizer, "mbart50": MBart50Tokenizer}[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.from_pretrained(folder)


def fairseq_model(kind: str, vocab_size: int, **switches):
    """A small transformers model of family ``kind`` with its published configs' switches (M2M100
    and NLLB: ReLU, scaled embeddings; mBART-50: GELU, scaled embeddings, its embedding norms and
    logits bias), pad 1, </s> 2, the decoder starting from </s>. ``switches`` override any."""
    from transformers import M2M100Config, M2M100ForConditionalGeneration, MBartConfig, MBartForConditionalGeneration

    settings = dict(
        vocab_size=vocab_size,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        activation_function="relu" if kind != "mbart50" else "gelu",
        scale_embedding=True,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        decoder_start_token_id=2,
        dropout=0.1,
        attention_dropout=0.0,
        activation_dropout=0.0,
        encoder_layerdrop=0.0,
        decoder_layerdrop=0.0,
    )
    settings.update(switches)
    if kind == "mbart50":
        return MBartForConditionalGeneration(MBartConfig(**settings))
    return M2M100ForConditionalGeneration(M2M100Config(**settings))


def jitter(model, scale: float = 0.1, seed: int = 0):
    """Every LayerNorm's gain and bias, and the logits bias, moved off their initial 1 and 0, so
    that a converter that mixes them up is caught. Returns the model."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.add_(scale * torch.randn(module.weight.shape, generator=g))
                module.bias.add_(scale * torch.randn(module.bias.shape, generator=g))
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.add_(5 * scale * torch.randn(model.final_logits_bias.shape, generator=g))
    return model


def train_multilingual(model, tok, pairs, steps: int, batch: int = 32, lr: float = 3e-3, seed: int = 0):
    """A few optimizer steps of teacher forcing on ``pairs`` in the tokenizer's src_lang and
    tgt_lang (sources ``lang x </s>``, labels ``lang y </s>``, which transformers shifts right
    behind </s>), so the model ends its sentences. Returns the model in eval mode."""
    torch.manual_seed(seed)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    src = [tok(s).input_ids for s, _ in pairs]
    tgt = [tok(text_target=t).input_ids for _, t in pairs]
    pad = model.config.pad_token_id
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(pairs), (batch,), generator=g).tolist()
        x = _padded([src[i] for i in idx], pad)
        loss = model(input_ids=x, attention_mask=(x != pad).long(), labels=_padded([tgt[i] for i in idx], -100)).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def hf_generate(model, tok, texts: list[str], tgt_lang_id: int, limit: int, **settings) -> list[list[int]]:
    """transformers' output ids for each sentence (one at a time), forced to begin with the
    target language, without the start token and the padding after </s>; pad banned, as our
    decoders never emit it, and no forced </s> at the limit (ours leaves such a sentence open)."""
    out = []
    for text in texts:
        x = tok([text], return_tensors="pt")
        with torch.no_grad():
            ids = model.generate(
                **x,
                max_new_tokens=limit,
                forced_bos_token_id=tgt_lang_id,
                bad_words_ids=[[model.config.pad_token_id]],
                forced_eos_token_id=None,
                do_sample=False,
                **settings,
            )[0].tolist()[1:]
        eos = model.config.eos_token_id
        out.append(ids[: ids.index(eos) + 1] if eos in ids else ids)
    return out


def build_multilingual_like(root: Path, kind: str, train_steps: int = 0) -> Path:
    """A small ``kind`` model ("m2m100", "nllb", "mbart50") with a SentencePiece tokenizer trained
    on our corpus (BPE for M2M100 and NLLB, unigram for mBART-50), saved in ``root/hf`` as the Hub
    has them (model, tokenizer, generation config), then converted with ``python -m
    transformer.cli.convert`` into ``root/<kind>-tiny``: that folder. ``train_steps``: teacher
    forcing, so it ends its sentences; else random weights (a larger init, so no two logits are
    near-ties that float rounding could swap) with the norms and logits bias jittered."""
    from transformer.cli import convert

    pairs = tatoeba_pairs("train", 3000)
    with single_thread():
        spm_model = train_fairseq_spm([s for p in pairs for s in p], 600, "unigram" if kind == "mbart50" else "bpe")
        tok = write_fairseq_tokenizer(root / "hf", kind, spm_model)
        # the embedding rows fairseq adds past the tokenizer: M2M100's 8 "madeupword"s, NLLB's 2
        extra = {"m2m100": 100 + 8, "nllb": 2, "mbart50": 0}[kind]
        size = (len(tok.encoder) if kind == "m2m100" else len(tok)) + extra
        torch.manual_seed(0)
        model = fairseq_model(kind, size, **({} if train_steps else {"init_std": 0.2}))
        if train_steps:
            short = [p for p in pairs if len(p[0]) <= 40]
            model = train_multilingual(model, tok, short, train_steps, lr=5e-3)
            # how fast so small a model learns to end its sentences depends on the CPU's arithmetic:
            # a few more steps until it ends the short test sentences
            for more in range(1, 6):
                if ends_its_sentences(model, tok):
                    break
                model = train_multilingual(model, tok, short, 50, lr=3e-3, seed=more)
        else:
            model = jitter(model.eval())
    model.generation_config.forced_eos_token_id = None
    model.save_pretrained(root / "hf")
    assert convert.main([str(root / "hf"), "--out", str(root / f"{kind}-tiny")]) == 0
    return root / f"{kind}-tiny"


def short_test_sources(n: int) -> list[str]:
    """``n`` test sentences as short as the ones the tiny models learn from (40 characters at most)."""
    return [en for en, _ in tatoeba_pairs("test", 10 * n) if len(en) <= 40][:n]


def ends_its_sentences(model, tok, n: int = 6) -> bool:
    """transformers' greedy decoding ends all of ``n`` short test sentences but one with </s>."""
    lang = tok.convert_tokens_to_ids(tok.tgt_lang if "_" in tok.tgt_lang else f"__{tok.tgt_lang}__")
    outs = hf_generate(model, tok, short_test_sources(n), lang, 40, num_beams=1)
    return sum(model.config.eos_token_id in ids for ids in outs) >= n - 1


def converted_and_source(folder: Path, kind: str):
    """(our Translator, transformers model with eager attention, its tokenizer) of a converted
    checkpoint ``folder`` made by ``build_multilingual_like``."""
    from transformers import AutoModelForSeq2SeqLM

    from transformer import load_translator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_pretrained(folder.parent / "hf", attn_implementation="eager")
    return load_translator(folder), model.eval(), load_fairseq_tokenizer(folder.parent / "hf", kind)


def assert_teacher_forced_matches(tr, model, tok, pairs, src_lang: str, tgt_lang: str):
    """Same inputs, same logits (within 1e-4) and the same attention weights (within 1e-5:
    encoder, decoder self, cross) as transformers' on a padded batch: sources ``lang x </s>``,
    the decoder fed </s> then ``lang y``. Only real positions are compared: padded ones are no
    model's output (ours masks padded decoder inputs as keys, and M2M100 gives them no position)."""
    tok.src_lang, tok.tgt_lang = src_lang, tgt_lang
    x = tok([s for s, _ in pairs], text_target=[t for _, t in pairs], return_tensors="pt", padding=True)
    start = torch.full((len(pairs), 1), tr.cfg.tgt_sos_id)
    dec_in = torch.cat([start, x["labels"][:, :-1]], dim=1)  # (B, T): </s> lang y1 ...
    real, S = dec_in != tr.cfg.tgt_pad_id, x["attention_mask"].sum(dim=1)
    with torch.no_grad():
        theirs = model(**x, decoder_input_ids=dec_in, output_attentions=True)
        ours = tr.model(x["input_ids"], dec_in, need_weights=True)
    assert ours.logits.shape == theirs.logits.shape
    torch.testing.assert_close(ours.logits[real], theirs.logits[real], atol=1e-4, rtol=0)
    kinds = (
        (ours.encoder_attn, theirs.encoder_attentions, lambda b: (slice(0, S[b]), slice(0, S[b]))),
        (ours.decoder_self_attn, theirs.decoder_attentions, lambda b: (real[b], real[b])),
        (ours.cross_attn, theirs.cross_attentions, lambda b: (real[b], slice(0, S[b]))),
    )
    for ours_w, theirs_w, cut in kinds:
        assert len(ours_w) == len(theirs_w)
        for o, t in zip(ours_w, theirs_w):  # per layer (B, H, rows, keys)
            for b in range(len(pairs)):
                rows, keys = cut(b)
                torch.testing.assert_close(o[b][:, rows][:, :, keys], t[b][:, rows][:, :, keys], atol=1e-5, rtol=0)
