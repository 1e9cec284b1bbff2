"""Command-line flags made from config dataclasses: a field whose metadata has ``"help"`` is a
flag, so adding a field to ``TransformerConfig``, ``TrainSettings`` or ``Preset`` adds its flag,
and no code maps flags onto fields by hand.

Metadata keys: ``help`` (the flag's help, required to become a flag), ``flag`` (its name when
not the field's, e.g. ``h`` is ``--heads``; fields that share a name share one flag, as
``--layers`` sets both stacks), ``fraction`` (a float in [0, 1)) and ``min`` (an int's least
value; 1 when not given, None for any whole number). Booleans get ``--name`` and ``--no-name``. Every flag defaults to
None, meaning "the preset's value", which the help lists for every preset.

``add_option_flags`` makes the flags of a dataclass of plain options (``RunOptions``): each
defaults to its field's default, a boolean is a switch, and the metadata may also give
``choices``, ``nargs``, ``metavar``, ``parse`` (text to value; its ``ValueError`` is the
message), ``exclusive`` (a group name: its flags exclude each other) and ``section``.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Iterator

from transformer.cli import fraction, integer, positive_number, whole_number


@dataclasses.dataclass(frozen=True)
class FieldFlag:
    """One flag and the fields it sets: ``path`` is where the fields sit in the object the
    flags apply to (``("model",)`` for a preset's ``TransformerConfig``, ``()`` for the object
    itself)."""

    dest: str
    path: tuple[str, ...]
    fields: tuple[dataclasses.Field, ...]

    @property
    def option(self) -> str:
        return "--" + self.dest.replace("_", "-")


def field_flags(cls, path: tuple[str, ...] = ()) -> Iterator[FieldFlag]:
    """The flags of dataclass ``cls``'s fields, in field order (one per shared name)."""
    by_dest: dict[str, list[dataclasses.Field]] = {}
    for f in dataclasses.fields(cls):
        if "help" in f.metadata:
            by_dest.setdefault(f.metadata.get("flag", f.name).replace("-", "_"), []).append(f)
    for dest, fields in by_dest.items():
        yield FieldFlag(dest, path, tuple(fields))


def _argument_type(f: dataclasses.Field) -> Callable:
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    if kind.startswith("float"):
        return fraction if f.metadata.get("fraction") else positive_number
    least = f.metadata.get("min", 1)
    return integer if least is None else whole_number(least)


def add_field_flags(parser, flags: list[FieldFlag], note: Callable[[FieldFlag], str] = lambda flag: "") -> None:
    """Add each flag to ``parser`` (or an argument group), its help followed by ``note(flag)``."""
    for flag in flags:
        f = flag.fields[0]
        help_text = f"{f.metadata['help']} {note(flag)}".strip()
        if "bool" in str(f.type):
            parser.add_argument(flag.option, action=argparse.BooleanOptionalAction, default=None, help=help_text)
        else:
            parser.add_argument(flag.option, type=_argument_type(f), default=None, help=help_text)


def _option_type(f: dataclasses.Field) -> Callable | None:
    parse = f.metadata.get("parse")
    if parse is not None:
        return lambda text: _parsed_by(parse, text)
    return _argument_type(f) if str(f.type).startswith("int") else None


def _parsed_by(parse: Callable, text: str):
    try:
        return parse(text)
    except ValueError as exc:  # argparse would print "invalid <lambda> value"
        raise argparse.ArgumentTypeError(str(exc)) from None


def _option_default(f: dataclasses.Field):
    """The field's default as argparse takes it: a parsed tuple as the text that parses to it."""
    if "parse" in f.metadata and isinstance(f.default, tuple):
        return ",".join(map(str, f.default)) or "none"
    return f.default


def add_option_flags(parser, cls, section: str | None = None) -> None:
    """Add a flag for each field of dataclass ``cls`` whose metadata has ``"help"`` and whose
    ``"section"`` is ``section``, defaulting to the field's default."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for f in dataclasses.fields(cls):
        if "help" not in f.metadata or f.metadata.get("section") != section:
            continue
        meta, option = f.metadata, "--" + f.metadata.get("flag", f.name).replace("_", "-")
        target = parser
        if "exclusive" in meta:
            if meta["exclusive"] not in groups:
                groups[meta["exclusive"]] = parser.add_mutually_exclusive_group()
            target = groups[meta["exclusive"]]
        if "bool" in str(f.type):
            target.add_argument(option, action="store_true", help=meta["help"])
            continue
        extra = {key: meta[key] for key in ("choices", "nargs", "metavar") if key in meta}
        kind = _option_type(f)
        if kind is not None:
            extra["type"] = kind
        target.add_argument(option, default=_option_default(f), help=meta["help"], **extra)


def value_of(obj, flag: FieldFlag):
    """The value ``flag`` reads in ``obj`` (its first field's)."""
    for name in flag.path:
        obj = getattr(obj, name)
    return getattr(obj, flag.fields[0].name)


def apply_flags(obj, flags: list[FieldFlag], args: argparse.Namespace):
    """``obj`` (a frozen dataclass, nested ones replaced too) with every flag given in ``args``
    set on its fields; flags left at None keep ``obj``'s values."""
    for flag in flags:
        value = getattr(args, flag.dest, None)
        if value is not None:
            obj = _replace_at(obj, flag.path, {f.name: value for f in flag.fields})
    return obj


def _replace_at(obj, path: tuple[str, ...], changes: dict):
    if not path:
        return dataclasses.replace(obj, **changes)
    return dataclasses.replace(obj, **{path[0]: _replace_at(getattr(obj, path[0]), path[1:], changes)})
