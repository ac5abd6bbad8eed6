"""rlcourse.course.visibility: the feedback policy (levels before and after the due date, and which
items' outcomes wait for it), and everything that shows a student something (the feedback page,
the Gradescope export) going through it. The cut itself, `student_view`, is tested with the
grade it cuts (tests/grading/test_grade.py)."""
import datetime
import json

import pytest

from rlcourse.course.directory import Course, CourseError
from rlcourse.course.lateness import Timing
from rlcourse.course.visibility import FeedbackPolicy, PolicyError, feedback_level, gradescope_visibility
from rlcourse.explain.feedback import render_feedback
from rlcourse.grading.grade import Grade, student_view
from rlcourse.grading.report import ItemResult, Report
from rlcourse.report.export import gradescope_results

DUE = datetime.datetime(2026, 3, 2, 17, 0)
SECRET_MESSAGE = "your clipped objective ignores the min: see the corridor plot"


def report() -> Report:
    return Report("ps1", "ps1.ipynb", [
        ItemResult("policy_loss.value", 4.0, 4.0, True, "", None, "PPO loss value", "test_policy_loss"),
        ItemResult("policy_loss.clip", 6.0, 0.0, False, SECRET_MESSAGE, "clip_without_min",
                   "clipping both signs", "test_policy_loss")],
        errors=["cell 7 raised NameError"], artifacts={"curve": [1, 2, 3]})


def grade(timing=None) -> Grade:
    return Grade(report(), timing=timing)


def page(view_level: str, timing=None) -> str:
    return render_feedback(grade(timing), student="alan", submission_cells=[], todo_ids=set(), diagnoses={},
                           figures=[], level=view_level)


class TestDecision:
    policy = FeedbackPolicy(before_due="score", after_due="full")

    def test_before_and_after_the_deadline(self):
        assert feedback_level(self.policy, deadline=DUE, now=DUE - datetime.timedelta(seconds=1)) == "score"
        assert feedback_level(self.policy, deadline=DUE, now=DUE) == "full"

    def test_an_extension_moves_the_deadline_and_no_due_date_is_after_due(self):
        extended = DUE + datetime.timedelta(days=2)
        assert feedback_level(self.policy, deadline=extended, now=DUE + datetime.timedelta(days=1)) == "score"
        assert feedback_level(self.policy, deadline=None, now=DUE) == "full"

    def test_each_level_shows_only_its_part(self):
        at = {level: student_view(grade(), level=level) for level in ("none", "score", "items", "full")}
        assert (at["none"].score, at["none"].items, at["none"].errors) == (None, [], [])
        assert (at["score"].score, at["score"].max_score, at["score"].items) == (4.0, 10.0, [])
        assert [(i.id, i.score, i.message, i.diagnosis) for i in at["items"].items] == [
            ("policy_loss.value", 4.0, "", None), ("policy_loss.clip", 0.0, "", None)]
        assert at["items"].errors == [] and at["items"].artifacts == {}
        assert at["full"].items[1].message == SECRET_MESSAGE and at["full"].errors
        assert report().items[1].message == SECRET_MESSAGE  # the report itself is untouched

    def test_the_view_follows_the_clock_when_no_level_is_given(self):
        now = datetime.datetime(2030, 1, 1)
        assert student_view(grade(), policy=self.policy, deadline=DUE, now=now).level == "full"
        assert student_view(grade(), policy=self.policy, deadline=now, now=DUE).level == "score"


class TestPolicyInAssignmentToml:
    def test_the_feedback_table_is_read_and_checked(self, tmp_path):
        (tmp_path / "nbgrader_config.py").write_text("")
        (tmp_path / "graders" / "ps9").mkdir(parents=True)
        spec = tmp_path / "graders" / "ps9" / "assignment.toml"
        spec.write_text('notebook = "ps9.ipynb"\nframework = "numpy"\n[feedback]\nbefore_due = "items"\n')
        assert Course(tmp_path).assignment("ps9").feedback == FeedbackPolicy("items", "full")
        spec.write_text('notebook = "ps9.ipynb"\nframework = "numpy"\n[feedback.kinds]\nconcept = "visible"\n'
                        '[feedback.items]\n"exercises.horizon_change" = "after_due"\n'
                        '"horizon.prediction" = "visible"\n')
        policy = Course(tmp_path).assignment("ps9").feedback
        assert policy.when(ItemResult("concepts.q1", 1.0, kind="concept")) == "visible"
        assert policy.when(ItemResult("horizon.prediction", 1.0, kind="prediction")) == "visible"
        assert policy.when(ItemResult("exercises.horizon_change", 1.0, kind="code")) == "after_due"
        assert policy.when(ItemResult("exercises.other", 1.0, kind="value")) == "after_due"
        spec.write_text('notebook = "ps9.ipynb"\nframework = "numpy"\n[feedback]\nbefore_due = "all"\n')
        with pytest.raises(CourseError, match="before_due = 'all'"):
            Course(tmp_path).assignment("ps9")

    def test_unknown_keys_are_refused(self):
        with pytest.raises(PolicyError, match="unknown key"):
            FeedbackPolicy.from_table({"after": "full"})
        with pytest.raises(PolicyError, match="unknown kind 'essay'"):
            FeedbackPolicy.from_table({"kinds": {"essay": "visible"}})
        with pytest.raises(PolicyError, match="'later'"):
            FeedbackPolicy.from_table({"items": {"concepts.q1": "later"}})


class TestDefaults:
    def test_answers_a_student_could_try_wait_for_the_due_date_and_code_does_not(self):
        policy = FeedbackPolicy()
        when = {kind: policy.when(ItemResult("x", 1.0, kind=kind)) for kind in ("code", "value", "prediction", "concept")}
        assert when == {"code": "visible", "value": "after_due", "prediction": "after_due", "concept": "after_due"}

    def test_every_course_item_of_a_kind_that_waits_is_a_prediction_concept_or_value(self, course):
        """The course's graders mark what each item grades: every prediction and concept check of
        ps1-ps3 is sealed by default, and no function's item is."""
        for name in ("ps1", "ps2", "ps3"):
            kinds = {item_id: kind for item_id, kind in _kinds(course.assignment(name))}
            assert {kinds[i] for i in kinds if "predict" in i or i.startswith("concepts.")} <= {"prediction", "concept"}, name
            assert any(kind == "prediction" for kind in kinds.values()), name
            assert any(kind == "concept" for kind in kinds.values()), name


class TestFeedbackPage:
    def test_score_level_shows_the_total_and_nothing_of_the_items(self):
        html = page("score")
        assert 'id="score">4 <small>/ 10' in html
        assert "clip_without_min" not in html and SECRET_MESSAGE not in html
        assert "clipping both signs" not in html and "NameError" not in html

    def test_items_level_shows_titles_and_points_but_no_messages(self):
        html = page("items")
        assert "clipping both signs" in html and "0 / 6" in html
        assert SECRET_MESSAGE not in html and "clip_without_min" not in html

    def test_none_level_shows_no_score(self):
        html = page("none")
        assert 'id="score"' not in html and "not available yet" in html

    def test_full_level_and_a_late_penalty(self):
        timing = Timing(timestamp=DUE + datetime.timedelta(hours=1, minutes=5), duedate=DUE, extension=None,
                        seconds_late=3900.0, penalty=0.8, raw_score=4.0, max_score=10.0)
        html = page("full", timing)
        assert SECRET_MESSAGE in html and "clip_without_min" in html
        assert 'id="score">3.2 <small>/ 10' in html and "<dd>1 h 5 min</dd>" in html
        assert "<dt>Late penalty</dt><dd>0.8 points</dd>" in html


def _kinds(assignment):
    """(item id, kind) of every item the assignment's graders declare (collected, not run)."""
    from rlcourse.grading.pipeline import item_catalogue

    return [(item.id, item.kind) for item in item_catalogue(assignment)]


class TestGradescope:
    def test_default_policy_shows_everything_at_once(self):
        results = gradescope_results(grade())
        assert {test["visibility"] for test in results["tests"]} == {"visible"}
        assert results["visibility"] == "visible" and len(results["tests"]) == 2
        assert SECRET_MESSAGE in results["tests"][1]["output"]

    def test_score_before_full_after(self):
        results = gradescope_results(grade(), policy=FeedbackPolicy("score", "full"))
        assert results["visibility"] == "visible"
        assert {test["visibility"] for test in results["tests"]} == {"after_due_date"}
        assert SECRET_MESSAGE in json.dumps(results["tests"])
        assert "NameError" not in results.get("output", "")

    def test_items_before_full_after_splits_the_message_off(self):
        results = gradescope_results(grade(), policy=FeedbackPolicy("items", "full"))
        visible = [test for test in results["tests"] if test["visibility"] == "visible"]
        later = [test for test in results["tests"] if test["visibility"] == "after_due_date"]
        assert [test["score"] for test in visible] == [4.0, 0.0]
        assert SECRET_MESSAGE not in json.dumps(visible)
        assert SECRET_MESSAGE in json.dumps(later) and all(test["max_score"] == 0 for test in later)

    def test_never_shown_items_are_hidden_and_a_never_shown_total_waits_for_publishing(self):
        results = gradescope_results(grade(), policy=FeedbackPolicy("none", "score"))
        assert results["visibility"] == "after_due_date"
        assert {test["visibility"] for test in results["tests"]} == {"hidden"}
        # staff still read the messages in Gradescope; students never see a hidden test
        assert SECRET_MESSAGE not in json.dumps({k: v for k, v in results.items() if k != "tests"})
        assert gradescope_results(grade(), policy=FeedbackPolicy("none", "none"))["visibility"] == "after_published"

    def test_the_visibility_values_are_gradescopes(self):
        for before in ("none", "score", "items", "full"):
            for after in ("none", "score", "items", "full"):
                for what in ("score", "items", "full"):
                    assert gradescope_visibility(FeedbackPolicy(before, after), what) in (
                        "visible", "after_due_date", "hidden")
