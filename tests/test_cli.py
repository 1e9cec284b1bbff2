"""The command-line entry points turn bad input into one line on stderr and exit code 2,
found before the slow work (imports of the UI, model and data loading); and train.py says
what it resumed, whether the checkpoint average was kept, and why it left bf16."""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import datasets
import httpx
import huggingface_hub
import pytest

import app as app_module
import train
from transformer.cli import training_run as cli_train
from tests.helpers import PAIRS, ROOT, exit_2, lines_of, load_script, tiny_main, write_jsonl
from transformer.cli import head_stats as analyze
from transformer.cli import backtranslate
from transformer.cli import compare, evaluate, judge
from transformer.core import tokenizer
from transformer.core.tokenizer import SPECIAL_TOKENS, SYNTHETIC_TAG, train_tokenizer


@pytest.fixture(autouse=True)
def no_progress_bars():
    """``datasets`` draws progress bars on stderr; without them, stderr holds only what the
    entry point itself printed."""
    datasets.disable_progress_bars()
    yield
    datasets.enable_progress_bars()


def not_called(what: str):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{what} ran before the bad input was noticed")

    return refuse


# ------------------------------------------------------------------ one parser for every CLI

BT = ["--testsets", "t", "--checkpoint", "c", "--out", "o"]
CMP = ["--old", "a", "--new", "b", "--data", "d"]
CLIS = {  # name: (parse_args, prog)
    "train": (train.parse_args, "python train.py"),
    "app": (app_module.parse_args, "python app.py"),
    "evaluate": (evaluate.parse_args, "python -m transformer.cli.evaluate"),
    "analyze": (analyze.parse_args, "python -m transformer.cli.head_stats"),
    "backtranslate": (backtranslate.parse_args, "python -m transformer.cli.backtranslate"),
    "compare": (compare.parse_args, "python -m transformer.cli.compare"),
    "judge": (judge.parse_args, "python -m transformer.cli.judge"),
}


@pytest.mark.parametrize(
    "cli, argv, message",
    [
        ("train", ["--average-last", "abc"], "argument --average-last: expected a whole number ≥ 0, got 'abc'"),
        ("train", ["--max-minutes", "-1"], "argument --max-minutes: expected a number > 0, got '-1'"),
        ("train", ["--epochs", "1.5"], "argument --epochs: expected a whole number ≥ 1, got '1.5'"),
        ("train", ["--lr", "fast"], "argument --lr: expected a number > 0, got 'fast'"),
        ("train", ["--dropout", "1"], "argument --dropout: expected a number in [0, 1), got '1'"),
        ("train", ["--seed", "x"], "argument --seed: expected a whole number, got 'x'"),
        ("train", ["--bogus"], "unrecognized arguments: --bogus"),
        ("app", ["--port", "abc"], "argument --port: expected a port number 1-65535, got 'abc'"),
        ("app", ["--max-batch", "0"], "argument --max-batch: expected a whole number ≥ 1, got '0'"),
        ("app", ["--torch-threads", "-1"], "argument --torch-threads: expected a whole number ≥ 0, got '-1'"),
        ("evaluate", [], "the following arguments are required: --data"),
        ("evaluate", ["--data", "x", "--limit", "abc"], "argument --limit: expected a whole number ≥ 1, got 'abc'"),
        ("evaluate", ["--data", "x", "--beam-size", "0"], "argument --beam-size: expected a whole number ≥ 1, got '0'"),
        ("analyze", ["--data", "x", "--limit", "0"], "argument --limit: expected a whole number ≥ 1, got '0'"),
        ("backtranslate", [*BT, "--top-k", "-1"], "argument --top-k: expected a whole number ≥ 0, got '-1'"),
        ("backtranslate", [*BT, "--seed", "1e3"], "argument --seed: expected a whole number, got '1e3'"),
        ("compare", ["--old", "a", "--new", "b"], "the following arguments are required: --data"),
        ("compare", [*CMP, "--samples", "0"], "argument --samples: expected a whole number ≥ 1, got '0'"),
        ("compare", [*CMP, "--alpha", "2"], "argument --alpha: expected a number in [0, 1), got '2'"),
        ("judge", ["--judgements", "j.json"], "the following arguments are required: --tsv"),
    ],
)
def test_a_bad_flag_is_one_line_that_names_the_type_as_a_person_would(capfd, cli, argv, message):
    parse, prog = CLIS[cli]
    assert exit_2(capfd, parse, argv) == f"{prog}: error: {message} (see {prog} --help)"


def test_env_defaults_of_the_app_are_checked_like_flags(capfd, monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "http")
    assert "argument --port: expected a port number 1-65535, got 'http'" in exit_2(capfd, app_module.parse_args, [])


# ------------------------------------------------------------------ app.py


@pytest.mark.parametrize("port", ["-5", "0", "70000"])
def test_app_rejects_a_port_out_of_range_before_loading_the_model(capfd, monkeypatch, port):
    monkeypatch.setattr(app_module, "load_translator_or_exit", not_called("model loading"))
    line = exit_2(capfd, app_module.main, ["--port", port])
    assert f"argument --port: expected a port number 1-65535, got '{port}'" in line


def test_app_rejects_a_busy_port_before_loading_the_model(capfd, monkeypatch):
    monkeypatch.setattr(app_module, "load_translator_or_exit", not_called("model loading"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        line = exit_2(capfd, app_module.main, ["--host", "127.0.0.1", "--port", str(port)])
    assert line.startswith(f"error: --port {port}: cannot listen on 127.0.0.1:{port} (")
    assert "in use" in line


def test_app_checks_its_flags_before_importing_the_ui():
    """Importing gradio and the explorer takes seconds; a bad flag is known without them."""
    code = (
        "import sys, app\ntry:\n    app.main(['--max-batch', '0'])\nexcept SystemExit as exc:\n"
        "    print(exc.code, 'gradio' in sys.modules, 'explorer.page' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.stdout.split() == ["2", "False", "False"], r.stderr[-2000:]
    assert len(lines_of(r.stderr)) == 1, r.stderr


def test_app_logs_the_checkpoint_it_loaded(monkeypatch, caplog, tiny_checkpoint):
    import explorer.page
    import explorer.downloads

    launched = {}

    class Demo:
        def queue(self, **kwargs):
            launched["queue"] = kwargs

        def launch(self, **kwargs):
            launched["launch"] = kwargs

    def fake_build_ui(tr, max_batch):
        return Demo()

    # the UI itself is tested elsewhere; here only what main does around it
    monkeypatch.setattr(explorer.page, "build_ui", fake_build_ui)
    monkeypatch.setattr(app_module, "build_ui", fake_build_ui, raising=False)
    monkeypatch.setattr(explorer.downloads, "prune_trace_files", lambda: 0)
    monkeypatch.setattr(app_module, "prune_trace_files", lambda: 0, raising=False)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    caplog.set_level("INFO")
    assert app_module.main(["--checkpoint", str(tiny_checkpoint), "--port", str(port)]) == 0
    assert launched["launch"]["server_port"] == port
    assert f"loaded checkpoint {tiny_checkpoint}" in caplog.text


# ------------------------------------------------------------------ train.py


def test_a_vocab_size_below_the_special_tokens_is_refused_before_the_data_loads(capfd, monkeypatch, data_dir, tmp_path):
    monkeypatch.setattr(cli_train, "load_run_data", not_called("data loading"))
    line = exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--vocab-size", "3")
    least = tokenizer.min_vocab_size()
    assert least == len(SPECIAL_TOKENS) + 1
    assert line == (
        f"error: --vocab-size 3 is too small: the {len(SPECIAL_TOKENS)} special tokens "
        f"({' '.join(SPECIAL_TOKENS)}) and one character need {least}, and every distinct "
        f"character of the corpus one id more"
    )
    line = exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--vocab-size", str(least), "--tag-synthetic")
    assert f"{len(SPECIAL_TOKENS) + 1} special tokens" in line and SYNTHETIC_TAG in line
    assert f"need {tokenizer.min_vocab_size([SYNTHETIC_TAG])}," in line


def test_a_vocab_size_below_the_corpus_alphabet_is_refused_with_its_minimum(capfd, data_dir, tmp_path):
    line = exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--vocab-size", "20")
    found = re.fullmatch(
        r"error: --vocab-size 20 is too small for this corpus: its 4 special tokens and (\d+) "
        r"distinct characters need at least (\d+)",
        line,
    )
    assert found, line
    assert int(found[2]) == 4 + int(found[1])
    assert not (tmp_path / "o" / "epochs").exists()


def test_train_tokenizer_refuses_what_it_cannot_honour():
    texts = [s for pair in PAIRS for s in pair]
    with pytest.raises(
        tokenizer.VocabularyError,
        match=r"vocabulary size 10 is too small for this text: its 4 special "
        r"tokens and (\d+) distinct characters need at least \d+",
    ) as exc:
        train_tokenizer(texts, 10, min_frequency=1)
    least = int(re.search(r"at least (\d+)", str(exc.value))[1])
    assert train_tokenizer(texts, least, min_frequency=1).get_vocab_size() == least
    with pytest.raises(tokenizer.VocabularyError, match="at least 5"):
        train_tokenizer(texts, 4)


def test_a_malformed_jsonl_line_is_named_by_file_and_line(capfd, data_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    write_jsonl(bad, PAIRS[:2])
    with bad.open("a", encoding="utf-8") as f:
        f.write("\n{this is not json\n")
    line = exit_2(capfd, tiny_main, bad, tmp_path / "o")
    assert line.startswith(f"error: {bad}: line 4: not valid JSON (")
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in ("train.jsonl", "validation.jsonl"):
        (folder / name).write_text((data_dir / name).read_text(encoding="utf-8"), encoding="utf-8")
    with (folder / "validation.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"translation": "not an object"}\n')
    line = exit_2(capfd, tiny_main, folder, tmp_path / "o")
    assert line == (
        f"error: {folder / 'validation.jsonl'}: line 7: 'translation' is a string here, an object in the lines before"
    )


@pytest.fixture
def no_hub(monkeypatch, tmp_path):
    """No network: the hub answers through stand-ins, from a folder where runs/nope is not."""
    monkeypatch.chdir(tmp_path)

    def answer(error):
        def raise_(*args, **kwargs):
            raise error

        monkeypatch.setattr(huggingface_hub, "snapshot_download", raise_)
        monkeypatch.setattr(datasets, "load_dataset", raise_)

    return answer


def hub_404(repo: str):
    response = httpx.Response(404, request=httpx.Request("GET", f"https://huggingface.co/api/models/{repo}"))
    return huggingface_hub.errors.RepositoryNotFoundError(
        f"404 Client Error.\n\nRepository Not Found for url: https://huggingface.co/api/models/{repo}.\n"
        "Please make sure you specified the correct `repo_id` and `repo_type`.",
        response=response,
    )


@pytest.mark.parametrize(
    "error, reason",
    [
        (hub_404("runs/nope"), "not found on the hub"),
        (
            huggingface_hub.errors.LocalEntryNotFoundError(
                "Cannot find an appropriate cached snapshot folder.\nPlease check your internet connection."
            ),
            "the hub could not be reached",
        ),
    ],
)
def test_a_missing_hub_shaped_checkpoint_is_one_line(capfd, no_hub, data_dir, error, reason):
    no_hub(error)
    line = exit_2(capfd, evaluate.main, ["--checkpoint", "runs/nope", "--data", str(data_dir)])
    assert line == f"error: no checkpoint at runs/nope (not a local folder, and {reason})"


@pytest.mark.parametrize(
    "error, reason",
    [
        (
            datasets.exceptions.DatasetNotFoundError(
                "Dataset 'runs/nope' doesn't exist on the Hub or cannot be accessed."
            ),
            "not found on the hub",
        ),
        (
            FileNotFoundError(
                "Couldn't find any data file at /x/runs/nope.\nCouldn't find 'runs/nope' on the Hugging "
                "Face Hub either: LocalEntryNotFoundError: An error happened\nPlease check your connection."
            ),
            "not found on the hub",
        ),
        (ConnectionError("Couldn't reach 'runs/nope' on the Hub (ConnectError)"), "the hub could not be reached"),
    ],
)
def test_a_missing_hub_shaped_dataset_is_one_line(capfd, caplog, monkeypatch, tmp_path, error, reason):
    def retry_then_fail(*args, **kwargs):
        # what huggingface_hub logs on each retry while the hub cannot be reached
        logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 8s [Retry 4/5].")
        raise error

    monkeypatch.setattr(datasets, "load_dataset", retry_then_fail)
    capfd.readouterr()
    with pytest.raises(SystemExit) as exc:
        train.main(["--preset", "tiny", "--dataset", "runs/nope", "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    # a status line first (the hub's retries can take half a minute), then the error alone
    assert lines_of(capfd.readouterr().err) == [
        "data: looking up runs/nope on the hub",
        f"error: no dataset at runs/nope (not a local folder, and {reason})",
    ]
    # the retry lines are held back (huggingface_hub's handler writes to the stderr it saw
    # at import, so they are caught on their way through the logging tree)
    assert [r.getMessage() for r in caplog.records if r.name.startswith("huggingface_hub")] == []


def test_distill_from_is_checked_before_the_data_loads(capfd, monkeypatch, data_dir, tmp_path, tiny_checkpoint):
    monkeypatch.setattr(cli_train, "load_run_data", not_called("data loading"))
    line = exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--distill-from", "/nonexistent")
    assert line == "error: --distill-from: checkpoint directory not found: /nonexistent does not exist"
    line = exit_2(
        capfd, tiny_main, data_dir, tmp_path / "o", "--distill-from", str(tiny_checkpoint), "--src", "it", "--tgt", "en"
    )
    assert line == "error: --distill-from: the teacher translates en->it, this run it->en"


def fine_tune(data_dir, out, start, *extra):
    """``train.main`` with the tiny preset on the fixture corpus, from the checkpoint ``start``."""
    argv = ["--preset", "tiny", "--dataset", str(data_dir), "--out", str(out), "--threads", "1"]
    return train.main([*argv, "--batch-tokens", "600", "--init-from", str(start), *extra])


def test_init_from_is_checked_before_the_data_loads(capfd, monkeypatch, data_dir, tmp_path, tiny_checkpoint):
    monkeypatch.setattr(cli_train, "load_run_data", not_called("data loading"))
    out = tmp_path / "o"
    line = exit_2(capfd, fine_tune, data_dir, out, "/nonexistent")
    assert line == "error: --init-from: checkpoint directory not found: /nonexistent does not exist"
    line = exit_2(capfd, fine_tune, data_dir, out, tiny_checkpoint, "--src", "it", "--tgt", "en")
    assert line == f"error: --init-from: {tiny_checkpoint} translates en->it, this run it->en"
    line = exit_2(capfd, fine_tune, data_dir, out, tiny_checkpoint, "--tag-synthetic")
    assert line == (
        f"error: --init-from: {tiny_checkpoint} has no {SYNTHETIC_TAG} token to tag synthetic sources with "
        "(--tag-synthetic)"
    )
    line = exit_2(capfd, fine_tune, data_dir, out, tiny_checkpoint, "--d-model", "48", "--vocab-size", "300")
    assert line == "error: --d-model, --vocab-size: --init-from takes the checkpoint's shape, dropout and vocabularies"


def test_init_from_goes_on_training_the_checkpoint(data_dir, tmp_path):
    """A fine-tune starts from the checkpoint's weights (its first epoch ends below where the
    checkpoint's own first epoch did) and keeps its tokenizers and shape, and its run records
    where it started."""
    first, tuned = tmp_path / "first", tmp_path / "tuned"
    assert tiny_main(data_dir, first, "--epochs", "3", "--snapshots", "none") == 0
    assert fine_tune(data_dir, tuned, first / "best", "--epochs", "1", "--snapshots", "none") == 0
    configs = [json.loads((run / "best" / "config.json").read_text()) for run in (first, tuned)]
    assert configs[0] == configs[1]  # the shape, dropout and vocabularies, and the files they are in
    for name in {configs[0]["src_tokenizer_file"], configs[0]["tgt_tokenizer_file"]}:
        assert (first / "best" / name).read_bytes() == (tuned / "best" / name).read_bytes(), name
    losses = [json.loads((run / "history.json").read_text())[0]["val_loss"] for run in (first, tuned)]
    assert losses[1] < losses[0], losses
    assert json.loads((tuned / "run.json").read_text())["init_from"] == str(first / "best")


def test_evaluate_names_the_file_it_reads_in_a_folder(capfd, tmp_path, tiny_checkpoint):
    empty = tmp_path / "empty"
    empty.mkdir()
    line = exit_2(capfd, evaluate.main, ["--checkpoint", str(tiny_checkpoint), "--data", str(empty)])
    assert line == f"error: {empty}: no test.jsonl in this directory"
    only_test = tmp_path / "only-test"
    only_test.mkdir()
    write_jsonl(only_test / "test.jsonl", PAIRS[:3])
    assert evaluate.main(["--checkpoint", str(tiny_checkpoint), "--data", str(only_test)]) == 0
    assert json.loads(lines_of(capfd.readouterr().out)[-1])["n"] == 3


def test_train_says_what_it_resumed_and_whether_the_average_was_kept(capfd, data_dir, tmp_path):
    out = tmp_path / "run"
    capfd.readouterr()
    assert tiny_main(data_dir, out, "--epochs", "2", "--snapshots", "none") == 0
    err = capfd.readouterr().err
    kept = "averaged" in json.loads((out / "best" / "metrics.json").read_text())
    said = re.search(
        r"^averaged epochs 1-2: chrF [\d.]+, (kept as best/|not kept: best/ keeps chrF [\d.]+ "
        r"\(epoch \d\))$",
        err,
        re.MULTILINE,
    )
    assert said, err
    assert said[1].startswith("kept") == kept
    assert tiny_main(data_dir, out, "--epochs", "3", "--resume", "--snapshots", "none") == 0
    err = capfd.readouterr().err
    last = re.escape(str(out / "epochs" / "epoch-002"))
    assert re.search(rf"^resuming from epoch 2 \({last}\): epoch 3 to go$", err, re.MULTILINE), err


def test_the_bf16_fallback_is_one_plain_line(capfd, monkeypatch, data_dir, tmp_path):
    import transformer.training.optim

    tiny = cli_train.PRESETS["tiny"]
    monkeypatch.setitem(cli_train.PRESETS, "tiny", replace(tiny, train=replace(tiny.train, bf16=True)))
    monkeypatch.setattr(transformer.training.optim, "bf16_is_fast", lambda device: False)
    capfd.readouterr()
    assert tiny_main(data_dir, tmp_path / "o", "--epochs", "1", "--snapshots", "none") == 0
    err = lines_of(capfd.readouterr().err)
    warned = [i for i, line in enumerate(err) if "bf16 autocast would be emulated" in line]
    assert len(warned) == 1, err
    assert err[warned[0]].startswith("warning: bf16 autocast would be emulated in software on this cpu")
    assert err[warned[0] + 1].startswith("data: ")  # no source line under it
    assert not any("UserWarning" in line for line in err)


# ------------------------------------------------------------------ evaluate, analyze, beam_eval


def load_beam_eval():
    return load_script("benchmarks/beam_eval.py")


def returns_2(capfd, main, argv) -> str:
    """``exit_2`` for an entry point that returns its exit code (benchmarks/beam_eval.py)."""
    capfd.readouterr()
    assert main(argv) == 2
    lines = lines_of(capfd.readouterr().err)
    assert len(lines) == 1, lines
    return lines[0]


def not_utf8(source: Path, target: Path, line: int = 3) -> str:
    """``source`` copied to ``target`` with line ``line`` replaced by a pair whose English
    holds byte 0xff (never UTF-8) at column 27; returns the message that names it."""
    lines = source.read_bytes().splitlines(keepends=True)
    lines[line - 1] = b'{"translation": {"en": "\xc3\xa0\xc3\xa8\xff cat.", "it": "gatto."}}\n'
    target.write_bytes(b"".join(lines))
    return f"error: {target}: line {line}: not UTF-8 text (byte 0xff at column 27)"


def test_data_that_is_not_utf8_is_one_line_in_every_command(capfd, data_dir, tmp_path, tiny_checkpoint):
    """pyarrow reads the bytes and fails much later with a long traceback; every command that
    reads JSONL says instead which file, line and column, and exits with code 2."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("validation.jsonl", "test.jsonl"):
        (folder / name).write_bytes((data_dir / name).read_bytes())
    said = not_utf8(data_dir / "train.jsonl", folder / "train.jsonl")
    assert exit_2(capfd, tiny_main, folder, tmp_path / "o") == said
    assert exit_2(capfd, tiny_main, data_dir, tmp_path / "o", "--extra-train", str(folder / "train.jsonl")) == said
    (folder / "train.jsonl").write_bytes((data_dir / "train.jsonl").read_bytes())
    said = not_utf8(data_dir / "test.jsonl", folder / "test.jsonl")
    ckpt = ["--checkpoint", str(tiny_checkpoint)]
    for data in (folder, folder / "test.jsonl"):
        assert exit_2(capfd, evaluate.main, [*ckpt, "--data", str(data)]) == said
        assert exit_2(capfd, analyze.main, [*ckpt, "--data", str(data), "--out", str(tmp_path / "h.json")]) == said
        assert returns_2(capfd, load_beam_eval().main, [*ckpt, "--data", str(data), "--repeat", "1"]) == said


@pytest.mark.parametrize("flag", ["--output", "--out"])
def test_output_paths_are_checked_before_the_model_loads(capfd, monkeypatch, data_dir, tmp_path, flag):
    cli = evaluate if flag == "--output" else analyze
    monkeypatch.setattr(cli, "load_translator_or_exit", not_called("model loading"))
    data = ["--data", str(data_dir / "test.jsonl")]
    nowhere = tmp_path / "nonexistent" / "dir" / "x.txt"
    line = exit_2(capfd, cli.main, [*data, flag, str(nowhere)])
    assert line == f"error: {flag} {nowhere}: no such directory {nowhere.parent}"
    line = exit_2(capfd, cli.main, [*data, flag, str(tmp_path)])
    assert line == f"error: {flag} {tmp_path}: is a folder; give the name of a file to write"


def test_analyze_reads_the_test_split_of_a_folder(capfd, tmp_path, tiny_checkpoint):
    """``--data`` takes a folder, as evaluate does: its test.jsonl, or the split --split names."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_jsonl(folder / "test.jsonl", PAIRS[:3])
    write_jsonl(folder / "validation.jsonl", PAIRS[:5])
    out = ["--checkpoint", str(tiny_checkpoint), "--out", str(tmp_path / "h.json")]
    for split, n in ((None, 3), ("validation", 5)):
        assert analyze.main([*out, "--data", str(folder), *(["--split", split] if split else [])]) == 0
        assert json.loads(lines_of(capfd.readouterr().out)[-1])["n"] == n
        said = json.loads((tmp_path / "h.json").read_text(encoding="utf-8"))["data"]
        assert said == str(folder / f"{split or 'test'}.jsonl")  # the file read, not the folder
    line = exit_2(capfd, analyze.main, [*out, "--data", str(folder), "--split", "train"])
    assert line == f"error: {folder}: no train.jsonl in this directory"
    assert exit_2(capfd, analyze.main, [*out, "--data", str(tmp_path / "nope")]) == (
        f"error: {tmp_path / 'nope'}: no such file or directory"
    )


def test_evaluate_and_beam_eval_decode_greedy_in_the_same_batches(capfd, monkeypatch, tmp_path, tiny_checkpoint):
    """Greedy output can change with the sentences padded beside it (float rounding differs
    with the batch's shape and can flip a near tie), so the two commands that report test
    scores decode in the batches ``Translator.translate`` makes of the whole set."""
    import transformer.core.translator
    from transformer import load_translator

    batches = []
    real = transformer.core.translator.greedy_decode

    def spy(model, src, *args, **kwargs):
        batches.append(src.tolist())
        return real(model, src, *args, **kwargs)

    monkeypatch.setattr(transformer.core.translator, "greedy_decode", spy)
    pairs = [PAIRS[i] for i in (20, 0, 15, 6, 23, 2, 9, 13)]  # source lengths out of order
    data = write_jsonl(tmp_path / "test.jsonl", pairs)
    hyps = load_translator(tiny_checkpoint).translate([s for s, _ in pairs], batch_size=3)
    expected, batches[:] = list(batches), []
    assert len(expected) == 3
    argv = ["--checkpoint", str(tiny_checkpoint), "--data", str(data), "--batch-size", "3"]
    assert evaluate.main([*argv, "--output", str(tmp_path / "hyps.txt")]) == 0
    assert batches == expected
    assert (tmp_path / "hyps.txt").read_text(encoding="utf-8") == "\n".join(hyps) + "\n"
    scores = json.loads(lines_of(capfd.readouterr().out)[-1])
    batches[:] = []
    assert load_beam_eval().main([*argv, "--beam-sizes", "1", "--repeat", "1"]) == 0
    assert batches == expected
    greedy = json.loads(lines_of(capfd.readouterr().out)[-1])["results"][0]
    assert (greedy["bleu"], greedy["chrf"]) == (scores["bleu"], scores["chrf"])


def test_run_json_keeps_every_recorded_option_and_the_preset(data_dir, tmp_path):
    """run.json's keys are RunOptions' recorded fields plus the preset's flags (none by hand);
    the options left out are exactly those a resumed run may be given anew or that say where
    and whether to write."""
    from dataclasses import fields

    from transformer.cli.run_options import RECORDED, RunOptions
    from transformer.training.run_folder import RUN_FILE

    left_out = {f.name for f in fields(RunOptions)} - set(RECORDED)
    assert left_out == {"out", "resume", "overwrite", "device", "keep_epochs", "push_to_hub"}
    out = tmp_path / "run"
    assert tiny_main(data_dir, out, "--epochs", "1") == 0
    record = json.loads((out / RUN_FILE).read_text(encoding="utf-8"))
    assert set(RECORDED) <= record.keys() and {"d_model", "batch_tokens", "lr", "processes"} <= record.keys()
    assert record["dataset"] == str(data_dir) and record["extra_train"] == []


def test_the_default_run_adds_the_repositorys_further_pairs_and_only_to_its_own_corpus(data_dir):
    """`python train.py` with no flags trains on the shipped recipe's data folders, which must
    exist in a clone; another corpus, or the default one turned round, gets none of them."""
    default = cli_train.extra_train(cli_train.parse_args([]))
    assert [Path(p).name for p in default] == [
        "tatoeba-en-it-bt2",
        "tatoeba-en-it-more",
        "tatoeba-en-it-ft4",
        "tatoeba-en-it-concat",
    ]
    assert all((Path(p) / "README.md").is_file() for p in default)
    assert cli_train.extra_train(cli_train.parse_args(["--src", "it", "--tgt", "en"])) == ()
    assert cli_train.extra_train(cli_train.parse_args(["--dataset", str(data_dir)])) == ()
    assert cli_train.extra_train(cli_train.parse_args(["--extra-train"])) == ()
    # and its second stage's long pairs
    long = cli_train.fine_tune_train(cli_train.parse_args([]))
    assert [Path(p).name for p in long] == ["tatoeba-en-it-joined-long"]
    assert all((Path(p) / "README.md").is_file() and (Path(p) / "train.jsonl.gz").is_file() for p in long)
    assert cli_train.fine_tune_train(cli_train.parse_args(["--src", "it", "--tgt", "en"])) == ()
