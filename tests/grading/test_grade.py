"""rlcourse.grading.grade: the grade of record (one total, one basis) and what a student may see of
it before and after the due date."""
import datetime
import json

from rlcourse.course.lateness import Timing
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.explain.feedback import render_feedback
from rlcourse.grading.grade import AWAITING, MARKED, REMARKING, Grade, Override, Written, student_view
from rlcourse.grading.report import ItemResult, Report

DUE = datetime.datetime(2026, 3, 2, 17, 0)
BEFORE, AFTER = DUE - datetime.timedelta(hours=1), DUE + datetime.timedelta(hours=1)
FIX_LINE = "ratio = jnp.exp(new_logp - old_logp)"


def items(*, prediction: str = "a", concept_right: bool = True) -> list[ItemResult]:
    """A code item that failed (with a remedy), a prediction and a concept check graded from what
    the student wrote, and a value exercise whose answer the failure message states."""
    right_prediction = prediction == "a"
    return [
        ItemResult("loss.value", 4.0, 4.0, True, title="loss value", cell="test_loss"),
        ItemResult("loss.ratio", 3.0, 0.0, False, "policy_loss gave 0.4 for a ratio of 1.2. It should be 0.6.",
                   "ratio_inverted", "the ratio", "test_loss", fix=FIX_LINE),
        ItemResult("predictions.kl", 2.0, 2.0 if right_prediction else 0.0, right_prediction,
                   "" if right_prediction else f"you predicted {prediction!r}. The KL grows.",
                   None if right_prediction else "prediction_clip_not_the_limit",
                   "the KL, predicted", "test_predict", kind="prediction"),
        ItemResult("concepts.q1", 1.0, 1.0 if concept_right else 0.0, concept_right,
                   "" if concept_right else "you chose 'c'. The answer is about the min.",
                   None if concept_right else "concept_min_pushes_away", "Q1", "test_concepts", kind="concept"),
        ItemResult("exercises.horizon", 1.0, 0.0, False, "short gave 0.3. It should be 0.485.", "wrong_value",
                   "horizon 2", "test_exercise_horizon", kind="value"),
    ]


def grade(*, written=(), overrides=(), timing=None, **answers) -> Grade:
    return Grade(Report("ps1", "ps1.ipynb", items(**answers)), tuple(written), tuple(overrides), timing)


class TestOneTotalOneBasis:
    def test_written_answers_count_in_the_maximum_and_their_marks_in_the_total(self):
        graded = grade(written=[Written("explain_clipping", 2.0, 1.0, MARKED),
                                Written("explain_gae", 2.0)])
        assert (graded.auto_score, graded.auto_max) == (7.0, 11.0)
        assert (graded.raw_score, graded.max_score, graded.pending) == (8.0, 15.0, 2.0)

    def test_a_mark_being_redone_still_counts_and_its_points_are_pending(self):
        graded = grade(written=[Written("explain_clipping", 2.0, 0.0, REMARKING)])
        assert (graded.raw_score, graded.max_score, graded.pending) == (7.0, 13.0, 2.0)

    def test_a_tas_override_of_a_cell_replaces_its_items_total(self):
        graded = grade(overrides=[Override("test_loss", graded=4.0, recorded=6.5)])
        assert graded.auto_score == 9.5 and graded.raw_score == 9.5

    def test_the_late_penalty_is_taken_from_the_whole_raw_score(self):
        timing = Timing(timestamp=AFTER, duedate=DUE, extension=None, seconds_late=3600.0, penalty=1.5,
                        raw_score=9.0, max_score=13.0)
        graded = grade(written=[Written("explain_clipping", 2.0, 2.0, MARKED)], timing=timing)
        assert (graded.raw_score, graded.penalty, graded.score, graded.max_score) == (9.0, 1.5, 7.5, 13.0)
        data = graded.to_json()
        assert (data["score"], data["max_score"], data["raw_score"], data["late_penalty"]) == (7.5, 13.0, 9.0, 1.5)
        assert data["written"] == [{"id": "explain_clipping", "max_score": 2.0, "score": 2.0, "state": "marked",
                                    "criteria": [], "comment": ""}]
        assert sum(item["score"] for item in data["items"]) == data["auto_score"] == 7.0


class TestBeforeTheDueDate:
    policy = FeedbackPolicy()

    def view(self, when, **answers):
        return student_view(grade(written=[Written("explain_clipping", 2.0)], **answers), policy=self.policy,
                            deadline=DUE, now=when)

    def test_predictions_concepts_and_values_show_only_that_an_answer_was_recorded(self):
        view = self.view(BEFORE)
        sealed = {item.id: item for item in view.items if item.sealed}
        assert set(sealed) == {"predictions.kl", "concepts.q1", "exercises.horizon"}
        assert all(item.score is None and item.passed is None and not item.message and item.diagnosis is None
                   for item in sealed.values())
        assert "0.485" not in json.dumps(view.to_json())  # the value exercise's expected value

    def test_their_points_are_left_out_of_the_total_shown(self):
        view = self.view(BEFORE)
        assert (view.score, view.max_score, view.sealed_points, view.pending) == (4.0, 9.0, 4.0, 2.0)
        after = self.view(AFTER)
        assert (after.score, after.max_score, after.sealed_points) == (7.0, 13.0, 0.0)
        assert not any(item.sealed for item in after.items)

    def test_two_answers_that_differ_only_in_sealed_items_look_the_same(self):
        right = self.view(BEFORE).to_json()
        slower = grade(written=[Written("explain_clipping", 2.0)], prediction="c", concept_right=False)
        for item in slower.report.items:  # a wrong answer's path may take longer: not shown
            item.seconds = 1.5
        wrong = student_view(slower, policy=self.policy, deadline=DUE, now=BEFORE).to_json()
        assert right == wrong
        assert self.view(AFTER).to_json() != self.view(AFTER, prediction="c", concept_right=False).to_json()
        assert grade().raw_score - grade(prediction="c", concept_right=False).raw_score == 3.0

    def test_no_remedy_before_the_due_date_but_the_misconception_stays(self):
        before = {item.id: item for item in self.view(BEFORE).items}
        assert before["loss.ratio"].fix == "" and before["loss.ratio"].diagnosis == "ratio_inverted"
        assert "ratio of 1.2" in before["loss.ratio"].message
        assert {item.id: item for item in self.view(AFTER).items}["loss.ratio"].fix == FIX_LINE

    def test_an_answer_that_cannot_be_read_says_so_before_the_due_date(self):
        unreadable = grade()
        unreadable.report.items[2] = ItemResult("predictions.kl", 2.0, 0.0, False,
                                                "No cell above the experiment assigns KL_PREDICTION.",
                                                "missing_name", kind="prediction")
        view = student_view(unreadable, policy=self.policy, deadline=DUE, now=BEFORE)
        shown = {item.id: item for item in view.items}["predictions.kl"]
        assert shown.diagnosis == "missing_name" and "assigns KL_PREDICTION" in shown.message

    def test_an_item_the_policy_opens_is_shown_and_a_code_item_it_closes_waits(self):
        policy = FeedbackPolicy.from_table({"items": {"exercises.horizon": "visible", "loss.ratio": "after_due"}})
        view = student_view(grade(), policy=policy, deadline=DUE, now=BEFORE)
        shown = {item.id: item for item in view.items}
        assert shown["exercises.horizon"].score == 0.0 and shown["loss.ratio"].score is None

    def test_no_due_date_means_after_it(self):
        view = student_view(grade(), policy=self.policy, deadline=None, now=BEFORE)
        assert not view.before_due and not any(item.sealed for item in view.items)


class TestWrittenAnswersAsShown:
    def test_a_mark_being_redone_shows_no_old_criteria_or_comment(self):
        from rlcourse.grading.grade import Criterion

        redone = Written("explain_clipping", 2.0, 0.0, REMARKING, criteria=(Criterion(1, 1.0, "names the min", False),),
                         comment="missing the min")
        view = student_view(grade(written=[redone]), level="full")
        assert view.written[0].criteria == () and view.written[0].comment == ""
        assert view.written[0].state == REMARKING and view.written[0].score == 0.0

    def test_the_items_level_shows_the_state_but_not_the_criteria(self):
        from rlcourse.grading.grade import Criterion

        marked = Written("explain_clipping", 2.0, 1.0, MARKED, criteria=(Criterion(1, 1.0, "names the min", True),),
                         comment="good")
        view = student_view(grade(written=[marked, Written("explain_gae", 2.0)]), level="items")
        assert [(answer.state, answer.criteria, answer.comment) for answer in view.written] == [
            (MARKED, (), ""), (AWAITING, (), "")]


class TestTheFeedbackPage:
    def page(self, when, **answers):
        return render_feedback(grade(written=[Written("explain_clipping", 2.0, 0.0, REMARKING,
                                                      answer="The min removes the incentive.")], **answers),
                               student="alan", submission_cells=[], todo_ids=set(),
                               diagnoses={}, figures=[], policy=FeedbackPolicy(), deadline=DUE, now=when)

    def test_before_the_due_date_the_page_is_the_same_for_a_right_and_a_wrong_prediction(self):
        assert self.page(BEFORE) == self.page(BEFORE, prediction="c", concept_right=False)
        assert self.page(AFTER) != self.page(AFTER, prediction="c", concept_right=False)

    def test_the_page_states_the_total_the_sealed_points_and_the_re_marking(self):
        html = self.page(BEFORE)
        assert 'id="score">4 <small>/ 9' in html and 'id="sealed-total">4 more points' in html
        assert 'id="pending">2 points of written answers await a TA' in html
        assert 'data-state="re-marking"' in html and "Re-marking" in html
        assert "The min removes the incentive." in html  # the student can confirm what arrived
        assert "Answer recorded: graded after the due date" in html
        assert FIX_LINE not in html and 'id="fixes-later"' in html
        after = self.page(AFTER)
        assert 'id="score">7 <small>/ 13' in after and FIX_LINE in after and "sealed-total" not in after
