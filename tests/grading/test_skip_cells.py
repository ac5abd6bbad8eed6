"""`skip_cells`: an assignment's demonstration cells that grading does not run. Only locked
cells after every solution cell qualify, so skipping one can never break a student's code."""
import dataclasses

import pytest

from rlcourse.course import CourseError
from rlcourse.grading.pipeline import Grader
from rlcourse.notebook import load_submission


def grader_skipping(assignment, *cells):
    return Grader(dataclasses.replace(assignment, skip_cells=cells), warm_cache=False)


@pytest.fixture
def ps3(course):
    return course.assignment("ps3")


def test_ps3_skips_its_experiments_and_nothing_else(ps3):
    with Grader(ps3, warm_cache=False) as grader:
        submission = load_submission(ps3.source_notebook)
        kept = {cell.grade_id for cell in grader._without_skipped_cells(submission).cells}
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


def test_an_assignment_without_skip_cells_runs_every_cell(course):
    ps1 = course.assignment("ps1")
    with Grader(ps1, warm_cache=False) as grader:
        submission = load_submission(ps1.source_notebook)
        assert grader._without_skipped_cells(submission) is submission
