"""torchrun with 2 CPU processes (gloo): the tiny preset trains data-parallel, rank 0 alone
evaluates and writes checkpoints, --resume works, and the loss lands close to a
single-process run that sees the same tokens per optimiser step. (train.py's own
--processes 2, and stopping it, are in tests/test_stop_and_resume.py.)"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch.distributed as dist
import train
from tests.helpers import ROOT, single_thread

EPOCHS = 8
COMMON = ["--preset", "tiny", "--device", "cpu", "--snapshots", "none", "--batch-tokens", "600", "--vocab-size", "200"]

# the slow set: every test here starts training processes (torchrun, or train.py's own)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not dist.is_available() or not dist.is_gloo_available(), reason="this torch build has no gloo backend"
    ),
]


def torchrun(*args, nproc=2):
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "train.py",
        *COMMON,
        *args,
    ]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


def epochs_of(out: Path) -> list[dict]:
    return [r for r in json.loads((out / "history.json").read_text()) if "epoch" in r]


def test_two_processes_train_resume_and_match_one(data_dir, tmp_path):
    out = tmp_path / "ddp"
    r = torchrun("--dataset", str(data_dir), "--out", str(out), "--epochs", str(EPOCHS))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "on each of 2 processes" in r.stderr
    assert r.stdout.count('"best_chrf"') == 1  # only rank 0 reports
    for name in ("config.json", "model.safetensors", "tokenizer.json", "metrics.json"):
        assert (out / "best" / name).is_file(), name
    history = epochs_of(out)
    assert [h["epoch"] for h in history] == list(range(1, EPOCHS + 1))
    per_epoch = history[0]["step"]
    assert all(h["step"] == per_epoch * h["epoch"] for h in history)

    # the same data and tokens per optimiser step in one process: 2 x 600 = 1200
    single = tmp_path / "single"
    argv = [*COMMON, "--batch-tokens", "1200", "--threads", "1", "--dataset", str(data_dir), "--out", str(single)]
    with single_thread():
        assert train.main([*argv, "--epochs", str(EPOCHS)]) == 0
    one, two = epochs_of(single)[-1]["val_loss"], history[-1]["val_loss"]
    start = math.log(200)  # the tiny preset's vocabulary: an untrained model's loss is about ln(V)
    assert two < start - 1.0 and one < start - 1.0  # both learn
    assert abs(two - one) < 0.1 * one, (one, two)

    # --resume under torchrun picks up at the next epoch, with the same sharding
    r = torchrun("--dataset", str(data_dir), "--out", str(out), "--epochs", str(EPOCHS + 1), "--resume")
    assert r.returncode == 0, r.stderr[-3000:]
    history = epochs_of(out)
    assert [h["epoch"] for h in history] == list(range(1, EPOCHS + 2))
    assert history[-1]["step"] == per_epoch * (EPOCHS + 1)
    assert (out / "epochs" / f"epoch-{EPOCHS + 1:03d}" / "train_state.pt").is_file()


def test_a_torchrun_of_ones_own_trains_the_first_stage_and_says_how_to_fine_tune(data_dir, tmp_path):
    """The second stage runs in one process, so under a torchrun the user started it is not
    run on every rank: the first stage ends with the command that runs it, which does."""
    long = tmp_path / "long.jsonl"
    long.write_text((data_dir / "train.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    out = tmp_path / "ddp"
    r = torchrun("--dataset", str(data_dir), "--out", str(out), "--epochs", "1", "--fine-tune-train", str(long))
    assert r.returncode == 0, r.stderr[-3000:]
    line = f"the second, fine-tuning stage runs in one process: python train.py --out {out} --resume"
    assert r.stderr.count(line) == 1 and not (out / "fine-tune" / "best").exists()
    r = subprocess.run(
        [sys.executable, "train.py", "--out", str(out), "--resume", "--threads", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (out / "fine-tune" / "best" / "model.safetensors").is_file()


def train_py(*args):
    return subprocess.run(
        [sys.executable, "train.py", *COMMON, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_train_py_processes_bad_input_one_line(data_dir, tmp_path):
    """Bad input under --processes: rank 0's one line and exit code 2, whether the launching
    process finds it (before any process starts) or the training processes do."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "train.jsonl").write_text('{"id": "0", "translation": {"en": "Hi."\n', encoding="utf-8")
    (bad / "validation.jsonl").write_text((data_dir / "validation.jsonl").read_text(), encoding="utf-8")
    for args in (["--dataset", str(bad)], ["--dataset", str(data_dir), "--vocab-size", "3"]):
        r = train_py(*args, "--out", str(tmp_path / "out"), "--epochs", "1", "--processes", "2")
        assert r.returncode == 2, r.stderr[-3000:]
        errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, r.stderr[-3000:]
        assert "Traceback" not in r.stderr and "rank1" not in r.stderr, r.stderr[-3000:]


@pytest.mark.slow
def test_ctrl_c_under_torchrun_stops_every_rank_with_one_line(data_dir, tmp_path):
    """Ctrl-C to a torchrun of 2 processes: both ranks stop at the same step, rank 0 says
    where it saved and how to go on (with torchrun again), and no rank prints a traceback
    (torchrun itself still reports the signal its own way); the resume finishes the run."""
    out = tmp_path / "ddp"
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=2",
        "train.py",
        *COMMON,
        "--dataset",
        str(data_dir),
        "--out",
        str(out),
        "--epochs",
        "2",
        "--batch-tokens",
        "150",
        "--save-every-minutes",
        "1e-6",
    ]
    p = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while not (out / "mid-epoch" / "train_state.pt").is_file():  # the first step has been saved
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGINT)
    stdout, stderr = p.communicate(timeout=300)
    stops = [line for line in stderr.splitlines() if line.startswith("stopped")]
    assert len(stops) == 1 and stops[0].endswith(
        f"continue with: torchrun --nproc_per_node=2 train.py --out {out} --resume"
    ), stderr[-3000:]
    assert "[rank" not in stderr and "KeyboardInterrupt" not in stderr and stdout == "", stderr[-3000:]
    assert stderr.count("Traceback") <= 1  # torchrun's own SignalException, if any
    r = torchrun(
        "--dataset", str(data_dir), "--out", str(out), "--resume", "--batch-tokens", "150", "--save-every-minutes", "10"
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert [h["epoch"] for h in epochs_of(out)] == [1, 2]
