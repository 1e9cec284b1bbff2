"""Measure what a claims file states (``explorer/claims.py``) on the model it sits beside.

Every figure of ``checkpoints/NAME/claims.json`` is measured here through the functions the app
itself calls (``Translator.trace``, ``transformer.interpret``, ``explorer.texts``, the viewer
payload and the checkpoint's ``head_stats.json``), so the numbers are the ones a visitor sees on
screen, compared as the texts print them (each value's ``digits``). :data:`MEASURES` says how
each value is measured. ``tests/test_claims_measured.py`` asserts them, with the rest of what
the texts say (which token a head looks at, which step two versions part at, which heads have a
habit); this module's command is for whoever ships a new model:

    python -m explorer.measure                      # every value: stated, measured, stale or not
    python -m explorer.measure --update             # write the measured figures into claims.json
    python -m explorer.claims --write README.md docs/what-to-look-for.md  # then render both sections again

``--update`` changes only the numbers; a text whose sentence, step or token no longer fits the
model (its measure fails) is listed, and is rewritten by hand.

Conventions: the texts count layers, heads and steps from 1, as the app does; the code counts
from 0 (``trace.cross_attn[layer - 1, head - 1, step - 1]``, heads written ``"cross:0:0"`` for
"cross-attention layer 1, head 1").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace


from explorer import texts as viewer
from explorer.claims import FILE, Claims, ClaimsError, load, render_section
from explorer.payload import decode_payload, encode_trace
from transformer.core.readings import strongest_key
from transformer.interpret import knockout

DEFAULT_CHECKPOINT = Path(__file__).resolve().parent.parent / "checkpoints" / "en-it"

RED_CAR = "I have a red car."
COFFEE = "I don't like coffee."
BOOK = "The book that I bought yesterday is very interesting."
TOM = "Tom gave Mary a beautiful present for her birthday."
LAKE = "My parents live in a small house near the lake."
TWO_CARS = "I have two red cars."
MILK = "We need to buy bread, milk and eggs."
NICE = "Tom gave Mary a nice present for her birthday."  # parts from TOM at TOM_PART: Mary last
BROTHER, SISTER = "My brother is tall.", "My sister is tall."
DOCTOR_SHE, DOCTOR_HE = "The doctor said she was tired.", "The doctor said he was tired."
GRANDPARENTS = "Yesterday we visited our grandparents."
YOUNG_DOCTOR = "The young doctor forgot her umbrella at the restaurant."
# "Where did this word come from?" (explorer/panels/sources.py): a test-set sentence and its reference
BLEEDING, BLEEDING_REF = "Tom is bleeding profusely.", "Tom sta sanguinando copiosamente."
TWO_CARS_PIECE = 4  # the step of "I have two red cars." that writes "ine", the end of "macchine"


def words(tokens) -> list[str]:
    """Subwords as the app shows them (the word-start marker dropped)."""
    return [viewer.display_token(t) for t in tokens]


def first_difference(a, b) -> int | None:
    """The first 1-based step where two token lists differ (None if they never do)."""
    return next((t + 1 for t, (x, y) in enumerate(zip(a, b)) if x != y), None)


def prob(trace, step, token) -> float:
    """Probability of ``token`` among the candidates (top-k) at 1-based ``step``."""
    return float(trace.topk_probs[step - 1][trace.topk_tokens[step - 1].index(token)])


def on(trace, row, word) -> float:
    """The weight of attention row ``row`` (over the source) on the source token ``word``."""
    return float(row[words(trace.src_tokens).index(word)])


def top(trace, row) -> str:
    """The source token attention row ``row`` weighs most."""
    return words(trace.src_tokens)[strongest_key(row)]


def shown_cross(trace, layer, step, origin="pair"):
    """Cross-attention of ``layer`` (mean of the heads) at 1-based ``step`` as the viewer draws
    it: from its payload (a Translate and both sentences of a pair travel in that format)."""
    return decode_payload(encode_trace(trace, origin=origin))["cross_attn"][layer - 1, :, step - 1].mean(axis=0)


def exact_cross(trace, layer, step):
    """The same mean, from the model's own weights."""
    return trace.cross_attn[layer - 1, :, step - 1].mean(axis=0)


def ranked_first(importance) -> tuple[str, int, int]:
    """(kind, layer, head), 1-based, of the head that head importance ranks first."""
    first = importance["ranking"][0]
    return first["kind"], first["layer"] + 1, first["head"] + 1


def head_drop(importance, kind, layer, head) -> float:
    """The drop head importance gives one head (1-based ``layer``, ``head``)."""
    wanted = (kind, layer - 1, head - 1)
    return next(x["drop"] for x in importance["ranking"] if (x["kind"], x["layer"], x["head"]) == wanted)


def whatif(tr, trace, step: int, token: str):
    """What if? at 1-based ``step``, forcing the candidate ``token`` (the calls of ``App.whatif``)."""
    rank = trace.topk_tokens[step - 1].index(token)
    return tr.trace(trace.src_text, forced_prefix=viewer.whatif_prefix(trace, step, rank))


# The steps the texts name (1-based, as the app shows them)
TOM_CLOSE = 4  # the Tom sentence's closest call: 'a' (Mary first) against 'un', asked "Why this word?"
TOM_PART = 4  # where the Tom and nice-present sentences part ('a' against 'un', Mary last), patched
TOM_UN_STEP = 7  # the Tom sentence forced to 'un' at TOM_CLOSE: 'per' against 'a' (Mary before the birthday)
GRANDPARENTS_STEP = 5  # 'nostro' against 'i' and 'nostra': where the plural is lost
YOUNG_NOUN = 3  # the young doctor's noun: 'dottore' after 'Il', 'dotto' (of 'dottoressa') after a forced 'La'


# ----------------------------------------------------------------------------- the model, measured once
class Measured:
    """A model's answers to everything the claims quote, each computed on first use and kept
    (so one test can run alone, in any order, and a report measures each thing once)."""

    def __init__(self, tr, directory: str | Path):
        self.tr = tr
        self.directory = Path(directory)
        self.traces = {}

    def trace(self, text):
        """The greedy trace the app shows after Translate."""
        if text not in self.traces:
            self.traces[text] = self.tr.trace(text)
        return self.traces[text]

    @cached_property
    def test_set(self) -> dict:
        """The "whole test set" diagnostics maps: ``head_stats.json`` as the analysis panel loads it
        (``explorer.panels.analysis.load_test_stats`` is a plain JSON read; not imported, to keep
        Gradio out of this module)."""
        return json.loads((self.directory / "head_stats.json").read_text(encoding="utf-8"))

    @cached_property
    def glance(self) -> list[dict]:
        """The test set at a glance: ``glance.json``'s sentences (a plain JSON read, as the panel's)."""
        return json.loads((self.directory / "glance.json").read_text(encoding="utf-8"))["sentences"]

    def contributions(self, text):
        """ALTI+ of the trace the app shows ("Where did this word come from?")."""
        from transformer.interpret.contributions import alti_contributions

        return alti_contributions(self.tr, self.trace(text))

    @cached_property
    def lake_lens(self):
        """DecoderLens of the lake sentence."""
        from transformer.interpret.decoder_lens import decoder_lens

        return decoder_lens(self.tr, LAKE)

    @cached_property
    def bleeding_score(self):
        """The bleeding sentence's test reference, scored ("Your own reference")."""
        from transformer.interpret.reference import score_reference

        return score_reference(self.tr, BLEEDING, BLEEDING_REF)

    @cached_property
    def importance(self) -> dict:
        return knockout.head_importance(self.tr, TOM)

    @cached_property
    def tom_knockout(self) -> dict:
        """Knock-out of the head that head importance ranks first."""
        kind, layer, head = ranked_first(self.importance)
        return knockout.knockout(self.tr, TOM, f"{kind}:{layer - 1}:{head - 1}")

    @cached_property
    def tom_close(self):
        """What if? at the Tom sentence's closest call, forcing the runner-up."""
        trace = self.trace(TOM)
        return whatif(self.tr, trace, TOM_CLOSE, trace.topk_tokens[TOM_CLOSE - 1][1])

    @cached_property
    def tom_un_a(self):
        """That version explored ("Explore that version"), then What if? at its step
        ``TOM_UN_STEP``, forcing 'a' (Mary before the birthday)."""
        return whatif(self.tr, self.tom_close, TOM_UN_STEP, "▁a")

    @cached_property
    def tom_knockouts(self) -> list[str]:
        """Every one of the 96 single-head knock-outs that changes the Tom sentence, as
        ``kind:layer:head`` (0-based, as ``knockout.knockout`` takes them)."""
        cfg = self.tr.cfg
        heads = [
            f"{kind}:{layer}:{head}"
            for kind in knockout.KINDS
            for layer in range(knockout.n_layers(cfg, kind))
            for head in range(cfg.h)
        ]
        return [h for h in heads if knockout.knockout(self.tr, TOM, h)["changed"]]

    @cached_property
    def grandparents_nostra(self):
        return whatif(self.tr, self.trace(GRANDPARENTS), GRANDPARENTS_STEP, "▁nostra")

    @cached_property
    def grandparents_i(self):
        return whatif(self.tr, self.trace(GRANDPARENTS), GRANDPARENTS_STEP, "▁i")

    @cached_property
    def young_doctor_la(self):
        return whatif(self.tr, self.trace(YOUNG_DOCTOR), 1, "▁La")

    @cached_property
    def two_cars_ossi(self):
        return whatif(self.tr, self.trace(TWO_CARS), 6, "ossi")

    @cached_property
    def doctor_she_stanco(self):
        return whatif(self.tr, self.trace(DOCTOR_SHE), 7, "▁stanco")

    @cached_property
    def why(self):
        """The three analyses of "Why this word?" on the Tom sentence, as the app asks for them
        (explorer/panels/attribution.py; steps 0-based here): at step ``TOM_CLOSE`` direct logit
        attribution against the runner-up and gradient attribution at 64 integration steps
        beside cross-attention at the last layer, mean of the heads; at step ``TOM_PART``
        patching with the nice-present sentence."""
        from transformer.interpret.attribution import activation_patching, direct_logit_attribution
        from transformer.interpret.saliency import saliency

        return SimpleNamespace(
            dla=direct_logit_attribution(self.tr, TOM, TOM_CLOSE - 1, versus="runner-up"),
            patch=activation_patching(self.tr, TOM, NICE, TOM_PART - 1),
            grad=saliency(self.tr, TOM, TOM_CLOSE - 1, n_steps=64),
        )


def ig(m, word) -> float:
    g = m.why.grad
    return float(g.ig_src[words(g.src_tokens).index(word)])


def grad_attention(m, word) -> float:
    g = m.why.grad
    return float(g.cross_attn[words(g.src_tokens).index(word)])


def same_token(kinds, layer, head) -> float:
    return kinds["decoder_self"]["same"][layer - 1][head - 1]


# How each value of claims.json is measured: name -> function of the Measured model.
def lowest_source_share(m) -> dict:
    """The test-set sentence the glance list shows first when sorted by source share."""
    return min(m.glance, key=lambda r: r["src_share"])


MEASURES = {
    "test_sentences": lambda m: m.test_set["n_sentences"],
    "same_test_set": lambda m: same_token(m.test_set["kinds"], 2, 6),
    "same_red_car": lambda m: same_token(m.trace(RED_CAR).head_stats["kinds"], 1, 8),
    "tom_drop_first": lambda m: head_drop(m.importance, *ranked_first(m.importance)),
    "tom_close_a": lambda m: prob(m.trace(TOM), TOM_CLOSE, "▁a"),
    "tom_close_un": lambda m: prob(m.trace(TOM), TOM_CLOSE, "▁un"),
    "tom_un_step7_a": lambda m: prob(m.tom_close, TOM_UN_STEP, "▁a"),
    "lake_step11_vicino": lambda m: prob(m.trace(LAKE), 11, "▁vicino"),
    "lake_step11_near": lambda m: on(m.trace(LAKE), shown_cross(m.trace(LAKE), 3, 11, "translate"), "near"),
    "lake_step13_la": lambda m: on(m.trace(LAKE), shown_cross(m.trace(LAKE), 3, 13, "translate"), "la"),
    "milk_step6_latte": lambda m: prob(m.trace(MILK), 6, "▁latte"),
    "milk_step6_milk": lambda m: on(m.trace(MILK), shown_cross(m.trace(MILK), 3, 6, "translate"), "milk"),
    "grand_step5_nostro": lambda m: prob(m.trace(GRANDPARENTS), GRANDPARENTS_STEP, "▁nostro"),
    "grand_step5_i": lambda m: prob(m.trace(GRANDPARENTS), GRANDPARENTS_STEP, "▁i"),
    "grand_step5_nostra": lambda m: prob(m.trace(GRANDPARENTS), GRANDPARENTS_STEP, "▁nostra"),
    "grand_step6_non": lambda m: prob(m.trace(GRANDPARENTS), GRANDPARENTS_STEP + 1, "▁non"),
    "grand_step6_grand": lambda m: on(
        m.trace(GRANDPARENTS), shown_cross(m.trace(GRANDPARENTS), 3, GRANDPARENTS_STEP + 1, "translate"), "grand"
    ),
    "young_step1_il": lambda m: prob(m.trace(YOUNG_DOCTOR), 1, "▁Il"),
    "young_step1_la": lambda m: prob(m.trace(YOUNG_DOCTOR), 1, "▁La"),
    "young_step3_dottore": lambda m: prob(m.trace(YOUNG_DOCTOR), YOUNG_NOUN, "▁dottore"),
    "young_la_step3_dottore": lambda m: prob(m.young_doctor_la, YOUNG_NOUN, "▁dottore"),
    "young_la_step3_dotto": lambda m: prob(m.young_doctor_la, YOUNG_NOUN, "▁dotto"),
    "dla_a_over_un": lambda m: m.why.dla.value,
    "dla_cross_l2h7": lambda m: m.why.dla.cross[1, 6],
    "dla_cross_l3h3_against": lambda m: -m.why.dla.cross[2, 2],
    "dla_cross_l4h4_against": lambda m: -m.why.dla.cross[3, 3],
    "patch_cross_l4h1": lambda m: m.why.patch.fraction("cross")[3, 0],
    "patch_cross_l1h4": lambda m: m.why.patch.fraction("cross")[0, 3],
    "ig_mary": lambda m: ig(m, "Mary"),
    "ig_beautiful": lambda m: ig(m, "beautiful"),
    "grad_attn_a": lambda m: grad_attention(m, "a"),
    "grad_attn_mary": lambda m: grad_attention(m, "Mary"),
    "grad_rank_correlation": lambda m: m.why.grad.spearman()["src"]["integrated_gradients"],
    "brother_step1_mio": lambda m: prob(m.trace(BROTHER), 1, "▁Mio"),
    "sister_step1_mia": lambda m: prob(m.trace(SISTER), 1, "▁Mia"),
    "brother_step4_alto": lambda m: prob(m.trace(BROTHER), 4, "▁alto"),
    "sister_step4_alta": lambda m: prob(m.trace(SISTER), 4, "▁alta"),
    "sister_step4_alto": lambda m: prob(m.trace(SISTER), 4, "▁alto"),
    "brother_step2_brother": lambda m: on(m.trace(BROTHER), shown_cross(m.trace(BROTHER), 3, 2), "brother"),
    "sister_step2_sister": lambda m: on(m.trace(SISTER), shown_cross(m.trace(SISTER), 3, 2), "sister"),
    "two_cars_step2_due": lambda m: prob(m.trace(TWO_CARS), 2, "▁due"),
    "two_cars_step5_red": lambda m: on(m.trace(TWO_CARS), shown_cross(m.trace(TWO_CARS), 3, 5), "red"),
    "two_cars_step6_osse": lambda m: prob(m.trace(TWO_CARS), 6, "osse"),
    "two_cars_step6_ossi": lambda m: prob(m.trace(TWO_CARS), 6, "ossi"),
    "doctor_she_step7_st": lambda m: prob(m.trace(DOCTOR_SHE), 7, "▁st"),
    "doctor_she_step7_stanco": lambda m: prob(m.trace(DOCTOR_SHE), 7, "▁stanco"),
    "doctor_he_step7_stanco": lambda m: prob(m.trace(DOCTOR_HE), 7, "▁stanco"),
    "doctor_he_step7_st": lambda m: prob(m.trace(DOCTOR_HE), 7, "▁st"),
    "doctor_she_weight": lambda m: on(m.trace(DOCTOR_SHE), shown_cross(m.trace(DOCTOR_SHE), 2, 5), "she"),
    "doctor_he_weight": lambda m: on(m.trace(DOCTOR_HE), shown_cross(m.trace(DOCTOR_HE), 2, 5), "he"),
    "two_cars_ine_prefix": lambda m: m.contributions(TWO_CARS).prefix_share[TWO_CARS_PIECE - 1],
    "two_cars_ine_macch": lambda m: m.contributions(TWO_CARS).prefix[TWO_CARS_PIECE - 1, TWO_CARS_PIECE - 1],
    "lake_lens_layer": lambda m: m.lake_lens.first_layer_like_final + 1,
    "bleeding_cop_rank": lambda m: m.bleeding_score.ranks[m.bleeding_score.first_divergence],
    "bleeding_prof": lambda m: m.bleeding_score.top_probs[m.bleeding_score.first_divergence],
    "glance_lowest_share": lambda m: lowest_source_share(m)["src_share"],
    "glance_lowest_chrf": lambda m: lowest_source_share(m)["chrf"],
    "glance_lowest_coverage": lambda m: lowest_source_share(m)["coverage"],
}


def measured_and_stated(claims: Claims, name: str, m: Measured) -> tuple[str, str]:
    """Value ``name`` as the model gives it and as the claims state it, both printed as the texts print it."""
    value = claims.values[name]
    return value.shown(MEASURES[name](m)), value.shown()


def texts_of(claims: Claims) -> dict[str, str]:
    """Every text of the claims, rendered, with its line breaks and runs of spaces made single spaces."""
    flat = {"readme": render_section(claims)}
    flat.update({f"example {sentence}": hint for sentence, hint in claims.examples()})
    flat.update({f"pair {p['a']}": p["hint"] for p in claims.pairs()})
    return {name: " ".join(text.split()) for name, text in flat.items()}


def quotes(m: Measured) -> list[tuple[str, str]]:
    """(text, passage): each translation a text quotes, with the model's own translation in it."""
    out = {
        text: m.trace(text).translation
        for text in (TOM, NICE, GRANDPARENTS, YOUNG_DOCTOR, BROTHER, SISTER, RED_CAR, TWO_CARS, DOCTOR_SHE, DOCTOR_HE)
    }
    return [
        ("readme", f'"{TOM}" → "{out[TOM]}"'),
        ("readme", f'the model says "{m.tom_knockout["knockout"]["translation"]}"'),
        ("readme", f'the model goes on to "{m.tom_close.translation}"'),
        ("readme", f'there and it says "{m.tom_un_a.translation}"'),
        ("readme", f'"{GRANDPARENTS}" → "{out[GRANDPARENTS]}"'),
        ("readme", f'Force "nostra" with What if? and it says "{m.grandparents_nostra.translation}"'),
        ("readme", f'force "i" and it says "{m.grandparents_i.translation}"'),
        ("readme", f'"{YOUNG_DOCTOR}" → "{out[YOUNG_DOCTOR]}"'),
        ("readme", f'it goes on to "{m.young_doctor_la.translation}"'),
        ("readme", f'(→ "{out[NICE]}"'),
        ("readme", f'the decoder writes "{m.lake_lens.rows[0].text}"'),
        (f"pair {BROTHER}", f"'{out[BROTHER]}' against '{out[SISTER]}'"),
        (f"pair {RED_CAR}", f"'{out[RED_CAR]}' against '{out[TWO_CARS]}'"),
        (f"pair {RED_CAR}", f"it says '{m.two_cars_ossi.translation}'"),
        (f"pair {DOCTOR_SHE}", f"'{out[DOCTOR_SHE]}' against '{out[DOCTOR_HE]}'"),
        (f"pair {DOCTOR_SHE}", f"it says '{m.doctor_she_stanco.translation}'"),
    ]


def misquoted(claims: Claims, m: Measured) -> list[str]:
    """The passages the claims' texts should hold, given the model, and do not."""
    texts = texts_of(claims)
    return [f"{text}: {passage}" for text, passage in quotes(m) if passage not in texts[text]]


def heads_with(kinds, habit) -> list[tuple[str, int, int]]:
    """(kind, layer, head), 1-based, of every head whose habit is ``habit``."""
    return [
        (kind, l + 1, h + 1)
        for kind, k in kinds.items()
        for l, row in enumerate(k["habit"])
        for h, found in enumerate(row)
        if found == habit
    ]


# ----------------------------------------------------------------------------- the report and the update
def report(claims: Claims, m: Measured) -> list[tuple[str, str, str | None, str | None]]:
    """(name, as stated, as measured, the measure's error) for every value, in file order."""
    rows = []
    for name in claims.values:
        try:
            measured, stated = measured_and_stated(claims, name, m)
        except Exception as exc:  # noqa: BLE001 - on a new model a step, token, head or file may not be there
            rows.append((name, claims.values[name].shown(), None, f"{type(exc).__name__}: {exc}"))
        else:
            rows.append((name, stated, measured, None))
    return rows


def updated_values(text: str, new: dict[str, float], digits: dict[str, int]) -> str:
    """The claims file's ``text`` with each value in ``new`` rounded to its digits and written in
    place of the old one; the rest of the file (its layout, its texts) is left as it is."""
    for name, number in new.items():
        pattern = re.compile(r'("' + re.escape(name) + r'"\s*:\s*\{\s*"value"\s*:\s*)(-?[0-9.eE+-]+)')
        rounded = round(float(number), digits[name])
        shown = str(int(rounded)) if digits[name] == 0 else f"{rounded:.{digits[name]}f}"
        text, n = pattern.subn(lambda match: match.group(1) + shown, text, count=1)
        if n != 1:
            raise ClaimsError(f'values.{name}: not written as {{"value": NUMBER, ...}}, so it cannot be updated')
    return text


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m explorer.measure",
        description="Measure every figure a checkpoint's claims.json states, on that checkpoint.",
    )
    p.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT), help="checkpoint folder holding claims.json")
    p.add_argument(
        "--update", action="store_true", help="write the measured figures into claims.json (the texts are left alone)"
    )
    return p.parse_args(argv)


def main(argv=None) -> int:
    """0: every value is the model's; 1: some are stale (after --update, some could not be
    measured); 2: a missing or malformed checkpoint or claims file."""
    args = parse_args(argv)
    directory = Path(args.checkpoint)
    try:
        claims = load(directory / FILE)
        from transformer import load_translator

        tr = load_translator(directory)
    except (ClaimsError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    import torch

    torch.set_num_threads(1)  # the kernels, and so the last digits, of the tests
    m = Measured(tr, directory)
    rows = report(claims, m)
    width = max(len(name) for name, *_ in rows)
    for name, stated, measured, error in rows:
        status = "ok" if measured == stated else ("cannot measure" if error else "stale")
        print(f"{name:<{width}}  {stated:>8}  {measured or '':>8}  {status}{'  ' + error if error else ''}")
    for passage in misquoted(claims, m):
        print(f"quote not in the text: {passage}")
    stale = {name: MEASURES[name](m) for name, stated, measured, error in rows if not error and measured != stated}
    failed = [name for *_, error in rows if error]
    if args.update and stale:
        path = directory / FILE
        digits = {name: value.digits for name, value in claims.values.items()}
        path.write_text(updated_values(path.read_text(encoding="utf-8"), stale, digits), encoding="utf-8")
        sections = "README.md docs/what-to-look-for.md"
        print(f"{path}: {len(stale)} value(s) updated; now run python -m explorer.claims --write {sections}")
        return 1 if failed else 0
    return 1 if stale or failed else 0


if __name__ == "__main__":
    sys.exit(main())
