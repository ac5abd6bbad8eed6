"""The generated reference pages (docs/hooks/reference.py): every CLI option and every
assignment.toml key on them, and none without a description, so an undocumented one fails here
and stops `make docs`. Fast: nothing is built or graded."""
import argparse
import importlib.util
import tomllib
from pathlib import Path

import attrs
import pytest

from rlcourse.cli import build_parser
from rlcourse.course import config, variants, visibility

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_nothing_the_reference_shows_is_undocumented(reference):
    assert reference.undocumented() == []


def test_an_option_or_command_without_help_is_named(reference):
    parser = argparse.ArgumentParser(prog="rlcourse")
    parser.add_argument("--loud", action="store_true")
    commands = parser.add_subparsers(dest="command")
    grade = commands.add_parser("grade", help="grade notebooks")
    grade.add_argument("assignment")
    grade.add_argument("--json", action="store_true", help="print JSON")
    commands.add_parser("quiet")
    assert reference.undocumented_options(parser) == [
        "rlcourse --loud", "rlcourse grade assignment", "rlcourse quiet"]


def test_a_model_field_without_a_docstring_has_no_description(reference):
    @attrs.frozen
    class Table:
        described: int = 1
        """What it means."""
        bare: int = 2

    assert reference.field_docstrings(Table) == {"described": "What it means."}


def test_every_command_and_option_of_the_parser_is_on_the_cli_page(reference):
    page = reference.cli_reference()
    parser = build_parser()
    commands = list(reference.subcommands(parser))
    assert len(commands) >= 20
    for command, sub, _ in commands:
        assert f"## `{command}`" in page
        for action in reference.arguments(sub):
            assert reference.argument_row(action) in page, (command, action.dest)
    assert "`--version`" in page


def test_every_key_the_reader_accepts_is_on_the_config_page(reference):
    keys = {(key.table, key.name) for key in reference.config_keys()}
    accepted = {("", name) for name in config.KEYS}
    accepted |= {("limits", name) for name in config.limit_kinds()}
    accepted |= {("feedback", name) for name in ("before_due", "after_due", "kinds", "items")}
    accepted |= {("feedback.kinds", kind) for kind in visibility.KINDS}
    accepted |= {("web", field.name) for field in attrs.fields(config.WebPolicy)}
    accepted |= {("gradescope", "student_id")}
    accepted |= {("regrades", field.name) for field in attrs.fields(config.RegradePolicy)}
    accepted |= {("variants", name) for name in variants.KEYS}
    accepted |= {("variants.parameters.NAME", name) for name in variants.PARAMETER_KEYS}
    assert keys == accepted
    page = reference.config_reference()
    for _, name in keys:
        assert f"| `{name}` |" in page


def test_the_diagnoses_page_lists_every_tag_without_a_fix(reference):
    page = reference.diagnoses_reference()
    for path in [ROOT / "rlcourse" / "course" / "diagnoses.toml", *ROOT.glob("graders/*/diagnoses.toml")]:
        for tag, entry in tomllib.loads(path.read_text()).items():
            assert f"| `{tag}` |" in page
            assert reference.cell(entry["fix"]) not in page, f"{tag}'s fix is shown"


def test_the_feedback_page_shows_every_level_in_order(reference):
    page = reference.feedback_policy_reference()
    positions = [page.index(f"| `{level}` |") for level in visibility.LEVELS]
    assert positions == sorted(positions) and len(visibility.LEVELS) == 4


def test_the_build_stops_naming_what_is_undocumented(reference, monkeypatch):
    from mkdocs.exceptions import PluginError

    monkeypatch.setattr(reference, "undocumented", lambda: ["rlcourse grade --new-option"])
    with pytest.raises(PluginError, match="rlcourse grade --new-option"):
        reference.on_files([], {})
