"""A class under load: 60 students join and answer while an outside visitor translates.

    python benchmarks/class_load.py [--checkpoint checkpoints/en-it] [--students 60] [--url http://127.0.0.1:7860/]

Starts ``python app.py`` on a free port with ``--class-db`` in a temporary folder (or uses --url)
and drives it through the app's HTTP API (``/gradio_api/call/<name>``, the route gradio_client
uses), one thread per simulated person:

- Translate alone: the outside visitor translates one sentence --idle-runs times, one call after
  another, before the class and again after it (the median of both is "idle");
- the class: the teacher starts a class and shows a sentence; the students join, each within
  --arrive seconds (3: typing a code takes a few; 0: all in one instant, the worst case: each new
  page's first request makes Gradio build that page's session, some 30 ms of the server's event
  loop for a page of this size), then ask for the class's state every 1.5 s as a phone does
  (explorer.class_api.POLL_S; slower for a class of more than 75). The teacher asks a next-word
  question a second after the last student may have joined and reads its tally every 0.5 s as
  the projector does; each student answers a moment (0-3 s) after seeing the question, and every
  third changes their answer a second later. Meanwhile the visitor translates the same sentence
  again and again, until a second after the last answer.

Figures, each against its target:
- join-and-answer time: from the students' release to the last first answer acknowledged (<= 10 s);
- counted exactly once: the final tally has one answer per student, each their last (= 60);
- the teacher's lag: for each answer, from its acknowledgment to the first tally the teacher
  reads that counts it (max <= 1 s);
- Translate under load against idle: median over median (<= 1.5x).
Prints the figures, then one JSON line with them and pass/fail per target. Exit code 0 when it
ran (whether or not the targets pass), 2 when the app does not start.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from explorer.class_api import POLL_S  # noqa: E402
from explorer.launch import AppDidNotStart, running_app  # noqa: E402
from transformer.cli import DEFAULT_CHECKPOINT  # noqa: E402

CLASS_SENTENCE = "I have a red car."
VISITOR_SENTENCE = "The book that I bought yesterday is very interesting."
WORDS = ["macchina", "auto", "rossa", "una", "bicicletta"]
TRANSLATE_DATA = [VISITOR_SENTENCE]  # /translate's inputs: the sentence, then its other parameters' defaults
TARGETS = {"join_and_answer_s": 10.0, "tally_lag_max_s": 1.0, "translate_ratio": 1.5}


class ApiError(RuntimeError):
    """The endpoint refused (its one line) or failed."""


def call(base: str, api: str, *data, session: str | None = None, timeout: float = 60.0):
    """One call of endpoint ``api`` (no slash) with ``data``; its outputs (a single one unwrapped).
    ``session``: the caller's Gradio session, one per person as a page or gradio_client keeps it
    (without one, every call would make the server build a session of its own)."""
    body = json.dumps({"data": list(data), "session_hash": session}).encode()
    req = urllib.request.Request(f"{base}gradio_api/call/{api}", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        event_id = json.load(r)["event_id"]
    event = None
    with urllib.request.urlopen(f"{base}gradio_api/call/{api}/{event_id}", timeout=timeout) as r:
        for raw in r:
            line = raw.decode("utf-8").rstrip("\n")
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:") and event in ("complete", "error"):
                out = json.loads(line[5:])
                if event == "error":
                    raise ApiError(str(out))
                return out[0] if len(out) == 1 else out
    raise ApiError(f"/{api}: the stream ended without an answer")


def filled(base: str, api: str, data: tuple) -> list:
    """``data`` followed by the defaults of the endpoint's later parameters (the HTTP route, unlike
    gradio_client, wants every one): /translate may take language codes after its text."""
    with urllib.request.urlopen(f"{base}gradio_api/info", timeout=60) as r:
        params = json.load(r)["named_endpoints"][f"/{api}"]["parameters"]
    return [*data, *(p.get("parameter_default") for p in params[len(data) :])]


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def session() -> str:
    return uuid.uuid4().hex[:12]


def translate(base: str, me: str):
    return call(base, "translate", *TRANSLATE_DATA, session=me)


def translate_alone(base: str, runs: int, me: str) -> list[float]:
    return [timed(lambda: translate(base, me))[0] for _ in range(runs)]


class Run:
    """What the threads record, and when the class part ends."""

    def __init__(self, students: int) -> None:
        self.lock = threading.Lock()
        self.t0 = 0.0
        self.question: int | None = None
        self.asked = threading.Event()
        self.done = threading.Event()  # every student has given their last answer
        self.first_acks: list[float] = []  # when each student's first answer was acknowledged
        self.last_ack = 0.0  # when the last answer, a changed one included, was
        self.last_answer: dict[str, str] = {}
        self.left = students
        self.tallies: list[tuple[float, int]] = []  # (received, answered)
        self.translate: list[float] = []
        self.latency: dict[str, list[float]] = {"join": [], "state": [], "answer": [], "tally": []}
        self.errors: list[str] = []

    def note(self, what: str, seconds: float) -> None:
        with self.lock:
            self.latency[what].append(seconds)


def student(
    base: str, code: str, run: Run, rng: random.Random, start: threading.Barrier, pace: float, arrive: float
) -> None:
    """One phone: join (``arrive`` seconds at most after the others are released), ask for the
    state every ``pace`` seconds until the question shows, answer (every third a second time),
    then go on asking until the last student has answered."""
    page = session()
    ask = lambda api, *data: timed(lambda: call(base, api, *data, session=page))  # noqa: E731
    start.wait()
    time.sleep(rng.uniform(0, arrive))
    try:
        took, me = ask("class_join", code)
        run.note("join", took)
        question, phase = None, rng.uniform(0, pace)
        time.sleep(phase)
        while question is None:  # the phone's poll, until the question shows
            took, st = ask("class_state", code, me)
            run.note("state", took)
            question = (st.get("question") or {}).get("id")
            if question is None:
                time.sleep(pace)
        time.sleep(rng.uniform(0, 3))
        answers = [rng.choice(WORDS)] + ([rng.choice(WORDS)] if rng.random() < 1 / 3 else [])
        for i, word in enumerate(answers):
            if i:
                time.sleep(1.0)
            took, _ = ask("class_answer", code, me, question, word)
            run.note("answer", took)
            with run.lock:
                run.last_ack = max(run.last_ack, time.perf_counter())
                if i == 0:
                    run.first_acks.append(time.perf_counter())
        with run.lock:
            run.last_answer[me] = answers[-1]
            run.left -= 1
            if run.left == 0:
                run.done.set()
        while not run.done.is_set():  # the phone keeps asking until the reveal
            took, _ = ask("class_state", code, me)
            run.note("state", took)
            run.done.wait(pace)
    except Exception as exc:  # noqa: BLE001 - every failure counts as an error of the run
        with run.lock:
            run.errors.append(f"student: {type(exc).__name__}: {exc}"[:300])
            run.left -= 1
            if run.left == 0:
                run.done.set()


def teacher(
    base: str, code: str, key: str, run: Run, start: threading.Barrier, stop: threading.Event, arrive: float
) -> None:
    page = session()
    start.wait()
    time.sleep(1.0 + arrive)
    try:
        run.question = call(base, "class_ask", code, key, CLASS_SENTENCE, 3, "next_word", session=page)
        run.asked.set()
        while not stop.is_set():
            took, tally = timed(lambda: call(base, "class_tally", code, run.question, session=page))
            run.note("tally", took)
            with run.lock:
                run.tallies.append((time.perf_counter(), tally["answered"]))
            stop.wait(POLL_S["tally"])
    except Exception as exc:  # noqa: BLE001
        run.errors.append(f"teacher: {type(exc).__name__}: {exc}"[:300])


def visitor(base: str, run: Run, start: threading.Barrier, stop: threading.Event, me: str) -> None:
    start.wait()
    while not stop.is_set():
        took, _ = timed(lambda: translate(base, me))
        with run.lock:
            run.translate.append(took)


def tally_lags(acks: list[float], tallies: list[tuple[float, int]]) -> list[float]:
    """For the k-th answer acknowledged, the time until the first tally read that counts k answers."""
    lags = []
    for k, ack in enumerate(sorted(acks), start=1):
        seen = next((t for t, n in tallies if n >= k and t >= ack), None)
        lags.append(float("inf") if seen is None else seen - ack)
    return lags


def run_class(base: str, students: int, seed: int, me: str, arrive: float) -> tuple[Run, dict]:
    started = call(base, "class_start")
    code, key = started["code"], started["teacher"]
    call(base, "class_show", code, key, CLASS_SENTENCE, 2, "cross", 1, "mean")
    run, stop = Run(students), threading.Event()
    start = threading.Barrier(students + 2)
    rng = random.Random(seed)
    pace = max(POLL_S["state"], students / POLL_S["perSecond"])  # as web/classroom.js paces a phone
    threads = [
        threading.Thread(target=student, args=(base, code, run, random.Random(rng.random()), start, pace, arrive))
        for _ in range(students)
    ]
    threads += [
        threading.Thread(target=teacher, args=(base, code, key, run, start, stop, arrive)),
        threading.Thread(target=visitor, args=(base, run, start, stop, me)),
    ]
    for t in threads:
        t.start()
    run.t0 = time.perf_counter()
    run.done.wait(120)
    last = max(run.first_acks, default=run.t0)
    time.sleep(1.0)  # the teacher's tally and the visitor go on a second after the last answer
    stop.set()
    for t in threads:
        t.join(120)
    tally = call(base, "class_tally", code, run.question) if run.question else {"answers": [], "answered": 0}
    call(base, "class_end", code, key)
    run.elapsed = last - run.t0
    run.changes_done = max(run.last_ack, last) - run.t0
    return run, tally


def report(run: Run, tally: dict, idle: list[float], students: int) -> dict:
    expected: dict[str, int] = {}
    for word in run.last_answer.values():
        expected[word] = expected.get(word, 0) + 1
    counted = {a["answer"]: a["count"] for a in tally["answers"]}
    lags = tally_lags(run.first_acks, run.tallies)
    idle_med, load_med = statistics.median(idle), statistics.median(run.translate or [float("nan")])
    figures = {
        "students": students,
        "answered": len(run.last_answer),
        "changed_answer": sum(1 for _ in run.latency["answer"]) - len(run.last_answer),
        "join_and_answer_s": round(run.elapsed, 2),
        "last_changed_answer_s": round(run.changes_done, 2),
        "tally_answered": tally["answered"],
        "counted_exactly_once": counted == expected and tally["answered"] == students,
        "tally_lag_max_s": round(max(lags, default=float("nan")), 3),
        "tally_lag_median_s": round(statistics.median(lags), 3) if lags else None,
        "translate_idle_median_s": round(idle_med, 3),
        "translate_load_median_s": round(load_med, 3),
        "translate_load_max_s": round(max(run.translate, default=float("nan")), 3),
        "translate_calls_under_load": len(run.translate),
        "translate_ratio": round(load_med / idle_med, 2),
        **{f"{k}_p50_s": round(percentile(v, 0.5), 3) for k, v in run.latency.items()},
        **{f"{k}_p95_s": round(percentile(v, 0.95), 3) for k, v in run.latency.items()},
        "requests": sum(len(v) for v in run.latency.values()) + len(run.translate),
        "errors": run.errors[:5],
    }
    figures["pass"] = {
        "join_and_answer": figures["join_and_answer_s"] <= TARGETS["join_and_answer_s"],
        "counted_exactly_once": figures["counted_exactly_once"],
        "tally_lag": figures["tally_lag_max_s"] <= TARGETS["tally_lag_max_s"],
        "translate": figures["translate_ratio"] <= TARGETS["translate_ratio"],
        "no_errors": not run.errors,
    }
    return figures


def measure(base: str, students: int, idle_runs: int, seed: int, arrive: float) -> dict:
    me = session()  # the visitor's page
    TRANSLATE_DATA[:] = filled(base, "translate", (VISITOR_SENTENCE,))
    translate(base, me)  # warm: the first call pays for imports and caches
    before = translate_alone(base, idle_runs, me)
    run, tally = run_class(base, students, seed, me, arrive)
    after = translate_alone(base, idle_runs, me)
    figures = report(run, tally, before + after, students)
    figures["translate_idle_before_median_s"] = round(statistics.median(before), 3)
    figures["translate_idle_after_median_s"] = round(statistics.median(after), 3)
    return figures


def show(f: dict) -> None:
    ok = lambda passed: "ok" if passed else "FAIL"  # noqa: E731
    p = f["pass"]
    print(
        f"students joined and answered: {f['answered']} of {f['students']} in {f['join_and_answer_s']} s "
        f"(target <= {TARGETS['join_and_answer_s']:.0f} s) {ok(p['join_and_answer'])}; the last changed answer "
        f"at {f['last_changed_answer_s']} s"
    )
    print(
        f"tally: {f['tally_answered']} answered, each student's last answer counted once: "
        f"{f['counted_exactly_once']} ({f['changed_answer']} changed their answer) {ok(p['counted_exactly_once'])}"
    )
    print(
        f"teacher's tally behind the answers: median {f['tally_lag_median_s']} s, max {f['tally_lag_max_s']} s "
        f"(target <= {TARGETS['tally_lag_max_s']:.0f} s) {ok(p['tally_lag'])}"
    )
    print(
        f"Translate (visitor): idle median {f['translate_idle_median_s']} s "
        f"(before {f['translate_idle_before_median_s']}, after {f['translate_idle_after_median_s']}), "
        f"under load median {f['translate_load_median_s']} s, max "
        f"{f['translate_load_max_s']} s over {f['translate_calls_under_load']} calls: "
        f"{f['translate_ratio']}x (target <= {TARGETS['translate_ratio']}x) {ok(p['translate'])}"
    )
    print(
        "class requests p50 / p95 (s): "
        + ", ".join(f"{k} {f[f'{k}_p50_s']} / {f[f'{k}_p95_s']}" for k in ("join", "state", "answer", "tally"))
    )
    print(f"requests: {f['requests']}; errors: {f['errors'] or 'none'}")
    print(json.dumps(f))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/class_load.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT)
    p.add_argument("--url", default=None, help="an app already running (its class store is used as it is)")
    p.add_argument("--students", type=int, default=60)
    p.add_argument("--idle-runs", type=int, default=8, help="Translate calls alone, before the class and after it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--arrive",
        type=float,
        default=3.0,
        help="seconds over which the students' joins spread (default 3: a code takes seconds to type, so a "
        "class does not join in one instant; 0 releases them all at once, the worst case)",
    )
    args = p.parse_args(argv)
    if args.url:
        show(measure(args.url.rstrip("/") + "/", args.students, args.idle_runs, args.seed, args.arrive))
        return 0
    folder = Path(tempfile.mkdtemp(prefix="class-load-"))
    extra = ("--class-db", str(folder / "classes.sqlite3"))
    try:
        with running_app(args.checkpoint, folder / "app.log", extra) as app:
            print(f"app.py serving {args.checkpoint} after {app.seconds:.1f} s at {app.url}", flush=True)
            show(measure(app.url, args.students, args.idle_runs, args.seed, args.arrive))
            if "Traceback" in app.log_text():
                print(f"warning: the app logged a traceback (see {app.log})")
    except AppDidNotStart as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
