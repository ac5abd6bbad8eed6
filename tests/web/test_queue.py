"""Which submission counts: under `[web] counts = "best"` the grading thread puts the best graded
submission (after its late penalty; the newest of equals) back into nbgrader's `submitted/` and
has the grading process record it again; under "latest" it leaves the newest, and an older one
the staff retried or regraded never replaces it. A grading that fails for good never stays in
`submitted/`. The grading process is a stand-in that records what it was asked: these tests
grade nothing."""
import datetime
import json
import types

import pytest

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError, WebPolicy
from rlcourse.course.lateness import TIMESTAMP_FILE
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.grading.report import ItemResult, Report
from rlcourse.web.intake import Intake
from rlcourse.web.queue import GradingQueue, best_submission
from rlcourse.web.service import WebService
from rlcourse.web.store import GRADED, Store, Submission


class RecordingLane:
    """Stands in for a lane's grading process: records each request, answers "graded"."""

    def __init__(self):
        self.requests = []

    def ask(self, request):
        self.requests.append(request)
        return {"graded": True}


def report_json(score: float, prediction: float | None = None) -> str:
    """A report of `score` points of code, and with `prediction`, a 2-point prediction scored so."""
    items = [ItemResult("loss.value", 33.0, float(score), score == 33)]
    if prediction is not None:
        items.append(ItemResult("predictions.kl", 2.0, float(prediction), prediction == 2.0, kind="prediction"))
    return json.dumps(Report("ps1", "ps1.ipynb", items).to_json())


def make_class(tmp_path, counts, scores):
    """A class directory whose student ada has one graded submission per (score, penalty) or
    (score, penalty, prediction's points)."""
    class_dir = ClassDirectory(tmp_path / "class")
    store = Store(tmp_path / "web.db")
    intake = Intake(class_dir, store, availability=None)
    submissions = []
    for number, (score, penalty, *prediction) in enumerate(scores):
        folder = class_dir.root / "web" / "history" / "ada" / "ps1" / str(number)
        folder.mkdir(parents=True)
        (folder / "ps1.ipynb").write_text(f"notebook {number}")
        (folder / TIMESTAMP_FILE).write_text(f"2026-12-0{number + 1} 10:00:00.000000 UTC")
        with store.session.begin() as db:
            row = Submission(student="ada", assignment="ps1", status=GRADED, sha256=str(number),
                             created=datetime.datetime(2026, 12, number + 1), folder=str(folder.relative_to(class_dir.root)),
                             report=report_json(score, *prediction),
                             timing=json.dumps({"penalty": penalty}))
            db.add(row)
        submissions.append(row)
    assignment = types.SimpleNamespace(name="ps1", notebook="ps1.ipynb", web=WebPolicy(counts=counts),
                                       feedback=FeedbackPolicy())
    course = types.SimpleNamespace(assignment=lambda name: assignment)
    service = types.SimpleNamespace(store=store, intake=intake, course=course, class_dir=class_dir)
    queue = GradingQueue(service, log=lambda message: None)
    queue.lane = RecordingLane()
    return queue, assignment, submissions


def test_a_lower_score_puts_the_best_back_and_records_it_again(tmp_path):
    queue, assignment, (first, late, latest) = make_class(tmp_path, "best", [(20, 0), (30, 15), (10, 0)])
    request = {"assignment": "ps1", "student": "ada", "root": str(queue.service.class_dir.root)}
    queue._keep_counting(latest, assignment, request, queue.lane)
    submitted = queue.service.class_dir.submitted / "ada" / "ps1"
    assert (submitted / "ps1.ipynb").read_text() == "notebook 0"  # 20 beats 30 - 15 and 10
    assert (submitted / TIMESTAMP_FILE).read_text().startswith("2026-12-01")
    # The request names the submission recorded, for the audit log's cause.
    assert queue.lane.requests == [dict(request, submission=first.id)]


def test_the_best_being_the_latest_changes_nothing(tmp_path):
    queue, assignment, (_, latest) = make_class(tmp_path, "best", [(20, 0), (25, 0)])
    queue._keep_counting(latest, assignment, {}, queue.lane)
    assert not (queue.service.class_dir.submitted / "ada").exists() and queue.lane.requests == []


def test_an_older_submission_graded_again_puts_the_latest_back(tmp_path):
    """Under "latest", a failed submission the staff retried (graded now, after a newer one)
    does not become the one that counts: the newest is put back and recorded again."""
    queue, assignment, (retried, newest) = make_class(tmp_path, "latest", [(30, 0), (10, 0)])
    queue._keep_counting(retried, assignment, {"student": "ada"}, queue.lane)
    assert (queue.service.class_dir.submitted / "ada" / "ps1" / "ps1.ipynb").read_text() == "notebook 1"
    assert queue.lane.requests == [{"student": "ada", "submission": newest.id}]


@pytest.mark.parametrize("regrade", [False, True])
def test_a_grading_that_fails_for_good_leaves_the_counting_one_in_submitted(tmp_path, regrade):
    """The failed upload was copied into `submitted/` to be graded; given up, the one the
    gradebook holds goes back there. A failed staff regrade leaves its submission graded."""
    from rlcourse.web.queue import MAX_ATTEMPTS
    from rlcourse.web.store import FAILED

    queue, assignment, (graded, failing) = make_class(tmp_path, "latest", [(30, 0), (10, 0)])
    store = queue.service.store
    store.update(failing.id, attempts=MAX_ATTEMPTS, regrade=regrade, status="running",
                 report=None if not regrade else failing.report)
    queue.service.intake.install(failing, assignment)
    queue._retry_or_fail(store.get(failing.id), "the grading process ended (status -9)")
    kept = store.get(failing.id)
    if regrade:  # the latest itself: it stays graded, with what happened for the staff
        assert (kept.status, kept.regrade) == ("graded", False) and "a regrade failed" in kept.error
        assert (queue.service.class_dir.submitted / "ada" / "ps1" / "ps1.ipynb").read_text() == "notebook 1"
    else:
        assert kept.status == FAILED and "status -9" in kept.error
        assert (queue.service.class_dir.submitted / "ada" / "ps1" / "ps1.ipynb").read_text() == "notebook 0"


def test_a_student_with_a_grading_running_waits_for_it(tmp_path):
    """Two queued submissions of one student and assignment (a staff regrade beside an upload)
    are never graded at once: both would be graded from the same `submitted/` folder."""
    queue, _, (first, second) = make_class(tmp_path, "latest", [(30, 0), (10, 0)])
    store = queue.service.store
    store.update(first.id, status="queued")
    store.update(second.id, status="queued")
    assert store.next_queued().id == first.id
    assert store.next_queued() is None
    store.update(first.id, status="graded")
    assert store.next_queued().id == second.id


def test_of_equal_scores_the_newest_counts(tmp_path):
    _, _, rows = make_class(tmp_path, "best", [(20, 0), (22, 2), (5, 0)])
    assert best_submission(rows).id == rows[1].id


def test_a_prediction_never_decides_which_submission_is_the_best(tmp_path):
    """Trying every option of a prediction in turn must not let "best" keep the right one: best
    compares what a student sees before the due date, so of equal code the newest counts,
    whichever prediction it holds."""
    _, _, rows = make_class(tmp_path, "best", [(20, 0, 2.0), (20, 0, 0.0), (19, 0, 2.0)])
    assert best_submission(rows, FeedbackPolicy()).id == rows[1].id
    opened = FeedbackPolicy.from_table({"kinds": {"prediction": "visible"}})
    assert best_submission(rows, opened).id == rows[0].id


@pytest.mark.parametrize("counts, counted", [("latest", 2), ("best", 0)])
def test_the_history_marks_the_submission_that_counts(tmp_path, counts, counted):
    queue, _, rows = make_class(tmp_path, counts, [(20, 0), (30, 15), (10, 0)])
    service = WebService.__new__(WebService)
    service.course = queue.service.course
    assert service.counting(rows) == {rows[counted].id}


def test_counts_is_latest_or_best():
    assert WebPolicy.from_table({"counts": "best"}, where="t").counts == "best"
    with pytest.raises(CourseError, match='counts = \'highest\'; it must be "latest" or "best"'):
        WebPolicy.from_table({"counts": "highest"}, where="t")


class RefusingLane(RecordingLane):
    """Records each request and answers that it was not graded (nothing to record)."""

    def ask(self, request):
        self.requests.append(dict(request))
        return {"graded": False, "error": "not graded in this test"}


def test_a_staff_regrade_asks_the_grading_process_to_name_the_staff_account(tmp_path):
    """The audit log's `by` for a regrade queued from the service is the staff member who queued
    it (rlcourse.web.job passes it to autograde as `audited_by`), not "rlcourse web"."""
    queue, _, (first, latest) = make_class(tmp_path, "latest", [(30, 0), (10, 0)])
    store, lane = queue.service.store, RefusingLane()
    assert store.queue_again(latest.id, regrade=True, by="prof").requested_by == "prof"
    queue._grade(store.next_queued(), lane)
    assert lane.requests[-1]["by"] == "prof" and lane.requests[-1]["force"] is True
    store.update(latest.id, status="graded", regrade=False)
    store.update(first.id, status="queued")  # an ordinary grading: the service is who graded it
    queue._grade(store.next_queued(), lane)
    assert "by" not in lane.requests[-1] and "force" not in lane.requests[-1]
