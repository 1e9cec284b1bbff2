"""A preset with a second stage (``Preset.fine_tune``): ``python train.py`` trains the first
stage in OUT, then fine-tunes OUT/best in OUT/fine-tune on the real pairs plus
--fine-tune-train, with the preset's fine-tuning settings; the fine-tune's best/ carries the
first stage's snapshots and counts its epochs on top of the first stage's."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import train
from tests.helpers import PAIRS, exit_2, lines_of, tiny_main, write_jsonl
from transformer.cli import training_run as cli_train
from transformer.cli.modelcard import snapshots_section
from transformer.core.checkpoint import list_snapshots
from transformer.training.errors import TrainingError
from transformer.training.presets import PRESETS
from transformer.training.stages import plan_stages

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def long_pairs(tmp_path) -> Path:
    """Joined fixture pairs: the kind of pairs the base preset's second stage trains on."""
    joined = [(f"{a[0]} {b[0]}", f"{a[1]} {b[1]}") for a, b in zip(PAIRS, PAIRS[1:] + PAIRS[:1])]
    return write_jsonl(tmp_path / "long.jsonl", joined)


def test_the_base_recipe_ends_with_the_fine_tuning_stage_and_quick_without_it():
    plan = cli_train.plan_of(cli_train.parse_args([]))
    first, tuned = plan.stages
    assert (first.name, tuned.name) == ("first", "fine-tune") and first.preset == PRESETS["base"]
    assert tuned.out == Path("runs/base/fine-tune") and tuned.options.init_from == str(Path("runs/base/best"))
    assert tuned.options.extra_train == cli_train.DEFAULT_FINE_TUNE_TRAIN and tuned.options.fine_tune_train == ()
    # every optimisation setting is the preset's fine-tuning one, and no snapshots of its own
    assert tuned.preset.train == PRESETS["base"].fine_tune
    assert tuned.options.snapshots == () and PRESETS["base"].fine_tune.processes == 1
    # the data and the device are the first stage's
    for name in ("dataset", "src", "tgt", "tag_origins", "storage_dtype", "device", "val_limit", "threads"):
        assert getattr(tuned.options, name) == getattr(first.options, name), name
    # the second stage has no stage after it
    assert plan_stages(tuned).stages == (tuned,)
    for argv in (
        ["--preset", "quick"],  # the first stage alone
        ["--fine-tune-train"],  # asked for none
        ["--init-from", "checkpoints/en-it"],  # a fine-tune of one's own
        ["--dataset", "elsewhere"],  # another corpus has no long pairs of ours
    ):
        assert len(cli_train.plan_of(cli_train.parse_args(argv)).stages) == 1, argv
    assert PRESETS["quick"].train == PRESETS["base"].train and PRESETS["quick"].model == PRESETS["base"].model


def test_the_fine_tuning_stage_takes_the_runs_save_interval_and_no_teacher_or_limit():
    args = cli_train.parse_args(
        ["--save-every-minutes", "7", "--lr", "0.01", "--distill-from", "t", "--max-train-pairs", "9"]
    )
    first, tuned = cli_train.plan_of(args).stages
    assert first.preset.train.lr == 0.01 and first.preset.train.save_every_minutes == 7
    assert tuned.preset.train == replace(PRESETS["base"].fine_tune, save_every_minutes=7)
    assert tuned.budget.save_every_minutes == 7 and not tuned.budget.extends
    assert (tuned.options.distill_from, tuned.options.max_train_pairs) == (None, None)
    assert (first.options.distill_from, first.options.max_train_pairs) == ("t", 9)


def test_a_fine_tuning_stage_of_several_processes_is_refused_in_one_line():
    two = replace(PRESETS["base"], fine_tune=replace(PRESETS["base"].fine_tune, processes=2))
    first = cli_train.stage_of(cli_train.parse_args([]))
    with pytest.raises(TrainingError, match="fine-tuning stage trains in one process, not 2"):
        plan_stages(replace(first, preset=two))


def test_the_big_preset_is_the_base_recipe_wider_on_the_surest_forward_translations():
    args = cli_train.parse_args(["--preset", "big", "--out", "runs/big"])
    big, base = PRESETS["big"], PRESETS["base"]
    assert (big.model.d_model, big.model.d_ff) == (384, 1536)
    assert big.model.n_encoder_layers == base.model.n_encoder_layers == 4 and big.model.h == base.model.h
    assert big.train.epochs == base.train.epochs and big.train.max_minutes is None
    # the first stage reads the filtered forward translations in place of all of them, the rest as base
    names = [Path(p).name for p in cli_train.extra_train(args)]
    assert names == [Path(p).name.replace("-ft4", "-ft4-conf80") for p in cli_train.DEFAULT_EXTRA_TRAIN]
    assert all(Path(p).is_dir() for p in cli_train.extra_train(args))
    # and its second stage fine-tunes the first stage's best on the long pairs, in one process
    tuned = cli_train.plan_of(args).stages[1]
    assert tuned.options.init_from == str(Path("runs/big/best")) and tuned.preset.train == big.fine_tune
    assert big.fine_tune.processes == 1 and big.fine_tune.lr < big.train.lr
    # a named --extra-train still wins, and another corpus gets none
    assert cli_train.extra_train(cli_train.parse_args(["--preset", "big", "--extra-train", "x"])) == ("x",)
    assert cli_train.extra_train(cli_train.parse_args(["--preset", "big", "--dataset", "elsewhere"])) == ()


def test_two_stages_fine_tune_the_first_stages_best_in_a_folder_of_its_own(capfd, data_dir, long_pairs, tmp_path):
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "2", "--snapshots", "1", "--fine-tune-train", str(long_pairs)) == 0
    captured = capfd.readouterr()
    first, second = (json.loads(line) for line in lines_of(captured.out)[-2:])
    assert first["best"] == str(out / "best") and second["best"] == str(out / "fine-tune" / "best")
    assert f"stage 2 of 2 (fine-tune): from {out / 'best'} in {out / 'fine-tune'}" in captured.err
    record = json.loads((out / "fine-tune" / "run.json").read_text())
    assert record["init_from"] == str(out / "best") and record["extra_train"] == [str(long_pairs)]
    assert record["lr"] == PRESETS["tiny"].fine_tune.lr and record["processes"] == 1
    assert record["threads"] == 1 and record["fine_tune_train"] == []
    # one epoch of fine-tuning, counted on top of the epoch the first stage's best holds
    start = json.loads((out / "best" / "metrics.json").read_text())
    tuned = json.loads((out / "fine-tune" / "best" / "metrics.json").read_text())
    # (an average of the last epochs counts as the last of them)
    start_epoch = start.get("epoch") or int(start["averaged"][-1].split("-")[1])
    assert tuned["epoch"] == 1 and tuned["epochs_before"] == start_epoch
    card = (out / "fine-tune" / "best" / "README.md").read_text()
    assert f"minutes of fine-tuning, after epoch {start_epoch} of the model it started from |" in card
    assert f"| {start_epoch} + 1 of fine-tuning (this model) |" in snapshots_section(out / "fine-tune" / "best")
    # the shipped folder shows how the model it started from formed
    assert [s.epoch for s in list_snapshots(out / "fine-tune" / "best")] == [1]
    for name in ("model.safetensors", "metrics.json"):
        snapshot = Path("snapshots") / "epoch-001" / name
        assert (out / "fine-tune" / "best" / snapshot).read_bytes() == (out / "best" / snapshot).read_bytes()


def test_a_missing_fine_tuning_folder_is_one_line_before_any_training(capfd, monkeypatch, data_dir, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("the data loaded before the bad input was noticed")

    monkeypatch.setattr(cli_train, "load_run_data", refuse)
    line = exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--fine-tune-train", str(tmp_path / "nowhere"))
    assert line == f"error: --fine-tune-train {tmp_path / 'nowhere'}: no such file or directory"


def test_a_new_run_does_not_end_on_a_fine_tune_it_was_not_told_to_replace(capfd, data_dir, long_pairs, tmp_path):
    out = tmp_path / "run"
    (out / "fine-tune" / "best").mkdir(parents=True)
    (out / "fine-tune" / "best" / "config.json").write_text("{}")
    line = exit_2(capfd, tiny_main, data_dir, out, "--fine-tune-train", str(long_pairs))
    assert line.startswith(f"error: {out / 'fine-tune'} already holds a run (best)")
    assert (out / "fine-tune" / "best" / "config.json").read_text() == "{}"


def test_a_run_recorded_before_second_stages_resumes_without_one(data_dir, long_pairs, tmp_path):
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "1", "--snapshots", "none", "--fine-tune-train") == 0
    record = json.loads((out / "run.json").read_text())
    del record["fine_tune_train"]
    (out / "run.json").write_text(json.dumps(record))
    assert train.main(["--out", str(out), "--resume", "--epochs", "2"]) == 0
    assert not (out / "fine-tune").exists()


def test_resuming_a_finished_run_with_more_epochs_trains_the_first_stage_on_and_fine_tunes_again(
    capfd, data_dir, long_pairs, tmp_path
):
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "1", "--snapshots", "none", "--fine-tune-train", str(long_pairs)) == 0
    first_history = json.loads((out / "history.json").read_text())
    tuned_history = out / "fine-tune" / "history.json"
    tuned = tuned_history.read_text()
    capfd.readouterr()
    # a bare --resume of a finished run has nothing left to train in either stage
    assert train.main(["--out", str(out), "--resume"]) == 0
    assert json.loads((out / "history.json").read_text()) == first_history
    assert tuned_history.read_text() == tuned
    assert train.main(["--out", str(out), "--resume", "--epochs", "2"]) == 0
    err = capfd.readouterr().err
    assert f"stage 2 of 2 (fine-tune): from {out / 'best'} in {out / 'fine-tune'}" in err
    assert len(json.loads((out / "history.json").read_text())) > len(first_history)
    # the fine-tune was made again, from the first stage's best after its second epoch
    assert tuned_history.read_text() != tuned
    start = json.loads((out / "best" / "metrics.json").read_text())
    start_epoch = start.get("epoch") or int(start["averaged"][-1].split("-")[1])
    assert json.loads((out / "fine-tune" / "best" / "metrics.json").read_text())["epochs_before"] == start_epoch
