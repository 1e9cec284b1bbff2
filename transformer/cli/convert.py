"""Convert a published translation model into one of our checkpoints.

    python -m transformer.cli.convert Helsinki-NLP/opus-mt-en-it --out models/opus-mt-en-it
    python -m transformer.cli.convert facebook/m2m100_418M --out models/m2m100-418M
    python -m transformer.cli.convert facebook/nllb-200-distilled-600M --out models/nllb-200-600M --tgt-lang fra_Latn
    python -m transformer.cli.convert facebook/mbart-large-50-many-to-many-mmt --out models/mbart-50

SRC is a folder written by transformers' ``save_pretrained`` (the model and its tokenizer, with
its generation_config.json) or a hub id, whose files are fetched with
``huggingface_hub.snapshot_download``. config.json's ``model_type`` says which family converts
it, each a config map, a weight map and a tokenizer in its own module:

- ``marian``: OPUS-MT and other Marian models (``transformer.cli.from_marian``, which is also
  this command for Marian models alone);
- ``m2m_100``: M2M100 and NLLB-200 (``transformer.cli.from_m2m100``);
- ``mbart``: mBART-50 many-to-many (``transformer.cli.from_mbart``).

The result opens as ours do (``load_translator``, the evaluate command, the app): config.json,
model.safetensors, the tokenizer(s) as ``tokenizers`` JSON and a model card crediting the source
and its licence. A multilingual model translates between any of its languages; ``--src-lang``
and ``--tgt-lang`` (codes as the model writes them: ``en``, ``eng_Latn``, ``en_XX``) set the
pair it translates when none is asked for, by default the tokenizer's, else English to Italian.

Needs ``sentencepiece`` (``pip install -e ".[marian]"``) for Marian and M2M100 models, whose
tokenizers are SentencePiece model files; transformers itself is not needed to convert.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path

from transformer.cli import fail, one_line
from transformer.cli.conversion import ConversionError, check_out, converter_parser, locate_source, model_type_of

# config.json's model_type -> the module that converts that family
FAMILIES = {
    "marian": "transformer.cli.from_marian",
    "m2m_100": "transformer.cli.from_m2m100",
    "mbart": "transformer.cli.from_mbart",
}


def parse_args(argv=None):
    p = converter_parser(
        "python -m transformer.cli.convert",
        __doc__.split("\n")[0],
        "a folder written by save_pretrained, or a hub id such as facebook/m2m100_418M",
    )
    p.add_argument("--src-lang", default=None, help="a multilingual model's default source language code")
    p.add_argument("--tgt-lang", default=None, help="a multilingual model's default target language code")
    return p.parse_args(argv)


def family_of(model_type) -> object:
    """The module that converts ``model_type``; a one-line :class:`ConversionError` naming the
    families this converter knows otherwise."""
    name = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    if name is None:
        raise ConversionError(f"config.json model_type is {model_type!r}: this converter knows {', '.join(FAMILIES)}")
    return importlib.import_module(name)


def source_folder(src: str, revision: str | None) -> tuple[Path, object]:
    """(local folder, family module) of ``src``: a hub id fetches config.json first, to know the
    family, then the family's files (its weights in one format, not every file of the repo)."""
    from transformer.core.checkpoint import is_hub_id

    hub = not Path(src).expanduser().exists() and is_hub_id(src)
    folder = locate_source(src, revision, ["config.json"])
    family = family_of(model_type_of(folder))
    if hub:
        folder = locate_source(src, revision, family.HUB_PATTERNS)
    problem = family.folder_problem(folder)
    if problem:
        raise ConversionError(problem)
    return folder, family


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    out = Path(args.out).expanduser()
    problem = check_out(out, args.force)
    if problem:
        fail(problem)
    langs = (args.src_lang, args.tgt_lang)
    try:  # before any slow work: the source, its family, its files (these messages name the folder)
        folder, family = source_folder(args.src, args.revision)
        if family.MODEL_TYPE == "marian" and langs != (None, None):
            raise ConversionError("--src-lang and --tgt-lang are for multilingual models; a Marian model has one pair")
    except ConversionError as exc:
        fail(str(exc))
    t0 = time.perf_counter()
    try:
        if family.MODEL_TYPE == "marian":
            family.convert(folder, out, args.src, argv)
        else:
            family.convert(folder, out, args.src, argv, langs)
    except ImportError as exc:  # sentencepiece, for a SentencePiece model file
        fail(f'{args.src}: converting it needs {exc.name or "sentencepiece"}: pip install -e ".[marian]"')
    except (ValueError, OSError) as exc:  # ConversionError, CheckpointError, a config the model refuses
        fail(f"{args.src}: {one_line(str(exc))}")
    print(f"converted {args.src} to {out} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
