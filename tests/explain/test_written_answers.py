"""The feedback page's written answers: a marked answer shows its score, the rubric's criteria met
and not met and the TA's comment; an unmarked one awaits a TA; the feedback policy decides how
much shows; the model answer never does. Built with ps2's real rubric (four criteria)."""
from pathlib import Path

import pytest

from rlcourse.course.rubrics import Rubrics
from rlcourse.explain.feedback import marks_digest, render_feedback, write_feedback
from rlcourse.grading.grade import Grade
from rlcourse.grading.report import ItemResult, Report
from rlcourse.record.grades import written_answer
from rlcourse.record.marks import Mark

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "</p><script>alert(1)</script>"


@pytest.fixture(scope="module")
def question():
    return Rubrics.read(ROOT / "source/ps2/ps2.ipynb", ROOT / "release/ps2/ps2.ipynb").question("explain_break_it")


def written(question, marks):
    """The answer as the grade of record holds it (rlcourse.record.grades), from its mark."""
    return (written_answer(question.grade_id, question.points, marks.get(question.grade_id), question),)


def page(question, marks, level="full"):
    report = Report("ps2", "ps2.ipynb", [ItemResult("gae.value", 2.0, 2.0, True, "", None, "GAE", "test_gae")])
    return render_feedback(Grade(report, written(question, marks)), student="alan", submission_cells=[],
                           todo_ids=set(), diagnoses={}, figures=[], level=level)


def marked(met=(1, 3), comment="Good on the min."):
    return {"explain_break_it": Mark("explain_break_it", 1.0, 2.0, met, comment)}


def test_a_marked_answer_shows_its_score_criteria_met_and_not_and_the_comment(question):
    shown = page(question, marked())
    assert '<h2 id="written">Written answers</h2>' in shown and "(1 / 2 points)" in shown
    assert shown.count('class="criterion met"') == 2 and shown.count('class="criterion unmet"') == 2
    assert 'class="criterion met" data-criterion="1"' in shown and 'class="criterion unmet" data-criterion="2"' in shown
    assert "Good on the min." in shown and "Awaiting a TA" not in shown
    assert "Marked by a TA: 1 of 1, 1 / 2 points. The total above counts these marks" in shown
    assert 'id="score">3 <small>/ 4' in shown  # 2 autograded points and the mark, of 2 + 2


def test_an_unmarked_answer_awaits_a_ta(question):
    for marks in ({}, {"explain_break_it": Mark("explain_break_it", None, 2.0, None, "")}):
        shown = page(question, marks)
        assert "Awaiting a TA" in shown and "data-criterion" not in shown
        assert "Marked by a TA: 0 of 1. The total above" in shown
        assert 'id="score">2 <small>/ 4' in shown and 'id="pending">2 points' in shown


def test_a_formgrader_mark_without_criteria_shows_the_score_and_the_rubric_unticked(question):
    shown = page(question, marked(met=None, comment="Clear."))
    assert "(1 / 2 points)" in shown and "Clear." in shown and "without ticking these criteria" in shown
    assert shown.count('class="criterion unknown"') == 4 and "✓ met" not in shown


def test_the_model_answer_never_reaches_the_page(question):
    shown = page(question, marked())
    model_lines = [line for line in question.model_answer.splitlines() if len(line) > 30]
    assert model_lines and not any(line in shown for line in model_lines)
    assert "Model answer" not in shown


@pytest.mark.parametrize("level, score, criteria", [("none", False, False), ("score", False, False),
                                                    ("items", True, False), ("full", True, True)])
def test_the_feedback_policy_decides_what_shows(question, level, score, criteria):
    shown = page(question, marked(), level=level)
    assert ("(1 / 2 points)" in shown) == score and ('id="written"' in shown) == score
    assert ("data-criterion" in shown) == criteria and ("Good on the min." in shown) == criteria


def test_a_comment_is_text_and_the_digest_follows_the_marks(question):
    shown = page(question, marked(comment=HOSTILE))
    assert "<script" not in shown and "&lt;script&gt;" in shown
    digests = [marks_digest(written(question, marks)) for marks in (marked(), marked(met=(1,)), {})]
    assert len(set(digests)) == 3
    assert f'name="rlcourse-marks" content="{digests[0]}"' in page(question, marked())


@pytest.mark.browser
def test_met_and_unmet_criteria_render_in_headless_chromium(question, chromium, tmp_path):
    path = write_feedback(tmp_path / "alan.html", page(question, marked(comment=HOSTILE)))
    dom = chromium("--dump-dom", path.as_uri()).stdout
    assert dom.count('class="criterion met"') == 2 and dom.count('class="criterion unmet"') == 2
    assert dom.count("✓ met") == 2 and dom.count("✗ not met") == 2
    assert "(1 / 2 points)" in dom and "<script" not in dom.lower()
