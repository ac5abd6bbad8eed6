"""Concept checks: the right answer passes, each wrong option fails with the tag it names."""
import pytest

from rlcourse.grading.concepts import Choice, Number, grade_answer
from rlcourse.grading.rubric import Failure

CHOICE = Choice("Q", "b", {"a": ("tag_a", "a reveals this"), "c": ("tag_c", "c reveals that")})
NUMBER = Number("N", 0.5, 1e-3, ((0.25, "linear", "0.25 is linear"),))


@pytest.mark.parametrize("given", ["b", " B ", "b\n"])
def test_the_right_letter_passes_whatever_its_case_and_spaces(given):
    grade_answer(CHOICE, given)


@pytest.mark.parametrize("given, tag", [("a", "tag_a"), ("C", "tag_c"), ("d", "bad_output"), (2, "bad_output")])
def test_each_wrong_option_names_its_misconception(given, tag):
    with pytest.raises(Failure) as error:
        grade_answer(CHOICE, given)
    assert error.value.tag == tag


@pytest.mark.parametrize("given", [0.5, 0.5009, 0.4991, 1 / 2])
def test_a_number_within_the_tolerance_passes(given):
    grade_answer(NUMBER, given)


@pytest.mark.parametrize("given, tag", [(0.502, "wrong_value"), (0.2505, "linear"), (0.7, "wrong_value"),
                                        (True, "bad_output"), ("0.5", "bad_output"), (float("nan"), "bad_output")])
def test_a_wrong_number_is_named_only_when_it_matches_a_known_mistake(given, tag):
    with pytest.raises(Failure) as error:
        grade_answer(NUMBER, given)
    assert error.value.tag == tag
