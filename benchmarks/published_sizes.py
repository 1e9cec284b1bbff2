"""Published translation models at their real sizes, side by side with transformers, in one run.

    nice python benchmarks/published_sizes.py [--models opus-mt-en-it nllb-200-distilled-600M mbart-large-50]
        [--rounds 5] [--steps 13] [--threads 2] [--keep DIR]

For each model, a random-weight transformers model at the published configuration (config.json's
numbers, written here by hand: the Hub cannot be reached from this machine), with a small
SentencePiece tokenizer trained on our corpus (4000 pieces; the converter pads the vocabulary to
the model's rows with tokens no text reaches, so every matrix is full size). It is saved with
``save_pretrained``, converted with ``python -m transformer.cli.convert`` and measured in this one
process, our trace and transformers' ``generate`` in alternating rounds:

- ``trace_ms``: our ``Translator.trace`` of a 10-word sentence (every view the app draws: attention,
  top-k, rollout, head diagnostics; the logit lens is left out over 50,000 tokens, as the app's
  trace leaves it, ``translator.LENS_IN_TRACE_MAX_VOCAB``) against ``hf_generate_ms``: transformers'
  ``generate(num_beams=1, output_attentions=True, return_dict_in_generate=True)``, eager attention.
  Random weights never choose the end token, so both run exactly ``--steps`` decoder steps: ours
  with a forced prefix of that many ids ending on the end token (a multilingual model's language
  token counts as one, as it does in ``generate``), transformers' with max_new_tokens and
  min_new_tokens both ``--steps``. Median of the rounds; ``ratio`` = ours / transformers';
- ``payload_kb``: the viewer's payload of that trace as the page receives it
  (``explorer.payload.encode_trace`` as JSON, KB = 1000 bytes);
- ``server_ms``: what Translate costs the server, the trace and the payload's encoding (median);
- ``peak_rss_mb``: the peak resident memory (VmHWM) of a serving process of its own, which
  loads the converted checkpoint the way ``app.py`` does (``load_translator_or_exit``), traces the
  sentence and encodes its payload (no Gradio: its import adds the same ~150 MB to any model),
  as a multiple of the float32 weights (``peak_x_weights``); ``base_rss_mb`` is that process before
  the model loads (Python, torch, the payload module), ``model_x_weights`` what the model (its
  tokenizers included) and the Translate add to it. The ``hf_`` figures are the same for a
  process of transformers' own (``serve_once_hf``: the folder's model and tokenizer, one
  ``generate`` with attentions).

Targets: ratio <= 1.0, payload <= 250 KB, peak <= 1.5 x the weights. transformers' models and
ours are freed between models: a 600M-parameter model is 2.4 GB in float32. Needs the Marian
extra (``pip install -e ".[marian]"``: sentencepiece and transformers). Prints a table; the last
stdout line is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from _repo import ROOT  # the clone, first on sys.path

SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words, as benchmarks/speed.py
REFERENCE = "Mia sorella ha comprato un bel vestito rosso per la festa."  # ids to force (any words do)
CORPUS = ROOT / "data" / "tatoeba-en-it" / "train.jsonl"
SPM_PIECES = 4000
TARGETS = {"ratio": 1.0, "payload_kb": 250, "peak_x_weights": 1.5}
BART = dict(
    activation_dropout=0.0,
    attention_dropout=0.0,
    encoder_layerdrop=0.0,
    decoder_layerdrop=0.0,
    dropout=0.1,
    is_encoder_decoder=True,
)
# config.json of each model, by hand from the published files
MODELS = {
    "opus-mt-en-it": dict(
        family="marian",
        langs=("en", "it"),
        config=dict(
            vocab_size=80035,
            d_model=512,
            encoder_layers=6,
            decoder_layers=6,
            encoder_attention_heads=8,
            decoder_attention_heads=8,
            encoder_ffn_dim=2048,
            decoder_ffn_dim=2048,
            max_position_embeddings=512,
            activation_function="swish",
            scale_embedding=True,
            static_position_embeddings=True,
            pad_token_id=80034,
            decoder_start_token_id=80034,
            eos_token_id=0,
            bos_token_id=0,
            bad_words_ids=[[80034]],
            **BART,
        ),
    ),
    "nllb-200-distilled-600M": dict(
        family="nllb",
        langs=("eng_Latn", "ita_Latn"),
        config=dict(
            vocab_size=256206,
            d_model=1024,
            encoder_layers=12,
            decoder_layers=12,
            encoder_attention_heads=16,
            decoder_attention_heads=16,
            encoder_ffn_dim=4096,
            decoder_ffn_dim=4096,
            max_position_embeddings=1024,
            activation_function="relu",
            scale_embedding=True,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
            **BART,
        ),
    ),
    "mbart-large-50": dict(
        family="mbart50",
        langs=("en_XX", "it_IT"),
        config=dict(
            vocab_size=250054,
            d_model=1024,
            encoder_layers=12,
            decoder_layers=12,
            encoder_attention_heads=16,
            decoder_attention_heads=16,
            encoder_ffn_dim=4096,
            decoder_ffn_dim=4096,
            max_position_embeddings=1024,
            activation_function="gelu",
            scale_embedding=True,
            normalize_before=True,
            add_final_layer_norm=True,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            decoder_start_token_id=2,
            forced_eos_token_id=2,
            **BART,
        ),
    ),
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- building the transformers folder


def corpus_lines(n: int = 20000) -> list[tuple[str, str]]:
    with CORPUS.open(encoding="utf-8") as f:
        pairs = [json.loads(line)["translation"] for _, line in zip(range(n), f)]
    return [(p["en"], p["it"]) for p in pairs]


def train_spm(lines: list[str], model_type: str, **ids) -> bytes:
    import sentencepiece as spm

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines),
        model_writer=buf,
        vocab_size=SPM_PIECES,
        model_type=model_type,
        character_coverage=1.0,
        minloglevel=2,
        **ids,
    )
    return buf.getvalue()


def marian_tokenizer(folder: Path, pairs, vocab_size: int):
    """OPUS-MT's files: two SentencePiece models whose pieces fill vocab.json's first ids, the rest
    of the model's rows placeholders, <pad> last (as opus-mt-en-it has it)."""
    import sentencepiece as spm
    from transformers import MarianTokenizer

    ids = dict(bos_id=-1, eos_id=0, unk_id=1, pad_id=-1)
    src = train_spm([en for en, _ in pairs], "unigram", **ids)
    tgt = train_spm([it for _, it in pairs], "unigram", **ids)
    vocab = {"</s>": 0, "<unk>": 1}
    for proto in (src, tgt):
        sp = spm.SentencePieceProcessor(model_proto=proto)
        for i in range(sp.get_piece_size()):
            if not (sp.is_control(i) or sp.is_unknown(i)) and sp.id_to_piece(i) not in vocab:
                vocab[sp.id_to_piece(i)] = len(vocab)
    while len(vocab) < vocab_size - 1:
        vocab[f"<unused-{len(vocab)}>"] = len(vocab)
    vocab["<pad>"] = vocab_size - 1
    (folder / "source.spm").write_bytes(src)
    (folder / "target.spm").write_bytes(tgt)
    (folder / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    tok = MarianTokenizer(
        str(folder / "source.spm"), str(folder / "target.spm"), str(folder / "vocab.json"), "en", "it"
    )
    tok.save_pretrained(folder)
    return tok


def fairseq_tokenizer(folder: Path, pairs, family: str, langs: tuple[str, str]):
    """NLLB's or mBART-50's tokenizer.json over a SentencePiece model trained here (BPE for NLLB,
    unigram for mBART-50), with every language code of the family."""
    from transformers import MBart50Tokenizer, NllbTokenizer
    from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES

    spm_dir = folder.parent / "spm"
    spm_dir.mkdir()
    model_type = "bpe" if family == "nllb" else "unigram"
    (spm_dir / "sentencepiece.bpe.model").write_bytes(train_spm([s for p in pairs for s in p], model_type))
    if family == "nllb":
        extra = {"extra_special_tokens": list(FAIRSEQ_LANGUAGE_CODES)}
        tok = NllbTokenizer.from_pretrained(spm_dir, src_lang=langs[0], tgt_lang=langs[1], **extra)
    else:
        tok = MBart50Tokenizer.from_pretrained(spm_dir, src_lang=langs[0], tgt_lang=langs[1])
    tok.save_pretrained(folder)
    return tok


def build_folder(name: str, folder: Path) -> None:
    """The random-weight model ``name`` at its published configuration and its tokenizer, saved
    with ``save_pretrained`` in ``folder`` (float32, safetensors); the model is freed after."""
    import torch
    from transformers import (
        M2M100Config,
        M2M100ForConditionalGeneration,
        MarianConfig,
        MarianMTModel,
        MBartConfig,
        MBartForConditionalGeneration,
    )

    spec = MODELS[name]
    folder.mkdir(parents=True)
    pairs = corpus_lines()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if spec["family"] == "marian":
            marian_tokenizer(folder, pairs, spec["config"]["vocab_size"])
        else:
            fairseq_tokenizer(folder, pairs, spec["family"], spec["langs"])
    classes = {
        "marian": (MarianConfig, MarianMTModel),
        "nllb": (M2M100Config, M2M100ForConditionalGeneration),
        "mbart50": (MBartConfig, MBartForConditionalGeneration),
    }
    config_cls, model_cls = classes[spec["family"]]
    torch.manual_seed(0)
    model = model_cls(config_cls(**spec["config"])).eval()
    model.save_pretrained(folder)
    del model
    gc.collect()


# ---------------------------------------------------------------- measuring


def forced_ids(tr, steps: int) -> list[int]:
    """A forced prefix that makes our trace run exactly ``steps`` steps: words of the reference
    (repeated if need be), then the end token; the language token a multilingual model is forced
    to start with (``stepping.forced_start``) is one of the steps."""
    from transformer.core import stepping
    from transformer.core.tokenizer import encode

    words = [i for i in encode(tr.tgt_tok, REFERENCE) if i not in stepping.target_specials(tr.cfg)]
    n = steps - 1 - len(stepping.forced_start(tr.cfg))
    return [*(words * (n // len(words) + 1))[:n], tr.cfg.tgt_eos_id]


def hf_side(folder: Path, spec: dict):
    """(transformers model with eager attention, its inputs for the sentence, generate's kwargs)."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, attn_implementation="eager", dtype=torch.float32).eval()
        tok = AutoTokenizer.from_pretrained(folder)
    kwargs = {}
    if spec["family"] != "marian":
        tok.src_lang = spec["langs"][0]
        kwargs["forced_bos_token_id"] = tok.convert_tokens_to_ids(spec["langs"][1])
    return model, tok(SENTENCE, return_tensors="pt"), kwargs


def hf_generate(model, inputs, kwargs: dict, steps: int):
    out = model.generate(
        **inputs,
        num_beams=1,
        do_sample=False,
        output_attentions=True,
        return_dict_in_generate=True,
        max_new_tokens=steps,
        min_new_tokens=steps,
        **kwargs,
    )
    return out.sequences.shape[1] - 1  # the steps it ran (the decoder start is not one)


def our_translate(tr, forced: list[int]) -> tuple[object, dict]:
    """What Translate asks of the server: the trace, then the payload as the page receives it."""
    from explorer.payload import encode_trace

    trace = tr.trace(SENTENCE, forced_prefix=forced)
    return trace, encode_trace(trace)


def side_by_side(tr, hf: tuple, steps: int, rounds: int) -> dict:
    """Alternating rounds of our trace (+ payload) and transformers' generate; medians in ms."""
    import torch

    from explorer.payload import encode_trace

    model, inputs, kwargs = hf
    forced = forced_ids(tr, steps)
    with torch.no_grad():
        trace, payload = our_translate(tr, forced)  # warm-up, and the figures that do not vary
        hf_steps = hf_generate(model, inputs, kwargs, steps)
        if trace.steps != steps or hf_steps != steps or len(trace.src_ids) != inputs["input_ids"].shape[1]:
            raise SystemExit(f"not the same work: {trace.steps} / {hf_steps} steps, {len(trace.src_ids)} source ids")
        times = {"trace": [], "server": [], "hf": []}
        for _ in range(rounds):
            t0 = time.perf_counter()
            trace = tr.trace(SENTENCE, forced_prefix=forced)
            t1 = time.perf_counter()
            json.dumps(encode_trace(trace), separators=(",", ":"))
            t2 = time.perf_counter()
            hf_generate(model, inputs, kwargs, steps)
            t3 = time.perf_counter()
            times["trace"].append((t1 - t0) * 1000)
            times["server"].append((t2 - t0) * 1000)
            times["hf"].append((t3 - t2) * 1000)
    med = {k: round(statistics.median(v), 1) for k, v in times.items()}
    return {
        "steps": steps,
        "source_ids": len(trace.src_ids),
        "trace_ms": med["trace"],
        "hf_generate_ms": med["hf"],
        "ratio": round(med["trace"] / med["hf"], 2),
        "server_ms": med["server"],
        "payload_kb": round(len(json.dumps(payload, separators=(",", ":")).encode()) / 1000, 1),
        "rounds_trace_ms": [round(t) for t in times["trace"]],
        "rounds_hf_ms": [round(t) for t in times["hf"]],
    }


# ---------------------------------------------------------------- the serving process


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory now (VmRSS), or its peak (VmHWM), in MB. Not ru_maxrss: a
    process started by another inherits its parent's peak there (Linux keeps the larger of the two
    across exec), and this benchmark's parent holds two models."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1000
    return float("nan")


def serve_once(checkpoint: str, steps: int, threads: int) -> dict:
    """The serving process's memory: what app.py imports and loads, one Translate, ru_maxrss."""
    import torch

    import explorer.payload  # noqa: F401  (the app's payload module, before the baseline)
    from transformer.cli import load_translator_or_exit

    torch.set_num_threads(threads)
    base = rss_mb()
    tr = load_translator_or_exit(checkpoint)
    loaded = rss_mb()
    with torch.no_grad():
        trace, payload = our_translate(tr, forced_ids(tr, steps))
        json.dumps(payload, separators=(",", ":"))
    weights = sum(p.numel() * 4 for p in tr.model.parameters()) / 1e6  # float32, tied matrices once
    peak = rss_mb("VmHWM")
    return {
        "weights_fp32_mb": round(weights, 1),
        "base_rss_mb": round(base, 1),
        "loaded_rss_mb": round(loaded, 1),
        "peak_rss_mb": round(peak, 1),
        "peak_x_weights": round(peak / weights, 2),
        "model_x_weights": round((peak - base) / weights, 2),
        "traced_steps": trace.steps,
    }


def serve_once_hf(folder: str, name: str, steps: int, threads: int) -> dict:
    """The same for transformers on the same weights: its model and tokenizer loaded from the
    folder the checkpoint was converted from, one ``generate`` with attentions, VmHWM."""
    import torch
    import transformers  # noqa: F401  (before the baseline, as the payload module is for ours)

    torch.set_num_threads(threads)
    base = rss_mb()
    model, inputs, kwargs = hf_side(Path(folder), MODELS[name])
    with torch.no_grad():
        hf_generate(model, inputs, kwargs, steps)
    weights = sum(p.numel() * 4 for p in model.parameters()) / 1e6
    peak = rss_mb("VmHWM")
    return {
        "hf_base_rss_mb": round(base, 1),
        "hf_peak_rss_mb": round(peak, 1),
        "hf_peak_x_weights": round(peak / weights, 2),
        "hf_model_x_weights": round((peak - base) / weights, 2),
    }


def serving_memory(checkpoint: Path, steps: int, threads: int, hf: tuple[Path, str] | None = None) -> dict:
    """:func:`serve_once` in a fresh process (this one holds transformers' model too); with ``hf``
    (the transformers folder, the model's name), :func:`serve_once_hf` in another."""
    common = ["--steps", str(steps), "--threads", str(threads)]
    cmd = [sys.executable, __file__, "--serve", str(checkpoint), *common]
    if hf is not None:
        cmd = [sys.executable, __file__, "--serve-hf", str(hf[0]), "--models", hf[1], *common]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if done.returncode != 0:
        raise SystemExit(f"the serving process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- Translate -> paint in a browser
SHORT = ["Hello.", "Thanks.", "Good night.", "Welcome.", "Come in."]  # random weights run 2S + 10 steps


def browser_translate(checkpoint: Path, args) -> dict:
    """Translate -> paint in headless Chromium: ``python app.py`` on the converted checkpoint, a
    desktop page, then for each of ``SHORT`` a click on Translate, timed in the page from the click
    until the store holds that sentence's new trace and two animation frames have passed (the
    viewer draws the map when the trace arrives; the second frame is the one that shows it).
    Random weights never end a sentence, so a trace runs to its step limit
    (``decoding.max_new_tokens``, 2S + 10): these short sentences run 16-22 steps, more than the
    13 the trace figures use. Each Translate waits for the last one's trace first."""
    from playwright.sync_api import sync_playwright

    import ui_latency as ui
    from explorer.launch import find_chromium

    extra = ["--torch-threads", str(args.threads)]
    out = {"translate_paint_ms": [], "translate_steps": []}
    with ui.app_server(str(checkpoint), extra, timeout=900) as (url, started_s), sync_playwright() as p:
        out["app_start_s"] = round(started_s, 1)
        browser = p.chromium.launch(executable_path=find_chromium(), args=ui.CHROME_ARGS, headless=True)
        page = browser.new_context(viewport=ui.VIEWPORT).new_page()
        page.goto(url)
        page.wait_for_function("() => window.__explorer && window.__explorer.getState().trace", timeout=600_000)
        for i, text in enumerate([SHORT[-1], *SHORT]):  # the first warms the server and the page
            page.locator("#src-text textarea").fill(text)
            ms = page.evaluate(CLICK_TO_PAINT, text)
            steps = page.evaluate("() => window.__explorer.getState().trace.steps")
            log(f"  Translate {text!r}: {ms:.0f} ms to paint, {steps} steps" + (" (warm-up)" if i == 0 else ""))
            if i:
                out["translate_paint_ms"].append(round(ms))
                out["translate_steps"].append(steps)
        browser.close()
    out["translate_paint_median_ms"] = statistics.median(out["translate_paint_ms"])
    return out


# the click on Translate until the store holds a new trace of `text`, plus two frames (in the page)
CLICK_TO_PAINT = """async (text) => {
  const before = window.__explorer.getState().sentenceId, t0 = performance.now();
  document.querySelector("#translate-btn").click();
  const frame = () => new Promise((r) => requestAnimationFrame(r));
  for (;;) {
    const s = window.__explorer.getState();
    if (s.sentenceId !== before && s.sentence === text && s.trace) break;
    await frame();
  }
  await frame();
  await frame();
  return performance.now() - t0;
}"""


# ---------------------------------------------------------------- one model, all models


def measure(name: str, work: Path, args) -> dict:
    """Build, convert and measure one model; everything it loaded is freed before it returns."""
    import torch

    from transformer.cli import convert
    from transformer import load_translator

    spec, hf_dir, ours_dir = MODELS[name], work / name / "hf", work / name / "converted"
    t0 = time.perf_counter()
    build_folder(name, hf_dir)
    build_s = time.perf_counter() - t0
    log(f"{name}: built the random-weight transformers folder in {build_s:.0f} s")
    t0 = time.perf_counter()
    if convert.main([str(hf_dir), "--out", str(ours_dir)]) != 0:
        raise SystemExit(f"{name}: conversion failed")
    convert_s = time.perf_counter() - t0
    gc.collect()
    tr = load_translator(ours_dir)
    params = sum(p.numel() for p in tr.model.parameters())
    hf = hf_side(hf_dir, spec)
    log(f"{name}: {params / 1e6:.0f}M parameters; {args.rounds} alternating rounds of {args.steps} steps")
    figures = side_by_side(tr, hf, args.steps, args.rounds)
    del tr, hf
    gc.collect()
    torch.set_num_threads(args.threads)
    log(f"{name}: the serving process's memory")
    memory = serving_memory(ours_dir, args.steps, args.threads)
    memory |= serving_memory(ours_dir, args.steps, args.threads, hf=(hf_dir, name))
    if args.browser:
        log(f"{name}: Translate -> paint in a browser")
        memory |= browser_translate(ours_dir, args)
    if not args.keep:
        shutil.rmtree(work / name, ignore_errors=True)
    return {"params_m": round(params / 1e6, 1), "build_s": round(build_s), "convert_s": round(convert_s, 1)} | {
        **figures,
        **memory,
    }


def print_table(results: dict, args, seconds: float) -> None:
    rows = [
        ("parameters (M)", "params_m", ""),
        ("conversion (s)", "convert_s", ""),
        (f"our trace, {args.steps} steps (ms)", "trace_ms", ""),
        (f"transformers generate, {args.steps} steps (ms)", "hf_generate_ms", ""),
        ("ours / transformers", "ratio", "<= 1.0"),
        ("server: trace + payload (ms)", "server_ms", ""),
        ("payload (KB)", "payload_kb", "<= 250"),
        ("float32 weights (MB)", "weights_fp32_mb", ""),
        ("serving process: before the model (MB)", "base_rss_mb", ""),
        ("serving process: peak RSS (MB)", "peak_rss_mb", ""),
        ("peak / weights", "peak_x_weights", "<= 1.5"),
        ("(peak - before the model) / weights", "model_x_weights", ""),
        ("transformers' serving process: before the model (MB)", "hf_base_rss_mb", ""),
        ("transformers' serving process: peak RSS (MB)", "hf_peak_rss_mb", ""),
        ("transformers' peak / weights", "hf_peak_x_weights", ""),
        ("transformers' (peak - before the model) / weights", "hf_model_x_weights", ""),
    ]
    if args.browser:
        rows += [
            ("app start (s)", "app_start_s", ""),
            ("Translate -> paint in Chromium, median (ms)", "translate_paint_median_ms", "<= 5000"),
            ("  each (ms)", "translate_paint_ms", ""),
            ("  their decoder steps", "translate_steps", ""),
        ]
    names = list(results)
    print(f'"{SENTENCE}", {args.rounds} alternating rounds, torch threads {args.threads}, {seconds / 60:.0f} min')
    print(f"| | {' | '.join(names)} | target |")
    print(f"|---|{'---|' * len(names)}---|")
    for label, key, target in rows:
        print(f"| {label} | {' | '.join(str(results[n][key]) for n in names)} | {target} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--rounds", type=int, default=5, help="alternating timed rounds per model (median)")
    p.add_argument("--steps", type=int, default=13, help="decoder steps of both (our model's for the sentence)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads (a Space has 2 cores)")
    p.add_argument("--browser", action="store_true", help="also time Translate -> paint in headless Chromium")
    p.add_argument("--keep", default=None, help="keep the transformers folders and converted checkpoints here")
    p.add_argument("--serve", default=None, help=argparse.SUPPRESS)  # the serving process (serving_memory)
    p.add_argument("--serve-hf", default=None, help=argparse.SUPPRESS)  # transformers' (serving_memory)
    args = p.parse_args(argv)
    if args.serve:
        print(json.dumps(serve_once(args.serve, args.steps, args.threads)))
        return 0
    if args.serve_hf:
        print(json.dumps(serve_once_hf(args.serve_hf, args.models[0], args.steps, args.threads)))
        return 0
    import torch

    torch.set_num_threads(args.threads)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="published-sizes-"))
    t0, results = time.perf_counter(), {}
    try:
        for name in args.models:
            results[name] = measure(name, work, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    seconds = time.perf_counter() - t0
    print_table(results, args, seconds)
    verdict = {n: {k: r[k] <= v for k, v in TARGETS.items()} for n, r in results.items()}
    print(json.dumps({"minutes": round(seconds / 60, 1), "results": results, "within_target": verdict}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
