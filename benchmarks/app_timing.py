"""Server-side timings of the app, measured on this machine.

    python benchmarks/app_timing.py [--checkpoint checkpoints/en-it]

- translate: one full Translate (trace + every figure + trace file), figures serialised
  to JSON as Gradio sends them;
- step: one step update (prefix, top-k, attention view, all-heads grid, candidates);
- startup: from `python app.py` to the first HTTP answer.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import plotly.graph_objects as go

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import app as app_module  # noqa: E402
from transformer import load_translator, viewer  # noqa: E402

SENTENCE = "My sister bought a beautiful red dress for the party."  # 10 words


def serialise(outputs) -> int:
    """Bytes Gradio would send for the figures among ``outputs``."""
    return sum(len(o.to_json()) for o in outputs if isinstance(o, go.Figure))


def timed(fn, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        serialise(out)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), out


def startup_seconds(checkpoint: str) -> float:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py", "--checkpoint", checkpoint, "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - t0 < 120:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
                return time.perf_counter() - t0
            except OSError:
                time.sleep(0.1)
        return float("nan")
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="checkpoints/en-it", help="checkpoint directory or hub repo id")
    p.add_argument("--repeat", type=int, default=7, help="timed repeats (median kept)")
    p.add_argument("--skip-startup", action="store_true", help="do not time `python app.py` start-up")
    args = p.parse_args()
    app = app_module.App(load_translator(args.checkpoint))
    view = (viewer.CROSS, 0, "mean", False)
    translate_ms, out = timed(lambda: app.translate(SENTENCE, *view), args.repeat)
    trace = out[0]
    step_ms = {}
    for v in viewer.VIEWS:
        step_ms[v], step_out = timed(lambda: app.step(trace, trace.steps // 2, v, 1, "mean", False), args.repeat)
    result = {
        "sentence_words": len(SENTENCE.split()), "steps": trace.steps,
        "translate_ms": round(translate_ms, 1),
        "step_ms": round(max(step_ms.values()), 1),
        "step_ms_by_view": {k: round(v, 1) for k, v in step_ms.items()},
        "translate_payload_kb": round(serialise(out) / 1024, 1),
        "step_payload_kb": round(serialise(step_out) / 1024, 1),
    }
    if not args.skip_startup:
        result["startup_s"] = round(startup_seconds(args.checkpoint), 2)
    print(f"translate {result['translate_ms']} ms, step {result['step_ms']} ms (worst view), "
          f"startup {result.get('startup_s', 'n/a')} s")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
