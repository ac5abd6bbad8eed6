"""Every number the feedback page states is this student's (issue 30, item 3).

A bank entry with failures (buggy_loss_sign: its loss goes the wrong way, so both training items
and exercise 1 lose with training_not_improving, each stating a threshold) is graded for real as
a student none of whose values are the defaults, and its page is rendered. The thresholds, the
rewards and the clip it states must be that student's: before, the documented summary said "did
not reach an exact return of 0.9" to a student whose threshold was 0.786, and the clipping
figure's band read "1 ± 0.25" whatever the student's eps. A default value may still appear where
the text says it is the default ("0.9 with the default rewards"); nowhere else.
"""
import html
import re
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entry, reference_student
from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.course.solutions import load_solution
from rlcourse.course.submission import load_submission
from rlcourse.explain.feedback import assignment_figures, render_feedback, todo_cell_ids
from rlcourse.grading.grade import Grade
from rlcourse.grading.rubric import fmt

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "tests" / "bank" / "ps1" / "buggy_loss_sign.py"
GOOD_WITH_THE_DEFAULTS = 0.9
"""graders/ps1/test_training.py's GOOD: the final return asked with the default rewards."""

pytestmark = pytest.mark.slow


def student_far_from_the_defaults(ps1) -> tuple[str, dict]:
    """The first of student00, student01, ... none of whose values is a default, whose goal
    reward is not 0.9 either (so a stray default threshold of 0.9 cannot pass for it)."""
    defaults = ps1.variants.defaults
    for n in range(1000):
        student = f"student{n:02d}"
        values = ps1.parameters(student)
        if all(values[name] != defaults[name] for name in defaults) and values["goal_reward"] != 0.9:
            return student, values
    raise AssertionError("no student id far from the defaults")


@pytest.fixture(scope="module")
def graded_page(ps1, tmp_path_factory):
    from rlcourse.grading.pipeline import Grader

    student, values = student_far_from_the_defaults(ps1)
    base = reference_student(ps1.source_notebook, ps1.release_notebook)
    path = tmp_path_factory.mktemp("own-values") / "ps1.ipynb"
    path.write_bytes(build_submission(load_entry(ENTRY), base))
    with Grader(ps1) as grader:
        report = grader.grade(path, student=student)
    page = render_feedback(Grade(report), student=student, submission_cells=load_submission(path).cells,
                           todo_ids=todo_cell_ids(ps1.release_notebook),
                           diagnoses=load_diagnoses(ps1.grader_dir),
                           figures=assignment_figures(ps1, report))
    return report, page, values


def card_texts(page: str) -> list[str]:
    """The text of each failed item's card (its message, the documented summary and fix),
    without markup and without the student's own code."""
    cards = re.findall(r'<section class="card".*?</section>', page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<pre.*?</pre>", " ", card, flags=re.S)))
            for card in cards]


def numbers_not_said_to_be_defaults(text: str) -> list[float]:
    """The numbers of `text` outside any parenthesis or sentence that says it is about the
    defaults."""
    text = re.sub(r"\([^()]*default[^()]*\)", " ", text)
    sentences = [s for s in re.split(r"(?<=[.;])\s", text) if "default" not in s]
    return [float(n) for s in sentences for n in re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?", s)]


def test_the_student_is_graded_with_their_own_values(graded_page, ps1):
    report, _, values = graded_page
    assert report.parameters == values
    assert {item.id: item.diagnosis for item in report.failed()} == load_entry(ENTRY).loses


def test_every_threshold_stated_is_the_students(graded_page):
    report, page, values = graded_page
    exact = load_solution(ROOT, "ps1", "exact").for_parameters(values)
    threshold = exact.at_progress(exact.progress(GOOD_WITH_THE_DEFAULTS, corridor=exact.DEFAULT))
    training = [item for item in report.failed() if item.diagnosis == "training_not_improving"]
    assert len(training) == 3
    for item in training:
        assert fmt(threshold, 4) in item.message, item.message
    for item in report.failed():
        if item.id.startswith("training."):
            assert f"step cost {values['step_cost']:g} and goal reward {values['goal_reward']:g}" in item.message


def test_no_default_value_is_stated_as_the_students(graded_page):
    """The defaults' threshold (0.9), the defaults' best and uniform returns (0.985, 0.466875),
    step cost (-0.01), clip (0.2) and seed (11) appear in no failed item's card, except where
    the text says they are the defaults'."""
    _, page, values = graded_page
    defaults_only = {GOOD_WITH_THE_DEFAULTS, 0.985, 0.466875, 0.4669, -0.01, 0.2, 11.0}
    cards = card_texts(page)
    assert len(cards) >= 3
    stated = {number for card in cards for number in numbers_not_said_to_be_defaults(card)}
    assert stated & defaults_only == set(), cards
    assert f"{values['step_cost']:g}" in page and f"{values['goal_reward']:g}" in page


def test_the_figures_are_drawn_at_the_students_clip_and_rewards(graded_page):
    report, page, values = graded_page
    assert report.artifacts["clip_objective"]["clip"] == values["clip"]
    assert report.artifacts["training"]["rewards"] == {"step_cost": values["step_cost"],
                                                       "goal_reward": values["goal_reward"]}
    assert page.count('src="data:image/png;base64,') == 2
