"""``python -m explorer.deploy``: a Space made from a clone with huggingface_hub's
``upload_folder``, tested with the hub replaced at HfApi's network calls (``create_repo``,
``add_space_variable``, ``list_repo_files``, the card's YAML check and ``create_commit``).
The real ``upload_folder`` runs, so the files it would send are huggingface_hub's own
choice, compared with the list ``--dry-run`` prints."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import huggingface_hub
import huggingface_hub.hf_api
import pytest
from huggingface_hub import HfApi, ModelCard, RepoUrl, SpaceCard
from huggingface_hub.errors import HfHubHTTPError

from explorer import deploy
from transformer.core.checkpoint import load_checkpoint, save_checkpoint
from tests.helpers import ROOT

PROG = "python -m explorer.deploy"
BIG = 10 * 1024 * 1024 + 1  # one byte over the Hub's limit for a plain git blob
FILE_LINE = re.compile(r"^ *([\d,]+)  (large|     )  (\S+)$")

# what the Space gets from the fake clone below: code, card, pins, licence, picture, checkpoint
SPACE = [
    "app.py",
    "README.md",
    "LICENSE",
    ".gitattributes",
    "requirements.txt",
    "pre-requirements.txt",
    "docs/screenshot.png",
    "explorer/__init__.py",
    "explorer/panels/beam.py",
    "explorer/web/big.json",
    "explorer/web/vocab.bin",
    "explorer/web/viewer.js",
    "transformer/__init__.py",
    "transformer/core/hub.py",
]
CHECKPOINT = [
    "README.md",
    "config.json",
    "model.safetensors",
    "snapshots/epoch-001/config.json",
    "snapshots/epoch-001/metrics.json",
    "snapshots/epoch-001/model.safetensors",
    "tokenizer_src.json",
    "tokenizer_tgt.json",
]
# large: the weights and the picture (binary), big.json (over 10 MiB), vocab.bin (.gitattributes)
LARGE = {
    "docs/screenshot.png",
    "explorer/web/big.json",
    "explorer/web/vocab.bin",
    "checkpoints/en-it/model.safetensors",
    "checkpoints/en-it/snapshots/epoch-001/model.safetensors",
}


def write(path: Path, data: str | bytes = "x = 1\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def add_checkpoint(tiny_checkpoint: Path, where: Path, card: bool = True) -> Path:
    """The tiny checkpoint as a trained folder: a card, a snapshot, training state, a leftover."""
    model, *_ = load_checkpoint(tiny_checkpoint)
    shutil.copytree(tiny_checkpoint, where)
    if card:
        write(where / "README.md", "---\nlicense: mit\nlanguage: [en, it]\n---\n# tiny\n")
    save_checkpoint(
        where / "snapshots" / "epoch-001", model, None, None, metrics={"epoch": 1}, include_tokenizers=False
    )
    write(where / "train_state.pt", b"\x80\x04state")
    write(where / "snapshots" / ".epoch-002.tmp-x" / "config.json", "{}")
    return where


@pytest.fixture
def clone(tmp_path, tiny_checkpoint) -> Path:
    """A clone in miniature: what the Space needs, and everything it must not get."""
    root = tmp_path / "clone"
    for name in ("README.md", "LICENSE", ".gitattributes", "requirements.txt", "pre-requirements.txt"):
        write(root / name, (ROOT / name).read_bytes())
    write(root / "app.py", "print('the app')\n")
    write(root / "docs" / "screenshot.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    write(root / "explorer" / "web" / "big.json", "[" + "0," * (BIG // 2) + "0]")
    write(root / "explorer" / "web" / "vocab.bin", "plain text, stored large by its name\n")
    for name in (
        "explorer/__init__.py",
        "explorer/panels/beam.py",
        "explorer/web/viewer.js",
        "transformer/__init__.py",
        "transformer/core/hub.py",
    ):
        write(root / name)
    add_checkpoint(tiny_checkpoint, root / "checkpoints" / "en-it")
    # never sent: bytecode, hidden files, data, tests, runs, benchmarks, other docs, git, the rest
    for name in (
        "explorer/__pycache__/app.cpython-311.pyc",
        "transformer/__pycache__/hub.cpython-311.pyc",
        "explorer/web/.DS_Store",
        "data/tatoeba-en-it/train.jsonl",
        "tests/test_app.py",
        "runs/base/history.json",
        "benchmarks/speed.py",
        "docs/how-it-works.md",
        ".git/HEAD",
        ".git/objects/ab/cdef",
        "train.py",
        "pyproject.toml",
        "requirements-test.txt",
        ".gitignore",
        ".ci/run",
        "notes.txt",
    ):
        write(root / name)
    add_checkpoint(tiny_checkpoint, root / "runs" / "base" / "best")
    return root


def space_files(checkpoint: str | None = "checkpoints/en-it") -> list[str]:
    extra = [f"{checkpoint}/{name}" for name in CHECKPOINT] if checkpoint else []
    return sorted(SPACE + extra)


class FakeHub:
    """huggingface.co as HfApi's network calls see it: repos are sets of paths."""

    def __init__(self):
        self.calls, self.repos, self.tokens, self.texts = [], {}, set(), {}

    def create_repo(self, api, repo_id, *, repo_type=None, space_sdk=None, private=None, exist_ok=False, **kw):
        self.tokens.add(api.token)
        self.calls.append(
            (
                "create_repo",
                repo_id,
                {"repo_type": repo_type, "space_sdk": space_sdk, "private": private, "exist_ok": exist_ok},
            )
        )
        # a new repo starts with the Hub's own .gitattributes (and a Space with a card)
        self.repos.setdefault(repo_id, {".gitattributes", "README.md"} if repo_type == "space" else {".gitattributes"})
        prefix = "spaces/" if repo_type == "space" else ""
        return RepoUrl(f"https://huggingface.co/{prefix}{repo_id}")

    def add_space_variable(self, api, repo_id, key, value, *, description=None, token=None):
        self.calls.append(("add_space_variable", repo_id, {key: value}))
        return {}

    def list_repo_files(self, api, repo_id, *, revision=None, repo_type=None, token=None):
        return sorted(self.repos[repo_id])

    def validate_yaml(self, api, content, *, repo_type=None, token=None):
        (SpaceCard if repo_type == "space" else ModelCard)(content)  # raises on metadata the hub would refuse
        self.calls.append(("validate_yaml", repo_type, {}))

    def create_commit(self, api, *, repo_id, operations, repo_type=None, commit_message=None, **kw):
        adds = [op for op in operations if isinstance(op, huggingface_hub.CommitOperationAdd)]
        added = sorted(op.path_in_repo for op in adds)
        for op in adds:  # the text the Space gets of its requirements (upload_folder sends paths)
            if op.path_in_repo.endswith(".txt"):
                self.texts[op.path_in_repo] = Path(op.path_or_fileobj).read_text(encoding="utf-8")
        deleted = sorted(op.path_in_repo for op in operations if isinstance(op, huggingface_hub.CommitOperationDelete))
        self.calls.append(
            (
                "create_commit",
                repo_id,
                {"repo_type": repo_type, "added": added, "deleted": deleted, "message": commit_message},
            )
        )
        self.repos[repo_id] = (self.repos[repo_id] - set(deleted)) | set(added)


@pytest.fixture
def no_token(monkeypatch, tmp_path):
    """No token anywhere huggingface_hub looks: neither the environment nor a saved login."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-saved-token"))


@pytest.fixture
def hub(monkeypatch, no_token):
    fake = FakeHub()
    for name in ("create_repo", "add_space_variable", "list_repo_files", "create_commit"):
        method = getattr(fake, name)
        monkeypatch.setattr(HfApi, name, lambda self, *a, _m=method, **kw: _m(self, *a, **kw))
    monkeypatch.setattr(HfApi, "_validate_yaml", lambda self, *a, **kw: fake.validate_yaml(self, *a, **kw))
    monkeypatch.setattr(huggingface_hub.hf_api, "is_xet_available", lambda: False)  # the one-commit path
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *a, **kw: pytest.fail("nothing is downloaded"))
    monkeypatch.setenv("HF_TOKEN", "hf_fake")
    return fake


def dry_run_sections(capsys, argv, root) -> dict[str, dict[str, tuple[int, bool]]]:
    """``--dry-run``'s output: each line that is not a file, with the file lines under it as
    {path: (size, large)}."""
    capsys.readouterr()
    assert deploy.main([*argv, "--dry-run"], root=root) == 0
    out, err = capsys.readouterr()
    assert err == ""
    sections, current = {}, None
    for line in out.splitlines():
        m = FILE_LINE.match(line)
        if m:
            sections[current][m.group(3)] = (int(m.group(1).replace(",", "")), m.group(2) == "large")
        else:
            current = line
            sections[current] = {}
    return sections


def dry_run(capsys, argv, root) -> tuple[dict[str, tuple[int, bool]], list[str]]:
    """The Space's files as {path: (size, large)}, and the lines that are not files."""
    sections = dry_run_sections(capsys, argv, root)
    space = [files for header, files in sections.items() if header.startswith("Space ")]
    return space[0], list(sections)


# ----------------------------------------------------------------------------- the dry run
def test_dry_run_lists_each_file_with_its_size_and_needs_no_network_nor_token(monkeypatch, capsys, clone, no_token):
    def offline(*a, **kw):
        raise AssertionError("a dry run talks to no one")

    for name in ("create_repo", "upload_folder", "add_space_variable", "create_commit", "list_repo_files"):
        monkeypatch.setattr(HfApi, name, offline)
    files, other = dry_run(capsys, ["someone/explorer"], clone)
    assert sorted(files) == space_files()
    assert all(size == (clone / name).stat().st_size for name, (size, _) in files.items())
    assert {name for name, (_, large) in files.items() if large} == LARGE
    total = sum(size for size, _ in files.values())
    assert other == [
        f"Space someone/explorer (gradio, public if new; CHECKPOINT=checkpoints/en-it), from {clone}:",
        (
            f"total: {len(files)} files, {total:,} bytes ({total / 2**20:.1f} MiB), {len(LARGE)} large "
            "(large: stored with Xet/LFS, over 10 MiB or binary)"
        ),
        "dry run: nothing was sent",
    ]


def test_the_repositorys_own_dry_run_is_a_space_that_runs(capsys):
    """This clone, as ``python -m explorer.deploy OWNER/NAME --dry-run`` lists it: no data,
    tests, runs or benchmarks; the app, both packages whole, the card and the checkpoint."""
    files, _ = dry_run(capsys, ["someone/explorer"], ROOT)
    assert not [f for f in files if f.split("/")[0] in ("data", "tests", "runs", "benchmarks", ".git", ".ci")]
    assert [f for f in files if f.startswith("docs/")] == ["docs/screenshot.png"]
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    on_disk = {
        p.relative_to(ROOT).as_posix()
        for package in ("explorer", "transformer")
        for p in (ROOT / package).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert on_disk <= set(files)
    for name in (
        "app.py",
        "README.md",
        "LICENSE",
        "requirements.txt",
        "pre-requirements.txt",
        ".gitattributes",
        "checkpoints/en-it/config.json",
        "checkpoints/en-it/tokenizer.json",
    ):
        assert name in files and not files[name][1], name
    weights = {
        "checkpoints/en-it/model.safetensors",
        *(
            f"checkpoints/en-it/snapshots/{s.name}/model.safetensors"
            for s in (ROOT / "checkpoints/en-it/snapshots").iterdir()
        ),
    }
    # the binary files the app ships: the screenshot and the junk check's word list (gzip)
    binaries = {"docs/screenshot.png", "explorer/english_words.txt.gz"}
    assert {f for f, (_, large) in files.items() if large} == weights | binaries


@pytest.mark.slow
def test_the_listed_files_alone_serve_the_app(capsys, tmp_path):
    """Copy exactly what the dry run lists into an empty folder and build the app there, as
    the Space does: nothing it imports, reads or serves is missing."""
    files, _ = dry_run(capsys, ["someone/explorer"], ROOT)
    space = tmp_path / "space"
    for name in files:
        write(space / name, (ROOT / name).read_bytes())
    script = (
        "import app, explorer, transformer; from pathlib import Path; here = Path.cwd()\n"
        "assert Path(transformer.__file__).is_relative_to(here) and Path(explorer.__file__).is_relative_to(here)\n"
        "from transformer.cli import load_translator_or_exit\n"
        "from explorer.page import build_ui\n"
        "tr = load_translator_or_exit(app.parse_args([]).checkpoint[0])\n"
        "assert tr.directory.resolve().is_relative_to(here)\n"
        "build_ui(tr)\n"
        "print('built')\n"
    )
    env = {
        **{k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        "CHECKPOINT": "checkpoints/en-it",
        "HF_HUB_OFFLINE": "1",
        "GRADIO_ANALYTICS_ENABLED": "False",
    }
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=space, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("built"), done.stderr[-3000:]


# ----------------------------------------------------------------------------- deploying (hub mocked)
def test_deploy_creates_the_space_sets_its_checkpoint_and_uploads_exactly_the_list(capsys, clone, hub):
    listed, _ = dry_run(capsys, ["someone/explorer"], clone)
    hub.repos["someone/explorer"] = {".gitattributes", "README.md", "old_module.py", "checkpoints/en-it/stale.json"}
    assert deploy.main(["someone/explorer"], root=clone) == 0
    assert [(c[0], c[1]) for c in hub.calls] == [
        ("create_repo", "someone/explorer"),
        ("add_space_variable", "someone/explorer"),
        ("validate_yaml", "space"),
        ("create_commit", "someone/explorer"),
    ]
    assert hub.calls[0][2] == {"repo_type": "space", "space_sdk": "gradio", "private": None, "exist_ok": True}
    assert hub.calls[1][2] == {"CHECKPOINT": "checkpoints/en-it"}
    commit = hub.calls[3][2]
    assert commit["repo_type"] == "space" and commit["message"] == deploy.COMMIT_MESSAGE
    assert commit["added"] == sorted(listed) == space_files()  # huggingface_hub's choice is the dry run's list
    assert commit["deleted"] == ["checkpoints/en-it/stale.json", "old_module.py"]  # the Space mirrors the list
    assert hub.repos["someone/explorer"] == set(listed)
    assert capsys.readouterr().out == (
        f"deployed {len(listed)} files to https://huggingface.co/spaces/someone/explorer;"
        " the Space now builds (installing its requirements), then starts\n"
    )


def test_weights_in_a_model_repo_go_there_with_their_card_and_the_space_loads_them_by_id(capsys, clone, hub):
    sections = dry_run_sections(capsys, ["someone/explorer", "--model-repo", "someone/en-it", "--private"], clone)
    model_header, space_header, total, last = sections
    assert model_header == f"model repo someone/en-it (from {clone / 'checkpoints/en-it'}):"
    assert space_header == f"Space someone/explorer (gradio, private if new; CHECKPOINT=someone/en-it), from {clone}:"
    assert sorted(sections[model_header]) == CHECKPOINT and sorted(sections[space_header]) == sorted(SPACE)
    assert total.startswith(f"total: {len(CHECKPOINT) + len(SPACE)} files, ") and last == "dry run: nothing was sent"
    assert deploy.main(["someone/explorer", "--model-repo", "someone/en-it", "--private"], root=clone) == 0
    assert [(c[0], c[1]) for c in hub.calls] == [
        ("create_repo", "someone/en-it"),
        ("validate_yaml", "model"),
        ("create_commit", "someone/en-it"),
        ("create_repo", "someone/explorer"),
        ("add_space_variable", "someone/explorer"),
        ("validate_yaml", "space"),
        ("create_commit", "someone/explorer"),
    ]
    assert hub.calls[0][2]["repo_type"] == "model" and hub.calls[0][2]["private"] is False
    assert hub.calls[2][2]["added"] == CHECKPOINT  # no training state, no leftover folder
    assert hub.calls[3][2] == {"repo_type": "space", "space_sdk": "gradio", "private": True, "exist_ok": True}
    assert hub.calls[4][2] == {"CHECKPOINT": "someone/en-it"}
    assert hub.calls[6][2]["added"] == sorted(SPACE)  # no weights in the Space


def test_another_checkpoint_of_the_clone_goes_up_alone(monkeypatch, capsys, clone, hub):
    monkeypatch.chdir(clone)
    listed, other = dry_run(capsys, ["someone/explorer", "--checkpoint", "runs/base/best"], clone)
    assert sorted(listed) == space_files("runs/base/best")  # nothing else of runs/, no checkpoints/en-it
    assert "CHECKPOINT=runs/base/best" in other[0]
    assert deploy.main(["someone/explorer", "--checkpoint", "runs/base/best"], root=clone) == 0
    assert hub.calls[1][2] == {"CHECKPOINT": "runs/base/best"}
    assert hub.calls[-1][2]["added"] == sorted(listed)


# ----------------------------------------------------------------------------- bad input: one line, exit 2
def exit_2(capsys, argv, root) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        deploy.main(argv, root=root)
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and err.endswith("\n") and err.count("\n") == 1, err
    return err.rstrip("\n")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["explorer"], "argument OWNER/NAME: 'explorer': give the repo as 'owner/name'"),
        (["a/b/c"], "argument OWNER/NAME: 'a/b/c' is not a valid hub repo id ('owner/name'): "),
        (["someone/x", "--model-repo", "my model"], "argument --model-repo: 'my model' is not a valid hub repo id"),
    ],
)
def test_an_id_that_is_not_owner_name(capsys, clone, hub, argv, expected):
    line = exit_2(capsys, argv, clone)
    assert line.startswith(f"{PROG}: error: {expected}") and line.endswith(f"(see {PROG} --help)")
    assert hub.calls == []


def test_a_missing_token_says_how_to_log_in_before_the_checkpoint_loads(capsys, clone, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    monkeypatch.setattr(deploy, "load_checkpoint", lambda *a, **kw: pytest.fail("the token is checked first"))
    assert exit_2(capsys, ["someone/explorer"], clone) == (
        "error: no Hugging Face token: log in with `hf auth login`, or set HF_TOKEN, or pass --token "
        "(a token with write access, from https://huggingface.co/settings/tokens)"
    )
    assert hub.calls == []


def test_a_token_given_on_the_command_line_is_the_one_used(capsys, clone, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    assert deploy.main(["someone/explorer", "--model-repo", "someone/m", "--token", "hf_given"], root=clone) == 0
    assert hub.tokens == {"hf_given"}


def test_checkpoints_that_are_not_one(capsys, tmp_path, clone, hub, monkeypatch):
    monkeypatch.chdir(clone)
    line = exit_2(capsys, ["someone/x", "--checkpoint", "runs/nope"], clone)
    assert line == (
        "error: --checkpoint runs/nope: not a folder (a checkpoint folder holds config.json and model.safetensors)"
    )
    (clone / "runs/base/best/model.safetensors").write_bytes(b"garbage")
    line = exit_2(capsys, ["someone/x", "--checkpoint", "runs/base/best"], clone)
    assert line.startswith("error: --checkpoint runs/base/best: ") and "model.safetensors: corrupt" in line
    line = exit_2(capsys, ["someone/x", "--checkpoint", "data"], clone)
    assert line.startswith("error: --checkpoint data: ") and "config.json: missing" in line
    elsewhere = shutil.copytree(clone / "checkpoints/en-it", tmp_path / "elsewhere")
    line = exit_2(capsys, ["someone/x", "--checkpoint", str(elsewhere)], clone)
    assert line == (
        f"error: --checkpoint {elsewhere}: outside this clone ({clone}), and a Space gets its files from "
        "the clone: copy it under checkpoints/, or publish it with --model-repo OWNER/NAME"
    )
    (elsewhere / "README.md").unlink()  # a model repo needs its card
    line = exit_2(capsys, ["someone/x", "--checkpoint", str(elsewhere), "--model-repo", "someone/m"], clone)
    assert line == f"error: --checkpoint {elsewhere}: {elsewhere}: no README.md model card to publish with the weights"
    (clone / "app.py").unlink()
    assert exit_2(capsys, ["someone/x"], clone) == (
        f"error: {clone} has no app.py: run {PROG} from a clone of the repository"
    )
    assert hub.calls == []


@pytest.mark.parametrize(
    "status, reason",
    [
        (401, "the hub refused the token (401): log in again with `hf auth login`, or set HF_TOKEN"),
        (403, "the token may not write there (403): use a token with write access"),
        (500, "HfHubHTTPError: 500 Server Error: try again later"),
    ],
)
def test_hub_failures_are_one_line(capsys, clone, hub, monkeypatch, status, reason):
    def refused(self, repo_id, **kw):
        request = httpx.Request("POST", "https://huggingface.co/api/repos/create")
        raise HfHubHTTPError(
            f"{status} Server Error:\ntry again later", response=httpx.Response(status, request=request)
        )

    monkeypatch.setattr(HfApi, "create_repo", refused)
    assert (
        exit_2(capsys, ["someone/explorer"], clone)
        == f"error: could not deploy to the Space someone/explorer: {reason}"
    )
    line = exit_2(capsys, ["someone/explorer", "--model-repo", "someone/m"], clone)
    assert line.startswith("error: could not deploy to the Space someone/explorer: ")
    assert line.endswith("(pushing the model repo)")


# ----------------------------------------------------------------------------- what the Space installs and stores
def test_a_space_installs_torchs_cpu_build_first():
    """pre-requirements.txt (installed by a Space before requirements.txt) takes the CPU build
    of the very torch that requirements.txt pins, so that pin is met and PyPI's CUDA build is
    never fetched."""
    pins = {}
    for name in ("requirements.txt", "pre-requirements.txt"):
        m = re.search(r"^torch==(\S+)$", (ROOT / name).read_text(), re.MULTILINE)
        assert m, f"{name} pins no torch"
        pins[name] = m.group(1)
    assert pins["pre-requirements.txt"] == pins["requirements.txt"] + "+cpu"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in (ROOT / "pre-requirements.txt").read_text()


def test_gitattributes_stores_every_binary_file_of_the_space_as_a_large_file(capsys):
    """A git push of the Space's files would need the same: each file the Hub takes as large
    because it is binary is matched by a filter=lfs rule of .gitattributes."""
    rules = deploy.lfs_rules(ROOT)
    assert {"*.safetensors", "*.png", "*.jpg", "*.bin", "*.pt", "*.gz", "*.zip"} <= set(rules)
    files, _ = dry_run(capsys, ["someone/explorer"], ROOT)
    for name, (_, large) in files.items():
        if large:
            assert deploy.is_large(ROOT / name, name, rules) and deploy.is_large(ROOT / name, name, []) is large
            assert any(Path(name).match(rule) for rule in rules), name
    assert (
        "MIT License" in (ROOT / "LICENSE").read_text()
        and "Inside the Transformer contributors" in (ROOT / "LICENSE").read_text()
    )


# ----------------------------------------------------------------------------- --with: published models beside ours
NLLB, OPUS = "facebook/nllb-200-distilled-600M", "Helsinki-NLP/opus-mt-en-it"


@pytest.fixture
def hub_configs(monkeypatch, hub, tmp_path):
    """The Hub's config.json of a few models (``snapshot_download`` at the network boundary):
    the hub ids it was asked for, in order, with the files asked."""
    model_types = {NLLB: "m2m_100", OPUS: "marian", "google-t5/t5-small": "t5"}
    asked = []

    def download(repo_id, revision=None, allow_patterns=None, **kw):
        asked.append((repo_id, allow_patterns))
        if repo_id not in model_types:
            request = httpx.Request("GET", f"https://huggingface.co/api/models/{repo_id}")
            raise huggingface_hub.errors.RepositoryNotFoundError(
                f"404 Client Error.\nRepository Not Found for {repo_id}", response=httpx.Response(404, request=request)
            )
        folder = tmp_path / "hub" / repo_id
        write(folder / "config.json", f'{{"model_type": "{model_types[repo_id]}"}}')
        return str(folder)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    return asked


def test_with_a_published_model_the_dry_run_shows_the_variable_and_the_requirements(capsys, clone, hub_configs):
    files, other = dry_run(capsys, ["someone/explorer", "--with", NLLB, "--with", OPUS, "--with", NLLB], clone)
    assert other[0] == (
        f"Space someone/explorer (gradio, public if new; CHECKPOINT=checkpoints/en-it,convert:{NLLB},convert:{OPUS}), "
        f"from {clone}:"
    )
    assert sorted(files) == space_files()  # no weights of theirs: the Space downloads them
    requirements = deploy.space_requirements(clone)
    assert files["requirements.txt"] == (len(requirements.encode()), False)
    assert other[1:4] == [
        f"convert:{NLLB}: downloaded and converted by the Space when it starts (not sent)",
        f"convert:{OPUS}: downloaded and converted by the Space when it starts (not sent)",
        "requirements.txt: the clone's, with what the converter needs (sentencepiece==0.2.3, protobuf)",
    ]
    assert hub_configs == []  # a dry run fetches nothing


def test_the_spaces_requirements_add_what_the_converter_needs(tmp_path):
    text = deploy.space_requirements(ROOT)
    assert text.startswith((ROOT / "requirements.txt").read_text(encoding="utf-8").rstrip("\n") + "\n")
    lines = text.splitlines()
    assert lines[-2:] == deploy.CONVERTER_REQUIREMENTS and lines[-3].startswith("# ")
    # the pin is the Marian extra's, which the conversion tests run with
    assert "sentencepiece==0.2.3" in (ROOT / "requirements-marian.txt").read_text().splitlines()
    # what the converter imports is installed by these lines (protobuf: sentencepiece's model file)
    from sentencepiece import sentencepiece_model_pb2  # noqa: F401
    import google.protobuf  # noqa: F401

    write(tmp_path / "requirements.txt", text)  # a clone that has them already gets nothing twice
    assert deploy.space_requirements(tmp_path) == text


def test_deploy_with_a_published_model_sets_the_variable_and_sends_the_requirements(capsys, clone, hub, hub_configs):
    assert deploy.main(["someone/explorer", "--with", NLLB], root=clone) == 0
    assert hub_configs == [(NLLB, ["config.json"])]  # checked first: config.json alone
    assert [(c[0], c[1]) for c in hub.calls] == [
        ("create_repo", "someone/explorer"),
        ("add_space_variable", "someone/explorer"),
        ("validate_yaml", "space"),
        ("create_commit", "someone/explorer"),
    ]
    assert hub.calls[1][2] == {"CHECKPOINT": f"checkpoints/en-it,convert:{NLLB}"}
    assert hub.calls[3][2]["added"] == space_files()
    assert hub.texts["requirements.txt"] == deploy.space_requirements(clone)
    assert "sentencepiece==0.2.3" in hub.texts["requirements.txt"].splitlines()
    assert not [p for p in clone.iterdir() if p.name.startswith(".deploy-")]  # the staging folder is gone
    assert (clone / "requirements.txt").read_bytes() == (ROOT / "requirements.txt").read_bytes()  # the clone's own


def test_the_default_space_stays_ours_alone(capsys, clone, hub):
    assert deploy.main(["someone/explorer"], root=clone) == 0
    assert hub.calls[1][2] == {"CHECKPOINT": "checkpoints/en-it"}
    assert hub.texts["requirements.txt"] == (ROOT / "requirements.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "model, expected",
    [
        ("nllb", f"{PROG}: error: argument --with: 'nllb': give the repo as 'owner/name'"),
        ("google-t5/t5-small", "error: --with google-t5/t5-small: config.json model_type is 't5': this converter"),
        ("someone/missing", "error: --with someone/missing: someone/missing: no such folder, and it could not be"),
    ],
)
def test_a_model_that_cannot_be_converted_is_one_line_before_anything_is_sent(
    capsys, clone, hub, hub_configs, model, expected
):
    line = exit_2(capsys, ["someone/explorer", "--with", model], clone)
    assert line.startswith(expected), line
    assert hub.calls == []


def test_the_readmes_space_commands_run(capsys, clone, hub, hub_configs):
    """The README's ``--with`` commands, as written (OWNER/NAME a Space of ours), against the Hub
    replaced at its calls: the dry run, then a deploy with OPUS-MT and one with NLLB-200."""
    from tests.test_readme_convert import section_blocks

    commands = section_blocks("## Look inside OPUS-MT")[2]
    assert [c.split()[:3] for c in commands] == [["python", "-m", "explorer.deploy"]] * 3
    variables = []
    for command in commands:
        args = command.replace("OWNER/NAME", "someone/explorer").split()[3:]
        capsys.readouterr()
        assert deploy.main(args, root=clone) == 0
        out = capsys.readouterr().out
        if "--dry-run" in args:
            assert f"CHECKPOINT=checkpoints/en-it,convert:{OPUS}" in out
        else:
            variables.append(hub.calls[-3][2][deploy.CHECKPOINT_VARIABLE])
            assert "sentencepiece==0.2.3" in hub.texts["requirements.txt"]
    assert variables == [f"checkpoints/en-it,convert:{OPUS}", f"checkpoints/en-it,convert:{NLLB}"]
