"""The ps1 bank: correct-but-different submissions get full marks; each buggy one loses exactly
the items its bug affects, each with the bug's diagnosis tag."""
from pathlib import Path

import pytest

from rlcourse.bank import build_submission, load_entries, reference_student
from rlcourse.grading.pipeline import Grader

BANK = Path(__file__).resolve().parents[1] / "bank" / "ps1"
ENTRIES = load_entries(BANK)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def reports(ps1, tmp_path_factory):
    """Every bank entry graded in one batch, as `rlcourse grade` would."""
    folder = tmp_path_factory.mktemp("bank-ps1")
    base = reference_student(ps1.source_notebook, ps1.release_notebook)
    graded = {}
    with Grader(ps1) as grader:
        for entry in ENTRIES:
            path = folder / f"{entry.name}.ipynb"
            path.write_bytes(build_submission(entry, base))
            graded[entry.name] = grader.grade(path)
    return graded


def test_bank_has_correct_and_buggy_entries():
    """Is the bank two-sided: several correct variants beside the buggy ones?"""
    assert sum(entry.correct for entry in ENTRIES) >= 3
    assert sum(not entry.correct for entry in ENTRIES) >= 10


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.name for entry in ENTRIES])
def test_entry_gets_the_expected_grade(entry, reports):
    report = reports[entry.name]
    lost = {item.id: item.diagnosis for item in report.items if not item.passed}
    details = {item.id: item.message for item in report.items if not item.passed}
    assert lost == entry.loses, details
    for item in report.items:
        assert item.score == (item.max_score if item.passed else 0)
        assert (item.diagnosis is None) == item.passed
