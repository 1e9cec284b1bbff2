"""train.py stops cleanly and loses nothing: Ctrl-C or SIGTERM saves where the run is and
ends with one line, --resume continues bit-identically (also with 2 processes, and from a
run saved before mid-epoch checkpoints existed), an --out that holds a run is never
replaced unasked, --resume takes the run's own settings, and the start-up lines say where
the run writes and when it will end."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

import train
from transformer.cli import training_run as cli_train
from transformer.training import progress
from transformer.training.loop import FitResult, Trainer
from transformer.training.run_folder import MID_EPOCH_DIR, RUN_FILE, STATE_FILE

from tests.helpers import PAIRS, ROOT, lines_of, single_thread, tiny_main, write_jsonl

# the tiny preset on the fixture corpus (96 pairs) in small batches: 14 steps per epoch
# (7 per process with 2), so that a stop lands within an epoch
RUN = ["--preset", "tiny", "--batch-tokens", "150", "--vocab-size", "200", "--epochs", "2", "--snapshots", "none"]
EVERY_STEP = ["--save-every-minutes", "1e-6"]  # a mid-epoch checkpoint after every step: what the tests wait for

pytestmark = pytest.mark.usefixtures("one_thread")


def train_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def straight(data_dir, tmp_path_factory) -> dict:
    """Runs of RUN that never stopped, made once for every test that compares with them: in
    this process with one thread ("one"), and by train.py with --processes 2 ("two", with
    ``"two_process"``, its finished process)."""
    root = tmp_path_factory.mktemp("straight")
    with single_thread():
        assert train.main([*RUN, "--dataset", str(data_dir), "--threads", "1", "--out", str(root / "one")]) == 0
    r = train_py(*RUN, "--dataset", str(data_dir), "--device", "cpu", "--processes", "2", "--out", str(root / "two"))
    assert r.returncode == 0, r.stderr[-3000:]
    return {"one": root / "one", "two": root / "two", "two_process": r}


def stopped_run(
    out: Path, sig: int, target: str, *args: str, within: Path | None = None, script: str = "train.py"
) -> tuple[int, str, str]:
    """train.py (or ``script``, which runs it) in a process group of its own (as a terminal
    starts it), sent ``sig`` once its first mid-epoch checkpoint is on disk (in the run folder
    ``within``, ``out`` unless given): to the whole group as Ctrl-C does (``target`` 'group'),
    to train.py itself ('launcher'), or to the training process of rank 1 ('rank1'). Returns
    (exit code, stdout, stderr)."""
    p = subprocess.Popen(
        [sys.executable, script, *args, "--out", str(out), *EVERY_STEP],
        cwd=ROOT,
        # should torch's C++ teardown abort the launcher (SIGABRT instead of the signal's exit
        # code), every thread's Python stack is then in the failure message
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    deadline = time.monotonic() + 300
    while not ((within or out) / MID_EPOCH_DIR / STATE_FILE).is_file():
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    if target == "group":
        os.killpg(p.pid, sig)
    else:
        os.kill(p.pid if target == "launcher" else rank_pid(p.pid, 1), sig)
    stdout, stderr = p.communicate(timeout=300)
    return p.returncode, stdout, stderr


def rank_pid(parent: int, rank: int) -> int:
    """The training process of ``rank`` that train.py (``parent``) started."""
    for entry in Path("/proc").iterdir():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and f"RANK={rank}".encode() in env:
            return int(entry.name)
    raise AssertionError(f"no rank {rank} under process {parent}")


def the_stop_line(out: Path, stdout: str, stderr: str, saved: Path | None = None) -> re.Match:
    """The one line a stop prints (and nothing like a traceback anywhere): it names the folder
    that was saved (``saved``, ``out`` unless given: a stage's own folder) and the whole run's
    --resume. A stop may land within an epoch or, on a busy machine, at its end."""
    saved = saved or out
    assert "Traceback" not in stdout + stderr and "Error" not in stdout + stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.startswith("stopped")]
    assert len(lines) == 1, stderr[-3000:]
    where = re.fullmatch(
        rf"stopped: saved {re.escape(str(saved))} (?:at epoch (\d+), step (\d+) of (\d+)(?: \(before its "
        rf"evaluation\))?|after epoch (\d+)); continue with: python train.py --out {re.escape(str(out))} --resume",
        lines[0],
    )
    assert where, lines[0]
    return where


def saved_at_stop(out: Path, stdout: str, stderr: str) -> dict:
    """The state a stopped run saved for --resume, at the step its one line names (within an
    epoch, or after one), checked to be whole: every rank's random state, the optimiser's."""
    where = the_stop_line(out, stdout, stderr)
    if where[4]:  # the stop came at an epoch's end: that epoch's checkpoint
        state = torch.load(out / "epochs" / f"epoch-{int(where[4]):03d}" / STATE_FILE, weights_only=True)
    else:
        metrics = json.loads((out / MID_EPOCH_DIR / "metrics.json").read_text())
        position = (metrics["epoch"] + 1, metrics["batches_done"], metrics["n_batches"])
        assert position == tuple(map(int, where.groups()[:3]))
        state = torch.load(out / MID_EPOCH_DIR / STATE_FILE, weights_only=True)
        assert state["step"] == metrics["step"]
    processes = state["settings"]["processes"]
    assert len(state["rng"]) == processes and state["optimizer"]["state"] and state["weights"]
    return state


def float32_weights(out: Path, epoch: int) -> dict[str, torch.Tensor]:
    """The exact weights of an epoch checkpoint (its files hold them rounded to float16)."""
    return torch.load(out / "epochs" / f"epoch-{epoch:03d}" / STATE_FILE, weights_only=True)["weights"]


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow  # training subprocesses, stopped with a real SIGINT
def test_ctrl_c_mid_epoch_then_resume_ends_bit_identical(data_dir, tmp_path, straight):
    """Ctrl-C within an epoch: exit 130, one line, the position saved; a bare --resume goes
    on from that step (taking the run's own settings, threads included) and ends with the
    very weights of a run that never stopped."""
    out, straight = tmp_path / "stopped", straight["one"]
    code, stdout, stderr = stopped_run(out, signal.SIGINT, "group", *RUN, "--dataset", str(data_dir), "--threads", "1")
    assert code == 130, stderr[-3000:]
    where = the_stop_line(out, stdout, stderr)
    if where[1]:  # within an epoch: the mid-epoch checkpoint says where
        metrics = json.loads((out / MID_EPOCH_DIR / "metrics.json").read_text())
        position = (metrics["epoch"] + 1, metrics["batches_done"], metrics["n_batches"])
        assert position == tuple(map(int, where.groups()[:3]))
    assert train.main(["--out", str(out), "--resume", "--save-every-minutes", "10"]) == 0
    assert not (out / MID_EPOCH_DIR).exists()  # out of date once an epoch checkpoint follows it
    for epoch in (1, 2):
        assert same(float32_weights(out, epoch), float32_weights(straight, epoch)), epoch
    history = [{k: v for k, v in r.items() if k != "minutes"} for r in json.loads((out / "history.json").read_text())]
    assert history == [
        {k: v for k, v in r.items() if k != "minutes"} for r in json.loads((straight / "history.json").read_text())
    ]


gloo = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no gloo backend")


@gloo
@pytest.mark.slow
def test_a_stop_in_the_second_stage_resumes_it_and_ends_bit_identical(data_dir, tmp_path):
    """Ctrl-C while the second, fine-tuning stage trains: the line names that stage's folder
    and the whole run's --resume, which leaves the finished first stage alone and ends the
    fine-tune with the weights of a run that never stopped."""
    joined = [(f"{a[0]} {b[0]}", f"{a[1]} {b[1]}") for a, b in zip(PAIRS, PAIRS[1:] + PAIRS[:1])]
    both = [*RUN, "--dataset", str(data_dir), "--threads", "1", "--device", "cpu"]
    both += ["--fine-tune-train", str(write_jsonl(tmp_path / "long.jsonl", joined))]
    straight = train_py(*both, "--out", str(tmp_path / "straight"))
    assert straight.returncode == 0, straight.stderr[-3000:]
    out = tmp_path / "stopped"
    code, stdout, stderr = stopped_run(out, signal.SIGINT, "group", *both, within=out / "fine-tune")
    assert code == 130, stderr[-3000:]
    assert lines_of(stderr)[-1] == the_stop_line(out, stdout, stderr, saved=out / "fine-tune")[0]
    first_stage = (out / "history.json").read_bytes()
    resumed = train_py("--out", str(out), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"python train.py --out {out / 'fine-tune'} --resume" in resumed.stderr
    assert (out / "history.json").read_bytes() == first_stage
    weights = [run / "fine-tune" / "best" / "model.safetensors" for run in (tmp_path / "straight", out)]
    assert weights[0].read_bytes() == weights[1].read_bytes()


def test_two_processes_stop_together_on_ctrl_c_and_resume_bit_identical(data_dir, tmp_path, straight):
    """--processes 2 and Ctrl-C (the terminal signals train.py and both training processes):
    one line, exit 130, no traceback from any process; a bare --resume starts 2 processes
    again and ends with the weights of a 2-process run that never stopped."""
    out = tmp_path / "stopped"
    args = [*RUN, "--dataset", str(data_dir), "--device", "cpu", "--processes", "2"]
    code, stdout, stderr = stopped_run(out, signal.SIGINT, "group", *args)
    assert code == 130, stderr[-3000:]
    the_stop_line(out, stdout, stderr)
    r = train_py("--out", str(out), "--resume", "--save-every-minutes", "10")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "on each of 2 processes" in r.stderr
    for epoch in (1, 2):
        assert same(float32_weights(out, epoch), float32_weights(straight["two"], epoch)), epoch


@gloo
@pytest.mark.slow
def test_train_py_starts_its_own_processes(data_dir, straight, capfd):
    """--processes 2 is torchrun without torchrun: two ranks, rank 0 alone in the terminal,
    half the optimiser steps of one process, and the run records the command that was typed
    and its process count, which --resume keeps."""
    r, two, one = straight["two_process"], straight["two"], straight["one"]
    assert "on each of 2 processes" in r.stderr
    assert r.stdout.count('"best_chrf"') == 1
    assert "OMP_NUM_THREADS" not in r.stderr  # the launcher's own warning is not shown
    steps = [json.loads((run / "history.json").read_text())[1]["step"] for run in (two, one)]
    assert steps[0] == steps[1] // 2  # 2 ranks share each epoch's batches
    card = (two / "best" / "README.md").read_text()
    assert "python train.py " in card and "--processes 2" in card and "torchrun" not in card
    recorded = [
        torch.load(run / "epochs" / "epoch-002" / STATE_FILE, weights_only=True)["settings"]["processes"]
        for run in (two, one)
    ]
    assert recorded == [2, 1]
    # the schedule depends on the processes: resuming with another count is one line, exit 2
    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        train.main(["--out", str(two), "--epochs", "3", "--resume", "--processes", "1"])
    assert exc.value.code == 2
    assert capfd.readouterr().err.strip().splitlines() == [
        (
            f"error: --processes 1: {two} was trained with --processes 2; --resume "
            "goes on with the run's own (leave the flag out)"
        )
    ]


@gloo
@pytest.mark.slow
@pytest.mark.parametrize("target", ["launcher", "rank1"])
def test_sigterm_to_any_process_stops_both(data_dir, tmp_path, target, straight):
    """SIGTERM to train.py (which forwards it) or to one training process alone: both
    processes stop at the same step, one line, exit 143, and the step is saved."""
    out = tmp_path / "run"
    code, stdout, stderr = stopped_run(
        out, signal.SIGTERM, target, *RUN, "--dataset", str(data_dir), "--device", "cpu", "--processes", "2"
    )
    assert code == 143, stderr[-3000:]
    # what --resume reads is whole, at the step the line names (a resume after a stop of 2
    # processes runs in test_two_processes_stop_together_on_ctrl_c_and_resume_bit_identical)
    state = saved_at_stop(out, stdout, stderr)
    assert state["settings"]["processes"] == 2  # so both ranks' random states are in it
    assert state["weights"].keys() == float32_weights(straight["two"], 1).keys()


# how many runs each case of test_sigterm_to_the_launcher_never_aborts stops in a row (the
# slow set's few; SIGTERM_REPEAT=20 python -m pytest -m slow -k never_aborts for the long check)
SIGTERM_REPEAT = int(os.environ.get("SIGTERM_REPEAT", "2"))

# train.py whose launcher sends torch's rendezvous heartbeats back to back (torch sends one
# every 5 s) and keeps its rendezvous handler to the end (as a reference cycle not yet
# collected does): at exit the heartbeat thread is then mostly inside a TCPStore call, where
# the interpreter's exit would abort the launcher (see shut_down_rendezvous, without which
# most such runs do).
HEARTBEAT_IN_FLIGHT = """
import runpy, sys
from datetime import timedelta
from torch.distributed.elastic.rendezvous import dynamic_rendezvous as rendezvous

class BackToBack(rendezvous._PeriodicTimer):
    def __init__(self, interval, function, *args, **kwargs):
        super().__init__(timedelta(milliseconds=1), function, *args, **kwargs)

kept, start = [], rendezvous.DynamicRendezvousHandler._start_heartbeats

def start_heartbeats(handler):
    kept.append(handler)
    start(handler)

rendezvous._PeriodicTimer = BackToBack
rendezvous._should_keep_alive = lambda ctx: True
rendezvous.DynamicRendezvousHandler._start_heartbeats = start_heartbeats
sys.argv[0] = "train.py"
runpy.run_path("train.py", run_name="__main__")
"""


@contextlib.contextmanager
def busy_cores():
    """A busy loop on every core beside the block, as on a loaded machine."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


@gloo
@pytest.mark.slow
@pytest.mark.parametrize("heartbeat", ["torch's", "back to back"])
def test_sigterm_to_the_launcher_never_aborts(data_dir, tmp_path, heartbeat):
    """SIGTERM to train.py --processes 2, SIGTERM_REPEAT runs in a row with every core busy:
    exit 143 every time (never SIGABRT from torch's rendezvous thread at exit), one line, and
    every rank's step saved; also with the rendezvous heartbeat in flight as the launcher exits."""
    script = "train.py"
    if heartbeat == "back to back":
        script = str(tmp_path / "heartbeat_in_flight.py")
        Path(script).write_text(HEARTBEAT_IN_FLIGHT)
    args = [*RUN, "--dataset", str(data_dir), "--device", "cpu", "--processes", "2"]
    with busy_cores():
        for run in range(1, SIGTERM_REPEAT + 1):
            out = tmp_path / f"run-{run}"
            code, stdout, stderr = stopped_run(out, signal.SIGTERM, "launcher", *args, script=script)
            assert code == 143, f"run {run} of {SIGTERM_REPEAT}: exit {code}\n{stderr[-3000:]}"
            assert saved_at_stop(out, stdout, stderr)["settings"]["processes"] == 2
            shutil.rmtree(out)


def test_a_stop_before_training_starts_is_one_line(data_dir, tmp_path, monkeypatch, capsys):
    """A signal while the data loads: nothing to save yet, one line, 128 + the signal."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("the signal did not stop the run")

    monkeypatch.setattr(cli_train, "load_run_data", signalled)
    try:
        assert tiny_main(data_dir, tmp_path / "o") == 143
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    assert capsys.readouterr().err.splitlines() == ["stopped before training started; nothing was saved"]


# ------------------------------------------------------------------ an --out that holds a run


def not_called(*args, **kwargs):
    raise AssertionError("slow work started before the bad input was noticed")


@pytest.mark.parametrize("item", ["epochs/epoch-001", "best", "history.json", f"{MID_EPOCH_DIR}/{STATE_FILE}"])
def test_an_out_that_holds_a_run_is_refused_before_any_slow_work(data_dir, tmp_path, monkeypatch, capsys, item):
    out = tmp_path / "run"
    (out / item).parent.mkdir(parents=True, exist_ok=True)
    (out / item).write_text("{}") if "." in item else (out / item).mkdir()
    monkeypatch.setattr(cli_train, "load_run_data", not_called)
    with pytest.raises(SystemExit) as exc:
        tiny_main(data_dir, out)
    assert exc.value.code == 2
    top = item.split("/")[0]
    assert capsys.readouterr().err.splitlines() == [
        f"error: {out} already holds a run ({top}): continue it with --resume, or replace it with --overwrite"
    ]
    assert (out / item).exists()


def test_overwrite_replaces_the_run_and_nothing_else(data_dir, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "2") == 0
    (out / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit) as exc:
        tiny_main(data_dir, out, "--overwrite", "--resume")
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert tiny_main(data_dir, out, "--epochs", "1", "--overwrite") == 0
    assert "output: " + str(out) + " (replacing the run that was there)" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "epochs").iterdir()) == ["epoch-001"]
    assert [r["epoch"] for r in json.loads((out / "history.json").read_text()) if "epoch" in r] == [1]
    assert (out / "notes.txt").read_text() == "mine"


# ------------------------------------------------------------------ --resume takes the run's settings


real_load = cli_train.load_run_data


def fit_stub(seen: list):
    return lambda self: seen.append(self) or FitResult(self.best_chrf, 0.0, self.best_dir, self.history, None)


def test_resume_takes_the_runs_own_flags(data_dir, tmp_path, monkeypatch, capsys):
    """A bare --resume loads the run's dataset with its preset, batch and seed (none of them
    given again), and a flag that contradicts the run is one line and exit 2."""
    out = tmp_path / "run"
    assert (
        tiny_main(data_dir, out, "--epochs", "1", "--seed", "3", "--max-train-pairs", "90", "--tag-origins", "ft", "bt")
        == 0
    )
    loaded, seen = [], []
    monkeypatch.setattr(cli_train, "load_run_data", lambda *a, **kw: loaded.append((a, kw)) or real_load(*a, **kw))
    monkeypatch.setattr(Trainer, "fit", fit_stub(seen))
    assert train.main(["--out", str(out), "--resume", "--epochs", "2"]) == 0
    ((args, kwargs),) = loaded
    assert args[0] == str(data_dir) and kwargs["seed"] == 3 and kwargs["max_train_pairs"] == 90
    assert kwargs["tag_origins"] == ("ft", "bt")
    assert (seen[0].settings.batch_tokens, seen[0].settings.seed, seen[0].settings.epochs) == (600, 3, 2)
    capsys.readouterr()
    for flag, value, recorded in (
        ("--batch-tokens", "300", "600"),
        ("--dataset", "elsewhere", str(data_dir)),
        ("--preset", "base", "tiny"),
        ("--tag-origins", "bt", "ft,bt"),
    ):
        with pytest.raises(SystemExit) as exc:
            train.main(["--out", str(out), "--resume", flag, value])
        assert exc.value.code == 2
        assert capsys.readouterr().err.splitlines() == [
            (
                f"error: {flag} {value}: {out} was trained with {flag} {recorded}; --resume goes on with the run's own "
                "(leave the flag out)"
            )
        ]


@pytest.mark.parametrize("recorded_in", [RUN_FILE, STATE_FILE])
def test_resume_launches_the_processes_the_run_trained_with(data_dir, tmp_path, monkeypatch, recorded_in):
    """A run recorded with 2 processes resumes with 2, without --processes (the tiny preset
    says 1), whether the count comes from run.json or, for a run saved before run.json
    existed, from its train_state.pt."""
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "1") == 0
    record = json.loads((out / RUN_FILE).read_text())
    if recorded_in == RUN_FILE:
        (out / RUN_FILE).write_text(json.dumps({**record, "processes": 2}))
    else:
        (out / RUN_FILE).unlink(missing_ok=True)
        path = out / "epochs" / "epoch-001" / STATE_FILE
        state = torch.load(path, weights_only=True)
        torch.save({**state, "settings": {**state["settings"], "processes": 2}}, path)
    launched = []
    monkeypatch.setattr(cli_train, "launch_processes", lambda script, args, n, threads: launched.append(n) or 0)
    assert train.main(["--out", str(out), "--resume", "--dataset", str(data_dir), "--device", "cpu"]) == 0
    assert launched == [2]


def test_a_run_saved_before_mid_epoch_checkpoints_resumes(data_dir, tmp_path):
    """An epoch checkpoint in the old format (rank 0's torch RNG state alone, no position,
    no save_every_minutes, no run.json) resumes through the command line, and exactly: a
    copy of a 2-epoch run cut back to its first epoch ends as the run did."""
    straight, old = tmp_path / "straight", tmp_path / "old"
    assert tiny_main(data_dir, straight, "--epochs", "2", "--average-last", "0") == 0
    shutil.copytree(straight, old)
    shutil.rmtree(old / "epochs" / "epoch-002")
    (old / RUN_FILE).unlink(missing_ok=True)
    path = old / "epochs" / "epoch-001" / STATE_FILE
    state = torch.load(path, weights_only=True)
    settings = {k: v for k, v in state["settings"].items() if k not in ("save_every_minutes", "processes")}
    old_state = {k: v for k, v in state.items() if k not in ("rng", "batches_done", "train_loss")}
    torch.save({**old_state, "settings": settings, "torch_rng": state["rng"][0]["torch"]}, path)
    assert tiny_main(data_dir, old, "--resume") == 0
    assert same(float32_weights(old, 2), float32_weights(straight, 2))


# ------------------------------------------------------------------ what the run says


def test_extra_train_without_paths_says_nothing_of_tags(data_dir, tmp_path, monkeypatch, capsys):
    """--extra-train with no PATH has no synthetic sources: nothing was tagged, so the data
    line does not say so; with a back-translated file, it does."""
    monkeypatch.setattr(Trainer, "fit", fit_stub([]))
    assert tiny_main(data_dir, tmp_path / "none", "--extra-train", "--tag-synthetic") == 0
    data_line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("data: "))
    assert "tagged" not in data_line
    bt = write_jsonl(tmp_path / "bt.jsonl", [("a dog sleeps.", "un cane dorme.")])
    rows = [{**json.loads(line), "origin": "bt-test"} for line in bt.read_text().splitlines()]
    bt.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert tiny_main(data_dir, tmp_path / "bt", "--extra-train", str(bt), "--tag-synthetic") == 0
    data_line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("data: "))
    assert data_line.endswith(f" + {bt} (synthetic sources tagged)")


def test_the_first_lines_say_where_the_run_goes_and_when_it_ends(data_dir, tmp_path, monkeypatch, capsys):
    """Before the first evaluation: the output folder, when --max-minutes ends the run, and a
    forecast of the whole run that counts its evaluations; a resumed run forecasts at once
    from its own history."""
    monkeypatch.setattr(progress, "FORECAST_AFTER_STEPS", 2)
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "2", "--max-minutes", "50") == 0
    err = capsys.readouterr().err.splitlines()
    first_record = next(i for i, line in enumerate(err) if line.startswith('{"epoch": 1'))
    before = err[:first_record]
    assert (
        f"output: {out} (a new run); Ctrl-C saves and stops, then continue with: python train.py --out {out} --resume"
    ) in before
    assert any(
        re.fullmatch(
            r"time budget: --max-minutes 50 ends the run by \d\d:\d\d, 50 minutes from now "
            r"\(training stops in time for the last evaluation\)",
            line,
        )
        for line in before
    ), before
    forecasts = [line for line in before if "forecast: " in line]
    assert len(forecasts) == 1 and "evaluation " in forecasts[0] and "timed on a sample" in forecasts[0], before
    assert tiny_main(data_dir, out, "--resume", "--epochs", "3") == 0
    err = capsys.readouterr().err.splitlines()
    assert any(
        line.startswith("forecast: ") and "(from the run's 1 epoch(s) so far)" in line
        for line in err[: next(i for i, line in enumerate(err) if line.startswith('{"epoch": 3'))]
    ), err


def test_save_every_minutes_is_a_setting_of_the_run(data_dir, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(Trainer, "fit", fit_stub(seen))
    assert tiny_main(data_dir, tmp_path / "a") == 0
    assert tiny_main(data_dir, tmp_path / "b", "--save-every-minutes", "2.5") == 0
    assert [t.settings.save_every_minutes for t in seen] == [10.0, 2.5]
