"""torchrun with 2 CPU processes (gloo): the tiny preset trains data-parallel, rank 0 alone
evaluates and writes checkpoints, --resume works, and the loss lands close to a
single-process run that sees the same tokens per optimiser step."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

ROOT = Path(__file__).resolve().parent.parent
EPOCHS = 8
COMMON = ["--preset", "tiny", "--device", "cpu", "--snapshots", "none", "--batch-tokens", "600", "--vocab-size", "200"]

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="this torch build has no gloo backend")


def torchrun(*args, nproc=2):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "train.py", *COMMON, *args]
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
    s = subprocess.run([sys.executable, "train.py", *COMMON, "--batch-tokens", "1200", "--threads", "1",
                        "--dataset", str(data_dir), "--out", str(single), "--epochs", str(EPOCHS)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert s.returncode == 0, s.stderr[-3000:]
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
