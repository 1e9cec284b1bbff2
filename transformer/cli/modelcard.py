"""The model card written beside a trained checkpoint (``README.md`` in the directory).

    python -m transformer.cli.modelcard --checkpoint checkpoints/en-it --command "python train.py" \
        --samples data/tatoeba-en-it/test.jsonl --data data/tatoeba-en-it --extra-data data/tatoeba-en-it-bt

Built with ``huggingface_hub``'s :class:`~huggingface_hub.ModelCard` and
:class:`~huggingface_hub.ModelCardData`, so the YAML metadata is exactly what the hub
parses: ``pipeline_tag: translation`` and the languages put the model in the hub's
translation listings, and a ``model-index`` (one :class:`~huggingface_hub.EvalResult` per
split and metric) makes the hub show the BLEU/chrF scores on the model page. The body is
for people: the command that made the model, its size and wall time, the scores, samples,
the data credit and what the model is not good at.
"""

from __future__ import annotations

from pathlib import Path

from transformer.cli import REPO_ROOT
from transformer.core.config import TransformerConfig

TATOEBA_CREDIT = "Tatoeba (tatoeba.org), CC-BY 2.0 FR"
# the hub dataset the shipped corpus comes from (the Tatoeba MT Challenge release v2021-08-07)
TATOEBA_HUB_ID = "Helsinki-NLP/tatoeba_mt"
METRIC_NAMES = {"bleu": "BLEU", "chrf": "chrF"}


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = [k for k in rows[0] if k != "averaged"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        if "averaged" in r:
            lines.append(
                f"| average of {', '.join(r['averaged'])}: val_loss {r.get('val_loss')}, "
                f"BLEU {r.get('bleu')}, chrF {r.get('chrf')} |"
            )
        else:
            lines.append("| " + " | ".join(str(r.get(k, "")) for k in keys) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    """Sample text made safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def display_source(data_source: str) -> str:
    """A local data path as the repository-relative path people can reproduce
    (``data/tatoeba-en-it``), not this machine's absolute path."""
    path = Path(str(data_source)).expanduser()
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix() if path.exists() else str(data_source)
    except ValueError:
        return str(data_source)


def dataset_metadata(data_source: str, src_lang: str, tgt_lang: str) -> tuple[str | None, str]:
    """(hub dataset id or None, readable name) for ``data_source`` (a hub id or a local path)."""
    src = str(data_source)
    local = Path(src).expanduser().exists() or src.startswith((".", "/", "~")) or src.endswith((".jsonl", ".json"))
    if not local:
        return src, src
    name = Path(src).name or src
    if "tatoeba" in src.lower():
        return TATOEBA_HUB_ID, f"Tatoeba {src_lang}-{tgt_lang} ({name})"
    return None, name


BEAM_HEADING = "Beam search"


def beam_section(beam: dict) -> str:
    """Markdown for ``metrics["beam"]`` (written by ``benchmarks/beam_eval.py --save``): BLEU,
    chrF and speed of greedy decoding and of each beam size on one split, and the command."""
    rows = beam["rows"]
    greedy = next((r for r in rows if r["decoder"] == "greedy"), rows[0])
    lines = [
        f"Greedy decoding and beam search (GNMT length penalty alpha = {beam['length_penalty']}) on the "
        f"{beam['n']:,} sentences of `{beam['data']}`, sacrebleu BLEU 13a and chrF, {beam['torch_threads']} "
        f"CPU thread(s), batches of {beam['batch_size']} sentences:",
        "",
        "| decoder | BLEU | chrF | sentences/s | time vs greedy |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        same = " (same output as greedy)" if r.get("equals_greedy") else ""
        lines.append(
            f"| {r['decoder']}{same} | {r['bleu']:.2f} | {r['chrf']:.2f} | {r['sentences_per_s']:.1f} | "
            f"{r['seconds'] / max(greedy['seconds'], 1e-9):.2f}x |"
        )
    best = max(rows, key=lambda r: r["bleu"])
    if best is not greedy:
        lines += [
            "",
            f"Best: {best['decoder']}, {best['bleu'] - greedy['bleu']:+.2f} BLEU and "
            f"{best['chrf'] - greedy['chrf']:+.2f} chrF over greedy, for "
            f"{best['seconds'] / max(greedy['seconds'], 1e-9):.1f}x the decoding time.",
        ]
    lines += ["", f"Measured with `{beam['command']}`."]
    return "\n".join(lines)


def with_section(card: str, heading: str, body: str, after: str = "Scores") -> str:
    """``card`` (Markdown) with the ``## heading`` section set to ``body``: replaced if the
    card has it, else inserted after the ``## after`` section (or at the end). Lets a
    measurement added later (beam search) update a card without rewriting the rest."""
    lines = card.split("\n")

    def span(name: str) -> tuple[int, int] | None:
        starts = [i for i, line in enumerate(lines) if line.strip() == f"## {name}"]
        if not starts:
            return None
        end = next((j for j in range(starts[0] + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
        return starts[0], end

    block = [f"## {heading}", "", body.strip(), ""]
    own = span(heading)
    if own:
        lines[own[0] : own[1]] = block
    else:
        anchor = span(after)
        at = anchor[1] if anchor else len(lines)
        if at > 0 and lines[at - 1].strip():
            block = ["", *block]
        lines[at:at] = block
    return "\n".join(lines)


def _eval_results(
    scores_by_split: dict[str, dict], dataset_id: str | None, dataset_name: str, src_lang: str, tgt_lang: str
) -> list:
    from huggingface_hub import EvalResult

    out = []
    for split, scores in scores_by_split.items():
        for key, pretty in METRIC_NAMES.items():
            if scores.get(key) is None:
                continue
            out.append(
                EvalResult(
                    task_type="translation",
                    task_name=f"Translation {src_lang}-{tgt_lang}",
                    dataset_type=dataset_id or dataset_name,
                    dataset_name=dataset_name,
                    dataset_split=split,
                    metric_type=key,
                    metric_name=f"{split} {pretty} (greedy, sacrebleu)",
                    metric_value=float(scores[key]),
                )
            )
    return out


GENERIC_LIMITATIONS = (
    "A small teaching model trained on short everyday sentences: it loses track of long sentences\n"
    "(and can degenerate into repetition), splits and often mistranslates rare words and names\n"
    "(characters never seen in training, such as most emoji, become `[UNK]`), translates idioms\n"
    "word by word, and knows nothing of technical, legal or literary text. It is not a\n"
    "production translator."
)
# the card's Markdown below its metadata; build_model_card fills it (str.format)
CARD_TEMPLATE = """
# {title}

An encoder-decoder Transformer ("Attention Is All You Need") written from scratch in PyTorch,
small enough to look inside: every attention map of every layer and head can be inspected
while it translates.

| | |
|---|---|
| command | `{command}` |
| training wall time | {train_minutes} |
| parameters | {n_params:,} |
| shape | {shape} |
| vocabulary | {cfg.src_vocab_size} (source) / {cfg.tgt_vocab_size} (target), tied embeddings: {cfg.tie_embeddings} |
| stored as | {cfg.storage_dtype} safetensors |{detail_rows}

## Use

```python
from transformer import load_translator  # this project's package

tr = load_translator("path/to/this/folder")  # or the hub repo id 'owner/name'
tr.translate(["Where is the station?"])
```

or explore it in the attention viewer: `python app.py --checkpoint <folder or owner/name>`.

## Scores

Greedy decoding, scored with sacrebleu (BLEU 13a, chrF):

| split | BLEU | chrF |
|---|---|---|
{score_rows}
{extra}
## {samples_heading}

| source | reference | model |
|---|---|---|
{sample_lines}

## Data

{credit}

## Limitations

{limits}

## Training history (validation, greedy)

{history}
"""


def _wall_time(metrics: dict) -> str:
    """The run's minutes; a fine-tune's are its own, after the epochs of the model it started from."""
    minutes, before = metrics.get("train_minutes"), metrics.get("epochs_before")
    if before:
        return f"{minutes} minutes of fine-tuning, after epoch {before} of the model it started from"
    return f"{minutes} minutes"


def _shape(cfg: TransformerConfig) -> str:
    return (
        f"d_model {cfg.d_model}, h {cfg.h}, d_ff {cfg.d_ff}, {cfg.n_encoder_layers} encoder + "
        f"{cfg.n_decoder_layers} decoder layers, {cfg.norm_placement}-norm"
    )


def _score_rows(scores: dict[str, dict], test: dict | None) -> str:
    rows = "\n".join(f"| {split} | {s.get('bleu')} | {s.get('chrf')} |" for split, s in scores.items())
    long = (test or {}).get("long")
    if long:  # the long sentences apart: they are rare in training, and the scores above hide them
        rows += f"\n| test, sentences of {long['min_words']}+ words ({long['n']}) | {long['bleu']} | {long['chrf']} |"
    return rows


def _sections_text(metrics: dict, sections: dict[str, str] | None) -> str:
    sections = dict(sections or {})
    if metrics.get("beam") and BEAM_HEADING not in sections:
        sections[BEAM_HEADING] = beam_section(metrics["beam"])
    return "".join(f"\n## {heading}\n\n{text.strip()}\n" for heading, text in sections.items())


def _credit(data_source: str, extra_data: tuple[str, ...]) -> str:
    credit = f"Trained on {display_source(data_source)}"
    credit += "".join(f", plus {display_source(extra)}" for extra in extra_data) + "."
    if any("tatoeba" in str(d).lower() for d in (data_source, *extra_data)):
        credit += f" Sentences from {TATOEBA_CREDIT}."
    return credit


def _card_data(
    cfg: TransformerConfig,
    data_source: str,
    scores: dict,
    dataset_id: str | None,
    license: str,
    model_name: str | None,
    fine_tuned_from: str | None = None,
):
    """The card's metadata (its YAML header): languages, license, tags, dataset, model-index."""
    from huggingface_hub import ModelCardData

    src, tgt = cfg.src_lang, cfg.tgt_lang
    guessed_id, dataset_name = dataset_metadata(data_source, src, tgt)
    dataset_id = dataset_id or guessed_id
    origin = ["marian", "fine-tuned"] if fine_tuned_from else ["from-scratch"]
    return ModelCardData(
        language=[src, tgt],
        license=license,
        pipeline_tag="translation",
        tags=["translation", "transformer", *origin, "attention-visualization"],
        datasets=[dataset_id] if dataset_id else None,
        metrics=["bleu", "chrf"],
        model_name=model_name or f"transformer-{src}-{tgt}-{'fine-tuned' if fine_tuned_from else 'from-scratch'}",
        eval_results=_eval_results(scores, dataset_id, dataset_name, src, tgt) or None,
    )


def _provenance(fine_tuned_from: str | None, license: str, sections: dict | None) -> tuple[str, dict | None]:
    """Where the weights come from, as the title says it, and the card's extra sections: a model
    fine-tuned from a converted one credits that model and its licence first."""
    if not fine_tuned_from:
        return "from scratch", sections
    credit = {MARIAN_CREDIT_HEADING: marian_credit(fine_tuned_from, license)}
    return f"fine-tuned from {fine_tuned_from}", {**credit, **(sections or {})}


def build_model_card(
    cfg: TransformerConfig,
    n_params: int,
    command: str,
    history: list[dict],
    metrics: dict,
    samples: list[tuple[str, str, str]],
    data_source: str,
    *,
    test_scores: dict | None = None,
    dataset_id: str | None = None,
    license: str = "mit",
    model_name: str | None = None,
    title: str | None = None,
    details: list[tuple[str, str]] | None = None,
    sections: dict[str, str] | None = None,
    limitations: str | None = None,
    extra_data: tuple[str, ...] = (),
    samples_heading: str = "Samples (validation)",
    fine_tuned_from: str | None = None,
):
    """The card as a :class:`huggingface_hub.ModelCard`.

    ``metrics`` is the checkpoint's metrics.json content; its ``validation`` and (when
    present) ``test`` entries (``{"bleu": .., "chrf": ..}``) become the scores table and the
    model-index. ``test_scores`` overrides ``metrics["test"]``.

    What only the person shipping a model knows goes in through the keywords, so even a
    curated card is generated, never edited by hand: ``title``; ``details``, extra
    (label, value) rows for the table at the top (training settings, how it was chosen);
    ``sections``, extra Markdown sections (heading -> body) after the scores, e.g. beam
    search or training snapshots; ``limitations`` replaces the generic limitations text;
    ``extra_data``, corpora whose pairs were added to ``data_source``'s (credited with it).
    A ``metrics["beam"]`` entry (``benchmarks/beam_eval.py --save``) adds the beam-search
    table as its own section. ``fine_tuned_from``: the converted Marian model the weights started
    from, credited by the title, the tags and a section; ``license`` is then its licence."""
    from huggingface_hub import ModelCard

    test = test_scores if test_scores is not None else metrics.get("test")
    scores = {split: s for split, s in (("validation", metrics.get("validation")), ("test", test)) if s}
    data = _card_data(cfg, data_source, scores, dataset_id, license, model_name, fine_tuned_from)
    origin, sections = _provenance(fine_tuned_from, license, sections)
    body = CARD_TEMPLATE.format(
        title=title or f"{cfg.src_lang}->{cfg.tgt_lang} Transformer ({origin})",
        command=_cell(command),
        train_minutes=_wall_time(metrics),
        n_params=n_params,
        shape=_shape(cfg),
        cfg=cfg,
        detail_rows="".join(f"\n| {_cell(k)} | {_cell(v)} |" for k, v in (details or [])),
        score_rows=_score_rows(scores, test),
        extra=_sections_text(metrics, sections),
        samples_heading=samples_heading,
        sample_lines="\n".join(f"| {_cell(s)} | {_cell(r)} | {_cell(h)} |" for s, r, h in samples),
        credit=_credit(data_source, extra_data),
        limits=limitations.strip() if limitations else GENERIC_LIMITATIONS,
        history=_table(history),
    )
    return ModelCard(f"---\n{data.to_yaml()}\n---\n{body}")


def model_card(
    cfg: TransformerConfig,
    n_params: int,
    command: str,
    history: list[dict],
    metrics: dict,
    samples: list[tuple[str, str, str]],
    data_source: str,
    **kwargs,
) -> str:
    """The card's Markdown text (``README.md``); keyword arguments as :func:`build_model_card`."""
    return str(build_model_card(cfg, n_params, command, history, metrics, samples, data_source, **kwargs))


MARIAN_CREDIT_HEADING = "Credit and licence"


def marian_credit(source: str, licence: str) -> str:
    """The credit a model fine-tuned from a converted Marian (OPUS-MT) model owes it."""
    return (
        f"This model was fine-tuned from the Marian translation model `{source}` (converted by "
        "`transformer.cli.from_marian`), whose weights and tokenizers are the work of its authors "
        f"(OPUS-MT, Helsinki-NLP: Tiedemann and Thottingal, 2020), released under **{licence}**; "
        "cite and credit the original model."
    )


def trainer_card(trainer, metrics: dict, samples: list[tuple[str, str, str]]) -> str:
    """The card of a run's best/ folder, for ``Trainer(model_card=trainer_card)``: what the
    trainer knows of the run (its command, history and data) and the evaluation just made. A
    run that fine-tunes a converted Marian model (its config says so, and carries its licence,
    "other" for one converted before the licence was recorded) credits it, under its licence."""
    source = trainer.cfg.extra.get("converted_from")
    origin = {"fine_tuned_from": source, "license": trainer.cfg.extra.get("license", "other")} if source else {}
    return model_card(
        trainer.cfg,
        trainer.n_params,
        trainer.command,
        trainer.history,
        metrics,
        samples,
        trainer.data.source,
        extra_data=trainer.data.extra,
        **origin,
    )


SNAPSHOTS_HEADING = "Training snapshots"


def snapshots_section(directory: str | Path) -> str | None:
    """Markdown for the ``snapshots/`` of a checkpoint folder: each snapshot's epoch, step,
    minutes and validation scores, then the folder's own model; None without snapshots."""
    from transformer.core.checkpoint import WEIGHTS_FILE, list_snapshots, read_metrics

    snaps = list_snapshots(directory)
    if not snaps:
        return None
    rows = ["| epoch | step | minutes | BLEU | chrF | weights |", "|---|---|---|---|---|---|"]
    for snap in snaps:
        m, size = snap.metrics, (snap.path / WEIGHTS_FILE).stat().st_size / 1e6
        val = m.get("validation", {})
        rows.append(
            f"| {snap.epoch} | {m.get('step', '')} | {m.get('train_minutes', '')} | {val.get('bleu', '')} | "
            f"{val.get('chrf', '')} | {size:.1f} MB |"
        )
    own = read_metrics(Path(directory))
    before = own.get("epochs_before")
    if own.get("epoch") is not None:
        val = own.get("validation", {})
        epoch = f"{before} + {own['epoch']} of fine-tuning" if before else own["epoch"]
        rows.append(
            f"| {epoch} (this model) | {own.get('step', '')} | {own.get('train_minutes', '')} | "
            f"{val.get('bleu', '')} | {val.get('chrf', '')} | |"
        )
    run = (
        f"the run this model was fine-tuned from, after a few of its epochs (this model is that run's epoch "
        f"{before}, fine-tuned for {own.get('epoch')} more; its step and minutes count from the fine-tune's start)"
        if before
        else "the same run after a few epochs"
    )
    return (
        f"`snapshots/` holds {run}, sharing this folder's tokenizer, so the app's training-epoch panel can show "
        "attention forming. Validation scores, greedy:\n\n" + "\n".join(rows)
    )


def checkpoint_card(
    directory: str | Path, command: str, samples: list[tuple[str, str, str]], data_source: str, **kwargs
) -> str:
    """The card of a checkpoint folder, rebuilt from its own files: ``config.json``,
    ``metrics.json`` (validation, test and beam scores, the training history, minutes and
    parameters) and ``snapshots/``. ``command`` is what made the model (the folder does not
    know how it was launched); other keywords as :func:`build_model_card`."""
    from transformer.core.checkpoint import read_config, read_metrics

    directory = Path(directory)
    metrics = read_metrics(directory)
    sections = dict(kwargs.pop("sections", None) or {})
    snapshots = snapshots_section(directory)
    if snapshots and SNAPSHOTS_HEADING not in sections:
        sections[SNAPSHOTS_HEADING] = snapshots
    return model_card(
        read_config(directory),
        int(metrics.get("parameters", 0)),
        command,
        metrics.get("history", []),
        metrics,
        samples,
        data_source,
        sections=sections,
        **kwargs,
    )


def spread(pairs: list, n: int) -> list:
    """``n`` items taken evenly through ``pairs`` (all of them when there are fewer)."""
    if len(pairs) <= n:
        return list(pairs)
    return [pairs[i * len(pairs) // n] for i in range(n)]


def parse_args(argv=None):
    from transformer.cli import ArgumentParser, whole_number

    p = ArgumentParser(
        prog="python -m transformer.cli.modelcard",
        description="Rebuild a checkpoint folder's model card (README.md) from its own files.",
    )
    p.add_argument("--checkpoint", required=True, help="the checkpoint folder whose README.md is rewritten")
    p.add_argument("--command", required=True, help="the command that trained the model, shown on the card")
    p.add_argument(
        "--samples",
        required=True,
        help="JSONL file in the OPUS Books schema: the card shows the model's translations of a few of its pairs",
    )
    p.add_argument(
        "--n-samples", type=whole_number(1), default=10, help="how many pairs, taken evenly through the file"
    )
    p.add_argument(
        "--data", required=True, help="the training corpus, as the card credits it (e.g. data/tatoeba-en-it)"
    )
    p.add_argument("--extra-data", nargs="*", default=[], help="corpora whose pairs were added to --data's")
    p.add_argument(
        "--history",
        default=None,
        help="the run's history.json, when the folder's metrics.json has none "
        "(checkpoints saved before it was kept there)",
    )
    p.add_argument(
        "--title", default=None, help="the card's title (default: '<src>-><tgt> Transformer (from scratch)')"
    )
    p.add_argument(
        "--detail",
        nargs=2,
        action="append",
        default=[],
        metavar=("LABEL", "TEXT"),
        help="one more row of the table at the top, e.g. --detail 'training time' '26 epochs in 3.7 hours'",
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    import json
    import sys

    from transformer.core.checkpoint import METRICS_FILE, CheckpointError, read_metrics, write_file_atomic
    from transformer.cli import fail, load_translator_or_exit
    from transformer.training.data import DataError, load_split

    args = parse_args(argv)
    directory = Path(args.checkpoint)
    if not (directory / METRICS_FILE).is_file():
        fail(f"{directory}: no {METRICS_FILE} (not a trained checkpoint folder)")
    if not Path(args.samples).is_file():
        fail(f"--samples {args.samples}: no such file")
    history = None
    if args.history:
        try:
            history = json.loads(Path(args.history).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            fail(f"--history {args.history}: {exc}")
        if not isinstance(history, list):
            fail(f"--history {args.history}: not a list of evaluation records")
    tr = load_translator_or_exit(str(directory))
    try:
        pairs = spread(load_split(args.samples, "train", tr.cfg.src_lang, tr.cfg.tgt_lang), args.n_samples)
    except DataError as exc:
        fail(str(exc))
    hyps = tr.translate([s for s, _ in pairs])
    if history is not None:
        metrics = read_metrics(directory)
        write_file_atomic(directory / METRICS_FILE, json.dumps({**metrics, "history": history}, indent=2) + "\n")
    try:
        card = checkpoint_card(
            directory,
            args.command,
            [(s, t, h) for (s, t), h in zip(pairs, hyps)],
            args.data,
            extra_data=tuple(args.extra_data),
            title=args.title,
            details=args.detail,
            samples_heading=f"Samples ({Path(args.samples).name}, {len(pairs)} pairs taken evenly)",
        )
    except CheckpointError as exc:
        fail(str(exc))
    write_file_atomic(directory / "README.md", card)
    print(f"wrote {directory / 'README.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
