"""The claims file itself (explorer/claims.py): the "What to look for" of the README (its first
two items) and of docs/what-to-look-for.md (all of them) are the render of
``checkpoints/en-it/claims.json``, a malformed file is one clear error, the page takes its
examples and pair hints from its own checkpoint's file (generic ones without it), and
``python -m explorer.claims`` checks and rewrites both sections. What the values say
about the model is tests/test_claims_measured.py's job."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from explorer import claims
from explorer.claims import FILE, GENERIC, ClaimsError, for_checkpoint, load, main, render_section, rendered_readme
from tests.helpers import ROOT, SHIPPED

BEGIN = "<!-- claims:begin claims.json (edit that file) -->"


def shipped_data() -> dict:
    return json.loads((SHIPPED / FILE).read_text(encoding="utf-8"))


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def small_claims(**changes) -> dict:
    """A valid claims file of one example, one pair and one README item."""
    data = {
        "schema": claims.SCHEMA,
        "values": {"p": {"value": 0.5, "digits": 2, "where": "step 1, candidates: 'il'"}},
        "examples": [{"sentence": "the cat sleeps.", "hint": "Step 1 says 'il' ({p})."}],
        "pairs": [{"a": "the cat sleeps.", "b": "the dog sleeps.", "hint": "One noun changes."}],
        "readme": {"intro": ["Checked on a tiny model."], "items": [{"title": "A cat.", "lines": ["It is", "{p}."]}]},
    }
    data.update(changes)
    return data


# --- the README and docs/what-to-look-for.md ------------------------------------------------------
WRITE = "python -m explorer.claims --write README.md docs/what-to-look-for.md"
# each file that shows the shipped claims, and how many of its items (None: all)
SECTIONS = {"README.md": 2, "docs/what-to-look-for.md": None}


@pytest.mark.parametrize("name, first", SECTIONS.items())
def test_each_section_is_the_render_of_the_shipped_claims(name, first):
    """Edit checkpoints/en-it/claims.json, then ``python -m explorer.claims --write README.md
    docs/what-to-look-for.md``."""
    text, fresh, source = rendered_readme(ROOT / name)
    assert source.resolve() == (SHIPPED / FILE).resolve()
    assert text == fresh, f"{name} differs from claims.json: run {WRITE}"
    section = text[text.index("<!-- claims:begin ") : text.index("<!-- claims:end -->")]
    assert section.count("\n- **") == (first or len(load(SHIPPED / FILE).readme["items"]))
    assert WRITE in section.split("\n", 1)[0]  # the marker says how to render both


def test_the_readme_keeps_the_first_two_stories_and_points_to_the_rest():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("### What to look for\n\n<!-- claims:begin checkpoints/en-it/claims.json first=2 ")
    after = text[text.index("<!-- claims:end -->\n\n", start) :].split("\n\n")[1]
    assert "[docs/what-to-look-for.md](docs/what-to-look-for.md)" in after and "\n" not in after
    assert text.index("\n## ", start) > text.index(after)  # the pointer closes the section
    docs = (ROOT / "docs" / "what-to-look-for.md").read_text(encoding="utf-8")
    assert "<!-- claims:begin ../checkpoints/en-it/claims.json " in docs and " first=" not in docs


@pytest.mark.parametrize("name", SECTIONS)
def test_a_stale_section_in_either_file_is_caught(tmp_path, capsys, name):
    """One figure of the rendered section changed: --check fails, and --write puts it back."""
    text = (ROOT / name).read_text(encoding="utf-8")
    marker = text[text.index("<!-- claims:begin ") :].split("\n", 1)[0]
    path = marker.split()[2]
    copy = text.replace(marker, marker.replace(path, str((SHIPPED / FILE).resolve()), 1))
    start = copy.index("<!-- claims:end -->") - 200
    stale = copy[:start] + copy[start:].replace(" ", "  ", 1)
    assert stale != copy
    where = tmp_path / Path(name).name
    where.write_text(stale, encoding="utf-8")
    assert main(["--check", str(where)]) == 1
    assert f"run python -m explorer.claims --write {where}" in capsys.readouterr().err
    assert main(["--write", str(where)]) == 0 and where.read_text(encoding="utf-8") == copy


def test_render_reads_as_the_readme_writes_it():
    """Intro, a blank line, one list item per claim (title in bold, lines kept as written), each
    figure at its decimals with a real minus sign."""
    data = small_claims()
    data["values"]["p"] = {"value": -1234.5, "digits": 1, "where": "somewhere"}
    assert render_section(claims.parse(data)) == "Checked on a tiny model.\n\n- **A cat.** It is\n  \u22121,234.5.\n"


@pytest.fixture
def readme(tmp_path) -> Path:
    write_json(tmp_path / FILE, small_claims())
    path = tmp_path / "README.md"
    path.write_text(
        f"# Title\n\n### What to look for\n\n{BEGIN}\nstale\n<!-- claims:end -->\n\n## Next\n", encoding="utf-8"
    )
    return path


def test_check_and_write(readme, capsys):
    assert main(["--check", str(readme)]) == 1
    assert "--write" in capsys.readouterr().err
    assert main(["--write", str(readme)]) == 0
    assert readme.read_text(encoding="utf-8") == (
        f"# Title\n\n### What to look for\n\n{BEGIN}\nChecked on a tiny model.\n\n- **A cat.** It is\n  0.50.\n"
        "<!-- claims:end -->\n\n## Next\n"
    )
    assert main(["--check", str(readme)]) == 0


def test_first_n_renders_the_intro_and_the_first_n_items(tmp_path):
    data = small_claims()
    data["readme"]["items"] += [
        {"title": "A dog.", "lines": ["It barks."]},
        {"title": "A bird.", "lines": ["It sings."]},
    ]
    parsed = claims.parse(data)
    assert render_section(parsed, 1) == "Checked on a tiny model.\n\n- **A cat.** It is\n  0.50.\n"
    assert render_section(parsed, 3) == render_section(parsed) and render_section(parsed, 2).endswith("It barks.\n")
    write_json(tmp_path / FILE, data)
    path = tmp_path / "README.md"
    path.write_text(f"{BEGIN.replace('claims.json', 'claims.json first=2')}\n<!-- claims:end -->\n", encoding="utf-8")
    assert main(["--write", str(path)]) == 0
    assert "A dog." in path.read_text(encoding="utf-8") and "A bird." not in path.read_text(encoding="utf-8")


def test_one_command_checks_and_writes_several_files(tmp_path, capsys):
    """A README with the first item and a docs page with all, from one claims file (each marker's
    PATH relative to its own file); --check fails while either is stale."""
    write_json(tmp_path / FILE, small_claims())
    readme, page = tmp_path / "README.md", tmp_path / "docs" / "what.md"
    page.parent.mkdir()
    readme.write_text("<!-- claims:begin claims.json first=1 -->\nstale\n<!-- claims:end -->\n", encoding="utf-8")
    page.write_text("<!-- claims:begin ../claims.json -->\nstale\n<!-- claims:end -->\n", encoding="utf-8")
    assert main(["--check", str(readme), str(page)]) == 1
    assert main(["--write", str(readme)]) == 0 and main(["--check", str(readme), str(page)]) == 1
    assert main(["--write", str(readme), str(page)]) == 0 and main(["--check", str(readme), str(page)]) == 0
    assert (
        readme.read_text(encoding="utf-8").count("- **A cat.**")
        == page.read_text(encoding="utf-8").count("- **A cat.**")
        == 1
    )
    capsys.readouterr()
    page.write_text(page.read_text(encoding="utf-8").replace("0.50", "0.51"), encoding="utf-8")
    assert main(["--check", str(readme), str(page)]) == 1
    assert f"{page}: the section differs" in capsys.readouterr().err


@pytest.mark.parametrize(
    "option, problem",
    [
        ("first=0", "first=0: the readme"),
        ("first=2", "first=2: the readme"),
        ("first=x", "first=x: expected a whole number"),
    ],
)
def test_a_bad_first_is_one_clear_error(readme, capsys, option, problem):
    text = readme.read_text(encoding="utf-8").replace("claims.json (", f"claims.json {option} (")
    readme.write_text(text, encoding="utf-8")
    assert main(["--write", str(readme)]) == 2 and readme.read_text(encoding="utf-8") == text
    assert problem in capsys.readouterr().err


@pytest.mark.parametrize(
    "text", ["no markers\n", f"{BEGIN}\n{BEGIN}\n<!-- claims:end -->\n", f"<!-- claims:end -->\n{BEGIN}\n"]
)
def test_markers_missing_or_out_of_order_are_one_error(readme, capsys, text):
    readme.write_text(text, encoding="utf-8")
    assert main(["--check", str(readme)]) == 2 and main(["--write", str(readme)]) == 2
    assert readme.read_text(encoding="utf-8") == text
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "claims:begin" in err


def test_a_malformed_claims_file_leaves_the_readme_alone(readme, capsys):
    (readme.parent / FILE).write_text("{", encoding="utf-8")
    before = readme.read_text(encoding="utf-8")
    assert main(["--write", str(readme)]) == 2 and readme.read_text(encoding="utf-8") == before
    assert f"{readme.parent / FILE}: not JSON" in capsys.readouterr().err


def test_the_command_line_has_help():
    out = subprocess.run([sys.executable, "-m", "explorer.claims", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0 and "--check README" in out.stdout and "--write README" in out.stdout
    assert subprocess.run([sys.executable, "-m", "explorer.claims"], cwd=ROOT, capture_output=True).returncode == 2


# --- loading and checking ---------------------------------------------------------------------------
def with_value(**value) -> dict:
    return small_claims(values={"p": {"value": 0.5, "digits": 2, "where": "x", **value}})


@pytest.mark.parametrize(
    "data, problem",
    [
        ([], "expected a JSON object"),
        (small_claims(schema="explorer-claims/2"), "schema: expected 'explorer-claims/1'"),
        (small_claims(extra=1), "extra: unknown key"),
        (with_value(digits=None), "values.p.digits: expected a whole number"),
        (with_value(digits=True), "values.p.digits: expected a whole number"),
        (with_value(value="0.5"), "values.p.value: expected a number"),
        (with_value(where=""), "values.p.where: expected a description"),
        (small_claims(values={"P": {"value": 1, "digits": 0, "where": "x"}}), "values.P: a name is"),
        (small_claims(examples=[{"sentence": "x"}]), "examples[0]: expected the keys sentence, hint"),
        (small_claims(pairs=[{"a": "x", "b": "", "hint": "y"}]), "pairs[0].b: expected text"),
        (small_claims(readme={"intro": [], "items": [{"title": "t", "lines": ["a\nb"]}]}), "readme.items[0].lines"),
        (small_claims(examples=[{"sentence": "x", "hint": "{q} and {p}"}]), "examples[0].hint: {q} is not one of the"),
        (small_claims(examples=[{"sentence": "x", "hint": "{p"}]), "examples[0].hint: an unpaired brace"),
        (small_claims(examples=[], readme={"intro": [], "items": []}), "values.p: no text states this value"),
    ],
)
def test_a_malformed_file_is_one_clear_error(tmp_path, data, problem):
    path = write_json(tmp_path / FILE, data)
    with pytest.raises(ClaimsError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: {problem}") and "\n" not in str(caught.value)


@pytest.mark.parametrize("content, problem", [(None, "no such file"), ("{", "not JSON"), (b"\xff", "cannot read it")])
def test_a_missing_or_unreadable_file_is_one_clear_error(tmp_path, content, problem):
    path = tmp_path / FILE
    if content is not None:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ClaimsError, match=f"^{path}: {problem}"):
        load(path)


def test_the_app_gets_generic_claims_without_a_file_and_after_a_malformed_one(tmp_path, caplog):
    assert for_checkpoint(None) is GENERIC and for_checkpoint(tmp_path) is GENERIC
    (tmp_path / FILE).write_text('{"schema": "something else"}', encoding="utf-8")
    with caplog.at_level(logging.ERROR, logger="app.claims"):
        assert for_checkpoint(tmp_path) is GENERIC
    assert f"{tmp_path / FILE}: schema" in caplog.text
    write_json(tmp_path / FILE, small_claims())
    assert for_checkpoint(tmp_path).examples() == [["the cat sleeps.", "Step 1 says 'il' (0.50)."]]


def test_generic_hints_state_no_figures_and_offer_the_shipped_sentences():
    """A model of one's own gets the same sentences as the shipped one, with questions instead of results."""
    shipped = load(SHIPPED / FILE)
    assert [s for s, _ in GENERIC.examples()] == [s for s, _ in shipped.examples()]
    assert [(p["a"], p["b"]) for p in GENERIC.pairs()] == [(p["a"], p["b"]) for p in shipped.pairs()]
    assert not any(c.isdigit() for _, hint in GENERIC.examples() for c in hint)
    assert not any(c.isdigit() for p in GENERIC.pairs() for c in p["hint"])
    with pytest.raises(ClaimsError, match="no readme section"):
        render_section(GENERIC)


# --- the page -----------------------------------------------------------------------------------------
def block_data(demo, elem_id: str):
    """The JSON a browser view gets with the page (its block's ``data``)."""
    return json.loads(next(b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id).props["data"])


def test_the_default_examples_and_pairs_are_the_shipped_claims():
    import explorer.page as explorer_page
    from explorer.panels import pairs

    shipped = load(SHIPPED / FILE)
    assert explorer_page.EXAMPLES == shipped.examples() and pairs.PAIRS == shipped.pairs()
    assert all(isinstance(s, str) and isinstance(h, str) for s, h in explorer_page.EXAMPLES)


def test_the_page_sends_its_checkpoints_examples_and_pairs(tiny_checkpoint, tmp_path):
    """The browser gets ``[[sentence, hint], ...]`` (web/hint.js) and ``{"pairs": [{a, b, hint}]}``
    (web/pairs.js), from the checkpoint's claims.json, and generic ones without it."""
    import explorer.page as explorer_page
    from transformer import load_translator

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_checkpoint, ckpt)

    def sent(expected) -> None:
        app = explorer_page.App(load_translator(ckpt))
        demo = app.build()
        assert block_data(demo, "hint") == expected.examples()
        assert block_data(demo, "pairs-view") == {"pairs": expected.pairs()}
        assert app.panel("pairs").pairs == expected.pairs()

    sent(GENERIC)
    sent(load(write_json(ckpt / FILE, small_claims())))
