"""rlcourse.record.grades: the grade of record read from nbgrader's gradebook is nbgrader's own
total, whatever changed it (autograde, a TA's mark, a mark being redone, a formgrader override,
the late penalty), and every export states it. Recorded through the real `autograde` and gradebook
with reports made in advance (tests/marking.py): no student code runs."""
import csv
import datetime

import pytest
from marking import FIRST_ANSWER, QUESTION, REWRITTEN, copy_class, make_course, mark_by_hand, new_class, submit

from rlcourse.grading.report import ItemResult, Report

DUE = datetime.datetime(2026, 3, 2, 17, 0)


class PartlyRight:
    """`autograde`'s backend: each submission's report is ready, 2 of policy_loss's 3 points and
    every other test cell empty (what is recorded is under test, not how code is graded)."""

    def grade(self, jobs):
        for job in jobs:
            yield job, Report("ps1", "ps1.ipynb", [
                ItemResult("policy_loss.value", 2.0, 2.0, True, cell="test_policy_loss"),
                ItemResult("policy_loss.gradient", 1.0, 0.0, False, "gave 0", "loss_sign",
                           cell="test_policy_loss"),
                ItemResult("horizon.prediction", 1.0, 0.0, False, "you predicted 3",
                           "prediction_reachable_is_enough", cell="test_predict_flip_horizon",
                           kind="prediction")])

    def close(self):
        pass


def record(assignment, class_dir):
    from rlcourse.batch.autograde import autograde

    return {outcome.student: outcome for outcome in autograde(
        assignment, class_dir=class_dir, progress=False, grading=PartlyRight(), log=lambda message: None)}


def nbgrader_totals(class_dir, student):
    """(score, max_score, late penalty) as nbgrader's own API computes them."""
    from rlcourse.record.gradebook import open_gradebook

    with open_gradebook(class_dir.db_url) as gradebook:
        submission = gradebook.find_submission("ps1", student)
        notebook = gradebook.find_submission_notebook("ps1", "ps1", student)
        return (float(submission.score), float(submission.max_score),
                float(notebook.late_submission_penalty or 0.0))


def class_grade(assignment, class_dir, student):
    from rlcourse.record.grades import class_grades

    return class_grades(class_dir, assignment)[student]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """ada and bob autograded (2 of 42 automatic points each), bob 2 h late against the due date."""
    from rlcourse.record.gradebook import open_gradebook

    folder = tmp_path_factory.mktemp("grades")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {"ada": FIRST_ANSWER, "bob": FIRST_ANSWER})
    (class_dir.submitted / "bob" / "ps1" / "timestamp.txt").write_text("2026-03-02 19:00:00.000000 UTC")
    (class_dir.submitted / "ada" / "ps1" / "timestamp.txt").write_text("2026-03-02 12:00:00.000000 UTC")
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=DUE)
    record(assignment, class_dir)
    return assignment, class_dir, folder


@pytest.fixture
def course(recorded, tmp_path):
    assignment, class_dir, folder = recorded
    return assignment, copy_class(class_dir, tmp_path / "class"), folder


def test_the_grade_is_nbgraders_total_on_one_basis(course):
    assignment, class_dir, _ = course
    for student in ("ada", "bob"):
        grade = class_grade(assignment, class_dir, student)
        score, max_score, penalty = nbgrader_totals(class_dir, student)
        assert (grade.raw_score, grade.max_score, grade.penalty) == (score, max_score, penalty)
        assert grade.max_score == 46.0 and grade.pending == 4.0  # both written answers await a TA
    bob = class_grade(assignment, class_dir, "bob")
    # 2 h late under the course's 10% per started hour: taken from the same 2 points shown
    assert (bob.raw_score, bob.penalty, bob.score) == (2.0, 0.4, 1.6)


def test_a_mark_counts_at_once_and_a_rewritten_answer_is_pending_again(course):
    assignment, class_dir, folder = course
    mark_by_hand(assignment, class_dir, "ada", "1;2", folder=folder)
    ada = class_grade(assignment, class_dir, "ada")
    assert (ada.raw_score, ada.pending) == (nbgrader_totals(class_dir, "ada")[0], 2.0) == (4.0, 2.0)
    assert {answer.grade_id: answer.state for answer in ada.written} == {
        QUESTION: "marked", "explain_flip_horizon": "awaiting"}
    submit(class_dir, "ada", REWRITTEN)
    record(assignment, class_dir)
    ada = class_grade(assignment, class_dir, "ada")
    # the old mark still counts in nbgrader's total, and its points are pending again
    assert (ada.raw_score, ada.pending) == (nbgrader_totals(class_dir, "ada")[0], 4.0) == (4.0, 4.0)
    assert {answer.grade_id: answer.state for answer in ada.written}[QUESTION] == "re-marking"


def test_a_formgrader_override_of_a_test_cell_is_the_total(course):
    from rlcourse.record.gradebook import open_gradebook

    assignment, class_dir, _ = course
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.find_grade("test_policy_loss", "ps1", "ps1", "ada").manual_score = 11.0
        gradebook.db.commit()
    ada = class_grade(assignment, class_dir, "ada")
    assert ada.auto_score == ada.raw_score == nbgrader_totals(class_dir, "ada")[0] == 11.0
    assert [(o.cell, o.graded, o.recorded) for o in ada.overrides] == [("test_policy_loss", 2.0, 11.0)]


def test_the_csv_export_keeps_nbgraders_columns_and_says_what_is_pending(course):
    from rlcourse.report.export import export

    assignment, class_dir, folder = course
    mark_by_hand(assignment, class_dir, "ada", "2", folder=folder)
    with open(export(assignment, class_dir=class_dir, format="csv"), newline="") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    assert float(rows["ada"]["score"]) == 3.0 and float(rows["ada"]["max_score"]) == 46.0
    assert float(rows["ada"]["explain_clipping"]) == 1.0 and rows["ada"]["explain_flip_horizon"] == ""
    assert float(rows["ada"]["manual_pending"]) == 2.0 and float(rows["bob"]["manual_pending"]) == 4.0
    assert (float(rows["bob"]["score"]), float(rows["bob"]["raw_score"]),
            float(rows["bob"]["late_submission_penalty"])) == (1.6, 2.0, 0.4)


def test_the_feedback_page_and_the_class_report_state_the_same_total(course):
    assignment, class_dir, _ = course
    page = (class_dir.feedback / "bob" / "ps1" / "ps1.html").read_text()
    assert 'id="score">1.6 <small>/ 46' in page and "after a late penalty of 0.4" in page
    assert 'id="pending">4 points of written answers await a TA' in page
    from rlcourse.report.class_outputs import write_class_outputs

    summary = write_class_outputs(assignment, class_dir)["TA report"].read_text()
    assert '<tr data-student="bob"><td>bob</td><td class="num">1.6 / 46</td><td class="num pending">4</td>' in summary


def test_a_page_written_before_the_deadline_seals_the_prediction_and_the_next_run_after_it_opens_it(tmp_path):
    """`nbgrader release_feedback` hands out whatever page autograde wrote: one written before a
    student's deadline shows that the prediction was recorded, nothing more; the first run after
    the deadline draws the page again in full, grading nothing."""
    from rlcourse.record.gradebook import open_gradebook

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": FIRST_ANSWER})
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow)
    record(assignment, class_dir)
    page = class_dir.feedback / "ada" / "ps1" / "ps1.html"
    before = page.read_text()
    assert "Answer recorded: graded after the due date" in before
    assert "prediction_reachable_is_enough" not in before and 'id="sealed-total">1 more point' in before
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow - datetime.timedelta(days=2))
    assert record(assignment, class_dir)["ada"].status == "late policy updated"  # the due date moved
    after = page.read_text()
    assert "prediction_reachable_is_enough" in after and "sealed-total" not in after
