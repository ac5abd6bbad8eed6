"""The regrade requests' store (rlcourse.record.requests): one open request per cell, enforced
by SQLite itself; a request answered once; a thread that only grows; the window of each cell
from the feedback policy and `[regrades]`; and an accepted request's score in nbgrader's
gradebook with its audit-log entry (rlcourse.batch.regrade_requests), on a class recorded with
reports made in advance (tests/marking.py): no student code runs."""
import datetime
import json
import sqlite3

import pytest

from rlcourse.course.config import CourseError, RegradePolicy
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.record.requests import (ACCEPTED, AUTOGRADED, DECLINED, OPEN, WRITTEN, RegradeRequests,
                                      RequestRefused, Target, Window, find_target, targets, window_of)

DAY = datetime.timedelta(days=1)
MOMENT = datetime.datetime(2026, 12, 1, 12, 0)


def target(cell="test_returns_to_go", *, opens=MOMENT - DAY, days=7, kind=AUTOGRADED):
    return Target(cell, kind, "returns", ("returns",), 1.0, 1.0, 4.0, Window(opens, opens + days * DAY))


def test_a_second_open_request_on_the_same_cell_is_refused_by_the_store_itself(tmp_path):
    with RegradeRequests(tmp_path) as store:
        first = store.open(student="ada", assignment="ps1", target=target(), item="returns", reason="My loop is right.",
                           now=MOMENT)
        assert (first.state, first.cell, first.item, first.before, first.max_score) == (OPEN, "test_returns_to_go",
                                                                                       "returns", 1.0, 4.0)
        with pytest.raises(RequestRefused) as refused:
            store.open(student="ada", assignment="ps1", target=target(), item="test_returns_to_go",
                       reason="Again.", now=MOMENT)
        assert refused.value.status == 409
        # Not only the method: SQLite's partial unique index refuses a raw second open row.
        with pytest.raises(sqlite3.IntegrityError):
            store.connection.execute("INSERT INTO requests (student, assignment, cell, item, kind, opened, max_score) "
                                     "VALUES ('ada', 'ps1', 'test_returns_to_go', 'x', 'autograded', 'now', 4)")
        # Another student, another assignment or another cell are their own.
        store.open(student="alan", assignment="ps1", target=target(), item="returns", reason="Mine too.", now=MOMENT)
        store.open(student="ada", assignment="ps1", target=target("explain_clipping", kind=WRITTEN),
                   item="explain_clipping", reason="Criterion 2 is met.", now=MOMENT)
        # Once answered, the cell may be asked about again; the answer cannot be changed.
        store.answer(first.id, accept=False, by="prof", text="The grader is right: gamma is applied twice.",
                     now=MOMENT)
        again = store.open(student="ada", assignment="ps1", target=target(), item="returns", reason="Look again?",
                           now=MOMENT)
        assert again.id != first.id and again.state == OPEN
        with pytest.raises(sqlite3.IntegrityError, match="answered once"):
            store.connection.execute("UPDATE requests SET state = 'accepted' WHERE id = ?", (first.id,))
        with pytest.raises(sqlite3.IntegrityError, match="never deleted"):
            store.connection.execute("DELETE FROM messages")


def test_states_thread_and_refusals(tmp_path):
    with RegradeRequests(tmp_path) as store:
        opened = store.open(student="ada", assignment="ps1", target=target(), item="returns",
                            reason="  The test expects the undiscounted sum.  ", now=MOMENT)
        store.reply(opened.id, student="ada", text="See cell 13.", now=MOMENT)
        with pytest.raises(RequestRefused):
            store.reply(opened.id, student="alan", text="Me too.")  # not theirs: no such request
        with pytest.raises(RequestRefused) as refused:
            store.answer(opened.id, accept=True, by="prof", text="Right.", score=5.0)
        assert refused.value.status == 422 and store.get(opened.id).state == OPEN  # out of range: still open
        written = []
        accepted = store.answer(opened.id, accept=True, by="prof", text="Right after all.", score=3.0,
                                write=written.append, now=MOMENT + DAY)
        assert [request.id for request in written] == [opened.id]
        assert (accepted.state, accepted.score, accepted.answered_by) == (ACCEPTED, 3.0, "prof")
        assert [(message.role, message.text) for message in accepted.messages] == [
            ("student", "The test expects the undiscounted sum."), ("student", "See cell 13."),
            ("staff", "Right after all.")]
        with pytest.raises(RequestRefused) as refused:
            store.answer(opened.id, accept=False, by="ta", text="No.")
        assert refused.value.status == 409
        assert "answered_by" not in accepted.to_json() and "author" not in accepted.to_json()["messages"][2]

        # A write that fails leaves the request open and its thread as it was.
        other = store.open(student="bob", assignment="ps1", target=target(), item="returns", reason="Why?", now=MOMENT)

        def failing(request):
            raise RequestRefused(409, "the gradebook is busy")

        with pytest.raises(RequestRefused, match="busy"):
            store.answer(other.id, accept=True, by="prof", text="Yes.", score=4.0, write=failing)
        assert store.get(other.id).state == OPEN and len(store.get(other.id).messages) == 1
        declined = store.answer(other.id, accept=False, by="prof", text="No: see the diagnosis.")
        assert declined.state == DECLINED and declined.score is None
        with pytest.raises(RequestRefused) as refused:
            store.open(student="cy", assignment="ps1", target=target(), item="returns", reason="   ", now=MOMENT)
        assert refused.value.status == 422
        assert [request.state for request in store.list(assignment="ps1")] == [DECLINED, ACCEPTED]
        assert [request.student for request in store.list(student="bob")] == ["bob"]


def test_the_window_opens_when_the_outcome_is_shown_and_closes_days_later(tmp_path):
    policy = RegradePolicy(days=7)
    assert window_of(policy, shown_from=None, set_at=MOMENT, deadline=None).is_open(MOMENT) is False
    window = window_of(policy, shown_from=MOMENT, set_at=MOMENT + DAY, deadline=None)
    assert (window.opens, window.closes) == (MOMENT + DAY, MOMENT + 8 * DAY)  # a later mark opens its own
    assert not window.is_open(MOMENT) and window.is_open(MOMENT + DAY) and not window.is_open(MOMENT + 8 * DAY)
    assert "2026-12-02T12:00:00+00:00" in window.describe(MOMENT) and "closed" in window.describe(MOMENT + 9 * DAY)
    due = window_of(RegradePolicy(opens="due", days=2), shown_from=MOMENT, set_at=None, deadline=MOMENT + 3 * DAY)
    assert due.opens == MOMENT + 3 * DAY and due.closes == MOMENT + 5 * DAY
    assert not window_of(RegradePolicy(enabled=False), shown_from=MOMENT, set_at=None,
                         deadline=None).is_open(MOMENT + DAY)
    with RegradeRequests(tmp_path) as store, pytest.raises(RequestRefused) as refused:
        store.open(student="ada", assignment="ps1", target=target(opens=MOMENT + DAY), item="returns",
                   reason="Early.", now=MOMENT)
    assert refused.value.status == 403 and "2026-12-02T12:00:00+00:00" in str(refused.value)
    with pytest.raises(CourseError, match="opens"):
        RegradePolicy.from_table({"opens": "tomorrow"}, where="[regrades]")
    with pytest.raises(CourseError, match="days"):
        RegradePolicy.from_table({"days": 0}, where="[regrades]")


def test_a_sealed_items_window_never_opens_before_the_deadline():
    from rlcourse.grading.grade import Grade
    from rlcourse.grading.report import ItemResult, Report

    class Spec:
        feedback = FeedbackPolicy()
        regrades = RegradePolicy(days=7)

    report = Report("ps1", "ps1.ipynb", [ItemResult("returns", 4.0, 1.0, False, cell="test_returns", kind="code"),
                                         ItemResult("q1", 1.0, 0.0, False, cell="concept_checks", kind="concept")])
    deadline = MOMENT + 3 * DAY
    found = {target.cell: target for target in targets(Grade(report), assignment=Spec, deadline=deadline,
                                                       graded_at=MOMENT)}
    assert found["test_returns"].window.opens == MOMENT  # a code item is shown at once
    assert found["concept_checks"].window.opens == deadline  # a concept check waits for the deadline
    assert not found["concept_checks"].window.is_open(MOMENT + DAY)
    assert find_target(list(found.values()), "q1").cell == "concept_checks"
    with pytest.raises(RequestRefused) as refused:
        find_target(list(found.values()), "no_such_item")
    assert refused.value.status == 404

    class ScoreOnly(Spec):
        feedback = FeedbackPolicy(after_due="score")

    hidden = targets(Grade(report), assignment=ScoreOnly, deadline=deadline, graded_at=MOMENT)
    assert all(target.window.opens is None for target in hidden)


def test_accepting_writes_the_gradebook_and_the_audit_log_and_declining_only_the_request(tmp_path, monkeypatch,
                                                                                          capsys):
    from marking import ScoredReports, make_course, new_class
    from nbgrader.api import Gradebook

    from rlcourse.batch.autograde import autograde
    from rlcourse.batch.regrade_requests import answer_request
    from rlcourse.record.audit import AuditLog

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "An answer.", "alan": "Another."})
    autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports({"ada": 1.0, "alan": 0.5}),
              log=lambda message: None)
    with RegradeRequests(class_dir.root) as store:
        ada = store.open(student="ada", assignment="ps1", target=target(), item="returns", reason="Right.")
        alan = store.open(student="alan", assignment="ps1", target=target(), item="returns", reason="Also.")
    accepted = answer_request(assignment.course, ada.id, class_dir=class_dir, accept=True, by="prof",
                              text="The grader missed the vectorised form.", score=1.5)
    assert accepted.state == ACCEPTED
    # The staff's command line: the list, and a decline (by the OS user).
    from rlcourse.cli import main
    from rlcourse.record.audit import os_user

    monkeypatch.chdir(assignment.course.root)
    assert main(["regrade-requests", "list", "ps1", "--open", "--json", "--course-dir", str(class_dir.root)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(found["id"], found["student"], found["automatic"]) for found in listed] == [(alan.id, "alan", 1.0)]
    assert main(["regrade-requests", "decline", str(alan.id), "--reason", "It is wrong.",
                 "--course-dir", str(class_dir.root)]) == 0
    assert main(["regrade-requests", "accept", str(alan.id), "2", "--comment", "Late change of mind.",
                 "--course-dir", str(class_dir.root)]) == 2  # answered once
    assert "already declined" in capsys.readouterr().err
    with RegradeRequests(class_dir.root) as store:
        assert store.get(alan.id).answered_by == os_user()
    with Gradebook(class_dir.db_url) as gradebook:
        grade = gradebook.find_grade(ScoredReports.CELL, "ps1", "ps1", "ada")
        assert (grade.auto_score, grade.manual_score) == (1.0, 1.5)  # the automatic score kept
        untouched = gradebook.find_grade(ScoredReports.CELL, "ps1", "ps1", "alan")
        assert (untouched.auto_score, untouched.manual_score) == (0.5, None)
    with AuditLog(class_dir.root) as log:
        latest = log.entries("ps1", student="ada")[-1]
        assert (latest.item, latest.old, latest.new, latest.by) == (ScoredReports.CELL, 1.0, 1.5, "prof")
        assert latest.cause.kind == "regrade_request" and latest.cause.detail["request"] == ada.id
        assert {entry.cause.kind for entry in log.entries("ps1", student="alan")} == {"autograde"}
    page = (class_dir.feedback / "ada" / "ps1" / "ps1.html").read_text()
    assert "The grader missed the vectorised form." in page  # the page says it was changed, and why


def test_accepting_on_a_written_answer_sets_the_mark_and_keeps_the_rubric_line(tmp_path):
    from marking import QUESTION, held, make_course, mark_by_hand, new_class, record

    from rlcourse.batch.regrade_requests import answer_request
    from rlcourse.record.audit import AuditLog
    from rlcourse.record.grades import class_grades

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "Clipping bounds the ratio."})
    record(assignment, class_dir)
    mark_by_hand(assignment, class_dir, "ada", "1", "Half of it.", folder=tmp_path)
    grade = class_grades(class_dir, assignment)["ada"]
    found = {target.cell: target for target in targets(grade, assignment=assignment, deadline=None,
                                                       graded_at=MOMENT)}
    written = found[QUESTION]
    assert (written.kind, written.score, written.automatic) == (WRITTEN, 1.0, None)
    with RegradeRequests(class_dir.root) as store:
        opened = store.open(student="ada", assignment="ps1", target=written, item=QUESTION,
                            reason="The second half is there: 'no trust region'.", now=MOMENT + DAY)
    answer_request(assignment.course, opened.id, class_dir=class_dir, accept=True, by="ta",
                   text="Yes, criterion 2 is met.", score=written.max_score)
    score, needs_grading, comment = held(class_dir, "ada")
    assert (score, needs_grading) == (written.max_score, False)
    assert comment.startswith("Rubric criteria met: 1 (of ") and "Half of it." in comment
    assert comment.endswith(f"Regrade request #{opened.id}: Yes, criterion 2 is met.")
    with AuditLog(class_dir.root) as log:
        latest = log.entries("ps1", student="ada")[-1]
    assert (latest.item, latest.old, latest.new, latest.by, latest.cause.kind) == (
        QUESTION, 1.0, written.max_score, "ta", "regrade_request")
    assert class_grades(class_dir, assignment)["ada"].written[0].score == written.max_score
