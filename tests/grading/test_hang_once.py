"""A whole ps1 submission whose exact_return never returns: it costs two cell limits, not
fifteen minutes, and every item that does not need exact_return keeps its points."""
import dataclasses

import nbformat
import pytest

from rlcourse.course.bank import reference_student
from rlcourse.grading.pipeline import Grader
from rlcourse.worker.limits import Limits

pytestmark = [pytest.mark.slow, pytest.mark.serial]

NEEDS_EXACT_RETURN = {"exact_return.known_policies", "exact_return.random_theta_horizons",
                      "exact_return.gradient", "training.reinforce", "training.ppo",
                      "exercises.changed_seed", "exercises.horizon_change", "exercises.sampled_vs_exact"}


def hanging_exact_return(ps1, folder):
    notebook = reference_student(ps1.source_notebook, ps1.release_notebook)
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "exact_return":
            cell.source = cell.source.replace("    p_right = ", "    while True:\n        pass\n    p_right = ", 1)
            assert "while True" in cell.source
    path = folder / ps1.notebook
    nbformat.write(notebook, path)
    return path


def test_a_hanging_exact_return_is_paid_once_and_costs_only_what_uses_it(ps1, tmp_path):
    # Small limits keep the test short; the items that time out do so once.
    limits = Limits(cell_seconds=15.0, call_seconds=8.0, submission_seconds=600.0)
    assignment = dataclasses.replace(ps1, limits=limits, fixed_limits=frozenset(
        ["cell_seconds", "call_seconds", "submission_seconds"]))
    with Grader(assignment, warm_cache=False) as grader:
        report = grader.grade(hanging_exact_return(ps1, tmp_path))
    by_id = {item.id: item for item in report.items}
    for item in report.items:
        if item.id in NEEDS_EXACT_RETURN:
            assert not item.passed, item.id
        else:
            assert item.passed, (item.id, item.message)
    for name in ("exact_return.known_policies", "exact_return.gradient", "training.ppo"):
        assert by_id[name].diagnosis == "timeout"
        # The second hang, on other arguments, was given a call's time only.
        assert "exact_return did not finish within 8 s when cell 27" in by_id[name].message
        assert "is not run again" in by_id[name].message and "cell 13, line" in by_id[name].message
    # The cell that runs train (exact_return with horizon 8) hangs; the exercise that asks for
    # horizon 2 is tried for a call's time, and hangs too; from then on exact_return is not run.
    hung_cells = [error for error in report.errors if " did not finish within" in error.split(":")[0]]
    assert [error.split(" did not")[0] for error in hung_cells] == [
        "cell 17 (example_training)", "cell 27 (exercise_horizon)"]
    assert "having hung 2 times" in by_id["training.ppo"].message
    # No item waited out a call limit: every call of exact_return after the cell that hung
    # failed at once (before this, each waited 8 s here, 20 s with the course's old limits).
    for name in NEEDS_EXACT_RETURN - {"exercises.changed_seed", "exercises.horizon_change",
                                      "exercises.sampled_vs_exact"}:
        assert by_id[name].seconds < 8, (name, by_id[name].seconds)
