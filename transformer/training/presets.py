"""What a run is asked to do: the presets (model shape, vocabulary, optimisation settings),
the checks that refuse settings no run could go far with (``TrainingError``), and how the
settings carry over to a resumed run. ``transformer.training.loop.Trainer`` runs them;
``train.py`` makes them from its flags (``transformer.cli.flags``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from transformer.core.config import TransformerConfig
from transformer.training.errors import TrainingError


@dataclass(frozen=True)
class TrainSettings:
    """Optimisation settings (model shape lives in ``TransformerConfig``).

    Saved as a dict in every ``train_state.pt``, so ``--resume`` continues with the
    settings the run started with: add fields with defaults, never rename or remove one.
    """

    # a field whose metadata has "help" is a flag of `python train.py` (transformer.cli.flags)
    epochs: int = field(default=20, metadata={"help": "number of epochs (sets the length of the LR schedule)"})
    batch_tokens: int = field(default=6000, metadata={"help": "padded source+target tokens per batch (per process)"})
    lr: float = field(default=1e-3, metadata={"help": "peak learning rate after warmup"})
    warmup_steps: int = field(default=800, metadata={"help": "linear warmup steps"})
    min_lr_ratio: float = 0.05
    weight_decay: float = 0.01
    label_smoothing: float = field(default=0.1, metadata={"fraction": True, "help": "label smoothing epsilon"})
    word_dropout: float = field(
        default=0.0,
        metadata={
            "fraction": True,
            "help": "probability that a source token is replaced by the unknown token during training",
        },
    )
    clip_norm: float = 1.0
    bf16: bool = field(
        default=True,
        metadata={
            "help": "bf16 autocast (used only where the hardware runs it natively; elsewhere the run falls back to "
            "float32 with a warning); --no-bf16 trains in float32"
        },
    )
    seed: int = field(default=0, metadata={"min": None, "help": "seed for splits, shuffling and initialisation"})
    max_minutes: float | None = field(
        default=None,
        metadata={
            "help": "wall-clock budget for the whole run: training stops cleanly in time for the last evaluation and "
            "the checkpoint average (none: no budget)"
        },
    )
    average_last: int = field(
        default=5, metadata={"min": 0, "help": "average the last N epoch checkpoints at the end (0 or 1: off)"}
    )
    # data-parallel training processes; each trains on ``batch_tokens`` per step, so one
    # optimiser step sees ``processes * batch_tokens`` tokens
    processes: int = field(
        default=1,
        metadata={
            "help": "data-parallel training processes that train.py starts itself, as torchrun --nproc_per_node would: "
            "each trains on its own share of every epoch with --batch-tokens per step, so one optimiser step "
            "sees N times the tokens. On a CPU, 2 processes of 1 thread each make epochs faster than 1 process "
            "of 2 threads (docs/experiments.md). With fewer GPUs than N, one process per GPU with "
            "--batch-tokens scaled up to the same tokens per step; --resume takes the run's own"
        },
    )
    # a mid-epoch checkpoint every this many minutes of training (and at every stop), so
    # that a crash or a kill loses at most this much
    save_every_minutes: float = field(
        default=10.0,
        metadata={
            "help": "save a mid-epoch checkpoint this often, as well as at every stop (Ctrl-C or SIGTERM), so that "
            "--resume loses at most this much (a resumed run keeps its own unless given)"
        },
    )


@dataclass(frozen=True)
class Preset:
    """Everything a fresh run starts from: model shape, vocabulary and optimisation.

    ``model`` gives the shape (``d_model``, ``h``, layers, dropout...); its vocabulary sizes,
    special-token ids and languages are placeholders that the run's tokenizers replace."""

    model: TransformerConfig
    vocab_size: int = field(metadata={"help": "BPE vocabulary size (per tokenizer)"})
    joint_vocab: bool = field(
        metadata={
            "help": "one tokenizer for both languages; --no-joint-vocab trains one per language (and disables full "
            "weight tying)"
        }
    )
    train: TrainSettings
    description: str = ""
    # the tokenizer cuts punctuation off words (``transformer.core.tokenizer``)
    split_punctuation: bool = field(
        default=False, metadata={"help": "the tokenizer cuts punctuation off words ('car.' is 'car' + '.')"}
    )
    # synthetic (back-translated) sources start with a tag token, so the model can tell
    # them from real ones; the tag lives in the run's tokenizer, which is how --resume knows
    tag_synthetic: bool = field(
        default=False, metadata={"help": "start every synthetic (back-translated) source with a [BT] tag token"}
    )
    # forward-translated sources are real text whose target a model wrote: He et al. (2020)
    # noised them (Edunov et al. 2018's word noise) so that the student learns more than to
    # copy its teacher. Off by default: on Tatoeba's short sentences it removes a content word
    # from most of them, and a short run lost 4.9 BLEU with it (docs/experiments.md)
    noise_forward: bool = field(
        default=False,
        metadata={
            "help": "noise the source of every forward-translated pair (origin 'ft'): 10%% of words dropped, 10%% "
            "blanked to [UNK], the rest shuffled within 3 places; each sentence's noise is fixed by --seed"
        },
    )
    # a second stage: the first stage's best checkpoint fine-tuned with these settings on the real
    # pairs plus the fine-tuning pairs the command line names (``--fine-tune-train``); None: one stage
    fine_tune: TrainSettings | None = None


PRESETS: dict[str, Preset] = {
    # a smoke run: on the default corpus about a minute on 2 CPU cores
    "tiny": Preset(
        model=TransformerConfig(
            d_model=32,
            h=2,
            d_ff=64,
            n_encoder_layers=1,
            n_decoder_layers=1,
            dropout=0.1,
            attn_dropout=0.0,
            max_positions=64,
        ),
        vocab_size=1000,
        joint_vocab=True,
        train=TrainSettings(epochs=2, batch_tokens=4000, lr=3e-3, warmup_steps=10, bf16=False, average_last=2),
        fine_tune=TrainSettings(epochs=1, batch_tokens=4000, lr=1e-3, warmup_steps=5, bf16=False, average_last=0),
        description="a smoke run (about a minute on 2 CPU cores with the default corpus, and one fine-tuning "
        "epoch when there are fine-tuning pairs)",
    ),
    # the shipped en->it model, in two stages. First the real pairs plus the back-translated,
    # further real, forward-translated and joined ones (nine times the real pairs alone), so one
    # more layer on each side than `real-only`; the [BT] tag lets the model tell the
    # back-translated sources apart, and punctuation is its own token so that "car" and "car."
    # share one. On that much data 15 epochs fit a 4-hour budget. The last two epochs are
    # averaged, and the average is kept only when it beats every epoch on validation chrF. Then
    # three epochs of fine-tuning at a tenth of the rate on the real pairs and long joined ones
    # (15-60 words), which teach the model to keep every clause of a long sentence; one process,
    # since two would double the tokens of a step. docs/experiments.md has the runs behind each
    # choice (the first stage is run r4, the second run ft7).
    "base": Preset(
        model=TransformerConfig(
            d_model=256,
            h=8,
            d_ff=1024,
            n_encoder_layers=4,
            n_decoder_layers=4,
            dropout=0.2,
            attn_dropout=0.1,
            max_positions=128,
            norm_placement="pre",
            tie_embeddings="all",
        ),
        vocab_size=4000,
        joint_vocab=True,
        split_punctuation=True,
        tag_synthetic=True,
        train=TrainSettings(
            epochs=15,
            batch_tokens=2000,
            lr=2e-3,
            warmup_steps=300,
            bf16=True,
            max_minutes=240,
            average_last=2,
            processes=2,
        ),
        description="the shipped model's recipe: real + back-translated + further real + forward-translated + "
        "joined pairs, 4+4 layers, 4k joint vocabulary with punctuation split off, [BT]-tagged back-translated "
        "sources, 2 data-parallel processes, 15 epochs in a 4-hour budget; then 3 epochs of fine-tuning on the "
        "real and the long joined pairs (about 5.5 hours in all on 2 CPU cores)",
    ),
}
# its second stage: the first stage's settings at a tenth of the rate, for 3 epochs in one process
PRESETS["base"] = replace(
    PRESETS["base"], fine_tune=replace(PRESETS["base"].train, epochs=3, lr=3e-4, warmup_steps=100, processes=1)
)
# the shipped model's first stage alone: a model within 4 hours on 2 CPU cores
PRESETS["quick"] = replace(
    PRESETS["base"],
    fine_tune=None,
    description="the shipped model's first stage alone (15 epochs in a 4-hour budget on 2 CPU cores, no "
    "fine-tuning on long pairs)",
)
# the recipe for the real pairs alone (run it with `--extra-train` and no path): 3+3 layers,
# 31 epochs in a 90-minute budget
PRESETS["real-only"] = replace(
    PRESETS["base"],
    model=replace(PRESETS["base"].model, n_encoder_layers=3, n_decoder_layers=3),
    split_punctuation=False,
    tag_synthetic=False,
    train=replace(PRESETS["base"].train, epochs=31, max_minutes=90, average_last=5, processes=1),
    fine_tune=None,
    description="the recipe for the real pairs alone (with --extra-train and no path): 3+3 layers, "
    "4k joint vocabulary, 31 epochs in a 90-minute budget",
)
# a teacher for sequence-level distillation: the shipped recipe at d_model 384 (18.1M parameters,
# about 2.2 times r4's cost a step, docs/experiments.md), in both stages. Its first stage reads the
# surest 80% of the forward translations in place of all of them (the command line's default data
# for this preset); the peak rate scales as d_model^-0.5 (Vaswani et al.'s schedule), 2e-3 at 256
# giving 1.6e-3 at 384. No time budget: it runs across sessions with --resume
PRESETS["big"] = replace(
    PRESETS["base"],
    model=replace(PRESETS["base"].model, d_model=384, d_ff=1536),
    train=replace(PRESETS["base"].train, lr=1.6e-3, max_minutes=None),
    description="a teacher: the shipped recipe at d_model 384 and d_ff 1536 (18.1M parameters), its first stage on "
    "the surest 80%% of the forward translations, 15 epochs with no time budget (about 8 hours on 2 CPU cores), "
    "then the same fine-tuning stage",
)

# its second stage as the shipped one's: the first stage's settings at 3/20 of the rate, one process
PRESETS["big"] = replace(
    PRESETS["big"], fine_tune=replace(PRESETS["big"].train, epochs=3, lr=2.4e-4, warmup_steps=100, processes=1)
)


def check_settings(s: TrainSettings) -> None:
    """Reject settings that would crash later or silently do nothing."""
    for name in ("epochs", "batch_tokens", "warmup_steps"):
        if getattr(s, name) <= 0:
            raise TrainingError(f"{name.replace('_', '-')} must be positive, got {getattr(s, name)}")
    if s.lr <= 0:
        raise TrainingError(f"lr must be positive, got {s.lr}")
    if s.max_minutes is not None and s.max_minutes <= 0:
        raise TrainingError(f"max-minutes must be positive, got {s.max_minutes}")
    if not 0 <= s.label_smoothing < 1:
        raise TrainingError(f"label-smoothing must be in [0, 1), got {s.label_smoothing}")
    if not 0 <= s.word_dropout < 1:
        raise TrainingError(f"word-dropout must be in [0, 1), got {s.word_dropout}")
    if s.average_last < 0:
        raise TrainingError(f"average-last must be 0 or more, got {s.average_last}")


def resume_settings(saved: TrainSettings, requested: TrainSettings, epochs_done: int) -> TrainSettings:
    """A resumed run keeps the settings it started with (same batches, same schedule), but
    may be given more epochs, a new time budget and a new interval between mid-epoch saves.
    A falsy ``requested.epochs``, ``requested.max_minutes`` or ``save_every_minutes`` keeps
    the run's own: a bare ``--resume`` must not take the preset's epoch count, which would
    stretch the LR schedule of a run started with ``--epochs``."""
    return replace(
        saved,
        epochs=max(requested.epochs or saved.epochs, epochs_done),
        max_minutes=requested.max_minutes or saved.max_minutes,
        save_every_minutes=requested.save_every_minutes or saved.save_every_minutes,
    )
