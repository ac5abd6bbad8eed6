"""Answers read from the text of a submission's cells: a literal written before the experiment."""
from types import SimpleNamespace

import pytest

from rlcourse.course.submission import CodeCell
from rlcourse.grading.predictions import answer_from_cell_text, prediction_from_cell_text
from rlcourse.grading.rubric import Failure


def student(*sources_and_ids):
    cells = [CodeCell(index, grade_id, source) for index, (grade_id, source) in enumerate(sources_and_ids)]
    return SimpleNamespace(submission=SimpleNamespace(cells=cells))


def test_the_last_literal_above_the_experiment_is_the_prediction():
    s = student((None, "X = 'a'"), ("predict", "X: str = 'b'\nY = 1"), ("run", "X = 'changed by the run'"))
    assert prediction_from_cell_text(s, "run", "X") == "b"


def test_a_value_set_by_the_experiment_or_later_is_not_a_prediction():
    s = student(("predict", "pass"), ("run", "X = 'seen the result'"), (None, "X = 'later'"))
    with pytest.raises(Failure) as error:
        prediction_from_cell_text(s, "run", "X")
    assert error.value.tag == "missing_name"


@pytest.mark.parametrize("source", ["X = {k: 'a' for k in 'ab'}", "X = compute()", "X = 1 + y"])
def test_a_computed_value_is_refused(source):
    with pytest.raises(Failure) as error:
        prediction_from_cell_text(student(("predict", source), ("run", "")), "run", "X")
    assert error.value.tag == "bad_output"


def test_cells_that_do_not_parse_are_skipped_and_nested_assignments_ignored():
    s = student((None, "%matplotlib inline"), (None, "X = 2"), (None, "def f():\n    X = 3"), ("run", ""))
    assert prediction_from_cell_text(s, "run", "X") == 2


def test_a_concept_answer_is_read_from_its_own_cell_too():
    s = student((None, "Q = 'a'"), ("question", "Q = 'c'  # my answer"), (None, "Q = 'd'"))
    assert answer_from_cell_text(s, "question", "Q") == "c"
