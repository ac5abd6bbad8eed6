"""The hostile bank counts its cases, and the threat model lists each with its defence (issue 29,
item 8).

A case is an entry file of `tests/hostile/<assignment>/` (a submission graded by
tests/test_hostile.py; files starting with `_` are helpers), or a test marked
`@pytest.mark.hostile("case-name")` anywhere in the suite (an attack on the service, Gradescope,
Dask or the reports), counted once per case name however many parameters it has. The marked tests
are collected, never run (`-p hostile_cases`, in a pytest of their own, over the files that name
the marker). docs/threat-model.md's section "The hostile bank, attack by attack" has one table row
per case: its first cell names the entry or the case in backticks (a marked case's row also names
its test file), and the third says what stops it.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.bank import load_entries

ROOT = Path(__file__).resolve().parents[1]
THREAT_MODEL = ROOT / "docs" / "threat-model.md"
BANK_SECTION = "## The hostile bank, attack by attack"
MINIMUM = 60
"""Issue 29: the bank grows to at least 60 cases across grading, service, Gradescope and reports."""


def entry_cases() -> dict[str, str]:
    """case -> where it is: each entry of every assignment's hostile folder."""
    found = {}
    for folder in sorted((ROOT / "tests" / "hostile").iterdir()):
        if folder.is_dir():
            for entry in load_entries(folder):
                assert entry.name not in found, f"two hostile entries are called {entry.name}"
                found[entry.name] = str(entry.path.relative_to(ROOT))
    return found


@pytest.fixture(scope="module")
def marked(tmp_path_factory) -> dict[str, set[str]]:
    """case -> the test functions (node ids without parameters) marked with it, as collected."""
    out = tmp_path_factory.mktemp("cases") / "cases.jsonl"
    files = [str(path) for path in sorted((ROOT / "tests").rglob("test_*.py"))
             if "hostile" not in path.relative_to(ROOT / "tests").parts[:1]
             and "mark.hostile(" in path.read_text()]
    assert files, "no test is marked @pytest.mark.hostile"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "-p", "hostile_cases", *files], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, RLCOURSE_HOSTILE_CASES=str(out),
                 PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    found: dict[str, set[str]] = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        assert record["case"], f"{record['nodeid']}: @pytest.mark.hostile needs the case's name"
        found.setdefault(record["case"], set()).add(record["nodeid"].split("[")[0])
    return found


def bank_rows() -> list[list[str]]:
    """The table rows of the threat model's hostile-bank section, as lists of cell texts."""
    text = THREAT_MODEL.read_text()
    assert BANK_SECTION in text
    section = text.split(BANK_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("|") and not re.fullmatch(r"\|[\s:|-]+\|?", line.strip()):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def named(row: list[str]) -> set[str]:
    """The names a row's first cell gives in backticks."""
    return set(re.findall(r"`([^`]+)`", row[0]))


def test_the_bank_counts_at_least_sixty_cases(marked):
    entries = entry_cases()
    total = len(entries) + len(marked)
    assert total >= MINIMUM, (f"{total} cases ({len(entries)} entries, {len(marked)} marked tests); "
                              f"the bank needs {MINIMUM}")


def test_a_case_name_marks_one_test_function(marked):
    shared = {case: sorted(tests) for case, tests in marked.items() if len(tests) > 1}
    assert not shared, shared
    clash = set(marked) & set(entry_cases())
    assert not clash, f"a marked case has an entry's name: {sorted(clash)}"


def test_the_threat_model_lists_every_case_once_with_its_defence(marked):
    rows = bank_rows()
    cases = {**{case: path for case, path in entry_cases().items()},
             **{case: sorted(tests)[0].split("::")[0] for case, tests in marked.items()}}
    missing, doubled, undefended, unplaced = [], [], [], []
    for case, test_file in cases.items():
        found = [row for row in rows if case in named(row)]
        if not found:
            missing.append(case)
            continue
        if len(found) > 1:
            doubled.append(case)
        row = found[0]
        if len(row) < 3 or not row[2]:
            undefended.append(case)
        if case in marked and test_file not in " ".join(row):
            unplaced.append(f"{case} ({test_file})")
    assert not missing, f"no row in docs/threat-model.md ({BANK_SECTION[3:]}) for: {sorted(missing)}"
    assert not doubled, f"more than one row for: {sorted(doubled)}"
    assert not undefended, f"a row without its defence for: {sorted(undefended)}"
    assert not unplaced, f"a marked case's row must name its test file: {sorted(unplaced)}"


def test_every_row_of_the_bank_names_a_case_that_exists(marked):
    """A renamed or removed case leaves no row behind (rows that name no case in backticks, such
    as a whole test file's, are notes)."""
    known = set(entry_cases()) | set(marked)
    stale = sorted(name for row in bank_rows() for name in named(row)
                   if not name.startswith("tests/") and name not in known)
    assert not stale, stale
