"""Server-side cost of the app's callbacks, measured in-process (no browser, no HTTP).

    python benchmarks/app_timing.py [--checkpoint checkpoints/en-it] [--repeat 7] [--skip-startup]

The server only runs the model and sends one compact payload; stepping and view
changes are drawn in the browser and cost the server nothing (benchmarks/ui_latency.py checks
that no request is made). What is left to time, for a 10-word and a 126-token sentence:

- translate: the whole Translate callback (``App.translate``): trace, payload JSON, trace file
  for the download button, notices; and its parts:
  - trace: ``Translator.trace`` alone (the model, greedy decoding with every weight kept);
  - payload: the viewer block's value (``encode_trace``, the quantised payload the viewer
    draws from, as JSON) and its size;
  - trace_file: ``write_trace_file`` (full-precision JSON, hashed; written once per content);
- api: the public ``/translate`` API (``App.api_translate``) plus ``json.dumps`` of what it
  returns, as Gradio must serialise it;
- *_extra: the same callbacks with ``Translator.trace`` answered from memory, i.e. their cost
  besides the model; ``api_extra_vs_model`` = api_extra / trace (the JSON must not
  cost more than the model does, i.e. <= 1);
- epochs (when the checkpoint has snapshots): loading them (``load_snapshots``, part of
  start-up), the first trace of each snapshot for the 10-word sentence (its own translation plus
  the forced trace, as the training-epoch control asks for it; median and max over --repeat
  runs, each with an empty cache), and the same request again (answered from the cache);
- startup: from ``python app.py`` to the first HTTP answer.
Medians over --repeat runs. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words
LONG_FILLER = (
    "The book that I bought yesterday is very interesting, and my friends want to read it "
    "before we go to the sea with our parents next summer. "
)


def timed(fn, repeat: int) -> tuple[float, object]:
    """(median ms, last result) of fn() over repeat runs."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1), out


def long_sentence(tr, n_tokens: int) -> str:
    """Text the source tokenizer reads as exactly n_tokens subwords (the app's cap is 126)."""
    from transformer.core.tokenizer import encode

    words = (LONG_FILLER * 20).split()
    n = next(k for k in range(1, len(words) + 1) if len(encode(tr.src_tok, " ".join(words[:k]))) >= n_tokens)
    text = " ".join(words[:n])
    while len(encode(tr.src_tok, text)) > n_tokens:
        text = text[:-1]
    return text


def startup_seconds(checkpoint: str, timeout: float) -> float:
    """Seconds from ``python app.py`` until its page answers (nan if it never does), started by
    the launcher the tests use (``explorer.launch``)."""
    from explorer.launch import AppDidNotStart, running_app

    try:
        with running_app(checkpoint, timeout=timeout) as app:
            return app.seconds
    except AppDidNotStart:
        return float("nan")


def measure(app, text: str, repeat: int) -> dict:
    from explorer.downloads import write_trace_file
    from explorer.blocks import message
    from explorer.payload import encode_trace

    tr = app.tr
    trace_ms, trace = timed(lambda: tr.trace(text), repeat)
    payload_ms, payload = timed(lambda: message(encode_trace(trace, origin="translate")), repeat)
    file_ms, _ = timed(lambda: write_trace_file(trace), repeat)
    translate_ms, out = timed(lambda: app.translate(text), repeat)
    if not isinstance(out, dict) or app.viewer not in out or not out[app.viewer]:
        raise RuntimeError(f"App.translate did not fill the viewer for {text[:40]!r}: {str(out)[:300]}")
    api_ms, api_json = timed(lambda: json.dumps(app.api_translate(text), ensure_ascii=False), repeat)
    # the same two callbacks with the model call answered from memory: what they cost on top
    # of the model, measured directly rather than as a difference of two noisy medians
    # (the callbacks reach the model through the app's TraceBatcher, so that is what is answered
    # from memory; instance attributes shadow the methods)
    tr.trace = app.batcher.trace = lambda *args, **kwargs: trace
    try:
        translate_extra_ms, _ = timed(lambda: app.translate(text), repeat)
        api_extra_ms, _ = timed(lambda: json.dumps(app.api_translate(text), ensure_ascii=False), repeat)
    finally:
        del tr.trace, app.batcher.trace
    return {
        "src_tokens": len(trace.src_tokens),
        "steps": trace.steps,
        "translate_ms": translate_ms,
        "trace_ms": trace_ms,
        "translate_extra_ms": translate_extra_ms,
        "payload_ms": payload_ms,
        "trace_file_ms": file_ms,
        "payload_kb": round(len(payload.encode()) / 1000, 1),
        "api_ms": api_ms,
        "api_extra_ms": api_extra_ms,
        "api_kb": round(len(api_json.encode()) / 1000, 1),
        "api_extra_vs_model": round(api_extra_ms / trace_ms, 2),
    }


def measure_epochs(app, text: str, repeat: int) -> dict | None:
    """The training-epoch panel on one sentence: snapshot loading, then ``repeat`` times the
    first request with an empty cache (each snapshot's own trace time) and the request again."""
    from explorer.panels.epochs import EpochCache, load_snapshots

    panel = app.panel("epochs")
    if not panel.snapshots:
        return None
    t0 = time.perf_counter()
    load_snapshots(app.tr.directory)
    load_s = time.perf_counter() - t0
    trace = app.tr.trace(text)
    per_snapshot, again = [], []
    for _ in range(repeat):
        panel.cache = EpochCache()  # cold: nothing traced yet
        data = panel.epoch_data(trace)
        per_snapshot.append([s["trace_ms"] for s in data["snapshots"]])
        again.append(timed(lambda: panel.epoch_data(trace), 1)[0])
    columns = list(zip(*per_snapshot))
    return {
        "snapshots": [s["epoch"] for s in data["snapshots"]],
        "load_s": round(load_s, 2),
        "first_trace_median_ms": [round(statistics.median(c), 1) for c in columns],
        "first_trace_max_ms": [round(max(c), 1) for c in columns],
        "again_ms": statistics.median(again),
        "repeat": repeat,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Server-side timings of the app's callbacks (in-process).")
    p.add_argument("--checkpoint", default="checkpoints/en-it", help="checkpoint directory or hub repo id")
    p.add_argument("--repeat", type=int, default=7, help="timed repeats (median kept)")
    p.add_argument("--long-tokens", type=int, default=126, help="source tokens of the long sentence")
    p.add_argument("--skip-startup", action="store_true", help="do not time `python app.py` start-up")
    p.add_argument("--startup-timeout", type=float, default=240, help="seconds to wait for app.py to answer")
    args = p.parse_args(argv)
    if args.repeat < 1 or args.long_tokens < 1:
        print("error: --repeat and --long-tokens must be at least 1", file=sys.stderr)
        return 2

    from explorer.page import App
    from transformer.cli import load_translator_or_exit

    tr = load_translator_or_exit(args.checkpoint)
    app = App(tr)
    app.build()  # callbacks return dicts keyed by the components build() makes
    app.translate(SENTENCE)  # warm-up: first calls allocate and load code paths
    result = {"sentence_words": len(SENTENCE.split()), "short": measure(app, SENTENCE, args.repeat)}
    result[f"long_{args.long_tokens}_tokens"] = measure(
        app, long_sentence(tr, args.long_tokens), max(1, args.repeat // 2)
    )
    result["epochs"] = measure_epochs(app, SENTENCE, args.repeat)
    if not args.skip_startup:
        result["startup_s"] = round(startup_seconds(args.checkpoint, args.startup_timeout), 2)
    for name in ("short", f"long_{args.long_tokens}_tokens"):
        r = result[name]
        print(
            f"{name} ({r['src_tokens']} source tokens, {r['steps']} steps): Translate callback {r['translate_ms']} ms:"
            f" model {r['trace_ms']} ms + {r['translate_extra_ms']} ms besides the model (payload {r['payload_ms']} ms,"
            f" {r['payload_kb']} KB; trace file {r['trace_file_ms']} ms); /translate API {r['api_ms']} ms, of which "
            f"{r['api_extra_ms']} ms besides the model = {r['api_extra_vs_model']}x the model ({r['api_kb']} KB JSON)"
        )
    e = result["epochs"]
    if e is None:
        print("epochs: the checkpoint has no snapshots")
    else:
        print(
            f"epochs {e['snapshots']}: loading the snapshots {e['load_s']} s; first trace of each (10 words, "
            f"{e['repeat']} runs): median {e['first_trace_median_ms']} ms, max {e['first_trace_max_ms']} ms; "
            f"again (cached): {e['again_ms']} ms"
        )
    print(f"startup {result.get('startup_s', 'n/a')} s")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
