"""The training loop as a unit, in-process: resume, averaging, best/ selection, snapshots,
the time budget, torchrun sharding, and train.py's argument handling."""

from __future__ import annotations

import json
import os
import signal
import sys
import types
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from transformer.cli import training_run as cli_train
from transformer.training import distributed
from transformer.training import evaluation, optim, saving
from transformer.training import loop as trainer_mod
from transformer.core.checkpoint import list_snapshots, load_checkpoint, weights_state_dict
from transformer.training.data import load_parallel
from transformer.training.distributed import DistContext, Stopped, StopSignals, shard_batches
from transformer.training.loop import Trainer, TrainingStopped
from transformer.training.errors import TrainingError
from transformer.training.presets import PRESETS
from transformer.training.run_folder import MID_EPOCH_DIR, STATE_FILE, is_snapshot_epoch, parse_snapshots
from transformer.training.saving import average_checkpoints
from transformer.training.setup import build_fresh

from tests.helpers import tiny_main

pytestmark = pytest.mark.usefixtures("one_thread")

# the tiny preset, cut to the fixture corpus (96 pairs): several batches per epoch
TINY = replace(PRESETS["tiny"], vocab_size=200)
SETTINGS = replace(TINY.train, epochs=3, batch_tokens=600)


@pytest.fixture(scope="module")
def data(data_dir):
    return load_parallel(str(data_dir), "en", "it")


def make_trainer(data, out, settings=SETTINGS, **kw):
    model, src_tok, tgt_tok = build_fresh(TINY, data, "en", "it", seed=settings.seed)
    return Trainer(model, src_tok, tgt_tok, data, settings, out, **kw)


class Interrupt(Exception):
    pass


def stop_before_epoch_3(t, epoch, n_batches, **_):
    """An on_epoch_start callback: the run is killed after epoch 2."""
    if epoch == 3:
        raise Interrupt


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def without_minutes(history):
    return [{k: v for k, v in r.items() if k != "minutes"} for r in history]


@pytest.fixture(scope="module")
def straight_run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("straight")
    torch.set_num_threads(1)
    t = make_trainer(data, out, snapshots=(1,))
    result = t.fit()
    return out, result, t


def stop_in_epoch_2(t: Trainer, how: str, monkeypatch) -> tuple[type, list[str], tuple[int, int]]:
    """Make ``t`` end in its second epoch: ``how`` 'killed' (an exception before epoch 3, as
    a crash), 'stopped' (a stop request after 3 of its steps, as Ctrl-C), or 'evaluating' (a
    stop request while epoch 2 is evaluated). Returns what ``fit`` raises, the epoch
    checkpoints it leaves, and where a resume picks up (epochs done, batches done)."""
    n = t.steps_per_epoch
    if how == "killed":
        t.add_callback("on_epoch_start", stop_before_epoch_3)
        return Interrupt, ["epoch-001", "epoch-002"], (2, 0)
    if how == "stopped":
        t.add_callback("on_batch_end", lambda tr, **_: tr.step == n + 3 and tr.stop.request(signal.SIGINT))
        return TrainingStopped, ["epoch-001"], (1, 3)

    def validation_loss(*args, **kwargs):
        if t.epoch == 2:
            t.stop.request(signal.SIGINT)
        return real_validation_loss(*args, **kwargs)

    real_validation_loss = evaluation.validation_loss
    monkeypatch.setattr(evaluation, "validation_loss", validation_loss)
    return TrainingStopped, ["epoch-001"], (1, n)


@pytest.mark.parametrize("how", ["killed", "stopped", "evaluating"])
def test_resume_continues_exactly_where_an_interrupted_run_stopped(data, straight_run, tmp_path, monkeypatch, how):
    """Killed after epoch 2, or stopped within it (during its steps, or during its
    evaluation, which is then given up), and resumed: the run ends with the very same
    weights and history as one that never stopped. Weights, optimiser, schedule, RNG, data
    position and step all carry over."""
    straight, *_ = straight_run
    first = make_trainer(data, tmp_path, snapshots=(1,))
    raised, on_disk, position = stop_in_epoch_2(first, how, monkeypatch)
    with pytest.raises(raised):
        first.fit()
    monkeypatch.undo()
    assert sorted(p.name for p in (tmp_path / "epochs").iterdir()) == on_disk
    assert (tmp_path / MID_EPOCH_DIR).is_dir() == (how != "killed")

    resumed = Trainer.resume(tmp_path, data, SETTINGS, snapshots=(1,))
    assert (resumed.epoch, resumed.batches_done, resumed.step) == (*position, first.step)
    result = resumed.fit()
    assert not (tmp_path / MID_EPOCH_DIR).exists()  # out of date after the next epoch checkpoint
    for name in ("epoch-001", "epoch-002", "epoch-003"):
        assert same_weights(weights(tmp_path / "epochs" / name), weights(straight / "epochs" / name)), name
    assert same_weights(weights(tmp_path / "best"), weights(straight / "best"))
    assert without_minutes(result.history) == without_minutes(json.loads((straight / "history.json").read_text()))
    state = torch.load(tmp_path / "epochs" / "epoch-003" / STATE_FILE, weights_only=True)
    assert state["epoch"] == 3 and state["step"] == resumed.step


def test_resume_is_exact_when_checkpoints_are_stored_in_float16(data, tmp_path):
    """With ``--storage-dtype float16`` the epoch checkpoints hold rounded weights; resume
    must continue from the float32 weights the run had in memory, or it trains a different
    model from there on (a 2k-vocabulary run parted from its uninterrupted twin right after
    the resumed epoch)."""

    def fp16_trainer(out):
        model, src_tok, tgt_tok = build_fresh(TINY, data, "en", "it", seed=SETTINGS.seed, storage_dtype="float16")
        return Trainer(model, src_tok, tgt_tok, data, SETTINGS, out)

    straight = fp16_trainer(tmp_path / "straight")
    straight.fit()
    first = fp16_trainer(tmp_path / "resumed")
    first.add_callback("on_epoch_start", stop_before_epoch_3)
    with pytest.raises(Interrupt):
        first.fit()
    resumed = Trainer.resume(tmp_path / "resumed", data, SETTINGS)
    assert resumed.cfg.storage_dtype == "float16"  # best/ is still written in the run's dtype
    result = resumed.fit()
    assert same_weights(weights_state_dict(resumed.model), weights_state_dict(straight.model))
    assert without_minutes(result.history) == without_minutes(straight.history)
    assert (
        load_file(str(tmp_path / "resumed" / "best" / "model.safetensors"))["src_embed.weight"].dtype == torch.float16
    )


def test_resume_without_a_checkpoint_and_with_more_epochs(data, straight_run, tmp_path):
    with pytest.raises(TrainingError, match="no epoch checkpoint"):
        Trainer.resume(tmp_path, data, SETTINGS)
    straight, *_ = straight_run
    t = Trainer.resume(straight, data, replace(SETTINGS, epochs=2, max_minutes=5.0))
    assert t.settings.epochs == 3  # never fewer than the epochs already done
    assert t.settings.max_minutes == 5.0 and t.settings.lr == SETTINGS.lr


def test_averaging_averages_the_last_epochs_on_disk(data, straight_run):
    straight, result, trainer = straight_run
    last = result.history[-1]
    assert last["averaged"] == ["epoch-002", "epoch-003"]  # tiny preset: average_last=2
    e2, e3 = (weights(straight / "epochs" / n) for n in last["averaged"])
    avg = average_checkpoints([straight / "epochs" / n / "model.safetensors" for n in last["averaged"]])
    assert all(torch.allclose(avg[k], (e2[k] + e3[k]) / 2) for k in avg)
    # the trainer's model holds the averaged weights and was evaluated as such
    held = weights_state_dict(trainer.model)
    assert all(torch.equal(held[k], avg[k]) for k in avg) and not same_weights(held, e3)
    best_chrf = max(r["chrf"] for r in result.history)
    assert result.best_chrf == best_chrf
    best = json.loads((straight / "best" / "metrics.json").read_text())
    assert best["validation"]["chrf"] == best_chrf


def scripted_scores(monkeypatch, chrfs):
    """Replace the scorer so that evaluation k gets chrF ``chrfs[k]``."""
    it = iter(chrfs)
    monkeypatch.setattr(evaluation, "corpus_scores", lambda hyps, refs: {"bleu": 0.0, "chrf": next(it)})


@pytest.mark.parametrize(
    "chrfs, best_tag",
    [
        ([10.0, 30.0, 20.0, 25.0], {"epoch": 2}),  # averaging loses to epoch 2: best/ keeps epoch 2
        ([10.0, 30.0, 20.0, 40.0], {"averaged": ["epoch-002", "epoch-003"]}),  # averaging wins
    ],
)
def test_one_evaluate_and_save_step_picks_best(data, tmp_path, monkeypatch, chrfs, best_tag):
    scripted_scores(monkeypatch, chrfs)
    t = make_trainer(data, tmp_path, snapshots=())
    seen = []
    t.add_callback("on_evaluate", lambda tr, evaluation: seen.append(evaluation.is_best))
    result = t.fit()
    assert seen == [True, True, False, chrfs[3] > 30.0]
    metrics = json.loads((tmp_path / "best" / "metrics.json").read_text())
    assert {k: metrics[k] for k in best_tag} == best_tag
    assert metrics["validation"]["chrf"] == max(chrfs) == result.best_chrf
    assert [r.get("epoch") for r in result.history] == [1, 2, 3, None]
    # best/ carries the history up to its own evaluation, so its card can be rebuilt from the folder
    assert metrics["history"] == result.history[: len(metrics["history"])] and metrics["history"]
    if "averaged" in best_tag:  # best/ holds the averaged weights, not epoch 3's
        assert not same_weights(weights(tmp_path / "best"), weights(tmp_path / "epochs" / "epoch-003"))
    else:
        assert same_weights(weights(tmp_path / "best"), weights(tmp_path / "epochs" / "epoch-002"))
    # the epoch checkpoint's training state records the best chrF seen so far
    assert torch.load(tmp_path / "epochs" / "epoch-003" / STATE_FILE, weights_only=True)["best_chrf"] == 30.0


def test_snapshot_schedule():
    assert parse_snapshots("1,2,4,8") == (1, 2, 4, 8)
    assert parse_snapshots(" 8, 2,2 ") == (2, 8)
    assert parse_snapshots("none") == parse_snapshots("") == ()
    for bad in ("0", "a,b", "-1"):
        with pytest.raises(ValueError):
            parse_snapshots(bad)
    schedule = (1, 2, 4, 8)
    assert [e for e in range(1, 31) if is_snapshot_epoch(e, schedule, final=e == 30)] == [1, 2, 4, 8, 30]
    assert [e for e in range(1, 4) if is_snapshot_epoch(e, schedule, final=e == 3)] == [1, 2, 3]
    assert not any(is_snapshot_epoch(e, (), final=True) for e in range(1, 5))


def test_snapshots_are_small_fp16_and_copied_into_best(data, straight_run):
    straight, result, _ = straight_run  # snapshots=(1,) over 3 epochs: epoch 1 and the final epoch 3
    assert sorted(p.name for p in (straight / "snapshots").iterdir()) == ["epoch-001", "epoch-003"]
    for snap in (straight / "snapshots").iterdir():
        assert sorted(p.name for p in snap.iterdir()) == ["config.json", "metrics.json", "model.safetensors"]
        assert json.loads((snap / "config.json").read_text())["storage_dtype"] == "float16"
        assert all(v.dtype == torch.float16 for v in weights(snap).values() if v.is_floating_point())
    snaps = list_snapshots(straight / "best")
    best = json.loads((straight / "best" / "metrics.json").read_text())
    best_epoch = best.get("epoch", 3)  # an average of the last epochs comes after them all
    assert [s.epoch for s in snaps] == [e for e in (1, 3) if e <= best_epoch] and snaps[0].epoch == 1
    epochs = {r["epoch"]: r for r in result.history if "epoch" in r}
    for s in snaps:
        assert s.metrics["validation"]["chrf"] == epochs[s.epoch]["chrf"]
        model, src_tok, *_ = load_checkpoint(s.path)  # the tokenizer comes from best/
        assert model.cfg.d_model == TINY.model.d_model and src_tok.get_vocab_size() > 0


def test_time_budget_stops_mid_epoch_and_says_where(data, tmp_path):
    t = make_trainer(data, tmp_path, settings=replace(SETTINGS, max_minutes=1e-9), snapshots=(2,))
    stops = []
    t.add_callback("on_time_budget", lambda tr, **info: stops.append(info))
    result = t.fit()
    n = t.steps_per_epoch
    assert n > 1 and stops == [{"epoch": 1, "batches_done": 1, "n_batches": n}]
    assert result.stopped_at == (1, 1, n)
    assert [r.get("epoch") for r in result.history] == [1]  # evaluated and saved, then stopped
    assert (tmp_path / "epochs" / "epoch-001" / STATE_FILE).is_file()
    assert [p.name for p in (tmp_path / "snapshots").iterdir()] == ["epoch-001"]  # the final epoch


class FakeClock:
    """A Stopwatch that stands still: the test moves ``elapsed`` by hand."""

    def __init__(self, already: float = 0.0) -> None:
        self.elapsed = already


def slow_epoch_ends(t: Trainer, monkeypatch, seconds: float = 100) -> None:
    """Each end of an epoch (evaluate and save) moves the trainer's FakeClock by ``seconds``."""
    end_epoch = t.end_epoch

    def slow_end_epoch(*args, **kwargs):
        t.clock.elapsed += seconds
        return end_epoch(*args, **kwargs)

    monkeypatch.setattr(t, "end_epoch", slow_end_epoch)


def test_time_budget_leaves_room_for_the_last_evaluation_and_the_average(data, tmp_path, monkeypatch):
    """--max-minutes bounds the whole run: once an epoch's end (evaluate and save) has been
    seen to take 100 s, training stops while 2 x 100 s (the cut epoch's evaluation, then the
    average's) still fit in the budget, not when the budget itself is spent."""
    monkeypatch.setattr(trainer_mod, "Stopwatch", FakeClock)
    t = make_trainer(data, tmp_path, settings=replace(SETTINGS, epochs=3, max_minutes=150 / 60))
    t.add_callback("on_batch_end", lambda tr, **_: setattr(tr.clock, "elapsed", tr.clock.elapsed + 1))
    slow_epoch_ends(t, monkeypatch)
    n = t.steps_per_epoch
    assert 1 < n < 40  # epoch 1 ends at n + 100 s, well inside the 150 s budget
    result = t.fit()
    # epoch 2, batch 1: n + 100 + 1 s spent, + 200 s reserved > 150 s. Without the reserve
    # the run would go on to epoch 3 (the budget is first exceeded there, at 2n + 201 s).
    assert result.stopped_at == (2, 1, n)
    assert t.finish_seconds == 200
    assert t.clock.elapsed == n + 1 + 2 * 100  # the ends of epochs 1 and 2 (the average adds no fake time)


def test_resume_keeps_the_reserve_for_the_last_evaluation(data, tmp_path, monkeypatch):
    """A run resumed under a budget reserves time for its end from its first batch on, as the
    interrupted run did, instead of starting with no reserve until an epoch has ended."""
    monkeypatch.setattr(trainer_mod, "Stopwatch", FakeClock)
    settings = replace(SETTINGS, max_minutes=1000.0)
    first = make_trainer(data, tmp_path, settings=settings)
    slow_epoch_ends(first, monkeypatch)
    first.add_callback("on_epoch_start", stop_before_epoch_3)
    with pytest.raises(Interrupt):
        first.fit()
    assert first.finish_seconds == 200
    resumed = Trainer.resume(tmp_path, data, settings)
    assert resumed.finish_seconds == 200  # the reserve in force during epoch 2


def test_a_mid_epoch_checkpoint_every_few_minutes_survives_a_crash(data, straight_run, tmp_path, monkeypatch):
    """With save_every_minutes, a mid-epoch checkpoint is written as the clock passes each
    interval (the end of an epoch counts as a save): a run that crashes after it resumes
    from there and ends exactly as one that never stopped."""
    straight, *_ = straight_run
    monkeypatch.setattr(trainer_mod, "Stopwatch", FakeClock)
    first = make_trainer(data, tmp_path, settings=replace(SETTINGS, save_every_minutes=0.5), snapshots=(1,))
    n = first.steps_per_epoch
    assert n >= 4
    saved = []

    def ten_seconds_a_step(t, **_):
        t.clock.elapsed += 10  # 30 s, the interval, every 3 steps of an epoch
        if t.step == n + 4:
            saved.append(json.loads((tmp_path / MID_EPOCH_DIR / "metrics.json").read_text()))
            raise Interrupt  # a crash before any save of this step

    first.add_callback("on_batch_end", ten_seconds_a_step)
    with pytest.raises(Interrupt):
        first.fit()
    assert [(m["epoch"], m["batches_done"], m["step"]) for m in saved] == [(1, 3, n + 3)]
    monkeypatch.undo()
    resumed = Trainer.resume(tmp_path, data, replace(SETTINGS, save_every_minutes=0), snapshots=(1,))
    assert resumed.settings.save_every_minutes == 0.5  # 0 asks for the run's own
    resumed.fit()
    for name in ("epoch-002", "epoch-003"):
        assert same_weights(weights(tmp_path / "epochs" / name), weights(straight / "epochs" / name)), name


def test_a_run_saved_without_the_new_fields_resumes(data, straight_run, tmp_path):
    """An epoch checkpoint written before mid-epoch checkpoints existed (rank 0's torch RNG
    state alone, no position, no save_every_minutes) resumes, exactly."""
    straight, *_ = straight_run
    first = make_trainer(data, tmp_path, snapshots=(1,))
    first.add_callback("on_epoch_start", stop_before_epoch_3)
    with pytest.raises(Interrupt):
        first.fit()
    path = tmp_path / "epochs" / "epoch-002" / STATE_FILE
    state = torch.load(path, weights_only=True)
    old = {k: v for k, v in state.items() if k not in ("rng", "batches_done", "train_loss")}
    old["settings"] = {k: v for k, v in state["settings"].items() if k != "save_every_minutes"}
    torch.save({**old, "torch_rng": state["rng"][0]["torch"]}, path)
    resumed = Trainer.resume(tmp_path, data, SETTINGS, snapshots=(1,))
    assert resumed.settings.save_every_minutes == 10.0
    resumed.fit()
    assert same_weights(weights(tmp_path / "epochs" / "epoch-003"), weights(straight / "epochs" / "epoch-003"))


def test_stop_signals_raise_before_training_and_are_only_noted_during_it():
    """Outside the training loop the first signal raises Stopped (nothing to save yet);
    inside it (``deferred``) a real SIGINT only sets ``signum``, and no later signal raises."""
    stop = StopSignals()
    with pytest.raises(Stopped) as exc:
        stop.request(signal.SIGTERM)
    assert exc.value.signum == signal.SIGTERM == stop.signum
    stop.request(signal.SIGINT)  # a second one (a launcher forwarding it): no exception
    assert stop.signum == signal.SIGTERM
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    stop = StopSignals()
    try:
        with stop.installed(), stop.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100):  # Python runs the handler between two bytecodes of this thread
                if stop.signum:
                    break
        assert stop.signum == signal.SIGINT
        assert signal.getsignal(signal.SIGINT) == stop._handle  # kept: a real signal means the process ends
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    with StopSignals().installed():
        assert signal.getsignal(signal.SIGINT) != before[signal.SIGINT]
    assert {s: signal.getsignal(s) for s in before} == before  # no signal: the handlers come back


def test_timing_an_evaluation_changes_nothing(data, tmp_path):
    t = make_trainer(data, tmp_path)
    weights_before, rng_before = weights_state_dict(t.model), torch.get_rng_state()
    assert 0 < t.validation.seconds(t.model) < 60
    assert same_weights(weights_before, weights_state_dict(t.model)) and torch.equal(rng_before, torch.get_rng_state())
    assert DistContext().maximum(0, 2, 1) == [0, 2, 1] and DistContext().gather("x") == ["x"]


def test_shards_are_disjoint_and_equal():
    batches = [[i] for i in range(11)]
    for world in (1, 2, 3, 4):
        shards = [shard_batches(batches, r, world) for r in range(world)]
        assert {len(s) for s in shards} == {11 // world}
        flat = [b[0] for s in shards for b in s]
        assert len(flat) == len(set(flat))
    assert shard_batches(batches, 0, 1) == batches


def test_bad_settings_raise(data, tmp_path):
    for bad in (dict(epochs=0), dict(lr=-1.0), dict(max_minutes=0.0), dict(batch_tokens=0)):
        with pytest.raises(TrainingError):
            make_trainer(data, tmp_path, settings=replace(SETTINGS, **bad))
    with pytest.raises(TrainingError, match="keep-epochs"):
        make_trainer(data, tmp_path, keep_epochs=0)


def test_a_resumed_run_keeps_the_processes_it_recorded(data, tmp_path):
    """Steps per epoch, and so the schedule, depend on the processes: a run recorded with 1
    cannot resume with 2, and a fresh run records the processes that really train."""
    assert make_trainer(data, tmp_path).settings.processes == 1
    with pytest.raises(TrainingError, match="trained with 1 process.*--nproc_per_node=1"):
        make_trainer(data, tmp_path, dist=DistContext(world_size=2), state={"settings": {"processes": 1}})


# ------------------------------------------------------------------ train.py, in-process


@pytest.mark.parametrize(
    "wanted, device, n_devices, batch, expected",
    [
        (2, "cpu", 1, 2000, (2, 2000)),  # a CPU holds any number of processes
        (2, "cuda", 1, 2000, (1, 4000)),  # one GPU: one process, the same tokens per step
        (4, "cuda", 3, 2000, (3, 2667)),
        (2, "cuda", 8, 2000, (2, 2000)),
        (2, "mps", 1, 2000, (1, 4000)),
    ],
)
def test_processes_fit_the_devices(wanted, device, n_devices, batch, expected):
    assert distributed.fit_processes(wanted, device, n_devices, batch) == expected


def test_processes_default_to_the_presets():
    assert PRESETS["base"].train.processes == 2 and PRESETS["tiny"].train.processes == 1

    def launched(argv):
        stage, extra = cli_train.launch_plan(cli_train.stage_of(cli_train.parse_args(argv)))
        return stage.preset.train.processes, stage.preset.train.batch_tokens, extra

    assert launched(["--preset", "tiny", "--device", "cpu"]) == (1, PRESETS["tiny"].train.batch_tokens, [])
    assert launched(["--device", "cpu"]) == (2, PRESETS["base"].train.batch_tokens, [])


def test_one_gpu_trains_the_base_preset_in_one_process_of_twice_the_batch(monkeypatch, capsys):
    monkeypatch.setattr(distributed, "pick_device", lambda name: "cuda")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    stage, extra = cli_train.launch_plan(cli_train.stage_of(cli_train.parse_args([])))
    assert extra == ["--batch-tokens", "4000"]
    assert stage.preset.train.batch_tokens == 4000 and stage.preset.train.processes == 1
    assert capsys.readouterr().err == (
        "cuda: 1 device(s) for 2 processes; training 1 process(es) of 4000 batch tokens, the same tokens per step\n"
    )


def test_help_shows_preset_values_not_none(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no line wrapping inside names such as "real-only"
    with pytest.raises(SystemExit) as exc:
        cli_train.parse_args(["--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: None)" not in text
    epochs = ", ".join(f"{name} {p.train.epochs}" for name, p in sorted(PRESETS.items()))
    minutes = ", ".join(f"{name} {p.train.max_minutes or 'none'}" for name, p in sorted(PRESETS.items()))
    assert f"(preset: {epochs})" in text
    assert f"(preset: {minutes})" in text
    assert "(default: 1,4,8)" in text
    # the library's config says what h is; the command line adds what it does to the viewer
    assert "--heads HEADS attention heads h (8 or fewer keeps the viewer readable) (preset: base 8," in text


@pytest.mark.parametrize(
    "args, message",
    [
        (["--max-minutes", "0"], "argument --max-minutes: expected a number > 0, got '0'"),
        (["--max-minutes", "-3"], "argument --max-minutes: expected a number > 0, got '-3'"),
        (["--epochs", "0"], "argument --epochs: expected a whole number ≥ 1, got '0'"),
        (["--snapshots", "0,x"], "argument --snapshots"),
        (["--push-to-hub", "not a repo"], "owner/name"),
    ],
)
def test_bad_flags_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        cli_train.parse_args(args)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_train_main_reports_a_mid_epoch_stop(data_dir, tmp_path, capsys):
    assert tiny_main(data_dir, tmp_path, "--max-minutes", "1e-9") == 0
    err = capsys.readouterr().err
    assert "stopped after 1 of " in err and " batches of epoch 1" in err and "after epoch 1" not in err


def test_bare_resume_keeps_the_runs_epochs_and_budget(data_dir, tmp_path, monkeypatch):
    """A run started with --epochs 1 --max-minutes 50 and resumed with a bare --resume keeps
    its 1 epoch and 50 minutes (the tiny preset says 2 epochs and no budget); given flags win."""
    assert tiny_main(data_dir, tmp_path, "--epochs", "1", "--max-minutes", "50") == 0
    seen = []
    monkeypatch.setattr(
        Trainer,
        "fit",
        lambda self: (
            seen.append(self.settings) or trainer_mod.FitResult(self.best_chrf, 0.0, self.best_dir, self.history, None)
        ),
    )
    tiny_main(data_dir, tmp_path, "--resume")
    tiny_main(data_dir, tmp_path, "--resume", "--epochs", "3", "--max-minutes", "7")
    assert [(s.epochs, s.max_minutes) for s in seen] == [(1, 50.0), (3, 7.0)]


def fake_hub(monkeypatch, fn):
    module = types.ModuleType("transformer.core.hub")
    module.push_checkpoint = fn
    monkeypatch.setitem(sys.modules, "transformer.core.hub", module)


def test_push_to_hub_failure_exits_2_and_keeps_the_checkpoint(data_dir, tmp_path, monkeypatch, capsys):
    calls = []

    def refuse(directory, repo_id, private=False, token=None):
        calls.append((Path(directory), repo_id, private, token))
        raise OSError("hub unreachable")

    fake_hub(monkeypatch, refuse)
    with pytest.raises(SystemExit) as exc:
        tiny_main(data_dir, tmp_path, "--epochs", "1", "--push-to-hub", "someone/tiny-en-it")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "hub unreachable" in err and "kept at" in err and "Traceback" not in err
    assert calls == [(tmp_path / "best", "someone/tiny-en-it", False, None)]
    assert (tmp_path / "best" / "model.safetensors").is_file()


def test_push_to_hub_success(data_dir, tmp_path, monkeypatch, capsys):
    fake_hub(monkeypatch, lambda d, repo_id, private=False, token=None: f"https://huggingface.co/{repo_id}")
    assert tiny_main(data_dir, tmp_path, "--epochs", "1", "--snapshots", "none", "--push-to-hub", "me/m") == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(out)["hub"] == "https://huggingface.co/me/m"
    assert not (tmp_path / "snapshots").exists()


def test_word_dropout_replaces_only_real_source_tokens():
    from transformer.core.config import TransformerConfig
    from transformer.training.optim import drop_source_words

    cfg = TransformerConfig(
        src_vocab_size=50,
        tgt_vocab_size=50,
        src_pad_id=0,
        src_unk_id=1,
        src_sos_id=2,
        src_eos_id=3,
        tgt_pad_id=7,
        tgt_unk_id=8,
        tgt_sos_id=9,
        tgt_eos_id=10,
    )
    src = torch.tensor([[2, 11, 12, 13, 3, 0], [2, 14, 3, 0, 0, 0]])
    assert torch.equal(drop_source_words(src, cfg, 0.0), src)
    everything = drop_source_words(src, cfg, 0.999999)
    assert everything.tolist() == [[2, 1, 1, 1, 3, 0], [2, 1, 3, 0, 0, 0]]
    torch.manual_seed(0)
    big = torch.randint(11, 50, (200, 50))
    rate = (drop_source_words(big, cfg, 0.1) == cfg.src_unk_id).float().mean().item()
    assert 0.08 < rate < 0.12


def test_word_dropout_changes_training_and_is_checked(data, tmp_path):
    plain = make_trainer(data, tmp_path / "a", replace(SETTINGS, epochs=1)).fit()
    dropped = make_trainer(data, tmp_path / "b", replace(SETTINGS, epochs=1, word_dropout=0.3)).fit()
    assert not same_weights(weights(plain.best_dir), weights(dropped.best_dir))
    with pytest.raises(TrainingError, match="word-dropout"):
        make_trainer(data, tmp_path / "c", replace(SETTINGS, word_dropout=1.0))


@pytest.mark.parametrize("bf16_s, fp32_s, expected", [(0.035, 0.00065, False), (0.0004, 0.0006, True)])
def test_bf16_is_fast_keeps_bf16_only_where_it_is_not_emulated(monkeypatch, bf16_s, fp32_s, expected):
    """An AVX2-only CPU emulates bf16 matmuls (measured on an AVX2-only EPYC: 35 ms vs 0.65 ms in float32),
    which made the base run 25x slower; a CPU with bf16 arithmetic keeps it."""
    from transformer.training import optim as training

    monkeypatch.setattr(training, "_matmul_seconds", lambda dtype, **kw: bf16_s if dtype == torch.bfloat16 else fp32_s)
    assert training.bf16_is_fast("cpu") is expected
    assert training.bf16_is_fast("meta") is False  # neither CPU nor CUDA: float32


def test_matmul_timing_is_a_real_measurement():
    from transformer.training.optim import _matmul_seconds

    assert 0 < _matmul_seconds(torch.float32, n=32, repeat=2) < 5


def test_trainer_falls_back_to_float32_with_a_warning_where_bf16_is_emulated(data, tmp_path, monkeypatch):
    monkeypatch.setattr(optim, "bf16_is_fast", lambda device: False)
    with pytest.warns(UserWarning, match="emulated"):
        t = make_trainer(data, tmp_path, settings=replace(SETTINGS, bf16=True))
    assert t.settings.bf16 is False
    monkeypatch.setattr(optim, "bf16_is_fast", lambda device: True)
    assert make_trainer(data, tmp_path / "fast", settings=replace(SETTINGS, bf16=True)).settings.bf16 is True


def test_validation_batches_keep_to_the_token_budget_and_use_every_pair_once(monkeypatch):
    """Pairs of very different lengths: every batch validation_loss builds, padded, fits the
    budget (a lone pair longer than the budget is the only exception), each pair is scored
    once, and the loss is the one a single batch of every pair gives."""
    import torch.nn.functional as F

    from transformer.training import evaluation as training
    from transformer.core.config import TransformerConfig
    from transformer.training.data import make_batch
    from transformer.core.model import build_model

    cfg = TransformerConfig(
        d_model=16,
        h=2,
        d_ff=32,
        n_encoder_layers=1,
        n_decoder_layers=1,
        max_positions=64,
        src_vocab_size=20,
        tgt_vocab_size=20,
        dropout=0.0,
        attn_dropout=0.0,
    )
    torch.manual_seed(0)
    model = build_model(cfg)
    lengths = [1, 2, 3, 5, 8, 12, 20, 30, 45, 2, 4, 7, 40]  # mixed, so sorting matters
    encoded = [([4 + n % 7] * n, [5 + n % 5] * (n + 1)) for n in lengths]
    budget = 120
    built = []

    def recording_make_batch(examples, c):
        batch = make_batch(examples, c)
        built.append((len(examples), batch.src.numel() + batch.tgt_in.numel(), examples))
        return batch

    monkeypatch.setattr(training, "make_batch", recording_make_batch)
    loss = training.validation_loss(model, encoded, cfg, budget, "cpu")
    assert all(tokens <= budget for n, tokens, _ in built if n > 1), [(n, t) for n, t, _ in built]
    assert sorted(map(tuple, (ex for _, _, exs in built for ex in exs))) == sorted(map(tuple, encoded))

    whole = make_batch(encoded, cfg)
    with torch.no_grad():
        logits = model(whole.src, whole.tgt_in).logits
    expected = (
        F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]),
            whole.tgt_out.reshape(-1),
            ignore_index=cfg.tgt_pad_id,
            reduction="sum",
        )
        / whole.n_tgt_tokens
    )
    assert loss == pytest.approx(float(expected), rel=1e-5)


@pytest.mark.parametrize(
    "best, kept",
    [
        ({"epoch": 3}, ["epoch-001", "epoch-003"]),
        ({"averaged": ["epoch-004", "epoch-005"]}, ["epoch-001", "epoch-003", "epoch-005"]),
    ],
)
def test_best_carries_the_snapshots_up_to_its_own_epoch(tmp_path, best, kept):
    """A best/ chosen at epoch 3 of 5 carries the snapshots of epochs 1 and 3, not the final
    epoch 5 trained after it; an average of the last epochs comes after all of them."""
    snapshots_dir, best_dir = tmp_path / "snapshots", tmp_path / "best"
    for name in ("epoch-001", "epoch-003", "epoch-005"):
        (snapshots_dir / name).mkdir(parents=True)
        (snapshots_dir / name / "metrics.json").write_text("{}")
    best_dir.mkdir()
    (best_dir / "metrics.json").write_text(json.dumps(best))
    saving.copy_snapshots_to_best(snapshots_dir, best_dir)
    assert sorted(p.name for p in (best_dir / "snapshots").iterdir()) == kept
    assert (best_dir / "snapshots" / "epoch-001" / "metrics.json").is_file()
