"""End-to-end runs of train.py and the evaluate CLI on the tiny fixture corpus."""

import json
import subprocess
import sys

import pytest
import torch

from transformer import load_translator
from tests.helpers import ROOT

pytestmark = pytest.mark.slow

# the tiny preset cut to the fixture corpus (96 pairs), so an epoch has several batches
FIXTURE = ["--batch-tokens", "600", "--vocab-size", "200"]


def run(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tiny_run(data_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "tiny"
    r = run(
        "train.py",
        "--preset",
        "tiny",
        "--dataset",
        str(data_dir),
        "--out",
        str(out),
        "--epochs",
        "4",
        "--keep-epochs",
        "3",
        *FIXTURE,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r


def test_tiny_training_end_to_end(tiny_run):
    out, r = tiny_run
    history = json.loads((out / "history.json").read_text())
    epochs = [h for h in history if "epoch" in h]
    assert [h["epoch"] for h in epochs] == [1, 2, 3, 4]
    assert epochs[-1]["val_loss"] < epochs[0]["val_loss"]  # it learns
    assert sorted(p.name for p in (out / "epochs").iterdir()) == ["epoch-002", "epoch-003", "epoch-004"]
    # default snapshot schedule 1,4,8 over 4 epochs: 1 and 4 (also the final one), copied into
    # best/ up to its own epoch (all of them for an average of the last epochs)
    assert sorted(p.name for p in (out / "snapshots").iterdir()) == ["epoch-001", "epoch-004"]
    best_epoch = json.loads((out / "best" / "metrics.json").read_text()).get("epoch", 4)
    assert sorted(p.name for p in (out / "best" / "snapshots").iterdir()) == [
        f"epoch-{e:03d}" for e in (1, 4) if e <= best_epoch
    ]
    for name in ("config.json", "model.safetensors", "tokenizer.json", "metrics.json", "README.md"):
        assert (out / "best" / name).is_file(), name
    assert "Training history" in (out / "best" / "README.md").read_text()
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert json.loads(r.stdout.strip().splitlines()[-1])["best"].endswith("best")
    tr = load_translator(out / "best")
    assert isinstance(tr.translate(["the cat sleeps."])[0], str)
    state = torch.load(out / "epochs" / "epoch-004" / "train_state.pt", weights_only=True)
    assert state["epoch"] == 4 and state["step"] > 0


def test_resume_continues_from_the_last_epoch(tiny_run, data_dir):
    out, _ = tiny_run
    r = run(
        "train.py",
        "--preset",
        "tiny",
        "--dataset",
        str(data_dir),
        "--out",
        str(out),
        "--epochs",
        "5",
        "--resume",
        "--keep-epochs",
        "3",
        *FIXTURE,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    history = json.loads((out / "history.json").read_text())
    assert [h["epoch"] for h in history if "epoch" in h] == [1, 2, 3, 4, 5]
    s4 = torch.load(out / "epochs" / "epoch-004" / "train_state.pt", weights_only=True)
    s5 = torch.load(out / "epochs" / "epoch-005" / "train_state.pt", weights_only=True)
    assert s5["step"] > s4["step"] and s5["elapsed"] > s4["elapsed"]


def test_evaluate_cli_prints_a_json_last_line(tiny_run, data_dir):
    out, _ = tiny_run
    r = run(
        "-m",
        "transformer.cli.evaluate",
        "--checkpoint",
        str(out / "best"),
        "--data",
        str(data_dir / "test.jsonl"),
        "--limit",
        "4",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["n"] == 4 and 0 <= result["bleu"] <= 100 and 0 <= result["chrf"] <= 100 and result["seconds"] >= 0
    assert result["long"] is None  # the fixture's sentences are all short
    r = run(
        "-m",
        "transformer.cli.evaluate",
        "--checkpoint",
        str(out / "best"),
        "--data",
        str(data_dir / "test.jsonl"),
        "--long-words",
        "5",
    )
    long = json.loads(r.stdout.strip().splitlines()[-1])["long"]
    n = sum(len(json.loads(line)["translation"]["en"].split()) >= 5 for line in (data_dir / "test.jsonl").open())
    assert 0 < n < 6 and long["n"] == n and long["min_words"] == 5 and 0 <= long["bleu"] <= 100
    r = run("-m", "transformer.cli.evaluate", "--checkpoint", str(out / "best"), "--data", str(data_dir))
    assert json.loads(r.stdout.strip().splitlines()[-1])["n"] == 6  # a directory: its test split
    r = run(
        "-m",
        "transformer.cli.evaluate",
        "--checkpoint",
        str(out / "best"),
        "--data",
        str(data_dir),
        "--limit",
        "3",
        "--beam-size",
        "3",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["beam_size"] == 3 and result["n"] == 3


@pytest.mark.parametrize(
    "args, message",
    [
        (["--dataset", "/no/such/dir"], "no such file or directory"),
        (["--src", "xx"], "language 'xx' not found"),
        (["--epochs", "0"], "argument --epochs: expected a whole number ≥ 1, got '0'"),
        (["--lr", "-1"], "argument --lr: expected a number > 0, got '-1'"),
        (["--max-minutes", "0"], "argument --max-minutes: expected a number > 0, got '0'"),
    ],
)
def test_bad_train_arguments_exit_2_with_one_line(tmp_path, data_dir, args, message):
    full = ["--preset", "tiny", "--dataset", str(data_dir), "--out", str(tmp_path / "o"), *args]
    r = run("train.py", *full)
    assert r.returncode == 2
    assert message in r.stderr and "Traceback" not in r.stderr


def test_empty_file_and_unwritable_out_dir(tmp_path, data_dir):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    r = run("train.py", "--preset", "tiny", "--dataset", str(empty), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "file is empty" in r.stderr and "Traceback" not in r.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    r = run("train.py", "--preset", "tiny", "--dataset", str(data_dir), "--out", str(blocker / "out"))
    assert r.returncode == 2 and "not writable" in r.stderr and "Traceback" not in r.stderr
    r = run("train.py", "--preset", "huge")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = run("train.py", "--preset", "tiny", "--dataset", str(data_dir), "--out", str(tmp_path / "fresh"), "--resume")
    assert r.returncode == 2 and "no epoch checkpoint" in r.stderr


def test_bad_evaluate_arguments(tmp_path, tiny_checkpoint, data_dir):
    r = run("-m", "transformer.cli.evaluate", "--checkpoint", str(tmp_path / "none"), "--data", str(data_dir))
    assert r.returncode == 2 and "checkpoint directory not found" in r.stderr
    r = run(
        "-m",
        "transformer.cli.evaluate",
        "--checkpoint",
        str(tiny_checkpoint),
        "--data",
        str(data_dir),
        "--beam-size",
        "0",
    )
    assert r.returncode == 2 and "argument --beam-size: expected a whole number ≥ 1, got '0'" in r.stderr
    r = run("-m", "transformer.cli.evaluate", "--checkpoint", str(tiny_checkpoint), "--data", str(tmp_path / "x.jsonl"))
    assert r.returncode == 2 and "no such file" in r.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"translation": {"de": "a", "fr": "b"}}\n')
    r = run("-m", "transformer.cli.evaluate", "--checkpoint", str(tiny_checkpoint), "--data", str(bad))
    assert r.returncode == 2 and "not found" in r.stderr and "Traceback" not in r.stderr


def test_speed_benchmark_prints_its_ratios(tiny_checkpoint, data_dir, tmp_path):
    r = run(str(ROOT / "benchmarks" / "speed.py"), "--checkpoint", str(tmp_path / "none"), cwd=tmp_path)
    assert r.returncode == 2 and "checkpoint directory not found" in r.stderr and "Traceback" not in r.stderr
    r = run(
        "benchmarks/speed.py",
        "--checkpoint",
        str(tiny_checkpoint),
        "--data",
        str(data_dir / "train.jsonl"),
        "--repeat",
        "1",
        "--train-steps",
        "1",
        "--batch-tokens",
        "400",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    for key in (
        "trace_ms",
        "naive_ms",
        "decode_speedup",
        "ours_tok_s",
        "seed_tok_s",
        "torch_tok_s",
        "train_speedup",
        "vs_torch",
    ):
        assert result[key] > 0, key


def test_train_step_benchmark_prints_its_ratios(data_dir):
    small = [
        "--data",
        str(data_dir),
        "--vocab-size",
        "200",
        "--d-ff",
        "64",
        "32",
        "--batch-tokens",
        "200",
        "--threads",
        "1",
        "--rounds",
        "1",
    ]
    r = run("benchmarks/train_step.py", *small, "--steps", "100000")
    assert r.returncode == 2 and "lower --steps" in r.stderr and "Traceback" not in r.stderr
    r = run("benchmarks/train_step.py", *small, "--steps", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(result["ms_per_step"]) == {"64", "32"} and min(result["ms_per_step"].values()) > 0
    assert result["speedup_vs_d_ff_64"]["64"] == 1.0 and result["speedup_vs_d_ff_64"]["32"] > 0
    r = run("benchmarks/train_step.py", *small[:5], "64", *small[7:], "--steps", "2", "--dropout-impl", "torch", "fast")
    assert r.returncode == 0, r.stderr[-2000:]
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(result["ms_per_step"]) == {"64/torch", "64/fast"}
    assert result["speedup_vs_d_ff_64/torch"]["64/torch"] == 1.0 and result["speedup_vs_d_ff_64/torch"]["64/fast"] > 0


@pytest.mark.parametrize("fast", [False, True])
def test_speed_benchmark_headlines_the_dtype_the_trainer_would_choose(tiny_checkpoint, data_dir, monkeypatch, fast):
    """The headline ratios are those of the dtype the trainer picks (its own bf16_is_fast),
    and both dtypes are reported side by side."""
    from transformer.training import optim as training
    from transformer.training.data import encode_pairs, load_split

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import speed

    assert speed.bf16_is_fast is training.bf16_is_fast  # the trainer's decision, not a copy of it
    monkeypatch.setattr(speed, "bf16_is_fast", lambda device: fast)
    # distinct stand-in timings per approach (the real ones are in the test above), so
    # figures taken from the wrong dtype cannot pass
    timed = {}

    def stand_in(steps, batches, rounds):
        timed.update({name: 100.0 * (i + 1) for i, name in enumerate(steps)})
        return timed

    monkeypatch.setattr(speed, "side_by_side", stand_in)
    tr = load_translator(tiny_checkpoint)
    pairs = load_split(str(data_dir / "train.jsonl"), "train", tr.cfg.src_lang, tr.cfg.tgt_lang)
    encoded = encode_pairs(pairs[:40], tr.src_tok, tr.tgt_tok, tr.cfg)
    result = speed.bench_train(tr.cfg, encoded, steps=1, batch_tokens=400, rounds=1)
    assert set(timed) == {"seed", "ours/float32", "ours/bfloat16", "torch/float32", "torch/bfloat16"}
    chosen = "bfloat16" if fast else "float32"
    assert result["train_dtype"] == chosen and set(result["by_dtype"]) == {"float32", "bfloat16"}
    assert result["ours_tok_s"] == timed[f"ours/{chosen}"] and result["torch_tok_s"] == timed[f"torch/{chosen}"]
    assert result["train_speedup"] == round(timed[f"ours/{chosen}"] / timed["seed"], 2)
    assert result["vs_torch"] == round(timed[f"ours/{chosen}"] / timed[f"torch/{chosen}"], 3)
    assert result["bf16_speedup"] == round(timed["ours/bfloat16"] / timed["ours/float32"], 2)
