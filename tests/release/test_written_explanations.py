"""ps2 and ps3 each ask for two written explanations (issue 30), each after the run of an experiment
a graded prediction is about, so that the student explains what they predicted and then saw; each
has a model answer and a rubric a TA can mark with, and their points count in the gradebook's
total (nbgrader's manually graded cells)."""
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.directory import Course
from rlcourse.course.release import Release, grade_id_of
from rlcourse.course.rubrics import Rubrics

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)

RUN_CELLS = {"ps2": ("break_it_lab",), "ps3": ("given_lambda_sweep", "given_sparse")}
"""The cells that run the experiments ps2's and ps3's graded predictions are about."""


@pytest.mark.parametrize("name", sorted(RUN_CELLS))
def test_two_written_explanations_each_after_a_predicted_run(name):
    assignment = COURSE.assignment(name)
    rubrics = Rubrics.read(assignment.source_notebook, assignment.release_notebook)
    assert len(rubrics.questions) == 2
    for question in rubrics.questions:
        assert question.usable and question.points == 2 and question.model_answer, question.grade_id
        assert question.prompt.strip() and "**Rubric**" not in question.prompt, question.grade_id
    order = [grade_id_of(cell) for cell in nbformat.read(assignment.release_notebook, as_version=4).cells]
    runs = sorted(order.index(cell) for cell in RUN_CELLS[name])
    answers = sorted(order.index(grade_id) for grade_id in rubrics.ids)
    # Every run is explained before the next one starts, and nothing is explained before a run.
    for run, next_run in zip(runs, [*runs[1:], len(order)]):
        assert any(run < answer < next_run for answer in answers), order[run]
    assert answers[0] > runs[0]


@pytest.mark.parametrize("name", sorted(RUN_CELLS))
def test_the_written_answers_count_in_the_release(name):
    """The release holds each answer as nbgrader's manually graded cell with its points, so the
    gradebook's maximum includes them (4 of ps2's 55 points and of ps3's 42)."""
    release = Release.read(COURSE.assignment(name).release_notebook)
    assert [points for _, points in release.written] == [2.0, 2.0]
