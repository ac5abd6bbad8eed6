"""The bank of every assignment: correct-but-different submissions get full marks; each buggy one
loses exactly the items its bug affects, each with the bug's diagnosis tag."""
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.batch.backends import GraderSettings, Job, make_backend
from rlcourse.grading.redact import REPLACEMENT
from solution_quotes import solution_of

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)
BANKS = {name: load_entries(ROOT / "tests" / "bank" / name) for name in COURSE.assignment_names()
         if (ROOT / "tests" / "bank" / name).is_dir()}
CASES = [(name, entry) for name, entries in BANKS.items() for entry in entries]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grades a whole bank in one batch (as `rlcourse grade` would) the first time it is asked."""
    reports = {}

    def report_for(name, entry_name):
        if name not in reports:
            assignment = COURSE.assignment(name)
            folder = tmp_path_factory.mktemp(f"bank-{name}")
            base = reference_student(assignment.source_notebook, assignment.release_notebook)
            jobs = []
            for entry in BANKS[name]:
                path = folder / f"{entry.name}.ipynb"
                path.write_bytes(build_submission(entry, base))
                jobs.append(Job(entry.name, path))
            # On every core, as `rlcourse autograde` grades a class: each entry still gets a
            # fresh worker of its own, and the parallel path is exercised on every bank.
            backend = make_backend(assignment, GraderSettings(), workers=None)
            try:
                reports[name] = {job.student: report for job, report in backend.grade(jobs)}
            finally:
                backend.close()
        return reports[name][entry_name]

    return report_for


@pytest.mark.parametrize("name", sorted(BANKS))
def test_bank_is_as_large_as_the_assignment_needs(name):
    """A correct entry rewriting each TODO another way, a buggy entry per documented tag
    (rlcourse.batch.check.bank_problems, which `rlcourse check` runs too)."""
    from rlcourse.batch.check import bank_problems

    assert bank_problems(COURSE.assignment(name)) == []


@pytest.mark.parametrize("name, entry", CASES, ids=[f"{n}/{e.name}" for n, e in CASES])
def test_entry_gets_the_expected_grade(name, entry, graded):
    report = graded(name, entry.name)
    lost = {item.id: item.diagnosis for item in report.items if not item.passed}
    details = {item.id: item.message for item in report.items if not item.passed}
    assert lost == entry.loses, details
    for item in report.items:
        assert item.score == (item.max_score if item.passed else 0)
        assert (item.diagnosis is None) == item.passed


@pytest.mark.parametrize("name, entry", CASES, ids=[f"{n}/{e.name}" for n, e in CASES])
def test_no_message_before_the_due_date_quotes_the_solution(name, entry, graded):
    """What each lost item tells the student before the due date (its message; the remedy is its
    fix, shown after) holds no line of the solution (tests/graders/solution_quotes.py), values
    filled in as the student reads them; and neither reads "[hidden]", where the redactor took
    out a line the text quoted. The batch is the one graded above."""
    report, solution = graded(name, entry.name), solution_of(ROOT, name)
    quoted = {item.id: found for item in report.items if (found := solution.quotes(item.message))}
    blanked = [item.id for item in report.items if REPLACEMENT in item.message + item.fix]
    assert (quoted, blanked) == ({}, [])
