"""What a training run reads, writes and runs on, apart from its preset: the options of
``python train.py`` that are not fields of ``TransformerConfig``, ``Preset`` or
``TrainSettings``. A field whose metadata has ``"help"`` is a flag (``transformer.cli.flags``
makes it), so adding a field here adds its flag.

Metadata keys on top of the presets' (``help``, ``flag``, ``min``): ``choices``, ``nargs``,
``metavar``, ``parse`` (turns the text into the value, raising ``ValueError`` with the
message to show), ``exclusive`` (flags that share the name exclude each other) and
``section`` (``"data"``: listed before the preset's flags in ``--help``, else after them) and
``recorded`` (the option makes the run what it is: ``run.json`` keeps it, and ``--resume``
goes on with it and refuses another value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path

from transformer.training.presets import PRESETS
from transformer.training.run_folder import DEFAULT_SNAPSHOTS, parse_snapshots

# the repository's own corpus: the command line is the layer that knows the repository
DATA = Path(__file__).resolve().parents[2] / "data"
DEFAULT_DATASET = str(DATA / "tatoeba-en-it")
# the default corpus's further training pairs, added to its training split unless
# --extra-train says otherwise (each folder's README says how it was made): back-translated (second round),
# further real, forward-translated (fourth round) and joined pairs
DEFAULT_EXTRA_TRAIN = tuple(
    str(DATA / name)
    for name in ("tatoeba-en-it-bt2", "tatoeba-en-it-more", "tatoeba-en-it-ft4", "tatoeba-en-it-concat")
)
# a preset whose first stage reads other further pairs: the teacher reads the surest 80% of the
# forward translations in place of all of them (data/tatoeba-en-it-ft4-conf80/README.md)
PRESET_EXTRA_TRAIN = {
    "big": tuple(
        str(DATA / name)
        for name in ("tatoeba-en-it-bt2", "tatoeba-en-it-more", "tatoeba-en-it-ft4-conf80", "tatoeba-en-it-concat")
    )
}

# the long joined pairs the preset's second, fine-tuning stage trains on beside the real pairs
DEFAULT_FINE_TUNE_TRAIN = (str(DATA / "tatoeba-en-it-joined-long"),)


def repo_id(text: str) -> str:
    """A hub repo id, 'owner/name'; raises ``ValueError`` on anything else."""
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", text):
        raise ValueError(f"expected a hub repo id like 'owner/name', got {text!r}")
    return text


def _presets_help() -> str:
    return "starting settings: " + "; ".join(
        f"'{name}' is {preset.description}" for name, preset in sorted(PRESETS.items())
    )


def _extra_train_help() -> str:
    return (
        "more training pairs: local JSONL folders or files (their train split only; validation "
        "and test always come from --dataset). Pairs whose 'origin' starts with 'bt' are back-translated, "
        "'ft' forward-translated. "
        f"(default: {' '.join(str(Path(p).relative_to(DATA.parent)) for p in DEFAULT_EXTRA_TRAIN)} with the default "
        "--dataset and --src/--tgt, none otherwise; give no PATH for none; preset big reads "
        "data/tatoeba-en-it-ft4-conf80 in place of data/tatoeba-en-it-ft4)"
    )


def _fine_tune_train_help() -> str:
    return (
        "the pairs of the preset's second stage (base: 3 epochs of fine-tuning from the first stage's best "
        "checkpoint, in OUT/fine-tune, on the real pairs plus these): local JSONL folders or files "
        f"(default: {' '.join(str(Path(p).relative_to(DATA.parent)) for p in DEFAULT_FINE_TUNE_TRAIN)} with the "
        "default --dataset and --src/--tgt, none otherwise or with --init-from; give no PATH to train the first "
        "stage only)"
    )


def _data(help_text: str, **metadata) -> dict:
    return {"help": help_text, "section": "data", **metadata}


@dataclass(frozen=True)
class RunOptions:
    """The run's data, output, device and bookkeeping options (``python train.py --help``)."""

    preset: str = field(default="base", metadata=_data(_presets_help(), choices=sorted(PRESETS), recorded=True))
    dataset: str = field(
        default=DEFAULT_DATASET,
        metadata=_data(
            "hub dataset id, or a local directory with train.jsonl (validation.jsonl, test.jsonl) "
            "or one .jsonl file, in the OPUS Books schema",
            recorded=True,
        ),
    )
    dataset_config: str | None = field(
        default=None,
        metadata=_data("hub dataset config (default for a hub id: '<src>-<tgt>', e.g. en-it)", recorded=True),
    )
    extra_train: tuple[str, ...] | None = field(
        default=None, metadata=_data(_extra_train_help(), nargs="*", metavar="PATH", recorded=True)
    )
    fine_tune_train: tuple[str, ...] | None = field(
        default=None, metadata=_data(_fine_tune_train_help(), nargs="*", metavar="PATH", recorded=True)
    )
    tag_origins: tuple[str, ...] = field(
        default=("bt",),
        metadata=_data(
            "the --extra-train pairs whose source a model wrote, by how their 'origin' starts: the ones "
            "--tag-synthetic tags. bt: back-translated pairs read in their own direction; ft: forward-translated "
            "pairs read the other way round (e.g. en->it forward translations training an it->en model)",
            nargs="+",
            metavar="PREFIX",
            recorded=True,
        ),
    )
    src: str = field(default="en", metadata=_data("source language code in the 'translation' field", recorded=True))
    tgt: str = field(default="it", metadata=_data("target language code in the 'translation' field", recorded=True))
    out: str = field(default="runs/base", metadata=_data("output directory for checkpoints and logs"))
    resume: bool = field(
        default=False,
        metadata=_data(
            "continue the run in --out where it stopped (its last epoch or mid-epoch checkpoint), "
            "with the run's own settings and process count; --epochs, --max-minutes and "
            "--save-every-minutes, when given, extend it and set a new budget",
            exclusive="again",
        ),
    )
    overwrite: bool = field(
        default=False,
        metadata=_data(
            "start a new run in an --out that holds one, replacing it (without this or --resume, "
            "such an --out is refused)",
            exclusive="again",
        ),
    )
    storage_dtype: str = field(
        default="float16",
        metadata={
            "choices": ["float32", "bfloat16", "float16"],
            "help": "dtype of the weights written to disk: float16 halves the files and scores the same as "
            "float32 on test (the model always runs in float32; --resume keeps float32 weights)",
            "recorded": True,
        },
    )
    device: str = field(
        default="auto",
        metadata={
            "choices": ["auto", "cpu", "cuda", "mps"],
            "help": "training device (auto picks cuda, then mps, then cpu; under torchrun each "
            "process takes the GPU of its LOCAL_RANK)",
        },
    )
    distill_from: str | None = field(
        default=None,
        metadata={
            "metavar": "CHECKPOINT",
            "help": "sequence-level knowledge distillation: this checkpoint (a directory or hub id) translates "
            "the training sources with beam search, and every translation that differs from its "
            "reference is added as an extra training pair (rank 0 decodes, before the time budget starts)",
            "recorded": True,
        },
    )
    distill_beam: int = field(default=4, metadata={"help": "beam size of the --distill-from teacher", "recorded": True})
    init_from: str | None = field(
        default=None,
        metadata={
            "metavar": "CHECKPOINT",
            "help": "fine-tune: start from this checkpoint's weights, shape, dropout and vocabularies (a directory "
            "or hub id) instead of a new model and new tokenizers; the preset's training settings still apply "
            "(a lower --lr and fewer --warmup-steps suit a model that already translates)",
            "recorded": True,
        },
    )
    max_train_pairs: int | None = field(
        default=None, metadata={"help": "use only the first N training pairs (for quick trials)", "recorded": True}
    )
    val_limit: int = field(
        default=1000, metadata={"help": "validation pairs scored with BLEU/chrF each epoch", "recorded": True}
    )
    keep_epochs: int = field(default=6, metadata={"help": "epoch checkpoints kept on disk"})
    snapshots: tuple[int, ...] = field(
        default=DEFAULT_SNAPSHOTS,
        metadata={
            "parse": parse_snapshots,
            "metavar": "EPOCHS",
            "help": "epochs after which a small fp16 snapshot is kept (plus the final epoch), e.g. 1,2,4,8; "
            "'none' keeps none",
            "recorded": True,
        },
    )
    push_to_hub: str | None = field(
        default=None,
        metadata={
            "parse": repo_id,
            "metavar": "OWNER/NAME",
            "help": "after training, upload the best checkpoint folder to this hub model repo",
        },
    )
    threads: int | None = field(
        default=None,
        metadata={
            "help": "torch CPU threads (default: torch's choice; with several "
            "processes, the CPU cores shared out among them; --resume takes the run's own unless given)",
            "recorded": True,
        },
    )


# the options run.json keeps (in field order)
RECORDED = tuple(f.name for f in fields(RunOptions) if f.metadata.get("recorded"))
