"""The web service's state for one class, and what a student may see of a submission.

Everything a student is shown of a grade goes through `student_view` (rlcourse.grading.grade)
at the moment of the request, with the student's deadline as the gradebook holds it then (the
due date plus any extension granted since): a page opened before the deadline shows what the
policy allows before it, and the same submission shows more once the deadline has passed.
"""
from __future__ import annotations

import datetime
import json
import threading
import time

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course
from rlcourse.course.lateness import Timing
from rlcourse.course.visibility import feedback_level
from rlcourse.grading.grade import Grade, student_view
from rlcourse.grading.report import Report
from rlcourse.web.intake import Intake
from rlcourse.web.queue import GradingQueue, best_submission
from rlcourse.web.store import GRADED, QUEUED, Store, Submission, now

DEADLINE_SECONDS = 30
"""How long a student's deadline read from the gradebook is reused: opening nbgrader's gradebook
costs a quarter of a second, too much for every page; an extension shows within this time."""


class WebService:
    def __init__(self, course: Course, class_dir: ClassDirectory, *, log=None, graders: int = 1,
                 scheduler: str | None = None):
        self.course, self.class_dir, self.scheduler = course, class_dir, scheduler
        class_dir.root.mkdir(parents=True, exist_ok=True)
        self.store = Store(class_dir.root / "web.db")
        self.intake = Intake(class_dir, self.store, self.deadline)
        self.queue = GradingQueue(self, log=log, graders=graders)
        self._deadlines: dict[tuple[str, str], tuple[float, datetime.datetime | None]] = {}
        self._grades: dict[tuple[int, int], Grade] = {}
        self._deadline_lock = threading.Lock()

    def assignments(self) -> list[str]:
        return self.course.assignment_names()

    # --- deadlines -----------------------------------------------------------------------------
    def deadline(self, student: str, assignment: str) -> datetime.datetime | None:
        """Due date plus the student's extension (naive UTC), or None without a due date."""
        key = (student, assignment)
        with self._deadline_lock:
            cached = self._deadlines.get(key)
            if cached and time.monotonic() - cached[0] < DEADLINE_SECONDS:
                return cached[1]
        value = read_deadline(self.class_dir, student, assignment)
        with self._deadline_lock:
            self._deadlines[key] = (time.monotonic(), value)
        return value

    def forget_deadline(self, student: str, assignment: str) -> None:
        with self._deadline_lock:
            self._deadlines.pop((student, assignment), None)

    # --- what a student sees -------------------------------------------------------------------
    def position(self, submission: Submission) -> int | None:
        """1 for the next to be graded; None unless queued."""
        if submission.status != QUEUED:
            return None
        queued = self.store.submissions(status=(QUEUED,))
        return 1 + sum(1 for entry in queued if entry.id < submission.id)

    def level(self, submission: Submission) -> str:
        policy = self.course.assignment(submission.assignment).feedback
        return feedback_level(policy, deadline=self.deadline(submission.student, submission.assignment),
                              now=now())

    def view_json(self, submission: Submission, *, counting: set[int] | None = None) -> dict:
        """The submission as the API returns it: its state and, once graded, its grade cut to
        what the policy shows now (rlcourse.grading.grade.student_view), in the shape of
        `rlcourse grade --json`. `counting`: the ids whose grades the gradebook holds, when the
        caller knows them (else they are looked up)."""
        data = {"id": submission.id, "student": submission.student, "assignment": submission.assignment,
                "status": submission.status, "submitted": submission.created.isoformat(sep=" ") + " UTC",
                "position": self.position(submission), "sha256": submission.sha256}
        if submission.status == "failed":
            data["error"] = "grading failed; the course staff have been told"
        if submission.report is not None:
            data["report"] = self.student_view(submission, counting=counting).to_json()
        return data

    def student_view(self, submission: Submission, *, counting: set[int] | None = None):
        """What the student may see of this submission's grade now."""
        assignment = self.course.assignment(submission.assignment)
        return student_view(self.grade(submission, counting=counting), policy=assignment.feedback,
                            deadline=self.deadline(submission.student, submission.assignment), now=now())

    def grade(self, submission: Submission, *, counting: set[int] | None = None) -> Grade:
        """The submission's grade: for the one the gradebook holds, the grade of record as it
        stands now (the written answers' marks, an extension's effect on the late penalty); for
        any other, its own report with the written answers unmarked (no TA marks a submission
        that does not count)."""
        from rlcourse.record.grades import ungraded

        assignment = self.course.assignment(submission.assignment)
        report = Report.from_json(json.loads(submission.report))
        if counting is None:
            counting = self.counting(self.store.submissions(student=submission.student,
                                                            assignment=submission.assignment))
        submitted = self.class_dir.root / submission.folder / assignment.notebook
        if submission.id in counting:
            recorded = self._recorded_grade(submission, assignment, report, submitted)
            if recorded is not None:
                return recorded
        return ungraded(assignment, report, submitted=submitted,
                        timing=timing_from_json(submission.timing))

    def _recorded_grade(self, submission: Submission, assignment, report: Report, submitted) -> Grade | None:
        """The gradebook's grade of the counting submission, reused while the gradebook file is
        unchanged (opening nbgrader's gradebook costs a quarter of a second, and a waiting client
        asks every few seconds)."""
        from nbgrader.api import MissingEntry

        from rlcourse.record.gradebook import open_gradebook
        from rlcourse.record.grades import grade_of_record

        path = self.class_dir.root / "gradebook.db"
        try:
            stamp = path.stat().st_mtime_ns
        except OSError:
            return None
        key = (submission.id, stamp)
        with self._deadline_lock:
            if key in self._grades:
                return self._grades[key]
        try:
            with open_gradebook(self.class_dir.db_url) as gradebook:
                grade = grade_of_record(gradebook, assignment, submission.student, report, submitted=submitted)
        except MissingEntry:
            return None
        with self._deadline_lock:
            self._grades = {k: v for k, v in self._grades.items() if k[1] == stamp}
            self._grades[key] = grade
        return grade

    def counting(self, rows: list[Submission]) -> set[int]:
        """The ids among `rows` whose grades the gradebook holds: per student and assignment,
        the latest graded submission, or under `[web] counts = "best"` the best."""
        graded: dict[tuple[str, str], list[Submission]] = {}
        for row in rows:
            if row.status == GRADED:
                graded.setdefault((row.student, row.assignment), []).append(row)
        return {(best_submission(entries) if self.course.assignment(name).web.counts == "best"
                 else max(entries, key=lambda entry: entry.id)).id
                for (_, name), entries in graded.items()}

    def feedback_page(self, submission: Submission) -> str:
        """The feedback page for this submission: its grade (the grade of record, written answers
        included, for the submission that counts) as the policy shows it now."""
        from rlcourse.course.diagnoses import load_diagnoses
        from rlcourse.course.submission import NotebookProblem, load_submission
        from rlcourse.explain.feedback import assignment_figures, render_feedback, todo_cell_ids

        assignment = self.course.assignment(submission.assignment)
        grade = self.grade(submission)
        deadline = self.deadline(submission.student, submission.assignment)
        moment = now()
        level = feedback_level(assignment.feedback, deadline=deadline, now=moment)
        try:
            cells = list(load_submission(self.class_dir.root / submission.folder / assignment.notebook).cells)
        except NotebookProblem:
            cells = []
        return render_feedback(grade, student=submission.student, submission_cells=cells,
                               todo_ids=todo_cell_ids(assignment.release_notebook),
                               diagnoses=load_diagnoses(assignment.grader_dir),
                               figures=assignment_figures(assignment, grade.report) if level == "full" else [],
                               assignment_title=assignment.title, policy=assignment.feedback,
                               deadline=deadline, now=moment)


def read_deadline(class_dir: ClassDirectory, student: str, assignment: str) -> datetime.datetime | None:
    """The student's deadline from nbgrader's gradebook (its API, read only)."""
    from nbgrader.api import Gradebook, MissingEntry

    from rlcourse.record.gradebook import nbgrader_on_path

    if not (class_dir.root / "gradebook.db").is_file():
        return None
    nbgrader_on_path()
    with Gradebook(class_dir.db_url) as gradebook:
        try:
            duedate = gradebook.find_assignment(assignment).duedate
        except MissingEntry:
            return None
        if duedate is None:
            return None
        try:
            extension = gradebook.find_submission(assignment, student).extension
        except MissingEntry:
            extension = None
        return duedate + (extension or datetime.timedelta(0))


def timing_from_json(text: str | None) -> Timing | None:
    """A Timing saved with `Timing.to_json`."""
    if not text:
        return None
    data = json.loads(text)

    def moment(value):
        return None if value is None else datetime.datetime.fromisoformat(value.removesuffix(" UTC"))

    seconds = data.get("extension_seconds")
    return Timing(timestamp=moment(data["timestamp"]), duedate=moment(data["duedate"]),
                  extension=None if seconds is None else datetime.timedelta(seconds=seconds),
                  seconds_late=data["seconds_late"], penalty=data["penalty"],
                  raw_score=data.get("raw_score"), max_score=data.get("max_score"),
                  warning=data.get("warning"))


def class_summary(service: WebService, assignment: str) -> dict:
    """The staff's live class view: submissions per state, students, the mean of each student's
    latest graded score, and the most common diagnoses in those latest reports."""
    rows = service.store.submissions(assignment=assignment)
    counts: dict[str, int] = {}
    latest: dict[str, Submission] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
        if row.report is not None:
            latest[row.student] = row
    scores, tags = [], {}
    for row in latest.values():
        report = Report.from_json(json.loads(row.report))
        scores.append((report.score, report.max_score))
        for item in report.items:
            if item.diagnosis:
                tags.setdefault(item.diagnosis, set()).add(row.student)
    mean = sum(score for score, _ in scores) / len(scores) if scores else None
    return {"assignment": assignment, "counts": counts, "students": len({row.student for row in rows}),
            "graded_students": len(latest), "mean": mean,
            "max_score": scores[0][1] if scores else None,
            "diagnoses": sorted(((len(who), tag) for tag, who in tags.items()), reverse=True)[:10]}
