"""The visible checks teach the rule they sit under: a buggy bank entry whose bug a visible check
covers fails that check when the released notebook runs in a real Jupyter kernel, and every correct
entry that answers the same cell passes it. Without this, a bug that the hidden graders catch can
pass every check a student sees (a GAE whose trace runs across a mid-buffer episode end did)."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.course.release import grade_id_of

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)

# assignment -> (the visible check cell, the answer cell it checks, the hidden items whose bugs it covers)
COVERED = {
    "ps2": ("test_compute_gae", "compute_gae", ("gae.", "value_targets.")),
    "ps3": ("test_gae", "gae", ("gae.",)),
}


def _cases():
    cases = []
    for name, (_check, answer, prefixes) in COVERED.items():
        for entry in load_entries(ROOT / "tests" / "bank" / name):
            if entry.raw is not None:
                continue
            if entry.correct and (entry.name == "reference" or answer in entry.cells or answer in entry.edits):
                cases.append((name, entry))
            elif any(item.startswith(prefixes) for item in entry.loses):
                cases.append((name, entry))
    return cases


CASES = _cases()


@pytest.mark.slow
@pytest.mark.parametrize("name, entry", CASES, ids=[f"{n}/{e.name}" for n, e in CASES])
def test_visible_check_fails_exactly_the_entries_it_covers(name, entry, tmp_path):
    """One kernel per entry runs the released notebook, answered as the entry answers it, from the top
    down to the visible check: a buggy entry stops with an error in that check and no earlier cell;
    a correct one runs through."""
    check = COVERED[name][0]
    assignment = COURSE.assignment(name)
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    notebook = nbformat.reads(build_submission(entry, base).decode("utf-8"), as_version=4)
    ids = [grade_id_of(cell) for cell in notebook.cells]
    notebook.cells = notebook.cells[:ids.index(check) + 1]
    client = NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    if entry.correct:
        client.execute()
        return
    with pytest.raises(CellExecutionError):
        client.execute()
    failed = [grade_id_of(cell) for cell in notebook.cells
              if any(output.get("output_type") == "error" for output in cell.get("outputs", []))]
    assert failed == [check], entry.description


def test_every_covered_rule_has_buggy_and_correct_entries():
    """The proof above is two-sided for each assignment it covers."""
    for name in COVERED:
        entries = [entry for n, entry in CASES if n == name]
        assert sum(entry.correct for entry in entries) >= 2, name
        assert sum(not entry.correct for entry in entries) >= 2, name
