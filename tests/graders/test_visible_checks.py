"""The visible checks teach the rule they sit under: a buggy bank entry whose bug a visible check
covers fails that check when the released notebook runs in a real Jupyter kernel, and every correct
entry that answers the same cell passes it. Without this, a bug that the hidden graders catch can
pass every check a student sees (a GAE whose trace runs across a mid-buffer episode end did, and
so did ps1's exercise 3 answered for one step and exercise 4 with a smaller epsilon than the
student's own).

The kernel runs as the student the bank entry is graded as (RLCOURSE_STUDENT, the entry's name),
so checks that read PARAMS see that student's own values, as the graders do."""
from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class VisibleCheck:
    assignment: str
    check: str
    """The visible check cell."""
    answer: str
    """The answer cell it checks."""
    items: tuple[str, ...]
    """The hidden items (or prefixes of their ids) whose bugs it covers."""


COVERED = (
    VisibleCheck("ps1", "test_exercise_horizon", "exercise_horizon", ("exercises.horizon_change",)),
    VisibleCheck("ps1", "test_exercise_clipping_signs", "exercise_clipping_signs", ("exercises.clipping_signs",)),
    VisibleCheck("ps2", "test_compute_gae", "compute_gae", ("gae.", "value_targets.")),
    VisibleCheck("ps3", "test_gae", "gae", ("gae.",)),
)


def _cell_order(assignment: str) -> list[str]:
    notebook = nbformat.read(COURSE.assignment(assignment).release_notebook, as_version=4)
    return [grade_id_of(cell) for cell in notebook.cells]


@dataclasses.dataclass(frozen=True)
class Case:
    assignment: str
    entry: object
    checks: tuple[str, ...]
    """The checks the entry is a case of: a buggy entry must fail the one, a correct entry pass
    them all (one kernel runs down to the last)."""


def _cases() -> list[Case]:
    """Each correct entry that answers a covered cell (and the reference), and each buggy entry that
    loses a covered item and changes nothing before that check's answer cell (a change earlier on
    is another check's business)."""
    cases = []
    for assignment in dict.fromkeys(covered.assignment for covered in COVERED):
        order = _cell_order(assignment)
        checks = [covered for covered in COVERED if covered.assignment == assignment]
        for entry in load_entries(ROOT / "tests" / "bank" / assignment):
            if entry.raw is not None:
                continue
            changed = set(entry.cells) | set(entry.edits)
            if entry.correct:
                answered = [c.check for c in checks if entry.name == "reference" or c.answer in changed]
            else:
                answered = [c.check for c in checks if any(item.startswith(c.items) for item in entry.loses)
                            and all(order.index(cell) >= order.index(c.answer) for cell in changed)][:1]
            if answered:
                cases.append(Case(assignment, entry, tuple(answered)))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def compilation_cache(tmp_path_factory):
    """One JAX compilation cache for this file's kernels: each runs the same given code and most
    of the same answers, so every kernel after the first finds their programs compiled (a
    student's kernel with a cold cache spends most of its time compiling them)."""
    return tmp_path_factory.mktemp("jax-cache")


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"{case.assignment}/{case.entry.name}" for case in CASES])
def test_visible_check_fails_exactly_the_entries_it_covers(case, tmp_path, monkeypatch, compilation_cache):
    """One kernel per entry runs the released notebook, answered as the entry answers it, from the top
    down to the visible check: a buggy entry stops with an error in that check and no earlier cell;
    a correct one runs through (to the last check it answers)."""
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.setenv("RLCOURSE_STUDENT", case.entry.name)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(compilation_cache))
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
    assignment = COURSE.assignment(case.assignment)
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    notebook = nbformat.reads(build_submission(case.entry, base).decode("utf-8"), as_version=4)
    ids = [grade_id_of(cell) for cell in notebook.cells]
    notebook.cells = notebook.cells[:max(ids.index(check) for check in case.checks) + 1]
    client = NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    if case.entry.correct:
        client.execute()
        return
    with pytest.raises(CellExecutionError):
        client.execute()
    failed = [grade_id_of(cell) for cell in notebook.cells
              if any(output.get("output_type") == "error" for output in cell.get("outputs", []))]
    assert failed == list(case.checks), case.entry.description


def test_every_covered_rule_has_buggy_and_correct_entries():
    """The proof above is two-sided for each check it covers."""
    for covered in COVERED:
        entries = [case.entry for case in CASES if covered.check in case.checks]
        assert sum(entry.correct for entry in entries) >= 2, covered.check
        assert sum(not entry.correct for entry in entries) >= 2, covered.check
