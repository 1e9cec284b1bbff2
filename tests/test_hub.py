"""Publishing to and loading from the hub, with the hub mocked at the network boundary
(``HfApi.create_repo`` / ``HfApi.upload_folder`` / ``snapshot_download``), and the model
card parsed back with huggingface_hub's own ``ModelCard``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import huggingface_hub
import pytest
from huggingface_hub import HfApi, ModelCard, RepoUrl
from huggingface_hub.hf_api import DEFAULT_IGNORE_PATTERNS
from huggingface_hub.utils import filter_repo_objects

from transformer import CheckpointError

from transformer import load_translator
from transformer.core.checkpoint import CHECKPOINT_PATTERNS, load_checkpoint, save_checkpoint
from transformer.core.config import TransformerConfig
from transformer.core.hub import HubError, push_checkpoint
from transformer.cli.modelcard import beam_section, build_model_card, model_card, with_section
from tests.helpers import ROOT

SENTENCE = "the black cat sleeps."
METRICS = {
    "validation": {"bleu": 30.62, "chrf": 52.65},
    "test": {"bleu": 26.35, "chrf": 51.18},
    "train_minutes": 50.03,
    "epoch": 22,
}
HISTORY = [
    {"epoch": 1, "step": 320, "minutes": 2.77, "train_loss": 4.86, "val_loss": 4.92, "bleu": 1.63, "chrf": 13.79}
]
SAMPLES = [
    ("Where is the station?", "Dov'è la stazione?", "Dov'è la stazione?"),
    ("a | pipe", "una | barra", "una barra"),
]


def http_error(cls, status: int, url: str, message: str):
    """A huggingface_hub HTTP error as the real client raises it (with its response)."""
    return cls(message, response=httpx.Response(status, request=httpx.Request("GET", url)))


class FakeHub:
    """Stands in for huggingface.co: repos are folders under ``root``. Files are selected
    with huggingface_hub's own pattern filter, as the real upload/download do."""

    def __init__(self, root: Path):
        self.root, self.calls = root, []

    def create_repo(self, api, repo_id, *, private=None, exist_ok=False, repo_type=None, **kw):
        self.calls.append(("create_repo", repo_id, {"private": private, "exist_ok": exist_ok, "repo_type": repo_type}))
        repo = self.root / repo_id
        if repo.exists() and not exist_ok:
            raise http_error(
                huggingface_hub.errors.HfHubHTTPError,
                409,
                "https://huggingface.co/api/repos/create",
                "409 Conflict: repo exists",
            )
        repo.mkdir(parents=True, exist_ok=True)
        return RepoUrl(f"https://huggingface.co/{repo_id}")

    def upload_folder(self, api, *, repo_id, folder_path, ignore_patterns=None, allow_patterns=None, **kw):
        self.calls.append(("upload_folder", repo_id, {"folder_path": folder_path, **kw}))
        folder = Path(folder_path)
        files = [p.relative_to(folder).as_posix() for p in sorted(folder.glob("**/*")) if p.is_file()]
        for rel in filter_repo_objects(
            files, allow_patterns=allow_patterns, ignore_patterns=list(ignore_patterns or []) + DEFAULT_IGNORE_PATTERNS
        ):
            (self.root / repo_id / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(folder / rel, self.root / repo_id / rel)

    def snapshot_download(self, repo_id, revision=None, allow_patterns=None, **kw):
        self.calls.append(("snapshot_download", repo_id, {"allow_patterns": allow_patterns}))
        repo = self.root / repo_id
        if not repo.is_dir():
            raise http_error(
                huggingface_hub.errors.RepositoryNotFoundError,
                404,
                f"https://huggingface.co/api/models/{repo_id}",
                f"404: {repo_id} not found",
            )
        dest = self.root.parent / "cache" / repo_id.replace("/", "--")
        shutil.rmtree(dest, ignore_errors=True)
        files = [p.relative_to(repo).as_posix() for p in repo.glob("**/*") if p.is_file()]
        for rel in filter_repo_objects(files, allow_patterns=allow_patterns):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(repo / rel, dest / rel)
        return str(dest)


@pytest.fixture
def hub(monkeypatch, tmp_path):
    fake = FakeHub(tmp_path / "hub")
    monkeypatch.setattr(HfApi, "create_repo", lambda self, *a, **kw: fake.create_repo(self, *a, **kw))
    monkeypatch.setattr(HfApi, "upload_folder", lambda self, *a, **kw: fake.upload_folder(self, *a, **kw))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake.snapshot_download)
    monkeypatch.chdir(tmp_path)
    return fake


@pytest.fixture
def best_dir(tmp_path, tiny_checkpoint):
    """A trained-looking 'best' folder: card, metrics, training state, a snapshot, a leftover."""
    model, src_tok, tgt_tok, _ = load_checkpoint(tiny_checkpoint)
    card = model_card(model.cfg, 1234, "python train.py --preset tiny", HISTORY, METRICS, SAMPLES, "data/tatoeba-en-it")
    d = save_checkpoint(
        tmp_path / "runs" / "tiny" / "best",
        model,
        src_tok,
        tgt_tok,
        metrics=METRICS,
        model_card=card,
        extra_files={"train_state.pt": {"step": 3}},
    )
    save_checkpoint(d / "snapshots" / "epoch-001", model, None, None, metrics={"epoch": 1}, include_tokenizers=False)
    (d / ".best.tmp-leftover").mkdir()
    (d / ".best.tmp-leftover" / "junk.json").write_text("{}")
    return d


def test_push_creates_the_repo_then_uploads_the_folder(hub, best_dir, translator):
    url = push_checkpoint(best_dir, "someone/tiny-en-it", private=True, token="hf_fake")
    assert url == "https://huggingface.co/someone/tiny-en-it"
    assert [c[0] for c in hub.calls] == ["create_repo", "upload_folder"]
    assert hub.calls[0][2] == {"private": True, "exist_ok": True, "repo_type": "model"}
    assert Path(hub.calls[1][2]["folder_path"]) == best_dir
    pushed = sorted(
        p.relative_to(hub.root / "someone/tiny-en-it").as_posix()
        for p in (hub.root / "someone/tiny-en-it").glob("**/*")
        if p.is_file()
    )
    assert pushed == [
        "README.md",
        "config.json",
        "metrics.json",
        "model.safetensors",
        "snapshots/epoch-001/config.json",
        "snapshots/epoch-001/metrics.json",
        "snapshots/epoch-001/model.safetensors",
        "tokenizer_src.json",
        "tokenizer_tgt.json",
    ]  # no train_state.pt, no temp folder

    # pushing again (a better model later) reuses the repo
    push_checkpoint(best_dir, "someone/tiny-en-it")
    assert hub.calls[2][2]["exist_ok"] is True

    # and it loads back by repo id, through snapshot_download, to the same translations
    tr = load_translator("someone/tiny-en-it")
    assert hub.calls[-1] == ("snapshot_download", "someone/tiny-en-it", {"allow_patterns": CHECKPOINT_PATTERNS})
    assert tr.trace(SENTENCE).tgt_ids == translator.trace(SENTENCE).tgt_ids
    assert tr.metrics["test"] == METRICS["test"]
    assert (
        load_translator(tr.directory / "snapshots" / "epoch-001").trace(SENTENCE).tgt_ids
        == translator.trace(SENTENCE).tgt_ids
    )


def test_push_refuses_what_should_not_be_published(hub, tmp_path, best_dir):
    with pytest.raises(CheckpointError, match="does not exist"):
        push_checkpoint(tmp_path / "runs" / "nope" / "best", "someone/x")
    with pytest.raises(HubError, match="owner/name"):
        push_checkpoint(best_dir, "no-owner")
    with pytest.raises(HubError, match="not a valid hub repo id"):
        push_checkpoint(best_dir, "some one/bad name")
    broken = shutil.copytree(best_dir, tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: corrupt"):
        push_checkpoint(broken, "someone/x")
    (best_dir / "README.md").unlink()
    with pytest.raises(CheckpointError, match="no README.md model card"):
        push_checkpoint(best_dir, "someone/x")
    assert hub.calls == []  # nothing reached the hub


def test_hub_failures_become_hub_errors(monkeypatch, best_dir):
    def no_network(self, *a, **kw):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(HfApi, "create_repo", no_network)
    with pytest.raises(HubError, match="could not push .* someone/x: OSError: Network is unreachable"):
        push_checkpoint(best_dir, "someone/x")


def test_missing_hub_repo_says_both_readings(hub):
    with pytest.raises(
        CheckpointError,
        match=r"someone/missing does not exist, and 'someone/missing' could not be "
        r"loaded as a Hugging Face hub repo id \(RepositoryNotFoundError",
    ):
        load_translator("someone/missing")


def test_model_card_parses_with_huggingface_hub_and_carries_the_metadata():
    cfg = TransformerConfig(
        src_vocab_size=4000,
        tgt_vocab_size=4000,
        tie_embeddings="all",
        src_tokenizer_file="tokenizer.json",
        tgt_tokenizer_file="tokenizer.json",
    )
    text = model_card(
        cfg,
        7_578_624,
        "python train.py --out runs/base",
        HISTORY,
        METRICS,
        SAMPLES,
        str(ROOT / "data" / "tatoeba-en-it"),
    )
    card = ModelCard(text)  # raises on invalid metadata / model-index
    data = card.data
    assert data.pipeline_tag == "translation"
    assert data.language == ["en", "it"] and data.license == "mit"
    assert data.datasets == ["Helsinki-NLP/tatoeba_mt"]
    results = {(r.dataset_split, r.metric_type): r.metric_value for r in data.eval_results}
    assert results == {
        ("test", "bleu"): 26.35,
        ("test", "chrf"): 51.18,
        ("validation", "bleu"): 30.62,
        ("validation", "chrf"): 52.65,
    }
    assert {r.task_type for r in data.eval_results} == {"translation"}
    index = data.to_dict()["model-index"]
    assert index[0]["results"][0]["task"]["type"] == "translation"
    # the human part: command, wall time, parameters, scores, samples, credit, limitations
    body = card.text
    for needle in (
        "`python train.py --out runs/base`",
        "50.03 minutes",
        "7,578,624",
        "| test | 26.35 | 51.18 |",
        "| Where is the station? | Dov'è la stazione? |",
        "a \\| pipe",
        "Trained on data/tatoeba-en-it.",
        "Tatoeba (tatoeba.org), CC-BY 2.0 FR",
        "## Limitations",
        "| 1 | 320 | 2.77 |",
    ):
        assert needle in body, needle
    assert str(ROOT) not in text  # no machine-specific absolute path


def test_model_card_without_test_scores_and_from_a_hub_dataset():
    metrics = {"validation": {"bleu": 10.0, "chrf": 30.0}, "train_minutes": 1.0}
    card = build_model_card(TransformerConfig(), 10, "python train.py", [], metrics, [], "Helsinki-NLP/opus_books")
    assert card.data.datasets == ["Helsinki-NLP/opus_books"]
    assert {r.dataset_split for r in card.data.eval_results} == {"validation"}
    assert "| test |" not in card.text and "Tatoeba" not in card.text
    assert "It is not a\nproduction translator." in card.text  # the generic limitations
    # what the shipper knows: title, extra rows, sections, limitations, all in the generated card
    card = build_model_card(
        TransformerConfig(),
        10,
        "c",
        [],
        metrics,
        [],
        "Helsinki-NLP/opus_books",
        title="A title",
        details=[("chosen by", "validation chrF")],
        sections={"Beam search": "| k | BLEU |\n|---|---|\n| 4 | 28.6 |"},
        limitations="Short sentences only.",
    )
    text = card.text
    assert "# A title" in text and "| chosen by | validation chrF |" in text
    assert text.index("## Scores") < text.index("## Beam search\n\n| k | BLEU |") < text.index("## Samples")
    assert "## Limitations\n\nShort sentences only." in text and "production translator" not in text
    # an explicit test score overrides; the card round-trips through its own YAML
    card = build_model_card(
        TransformerConfig(),
        10,
        "c",
        [],
        metrics,
        [],
        "Helsinki-NLP/opus_books",
        test_scores={"bleu": 9.5, "chrf": 29.0},
    )
    assert "words (" not in card.text  # no long-sentence slice measured, no row for it
    # the long sentences' own row, from the slice evaluate --save records; not a model-index result
    long = {"bleu": 9.5, "chrf": 29.0, "long": {"min_words": 15, "n": 14, "bleu": 6.15, "chrf": 27.68}}
    sliced = build_model_card(
        TransformerConfig(), 10, "c", [], metrics, [], "Helsinki-NLP/opus_books", test_scores=long
    )
    assert "| test | 9.5 | 29.0 |\n| test, sentences of 15+ words (14) | 6.15 | 27.68 |" in sliced.text
    assert len(sliced.data.eval_results) == len(card.data.eval_results)
    again = ModelCard(str(card))
    assert {(r.dataset_split, r.metric_type): r.metric_value for r in again.data.eval_results}[("test", "bleu")] == 9.5
    assert json.loads(json.dumps(again.data.to_dict()))["pipeline_tag"] == "translation"


BEAM = {
    "data": "data/tatoeba-en-it/test.jsonl",
    "n": 1000,
    "length_penalty": 0.6,
    "torch_threads": 2,
    "batch_size": 64,
    "command": "python benchmarks/beam_eval.py --save",
    "rows": [
        {"decoder": "greedy", "k": 1, "bleu": 26.35, "chrf": 51.18, "seconds": 5.0, "sentences_per_s": 200.0},
        {
            "decoder": "beam k=1",
            "k": 1,
            "bleu": 26.35,
            "chrf": 51.18,
            "seconds": 6.0,
            "sentences_per_s": 166.7,
            "equals_greedy": True,
        },
        {"decoder": "beam k=4", "k": 4, "bleu": 28.57, "chrf": 51.42, "seconds": 11.0, "sentences_per_s": 90.9},
    ],
}


def test_beam_table_becomes_a_card_section_and_replaces_an_old_one():
    metrics = {"validation": {"bleu": 10.0, "chrf": 30.0}, "beam": BEAM}
    text = build_model_card(TransformerConfig(), 10, "c", [], metrics, [], "Helsinki-NLP/opus_books").text
    assert text.index("## Scores") < text.index("## Beam search") < text.index("## Samples")
    assert "| beam k=4 | 28.57 | 51.42 | 90.9 | 2.20x |" in text
    assert "| beam k=1 (same output as greedy) | 26.35 |" in text
    assert "Best: beam k=4, +2.22 BLEU and +0.24 chrF over greedy, for 2.2x the decoding time." in text
    assert "`python benchmarks/beam_eval.py --save`" in text
    # a hand-curated card: the section goes after Scores, and a second save replaces it
    card = "# M\n\n## Scores\n\n| a |\n\n## Samples\n\nx\n"
    once = with_section(card, "Beam search", beam_section(BEAM))
    assert once.index("## Scores") < once.index("## Beam search") < once.index("## Samples")
    newer = {**BEAM, "rows": [{**r, "bleu": r["bleu"] + 1} for r in BEAM["rows"]]}
    twice = with_section(once, "Beam search", beam_section(newer))
    assert twice.count("## Beam search") == 1 and "| beam k=4 | 29.57 |" in twice and "| 28.57 |" not in twice
    assert twice.endswith("## Samples\n\nx\n")
    assert with_section("# M\n", "New", "body").endswith("## New\n\nbody\n")  # no anchor: at the end


# ----------------------------------------------------------------------------- a card rebuilt from its folder
def test_card_is_rebuilt_from_the_checkpoint_folder(capfd, tmp_path, tiny_checkpoint, data_dir):
    """``python -m transformer.cli.evaluate --save`` records test scores in metrics.json, and
    ``python -m transformer.cli.modelcard`` rebuilds README.md from the folder: scores and
    model-index with the test split, snapshots, history, samples, and credit for added corpora."""
    from tests.helpers import make_snapshots
    from transformer.cli import evaluate
    from transformer.cli import modelcard

    ckpt = make_snapshots(tiny_checkpoint, tmp_path / "ckpt", epochs=(1, 2))
    history = [
        {"epoch": 1, "step": 3, "minutes": 0.1, "train_loss": 5.0, "val_loss": 4.0, "bleu": 1.0, "chrf": 9.0},
        {"epoch": 2, "step": 6, "minutes": 0.2, "train_loss": 4.0, "val_loss": 3.5, "bleu": 2.0, "chrf": 12.0},
    ]
    (ckpt / "metrics.json").write_text(
        json.dumps(
            {"validation": {"bleu": 2.0, "chrf": 12.0}, "epoch": 2, "step": 6, "train_minutes": 0.2, "parameters": 1234}
        )
    )
    (tmp_path / "history.json").write_text(json.dumps(history))
    test_file = data_dir / "test.jsonl"
    assert evaluate.main(["--checkpoint", str(ckpt), "--data", str(test_file), "--save"]) == 0
    test = json.loads((ckpt / "metrics.json").read_text())["test"]
    assert set(test) == {"bleu", "chrf", "n", "data", "long"} and test["n"] == len(test_file.read_text().splitlines())
    assert (
        modelcard.main(
            [
                "--checkpoint",
                str(ckpt),
                "--command",
                "python train.py",
                "--samples",
                str(test_file),
                "--n-samples",
                "3",
                "--data",
                "data/tatoeba-en-it",
                "--extra-data",
                "data/tatoeba-en-it-bt",
                "--history",
                str(tmp_path / "history.json"),
                "--detail",
                "training time",
                "a while",
            ]
        )
        == 0
    )
    card = ModelCard.load(ckpt / "README.md")
    assert {(r.dataset_split, r.metric_type): r.metric_value for r in card.data.eval_results} == {
        ("validation", "bleu"): 2.0,
        ("validation", "chrf"): 12.0,
        ("test", "bleu"): test["bleu"],
        ("test", "chrf"): test["chrf"],
    }
    text = card.text
    assert f"| test | {test['bleu']} | {test['chrf']} |" in text
    assert "| command | `python train.py` |" in text and "| training time | a while |" in text
    snapshots = text.split("## Training snapshots")[1].split("\n## ")[0]
    assert [line.split(" | ")[0] for line in snapshots.splitlines() if line.startswith("| ") and "MB" in line] == [
        "| 1",
        "| 2",
    ]
    assert "| 2 (this model) | 6 | 0.2 | 2.0 | 12.0 |" in snapshots
    samples = text.split("## Samples")[1].split("\n## ")[0]
    assert sum(line.startswith("| ") for line in samples.splitlines()) == 1 + 3  # the header and 3 pairs
    assert "Trained on data/tatoeba-en-it, plus data/tatoeba-en-it-bt. Sentences from Tatoeba" in text
    assert "| 2 | 6 | 0.2 | 4.0 | 3.5 | 2.0 | 12.0 |" in text.split("## Training history")[1]
    # the history now travels in the folder's metrics.json
    assert json.loads((ckpt / "metrics.json").read_text())["history"] == history


def test_card_and_save_flags_fail_in_one_line(capfd, tmp_path, tiny_checkpoint, data_dir):
    from tests.helpers import exit_2
    from transformer.cli import evaluate
    from transformer.cli import modelcard

    test_file = str(data_dir / "test.jsonl")
    line = exit_2(
        capfd, evaluate.main, ["--checkpoint", str(tiny_checkpoint), "--data", test_file, "--save", "--beam-size", "4"]
    )
    assert "--save records greedy scores" in line
    line = exit_2(
        capfd, modelcard.main, ["--checkpoint", str(tmp_path), "--command", "c", "--samples", test_file, "--data", "d"]
    )
    assert line == f"error: {tmp_path}: no metrics.json (not a trained checkpoint folder)"


# ----------------------------------------------------------------------------- huggingface_hub's own file choice
def test_push_sends_what_upload_folder_selects_and_keeps_its_patterns(monkeypatch, best_dir):
    """The real ``HfApi.upload_folder`` chooses the files; only its network calls are replaced
    (``create_repo``, the card's YAML check, ``create_commit``). It appends its own default
    patterns to the ignore list it is given, so a module constant passed as is would grow
    with every push: the list must stay as it was."""
    import huggingface_hub.hf_api

    from transformer.core import hub as hub_module

    commits = []
    monkeypatch.setattr(huggingface_hub.hf_api, "is_xet_available", lambda: False)  # the one-commit path
    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kw: RepoUrl(f"https://huggingface.co/{repo_id}"))
    monkeypatch.setattr(HfApi, "_validate_yaml", lambda self, content, **kw: ModelCard(content))
    monkeypatch.setattr(HfApi, "create_commit", lambda self, **kw: commits.append(kw))
    before = list(hub_module.IGNORE_PATTERNS)
    push_checkpoint(best_dir, "someone/tiny-en-it", token="hf_fake")
    push_checkpoint(best_dir, "someone/tiny-en-it", token="hf_fake")
    assert hub_module.IGNORE_PATTERNS == before
    sent = [sorted(op.path_in_repo for op in commit["operations"]) for commit in commits]
    assert (
        sent[0]
        == sent[1]
        == hub_module.checkpoint_files(best_dir)
        == [
            "README.md",
            "config.json",
            "metrics.json",
            "model.safetensors",
            "snapshots/epoch-001/config.json",
            "snapshots/epoch-001/metrics.json",
            "snapshots/epoch-001/model.safetensors",
            "tokenizer_src.json",
            "tokenizer_tgt.json",
        ]
    )
