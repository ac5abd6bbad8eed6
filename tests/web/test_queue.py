"""Which submission counts: under `[web] counts = "best"` the grading thread puts the best graded
submission (after its late penalty; the newest of equals) back into nbgrader's `submitted/` and
has the grading process record it again; under "latest" it leaves the newest. The grading
process is a stand-in that records what it was asked: these tests grade nothing."""
import datetime
import json
import types

import pytest

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError, WebPolicy
from rlcourse.course.lateness import TIMESTAMP_FILE
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


def make_class(tmp_path, counts, scores):
    """A class directory whose student ada has one graded submission per (score, penalty)."""
    class_dir = ClassDirectory(tmp_path / "class")
    store = Store(tmp_path / "web.db")
    intake = Intake(class_dir, store, deadline=lambda *_: None)
    submissions = []
    for number, (score, penalty) in enumerate(scores):
        folder = class_dir.root / "web" / "history" / "ada" / "ps1" / str(number)
        folder.mkdir(parents=True)
        (folder / "ps1.ipynb").write_text(f"notebook {number}")
        (folder / TIMESTAMP_FILE).write_text(f"2026-12-0{number + 1} 10:00:00.000000 UTC")
        with store.session.begin() as db:
            row = Submission(student="ada", assignment="ps1", status=GRADED, sha256=str(number),
                             created=datetime.datetime(2026, 12, number + 1), folder=str(folder.relative_to(class_dir.root)),
                             report=json.dumps({"score": score, "max_score": 33}),
                             timing=json.dumps({"penalty": penalty}))
            db.add(row)
        submissions.append(row)
    assignment = types.SimpleNamespace(name="ps1", notebook="ps1.ipynb", web=WebPolicy(counts=counts))
    course = types.SimpleNamespace(assignment=lambda name: assignment)
    service = types.SimpleNamespace(store=store, intake=intake, course=course, class_dir=class_dir)
    queue = GradingQueue(service, log=lambda message: None)
    queue.lane = RecordingLane()
    return queue, assignment, submissions


def test_a_lower_score_puts_the_best_back_and_records_it_again(tmp_path):
    queue, assignment, (first, late, latest) = make_class(tmp_path, "best", [(20, 0), (30, 15), (10, 0)])
    request = {"assignment": "ps1", "student": "ada", "root": str(queue.service.class_dir.root)}
    queue._keep_best(latest, assignment, request, queue.lane)
    submitted = queue.service.class_dir.submitted / "ada" / "ps1"
    assert (submitted / "ps1.ipynb").read_text() == "notebook 0"  # 20 beats 30 - 15 and 10
    assert (submitted / TIMESTAMP_FILE).read_text().startswith("2026-12-01")
    assert queue.lane.requests == [request]


def test_the_best_being_the_latest_changes_nothing(tmp_path):
    queue, assignment, (_, latest) = make_class(tmp_path, "best", [(20, 0), (25, 0)])
    queue._keep_best(latest, assignment, {}, queue.lane)
    assert not (queue.service.class_dir.submitted / "ada").exists() and queue.lane.requests == []


def test_of_equal_scores_the_newest_counts(tmp_path):
    _, _, rows = make_class(tmp_path, "best", [(20, 0), (22, 2), (5, 0)])
    assert best_submission(rows).id == rows[1].id


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
