"""What grading runs of a submission: the given cells as released, whatever the student did to
them, and not the demonstration cells an assignment lists in `skip_cells` (only locked cells
after every solution cell qualify, so skipping one can never break a student's code)."""
import dataclasses

import pytest

from rlcourse.course.directory import CourseError
from rlcourse.grading.pipeline import Grader
from rlcourse.course.submission import load_submission


def grader_skipping(assignment, *cells):
    return Grader(dataclasses.replace(assignment, skip_cells=cells), warm_cache=False)


@pytest.fixture
def ps3(course):
    return course.assignment("ps3")


def test_ps3_skips_its_experiments_and_nothing_else(ps3):
    with Grader(ps3, warm_cache=False) as grader:
        submission = load_submission(ps3.source_notebook)
        kept = {cell.grade_id for cell in grader._as_graded(submission).cells}
    ran = {cell.grade_id for cell in submission.cells}
    assert ran - kept == set(ps3.skip_cells) == {
        "given_comparison", "given_clip_plot", "given_lambda_sweep", "given_sparse", "given_lr_sweep"}
    assert {"softmax", "gae", "ppo_logit_grad", "given_agents"} <= kept


@pytest.mark.parametrize("cell, problem", [
    ("softmax", "not a locked cell without points"),       # a student's solution cell
    ("test_gae", "not a locked cell without points"),      # a test cell, worth points
    ("given_environment", "comes before a solution cell"),  # students' code uses what it defines
    ("no_such_cell", "not a cell of the release"),
])
def test_a_cell_that_student_code_may_need_cannot_be_skipped(ps3, cell, problem):
    with pytest.raises(CourseError, match=problem):
        grader_skipping(ps3, cell)


def as_submitted_but_the_parameter_cell(graded, submission, assignment, student=None) -> bool:
    """Every cell as submitted, but the variants' parameter cell, pinned to the graded student."""
    from rlcourse.course.variants import PARAMETER_CELL, parameter_cell

    pinned = parameter_cell(assignment.name, assignment.variants, student=student or "")
    return (len(graded.cells) == len(submission.cells) and graded.warnings == submission.warnings
            and all(after.source == (pinned if before.grade_id == PARAMETER_CELL else before.source)
                    for before, after in zip(submission.cells, graded.cells)))


def test_an_assignment_without_skip_cells_runs_every_cell(course):
    ps1 = course.assignment("ps1")
    with Grader(ps1, warm_cache=False) as grader:
        submission = load_submission(ps1.source_notebook)
        assert as_submitted_but_the_parameter_cell(grader._as_graded(submission), submission, ps1)
        assert as_submitted_but_the_parameter_cell(grader._as_graded(submission, student="ada"),
                                                   submission, ps1, "ada")


def test_an_edited_given_cell_runs_as_released_and_the_student_is_told(ps1, tmp_path):
    import json

    notebook = json.loads(ps1.release_notebook.read_text())
    given = next(cell for cell in notebook["cells"]
                 if cell["metadata"].get("nbgrader", {}).get("grade_id") == "given_training")
    released = "".join(given["source"])
    given["source"] = "def train(*args, **kwargs):\n    return FAKE_RESULTS\n"
    path = tmp_path / "ps1.ipynb"
    path.write_text(json.dumps(notebook))
    with Grader(ps1, warm_cache=False) as grader:
        graded = grader._as_graded(load_submission(path))
    cell = next(cell for cell in graded.cells if cell.grade_id == "given_training")
    assert cell.source == released
    assert any("given_training" in note and "released version was run" in note
               for note in graded.warnings)


def test_an_untouched_notebook_is_run_as_submitted(ps1):
    with Grader(ps1, warm_cache=False) as grader:
        submission = load_submission(ps1.release_notebook)
        assert as_submitted_but_the_parameter_cell(grader._as_graded(submission, student="grace"),
                                                   submission, ps1, "grace")
