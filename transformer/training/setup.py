"""What a run starts from: its data (the splits, and the extra training corpora appended)
and, for a new run, tokenizers trained on that data and a fresh model sized from the preset,
or a checkpoint's model and tokenizers to fine-tune.

    data = load_run_data("data/tatoeba-en-it", "en", "it")
    model, src_tok, tgt_tok = build_fresh(PRESETS["tiny"], data, "en", "it")
    model, src_tok, tgt_tok, start = build_from_checkpoint("checkpoints/en-it", "en", "it", tags_synthetic=True)

A resumed run reads its tokenizers and weights back from its folder instead
(``transformer.training.loop.Trainer.resume``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tokenizers import Tokenizer

from transformer.core.checkpoint import load_checkpoint, read_metrics
from transformer.core.config import TransformerConfig
from transformer.core.model import Transformer, build_model
from transformer.core.tokenizer import SYNTHETIC_TAG, load_tokenizer, special_ids, train_tokenizer
from transformer.training.data import SYNTHETIC_ORIGIN, ParallelData, load_extra_train, load_parallel
from transformer.training.distributed import DistContext
from transformer.training.optim import seed_everything
from transformer.training.errors import TrainingError
from transformer.training.presets import Preset, TrainSettings, check_settings
from transformer.training.run_folder import resume_dir, snapshot_epoch


def load_run_data(
    dataset: str,
    src_lang: str,
    tgt_lang: str,
    config: str | None = None,
    seed: int = 0,
    max_train_pairs: int | None = None,
    dist: DistContext | None = None,
    extra_train: tuple[str, ...] = (),
    tag: str | None = None,
    noise_seed: int | None = None,
    tag_origins: tuple[str, ...] = (SYNTHETIC_ORIGIN,),
) -> ParallelData:
    """The run's splits (``load_parallel``), optionally cut to the first ``max_train_pairs``,
    then the train splits of the ``extra_train`` corpora appended (the sources of rows whose
    origin starts with one of ``tag_origins`` prefixed with ``tag`` when given,
    forward-translated sources noised with ``noise_seed`` when given; see
    ``data.load_extra_train``).

    A hub dataset without an explicit config gets '<src>-<tgt>' (e.g. opus_books' 'en-it').
    Under torchrun rank 0 loads first, so the others read the ``datasets`` cache it
    wrote instead of all preparing it at once.
    """
    dist = dist or DistContext()
    if config is None and not Path(dataset).expanduser().exists():
        config = f"{src_lang}-{tgt_lang}"
    if not dist.is_main:
        dist.barrier()
    data = load_parallel(dataset, src_lang, tgt_lang, config=config, seed=seed)
    extra = [
        pair
        for path in extra_train
        for pair in load_extra_train(path, src_lang, tgt_lang, tag=tag, noise_seed=noise_seed, tag_origins=tag_origins)
    ]
    if dist.is_main:
        dist.barrier()
    if max_train_pairs:
        data.train = data.train[:max_train_pairs]
    data.train = data.train + extra
    data.extra = tuple(str(path) for path in extra_train)
    return data


def run_tags_synthetic(out: str | Path) -> bool:
    """Whether the run in ``out`` tags its synthetic sources: its tokenizer has the tag."""
    last = resume_dir(out)
    if last is None:
        return False
    cfg = TransformerConfig.from_json(last / "config.json")
    return load_tokenizer(last / cfg.src_tokenizer_file).token_to_id(SYNTHETIC_TAG) is not None


def build_fresh(
    preset: Preset,
    data: ParallelData,
    src_lang: str,
    tgt_lang: str,
    storage_dtype: str = "float32",
    seed: int = 0,
    dist: DistContext | None = None,
) -> tuple[Transformer, Tokenizer, Tokenizer]:
    """Tokenizers trained on the training split, and a new model sized from ``preset``.

    Under torchrun only rank 0 trains the tokenizers and sends them to the others as JSON,
    so every rank maps text to exactly the same ids. The model is initialised from
    ``seed`` (DistributedDataParallel then copies rank 0's weights to every rank anyway).
    """
    dist = dist or DistContext()
    tie = preset.model.tie_embeddings

    specials = [SYNTHETIC_TAG] if preset.tag_synthetic else []

    def tokenizer(texts_fn) -> Tokenizer:
        text = (
            train_tokenizer(
                texts_fn(), preset.vocab_size, split_punctuation=preset.split_punctuation, extra_special_tokens=specials
            ).to_str()
            if dist.is_main
            else None
        )
        return Tokenizer.from_str(dist.broadcast_text(text)) if dist.enabled else Tokenizer.from_str(text)

    if preset.joint_vocab:
        src_tok = tgt_tok = tokenizer(lambda: [s for s, _ in data.train] + [t for _, t in data.train])
        files = {"src_tokenizer_file": "tokenizer.json", "tgt_tokenizer_file": "tokenizer.json"}
    else:
        src_tok = tokenizer(lambda: [s for s, _ in data.train])
        tgt_tok = tokenizer(lambda: [t for _, t in data.train])
        files = {}
        if tie == "all":  # one shared matrix needs one shared vocabulary
            tie = "decoder"
    ids = {f"src_{k}_id": v for k, v in special_ids(src_tok).items()}
    ids.update({f"tgt_{k}_id": v for k, v in special_ids(tgt_tok).items()})
    try:
        # the preset's shape, with what the tokenizers and the run decide
        cfg = replace(
            preset.model,
            **ids,
            **files,
            tie_embeddings=tie,
            src_vocab_size=src_tok.get_vocab_size(),
            tgt_vocab_size=tgt_tok.get_vocab_size(),
            src_lang=src_lang,
            tgt_lang=tgt_lang,
            storage_dtype=storage_dtype,
        )
    except ValueError as exc:
        raise TrainingError(str(exc)) from exc
    seed_everything(seed)
    return build_model(cfg), src_tok, tgt_tok


@dataclass(frozen=True)
class StartPoint:
    """What a fine-tuning run carries over from the checkpoint it starts from: the epochs
    that checkpoint had trained (its own and any before them), which the run's metrics keep
    as ``epochs_before`` so that its epoch 3 reads as 3 epochs on top of those, and that
    checkpoint's snapshots folder, which the run's best/ carries when the run keeps no
    snapshots of its own (they show how the model it started from formed)."""

    epochs: int = 0
    snapshots: Path | None = None

    @classmethod
    def of(cls, directory: Path) -> "StartPoint":
        metrics = read_metrics(directory)
        # an average of the last epochs counts as the last of them
        last_averaged = max((snapshot_epoch(name) for name in metrics.get("averaged") or ()), default=None)
        epoch = metrics.get("epoch", last_averaged)
        epochs = sum(v for v in (epoch, metrics.get("epochs_before")) if isinstance(v, int))
        snapshots = directory / "snapshots"
        return cls(epochs, snapshots if snapshots.is_dir() else None)

    @staticmethod
    def tag(start: "StartPoint | None") -> dict:
        """What a fine-tune's metrics.json adds: its start's epochs, which its own come on top of."""
        return {"epochs_before": start.epochs} if start and start.epochs else {}

    def state(self) -> dict:
        """As a training state keeps it (``StartPoint.from_state`` reads it back)."""
        return {"epochs": self.epochs, "snapshots": None if self.snapshots is None else str(self.snapshots)}

    @classmethod
    def from_state(cls, state: dict | None) -> "StartPoint | None":
        if not state:
            return None
        return cls(int(state.get("epochs", 0)), Path(state["snapshots"]) if state.get("snapshots") else None)


def build_from_checkpoint(
    directory: str | Path, src_lang: str, tgt_lang: str, storage_dtype: str = "float32", tags_synthetic: bool = False
) -> tuple[Transformer, Tokenizer, Tokenizer, StartPoint]:
    """A checkpoint's model (in train mode, float32), tokenizers and :class:`StartPoint`, to
    fine-tune: its shape, dropout and vocabularies stay, so its ids keep their meaning
    (refused as :func:`check_fine_tune` says)."""
    model, src_tok, tgt_tok, where = load_checkpoint(directory)
    check_fine_tune(model.cfg, src_tok, src_lang, tgt_lang, tags_synthetic, where)
    model.cfg = replace(model.cfg, storage_dtype=storage_dtype)
    model.float().train()
    return model, src_tok, tgt_tok, StartPoint.of(Path(where))


def check_fine_tune(
    cfg: TransformerConfig, src_tok: Tokenizer, src_lang: str, tgt_lang: str, tags_synthetic: bool, where
) -> None:
    """A ``TrainingError`` when a checkpoint cannot go on training this run: it translates
    another direction, or the run tags synthetic sources (``tags_synthetic``) and its source
    vocabulary has no tag."""
    if (cfg.src_lang, cfg.tgt_lang) != (src_lang, tgt_lang):
        raise TrainingError(f"{where} translates {cfg.src_lang}->{cfg.tgt_lang}, this run {src_lang}->{tgt_lang}")
    if tags_synthetic and src_tok.token_to_id(SYNTHETIC_TAG) is None:
        raise TrainingError(f"{where} has no {SYNTHETIC_TAG} token to tag synthetic sources with (--tag-synthetic)")


def check_options(settings: TrainSettings, keep_epochs: int, val_limit: int, data: ParallelData) -> None:
    """The Trainer's arguments that no run could go far with, refused before any work."""
    check_settings(settings)
    if keep_epochs < 1:
        raise TrainingError(f"keep-epochs must be at least 1 (resume and averaging read them), got {keep_epochs}")
    if val_limit < 1:
        raise TrainingError(f"val-limit must be positive, got {val_limit}")
    if not data.validation:
        raise TrainingError(f"{data.source}: no validation pairs to evaluate on")


def record_processes(settings: TrainSettings, state: dict | None, dist: DistContext) -> TrainSettings:
    """``settings`` with ``processes`` set to the processes that train. A resumed run must keep
    the count it recorded: its steps per epoch, and so its schedule, depend on it (a run saved
    before the count was recorded takes the one it resumes with)."""
    world = dist.world_size
    recorded = (state or {}).get("settings", {}).get("processes")
    if recorded is not None and recorded != world:
        raise TrainingError(
            f"this run trained with {recorded} process(es), not {world}: resume it with as many "
            f"(train.py --resume starts them itself; torchrun needs --nproc_per_node={recorded})"
        )
    return replace(settings, processes=world)
