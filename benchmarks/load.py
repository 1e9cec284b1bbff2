"""Many visitors at once: translations through the app's public `/translate` API.

    python benchmarks/load.py [--checkpoint checkpoints/en-it] [--url http://127.0.0.1:7860/]
    python benchmarks/load.py --sweep torch-threads=2,concurrency=1 torch-threads=1,concurrency=2

Starts ``python app.py`` on a free port (or uses --url) and, with gradio_client:
- alone: every sentence once, one call at a time, from one client (latency, throughput);
- concurrent: --visitors clients (24), each in its own thread (or process, --visitor-processes),
  send --requests (48) sentences
  between them, all released at once; p50/p95/max latency from submit to result, throughput
  (requests / wall time), errors;
- identical: every concurrent result (translation and trace dict) equals the one-at-a-time
  result for the same sentence: text, tokens and ids exactly, numbers within --atol (1e-4),
  because the app traces sentences that arrive together in one padded batch.
Prints the figures, then one JSON line with the figures and pass/fail of the target
(0 errors, identical results, p95 <= 2 s).

--sweep starts the app once per setting, so the ways of sharing the 2 cores can be compared.
A setting is key=value pairs separated by commas, each passed to app.py as --key=value:
  concurrency=N     requests the Gradio queue runs at once (app.py --concurrency);
  torch-threads=N   torch intra-op threads of the app process (app.py --torch-threads);
  threads=N         short for torch-threads=N;
  max-batch=N       sentences traced together at most (app.py --max-batch);
  client-tls=fresh  the visitors' gradio_client builds a new TLS context per call, as it does
                    by default (the benchmark otherwise gives them one shared context: a real
                    visitor's client runs on their own machine, see shared_tls_context).
Exit code 0 when it ran (whether or not the target passes), 2 on bad flags or an app that does
not start.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from ui_latency import app_server as start_app  # benchmarks/ is on sys.path when run as a script

from _repo import ROOT  # the clone, first on sys.path
from transformer.cli import DEFAULT_CHECKPOINT  # noqa: E402
from transformer.core.wire import unpack_arrays  # noqa: E402

TEST_SET = ROOT / "data" / "tatoeba-en-it" / "test.jsonl"
FALLBACK = [
    "I have a red car.",
    "I don't like coffee.",
    "The book that I bought yesterday is very interesting.",
    "Tom gave Mary a beautiful present for her birthday.",
    "We will go to the beach tomorrow if it doesn't rain.",
    "My sister is tall.",
    "Where is the station?",
    "The children play outside.",
]
P95_TARGET_S = 2.0


def log(msg: str) -> None:
    print(msg, flush=True)


def sentences(n: int) -> list[str]:
    """n distinct English sentences of everyday length: the test split if present (the
    first n of 5 to 20 words, in file order), else a built-in list repeated with numbers."""
    out = []
    if TEST_SET.is_file():
        with TEST_SET.open(encoding="utf-8") as f:
            for line in f:
                en = json.loads(line)["translation"]["en"].strip()
                if 5 <= len(en.split()) <= 20 and en not in out:
                    out.append(en)
                if len(out) == n:
                    return out
    i = 0
    while len(out) < n:
        s = FALLBACK[i % len(FALLBACK)]
        out.append(s if i < len(FALLBACK) else f"{s[:-1]} {i}{s[-1]}")
        i += 1
    return out


def parse_setting(text: str) -> dict[str, str]:
    """'threads=1,concurrency=2' -> {'torch-threads': '1', 'concurrency': '2'}.
    ``client-tls`` is the benchmark's own (shared or fresh), the rest are app.py flags."""
    out = {}
    for part in filter(None, text.split(",")):
        if "=" not in part:
            raise ValueError(f"setting {text!r}: expected key=value pairs separated by commas")
        k, v = (x.strip() for x in part.split("=", 1))
        out["torch-threads" if k == "threads" else k] = v
    for k in ("torch-threads", "concurrency", "max-batch"):
        if k in out and not out[k].isdigit():
            raise ValueError(f"setting {text!r}: {k} must be a non-negative integer")
    if out.get("client-tls", "shared") not in ("shared", "fresh"):
        raise ValueError(f"setting {text!r}: client-tls must be 'shared' or 'fresh'")
    return out


@contextmanager
def app_server(checkpoint: str, setting: dict[str, str], extra: list[str], timeout: float):
    """``python app.py`` on a free port with one setting (started as ui_latency.py does); yields its URL."""
    flags = [f"--{k}={v}" for k, v in setting.items()]
    with start_app(checkpoint, [*flags, *extra], timeout) as (url, _seconds):
        yield url


_TLS_CONTEXT = None


def shared_tls_context():
    """One verifying TLS context for every visitor's client in this process.

    gradio_client builds two httpx clients per call, and httpx loads the whole CA bundle into
    a fresh ``ssl.SSLContext`` for each (about 20-35 ms of CPU, even for an http:// URL). A
    real visitor pays that on their own machine; here the visitors share the app's 2 cores,
    so it would be charged to the server. Handing gradio_client one context (its
    ``ssl_verify`` goes to httpx as ``verify=``) keeps certificate checks and drops the cost.
    ``client-tls=fresh`` in --sweep measures gradio_client's default side by side.
    """
    global _TLS_CONTEXT
    if _TLS_CONTEXT is None:
        import ssl

        import certifi

        _TLS_CONTEXT = ssl.create_default_context(cafile=certifi.where())
    return _TLS_CONTEXT


def client(url: str, fresh_tls: bool = False):
    """A gradio_client ``Client`` for one visitor (see ``shared_tls_context`` for ``fresh_tls``)."""
    from gradio_client import Client

    if fresh_tls:
        return Client(url, verbose=False)
    return Client(url, verbose=False, ssl_verify=shared_tls_context())


API_NAME = "/translate"


def call(c, text: str, api_name: str = API_NAME) -> tuple[float, object, str | None]:
    """(seconds, result, error message) of one `/translate` call."""
    t0 = time.perf_counter()
    try:
        out = c.predict(text, api_name=api_name)
        return time.perf_counter() - t0, out, None
    except Exception as exc:  # noqa: BLE001 - every failure counts as an error of the run
        return time.perf_counter() - t0, None, f"{type(exc).__name__}: {exc}"[:300]


def normalise(result):
    """(translation, trace dict): a trace sent as a JSON string or file path is read."""
    if result is None:
        return None
    translation, trace = result
    if isinstance(trace, str):
        p = Path(trace)
        trace = json.loads(p.read_text(encoding="utf-8") if p.is_file() else trace)
    return [translation, as_lists(unpack_arrays(trace))]


def as_lists(obj):
    """Unpacked numpy arrays as nested lists, so ``max_diff`` compares them number by number."""
    if isinstance(obj, dict):
        return {k: as_lists(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [as_lists(v) for v in obj]
    return obj.tolist() if hasattr(obj, "tolist") else obj


def max_diff(a, b, path="") -> tuple[float, str | None]:
    """(largest numeric difference, first non-numeric mismatch path or None)."""
    if isinstance(a, bool) or isinstance(b, bool) or not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        if isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return 0.0, f"{path}: keys differ"
            worst, bad = 0.0, None
            for k in a:
                d, m = max_diff(a[k], b[k], f"{path}.{k}")
                worst, bad = max(worst, d), bad or m
            return worst, bad
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return 0.0, f"{path}: lengths {len(a)} != {len(b)}"
            worst, bad = 0.0, None
            for i, (x, y) in enumerate(zip(a, b)):
                d, m = max_diff(x, y, f"{path}[{i}]")
                worst, bad = max(worst, d), bad or m
            return worst, bad
        return 0.0, None if a == b else f"{path}: {str(a)[:40]!r} != {str(b)[:40]!r}"
    return abs(float(a) - float(b)), None


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(q / 100 * len(s)) - 1)]


def summary(lat: list[float]) -> dict:
    return {
        "p50_ms": round(percentile(lat, 50) * 1000, 1),
        "p95_ms": round(percentile(lat, 95) * 1000, 1),
        "max_ms": round(max(lat) * 1000, 1),
        "mean_ms": round(statistics.mean(lat) * 1000, 1),
    }


def visitors_in_threads(
    url: str, api_name: str, per_visitor: list[list[str]], fresh_tls: bool = False
) -> tuple[list, float]:
    """Every visitor a thread of this process: their clients share one interpreter lock."""
    with ThreadPoolExecutor(len(per_visitor)) as pool:
        clients = list(pool.map(lambda _: client(url, fresh_tls), range(len(per_visitor))))
    barrier = threading.Barrier(len(per_visitor) + 1)
    results: list[tuple[str, float, object, str | None]] = []
    lock = threading.Lock()

    def visitor(v: int) -> None:
        barrier.wait()
        for t in per_visitor[v]:
            sec, out, err = call(clients[v], t, api_name)
            with lock:
                results.append((t, sec, out, err))

    threads = [threading.Thread(target=visitor, args=(v,)) for v in range(len(per_visitor))]
    for th in threads:
        th.start()
    barrier.wait()
    t0 = time.perf_counter()
    for th in threads:
        th.join()
    return results, time.perf_counter() - t0


def _visitor_process(url: str, api_name: str, texts: list[str], barrier, out_queue, fresh_tls: bool) -> None:
    c = client(url, fresh_tls)
    barrier.wait()
    for t in texts:
        out_queue.put((t, *call(c, t, api_name)))


def visitors_in_processes(
    url: str, api_name: str, per_visitor: list[list[str]], fresh_tls: bool = False
) -> tuple[list, float]:
    """Every visitor its own process, as real visitors are separate machines: no shared
    interpreter lock, but their CPU still comes out of the same 2 cores."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier, out_queue = ctx.Barrier(len(per_visitor) + 1), ctx.Queue()
    procs = [
        ctx.Process(target=_visitor_process, args=(url, api_name, texts, barrier, out_queue, fresh_tls))
        for texts in per_visitor
    ]
    for p in procs:
        p.start()
    barrier.wait()  # every visitor has its client: release them together
    t0 = time.perf_counter()
    results = [out_queue.get() for _ in range(sum(map(len, per_visitor)))]
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    return results, wall


def run_once(url: str, args, texts: list[str], fresh_tls: bool = False) -> dict:
    """Alone then concurrent against one running app."""
    solo = client(url, fresh_tls)
    for t in texts[:2]:  # warm up the server (first calls load code paths, allocate caches)
        _, _, err = call(solo, t, args.api_name)
        if err:
            raise RuntimeError(f"{args.api_name} does not work: {err}")

    # one at a time
    alone: dict[str, object] = {}
    lat, errors, payload = [], [], []
    t0 = time.perf_counter()
    for t in texts:
        sec, out, err = call(solo, t, args.api_name)
        lat.append(sec)
        if err:
            errors.append(err)
        else:
            alone[t] = normalise(out)
            payload.append(len(json.dumps(out, ensure_ascii=False).encode()))  # as sent: arrays packed
    wall = time.perf_counter() - t0
    res = {
        "alone": {
            "n": len(texts),
            **summary(lat),
            "throughput_per_s": round(len(texts) / wall, 2),
            "errors": len(errors),
        },
        "result_kb_median": round(statistics.median(payload) / 1000, 1) if payload else None,
    }
    log(
        f"alone: {len(texts)} calls one at a time, {res['alone']['throughput_per_s']}/s, "
        f"p50 {res['alone']['p50_ms']} ms, p95 {res['alone']['p95_ms']} ms, {len(errors)} errors; "
        f"result JSON {res['result_kb_median']} KB (median)"
    )

    # concurrent visitors, each with its own client (own session), released together
    jobs = [texts[i % len(texts)] for i in range(args.requests)]
    per_visitor = [jobs[v :: args.visitors] for v in range(args.visitors)]
    cpu0 = time.process_time()
    if args.visitor_processes:
        results, wall = visitors_in_processes(url, args.api_name, per_visitor, fresh_tls)
    else:
        results, wall = visitors_in_threads(url, args.api_name, per_visitor, fresh_tls)
    client_cpu = time.process_time() - cpu0  # the visitors' own CPU, taken from the same 2 cores
    lat = [sec for _, sec, _, _ in results]
    errs = [err for *_, err in results if err]
    mismatches, worst = [], 0.0
    for t, _, out, err in results:
        if err or t not in alone:
            continue
        d, bad = max_diff(alone[t], normalise(out))
        worst = max(worst, d)
        if bad or d > args.atol * (1 + 1e-9):  # a last-digit flip of a rounded value is exactly atol
            mismatches.append(f"{t!r}: {bad or f'max diff {d:.3g}'}")
    res["concurrent"] = {
        "visitors": args.visitors,
        "visitor_processes": args.visitor_processes,
        "client_tls": "fresh" if fresh_tls else "shared",
        "n": len(results),
        **summary(lat),
        "throughput_per_s": round(len(results) / wall, 2),
        "wall_s": round(wall, 2),
        "errors": len(errs),
        "client_cpu_s": None if args.visitor_processes else round(client_cpu, 2),
    }
    res["identical"] = not mismatches and not errs and not errors
    res["max_abs_diff"] = worst
    log(
        f"concurrent: {len(results)} calls from {args.visitors} visitors, {res['concurrent']['throughput_per_s']}/s, "
        f"p50 {res['concurrent']['p50_ms']} ms, p95 {res['concurrent']['p95_ms']} ms, "
        f"max {res['concurrent']['max_ms']} ms, {len(errs)} errors"
        + ("" if args.visitor_processes else f"; the visitors used {client_cpu:.2f} s of CPU")
    )
    log(
        f"identical to one at a time: {res['identical']} (max abs diff {worst:.3g}, "
        f"{len(mismatches)} mismatches{': ' + mismatches[0] if mismatches else ''})"
    )
    if errs:
        log(f"  first error: {errs[0]}")
    res["pass"] = (
        res["concurrent"]["errors"] == 0 and res["identical"] and res["concurrent"]["p95_ms"] <= P95_TARGET_S * 1000
    )
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Concurrent visitors against the app's /translate API.")
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT, help="checkpoint the app serves")
    p.add_argument("--url", help="load an app already running at this URL instead of starting app.py")
    p.add_argument("--app-arg", action="append", default=[], metavar="ARG", help="extra argument for app.py (repeat)")
    p.add_argument("--api-name", default=API_NAME, help="endpoint to call")
    p.add_argument("--visitors", type=int, default=24, help="concurrent clients")
    p.add_argument("--requests", type=int, default=48, help="translations sent by all visitors together")
    p.add_argument(
        "--visitor-processes",
        action="store_true",
        help="run each visitor in its own process instead of a thread of this one (real visitors "
        "do not share one Python interpreter lock; they still share these 2 cores)",
    )
    p.add_argument(
        "--atol",
        type=float,
        default=1e-4,
        help="largest numeric difference still counted as identical: sentences traced together "
        "in one padded batch (app.py --max-batch) sum in another order, so attention "
        "weights differ around the 7th decimal, which can move the last digit of the head "
        "diagnostics (rounded to 4 decimals); text, tokens and ids must match exactly "
        "(default 1e-4; 0 = bit for bit)",
    )
    p.add_argument(
        "--sweep",
        nargs="+",
        metavar="SETTING",
        help="settings to compare, each like torch-threads=1,concurrency=2 (app.py flags; "
        "the app is started once per setting)",
    )
    p.add_argument("--timeout", type=float, default=240, help="seconds to wait for app.py to answer")
    args = p.parse_args(argv)
    if args.visitors < 1 or args.requests < 1:
        print("error: --visitors and --requests must be at least 1", file=sys.stderr)
        return 2
    if args.url and args.sweep:
        print("error: --sweep starts its own app; drop --url", file=sys.stderr)
        return 2
    try:
        settings = [parse_setting(s) for s in args.sweep] if args.sweep else [{}]
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    ckpt = Path(args.checkpoint) if Path(args.checkpoint).is_absolute() else ROOT / args.checkpoint
    if not args.url and not (ckpt / "config.json").is_file():
        print(f"error: no checkpoint at {args.checkpoint}", file=sys.stderr)
        return 2

    texts = sentences(args.requests)
    runs = []
    try:
        for s in settings:
            label = ",".join(f"{k}={v}" for k, v in s.items()) or "app.py defaults"
            log(f"--- setting: {label}")
            app_flags = {k: v for k, v in s.items() if k != "client-tls"}
            fresh_tls = s.get("client-tls") == "fresh"
            if args.url:
                res = run_once(args.url.rstrip("/") + "/", args, texts, fresh_tls)
            else:
                with app_server(str(ckpt), app_flags, args.app_arg, args.timeout) as url:
                    res = run_once(url, args, texts, fresh_tls)
            runs.append({"setting": label, **res})
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    best = min(runs, key=lambda r: r["concurrent"]["p95_ms"])
    if len(runs) > 1:
        for r in runs:
            log(
                f"{r['setting']:28s} alone {r['alone']['throughput_per_s']}/s ({r['alone']['p50_ms']} ms)  "
                f"concurrent {r['concurrent']['throughput_per_s']}/s p50 {r['concurrent']['p50_ms']} ms "
                f"p95 {r['concurrent']['p95_ms']} ms  identical {r['identical']}"
            )
        log(f"best (lowest concurrent p95): {best['setting']}")
    print(
        json.dumps(
            {
                "benchmark": "load",
                "visitors": args.visitors,
                "requests": args.requests,
                "target": {"errors": 0, "identical": True, "p95_ms": P95_TARGET_S * 1000},
                "runs": runs,
                "best": best["setting"],
                "pass": best["pass"],
            },
            ensure_ascii=False,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
