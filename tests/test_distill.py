"""Sequence-level knowledge distillation: which teacher translations become training pairs,
the teacher checks, and train.py's --distill-from."""

from __future__ import annotations

import types

import pytest

import train
from transformer.training import distill
from transformer.core.beam import translate_beam
from transformer.training.data import ParallelData, load_parallel
from transformer.training.distill import DistillError, add_distilled, check_teacher, distill_pairs
from transformer.training.loop import FitResult, Trainer

from tests.helpers import PAIRS, tiny_main


pytestmark = pytest.mark.usefixtures("one_thread")


def scripted_teacher(monkeypatch, outputs: dict[str, str], calls: list):
    """translate_beam answering from ``outputs`` (source -> translation), recording each call."""

    def fake(translator, sentences, beam_size):
        calls.append((list(sentences), beam_size))
        return [outputs[s] for s in sentences]

    monkeypatch.setattr(distill, "translate_beam", fake)


def test_only_translations_that_differ_from_the_reference_are_added(monkeypatch):
    pairs = [("a.", "uno."), ("b.", "due."), ("c.", "tre."), ("d.", "quattro.")]
    outputs = {"a.": "uno.", "b.": "  ", "c.": " tre! ", "d.": "quattro. "}  # same, empty, different, same
    scripted_teacher(monkeypatch, outputs, calls := [])
    assert distill_pairs(None, pairs, beam_size=3) == [("c.", "tre!")]
    assert calls == [(["a.", "b.", "c.", "d."], 3)]


def test_sources_go_to_the_teacher_in_fixed_chunks_in_order(monkeypatch):
    pairs = [(f"s{i}.", f"r{i}.") for i in range(7)]
    scripted_teacher(monkeypatch, {s: f"t{s}" for s, _ in pairs}, calls := [])
    monkeypatch.setattr(distill, "CHUNK", 3)
    seen = []
    extra = distill_pairs(None, pairs, beam_size=2, progress=lambda done, total: seen.append((done, total)))
    assert [len(c[0]) for c in calls] == [3, 3, 1]
    assert seen == [(3, 7), (6, 7), (7, 7)]
    assert extra == [(s, f"t{s}") for s, _ in pairs]


class Stop(Exception):
    pass


def test_a_stopped_distillation_goes_on_from_the_last_chunk_it_kept(monkeypatch, translator, tmp_path):
    pairs = [(f"s{i}.", f"r{i}.") for i in range(7)]
    scripted_teacher(monkeypatch, {s: f"t{s}" for s, _ in pairs}, calls := [])
    monkeypatch.setattr(distill, "CHUNK", 3)
    cache = tmp_path / "distilled.jsonl"

    def stop_after_two_chunks(done, total):
        if done == 6:
            raise Stop

    with pytest.raises(Stop):
        distill_pairs(translator, pairs, beam_size=2, progress=stop_after_two_chunks, cache=cache)
    assert [len(c[0]) for c in calls] == [3, 3]
    # a kill in the middle of the next chunk's write leaves half a line: that chunk is done again
    with open(cache, "a", encoding="utf-8") as f:
        f.write('{"src": "s6.", "hy')
    calls.clear()
    extra = distill_pairs(translator, pairs, beam_size=2, cache=cache)
    assert calls == [(["s6."], 2)] and extra == [(s, f"t{s}") for s, _ in pairs]
    # done: nothing is decoded again, and the file holds every translation once
    calls.clear()
    assert distill_pairs(translator, pairs, beam_size=2, cache=cache) == extra and calls == []
    assert len(cache.read_text(encoding="utf-8").splitlines()) == 1 + len(pairs)


def test_a_cache_of_another_beam_or_other_sources_is_not_read(monkeypatch, translator, tmp_path):
    pairs = [(f"s{i}.", f"r{i}.") for i in range(6)]
    scripted_teacher(monkeypatch, {s: f"t{s}" for s, _ in [*pairs, ("x.", "")]}, calls := [])
    monkeypatch.setattr(distill, "CHUNK", 3)
    cache = tmp_path / "distilled.jsonl"
    distill_pairs(translator, pairs, beam_size=2, cache=cache)
    calls.clear()
    distill_pairs(translator, pairs, beam_size=3, cache=cache)  # another beam: all again
    assert [len(c[0]) for c in calls] == [3, 3]
    calls.clear()
    changed = [*pairs[:4], ("x.", "y."), pairs[5]]  # the data changed in the second chunk: from there
    assert distill_pairs(translator, changed, beam_size=3, cache=cache)[4] == ("x.", "tx.")
    assert calls == [(["s3.", "x.", "s5."], 3)]


def test_a_real_teacher_adds_its_beam_translations(translator):
    pairs = PAIRS[:6]
    expected = translate_beam(translator, [s for s, _ in pairs], 2)
    extra = distill_pairs(translator, pairs, beam_size=2)
    assert extra == [(s, h.strip()) for (s, r), h in zip(pairs, expected) if h.strip() and h.strip() != r]
    assert extra  # random weights do not reproduce the references


@pytest.mark.parametrize("beam", [0, -1, 2.5, True, "4"])
def test_bad_beam_sizes_are_refused(beam):
    with pytest.raises(DistillError, match="beam size"):
        distill_pairs(None, PAIRS[:2], beam_size=beam)


def test_a_teacher_of_the_other_direction_is_refused():
    it_en = types.SimpleNamespace(model=types.SimpleNamespace(cfg=types.SimpleNamespace(src_lang="it", tgt_lang="en")))
    with pytest.raises(DistillError, match="teacher translates it->en, this run en->it"):
        check_teacher(it_en, "en", "it")
    check_teacher(it_en, "it", "en")  # the right direction passes


def test_add_distilled_appends_to_the_training_split(tiny_checkpoint, data_dir):
    data = load_parallel(str(data_dir), "en", "it")
    before = list(data.train)
    added = add_distilled(data, str(tiny_checkpoint), 2, "en", "it")
    assert added > 0 and data.train[: len(before)] == before and len(data.train) == len(before) + added
    assert all(isinstance(p, tuple) and len(p) == 2 for p in data.train[len(before) :])
    # every added source is one of the training sources, with a translation unlike its reference
    refs = {}
    for s, t in before:
        refs.setdefault(s, set()).add(t)
    assert all(s in refs and t not in refs[s] for s, t in data.train[len(before) :])


def test_train_distills_before_training(data_dir, tmp_path, tiny_checkpoint, monkeypatch, capsys):
    seen: list[ParallelData] = []
    monkeypatch.setattr(
        Trainer,
        "fit",
        lambda self: seen.append(self.data) or FitResult(self.best_chrf, 0.0, self.best_dir, self.history, None),
    )
    assert tiny_main(data_dir, tmp_path / "plain") == 0
    assert tiny_main(data_dir, tmp_path / "kd", "--distill-from", str(tiny_checkpoint), "--distill-beam", "2") == 0
    plain, kd = seen
    assert kd.train[: len(plain.train)] == plain.train and len(kd.train) > len(plain.train)
    assert kd.validation == plain.validation  # the references stay what the run is scored on
    err = capsys.readouterr().err
    assert f"distillation: {len(kd.train) - len(plain.train)} of {len(plain.train)} teacher translations" in err
    # the translations are kept in the run folder, so a resumed run reads them instead of decoding again
    kept = (tmp_path / "kd" / "distilled.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(kept) == 1 + len(plain.train)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--distill-from", "runs/no-such-teacher"], "runs/no-such-teacher"),
        (["--distill-beam", "0"], "argument --distill-beam: expected a whole number ≥ 1, got '0'"),
    ],
)
def test_bad_distillation_flags_exit_2(data_dir, tmp_path, args, message, capsys):
    with pytest.raises(SystemExit) as exc:
        tiny_main(data_dir, tmp_path, *args)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and message in err and "Traceback" not in err


def test_a_teacher_of_the_other_direction_exits_2(data_dir, tmp_path, tiny_checkpoint, capsys):
    with pytest.raises(SystemExit) as exc:
        train.main(
            [
                "--preset",
                "tiny",
                "--dataset",
                str(data_dir),
                "--out",
                str(tmp_path),
                "--threads",
                "1",
                "--src",
                "it",
                "--tgt",
                "en",
                "--distill-from",
                str(tiny_checkpoint),
            ]
        )
    assert exc.value.code == 2 and "teacher translates en->it, this run it->en" in capsys.readouterr().err
