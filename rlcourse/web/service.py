"""The web service's state for one class, and what a student may see of a submission.

Everything a student is shown of a grade goes through `student_view` (rlcourse.grading.grade)
at the moment of the request, with the student's deadline as the gradebook holds it then (the
due date plus any extension granted since): a page opened before the deadline shows what the
policy allows before it, and the same submission shows more once the deadline has passed.

Beside the report (whose shape `view_json` keeps), each submission says where it came from
(`origin`: "web", or "exchange" for work nbgrader's exchange brought in and `rlcourse autograde`
graded), the student's deadline and its lateness; a late penalty is shown only where the policy
shows the score (a penalty proportional to the score would tell it).
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import threading
import time
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course, CourseError
from rlcourse.course.lateness import Timing, format_duration, iso
from rlcourse.course.visibility import feedback_level, shows
from rlcourse.grading.grade import Grade, student_view
from rlcourse.grading.report import Report
from rlcourse.web.availability import Availabilities, Availability
from rlcourse.web.intake import Intake
from rlcourse.web.queue import GradingQueue, counting_among
from rlcourse.web.store import FAILED, GRADED, QUEUED, Store, Submission, now

DEADLINE_SECONDS = 30
"""How long a student's deadlines read from the gradebook are reused: opening nbgrader's
gradebook costs a quarter of a second, too much for every page; an extension shows within this time."""
FAILED_MESSAGE = ("the service could not grade it (a failure on the service's side, not a judgement of "
                  "your notebook); it was not counted against your limit, and the course staff see it "
                  "in their class view and can grade it again. You may submit again")
"""What a student is told of a submission `failed` on the service's side."""


@dataclasses.dataclass(frozen=True)
class Due:
    """One student's due date for one assignment, as nbgrader's gradebook holds it."""

    duedate: datetime.datetime | None
    extension: datetime.timedelta | None = None

    @property
    def deadline(self) -> datetime.datetime | None:
        """The due date plus the extension (naive UTC), or None without a due date."""
        return None if self.duedate is None else self.duedate + (self.extension or datetime.timedelta(0))

    def describe(self) -> str:
        if self.duedate is None:
            return "no due date"
        if not self.extension:
            return f"due {iso(self.duedate)}"
        return (f"due {iso(self.deadline)} with your extension of "
                f"{format_duration(self.extension.total_seconds())} (the class: {iso(self.duedate)})")


class WebService:
    def __init__(self, course: Course, class_dir: ClassDirectory, *, log=None, graders: int = 1,
                 scheduler: str | None = None, warm: bool = False):
        """`warm`: make every open assignment ready for grading as soon as the service starts
        (`rlcourse web` does, unless `--no-warm`), rather than on its first submission."""
        self.course, self.class_dir, self.scheduler = course, class_dir, scheduler
        class_dir.root.mkdir(parents=True, exist_ok=True)
        self.store = Store(class_dir.root / "web.db")
        self.availabilities = Availabilities(course, class_dir, extension=self.extension)
        self.intake = Intake(class_dir, self.store, availability=self.availability, releases=self.releases)
        self.queue = GradingQueue(self, log=log, graders=graders, warm=warm)
        self._dues: dict[str, tuple[float, dict[str, Due]]] = {}
        self._due_lock = threading.Lock()
        self._grades: dict[tuple, Grade] = {}
        self._grade_lock = threading.Lock()

    def assignments(self) -> list[str]:
        return self.course.assignment_names()

    def releases(self) -> dict[str, Path]:
        """name -> release notebook of every assignment of the course that loads: what an
        upload is matched against (rlcourse.web.matching)."""
        found = {}
        for name in self.assignments():
            try:
                found[name] = self.course.assignment(name).release_notebook
            except CourseError:
                continue
        return found

    def open_assignments(self) -> list[str]:
        """The assignments the class may submit now (without anyone's extension)."""
        return [name for name in self.assignments() if self.availability(name, None).open]

    def availability(self, assignment: str, student: str | None) -> Availability:
        """Whether `student` may submit `assignment` now (rlcourse.web.availability)."""
        return self.availabilities.of(assignment, student, now=now())

    # --- deadlines -----------------------------------------------------------------------------
    def due(self, student: str, assignment: str) -> Due:
        """The student's due date and extension, read with all their others at most every
        `DEADLINE_SECONDS`."""
        with self._due_lock:
            cached = self._dues.get(student)
            if cached and time.monotonic() - cached[0] < DEADLINE_SECONDS:
                return cached[1].get(assignment, Due(None))
        value = read_dues(self.class_dir, student)
        with self._due_lock:
            self._dues[student] = (time.monotonic(), value)
        return value.get(assignment, Due(None))

    def read_all_dues(self) -> None:
        """Every student's due dates in one gradebook session, for the pages that list the whole
        class (the staff's): one session instead of one per student."""
        value = read_class_dues(self.class_dir)
        stamp = time.monotonic()
        with self._due_lock:
            for student, dues in value.items():
                self._dues[student] = (stamp, dues)

    def deadline(self, student: str, assignment: str) -> datetime.datetime | None:
        """Due date plus the student's extension (naive UTC), or None without a due date."""
        return self.due(student, assignment).deadline

    def extension(self, student: str, assignment: str) -> datetime.timedelta | None:
        return self.due(student, assignment).extension

    def forget_deadline(self, student: str, assignment: str) -> None:
        with self._due_lock:
            self._dues.pop(student, None)

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
        `rlcourse grade --json`; beside the report, its origin, the student's deadline and its
        lateness. `counting`: the ids whose grades the gradebook holds, when the caller knows
        them (else they are looked up)."""
        data = {"id": submission.id, "student": submission.student, "assignment": submission.assignment,
                "status": submission.status, "submitted": submission.created.isoformat(sep=" ") + " UTC",
                "position": self.position(submission), "sha256": submission.sha256,
                "origin": "web" if submission.id is not None else "exchange",
                "graded_at": iso(submission.finished) if submission.report is not None else None}
        if submission.status == FAILED:
            data["error"] = FAILED_MESSAGE
        level = self.level(submission)
        if submission.report is not None:
            data["report"] = self.student_view(submission, counting=counting).to_json()
        data["deadline"] = iso(self.deadline(submission.student, submission.assignment))
        data["lateness"] = self.lateness(submission, shows_score=shows(level, "score"))
        return data

    def student_view(self, submission: Submission, *, counting: set[int] | None = None):
        """What the student may see of this submission's grade now."""
        assignment = self.course.assignment(submission.assignment)
        return student_view(self.grade(submission, counting=counting), policy=assignment.feedback,
                            deadline=self.deadline(submission.student, submission.assignment), now=now())

    def grade(self, submission: Submission, *, counting: set[int] | None = None) -> Grade:
        """The submission's grade: for the one the gradebook holds (the counting upload, or work
        that came through the exchange), the grade of record as it stands now (the written
        answers' marks and states, an extension's effect on the late penalty); for any other,
        its own report with the written answers unmarked (no TA marks a submission that does
        not count)."""
        from rlcourse.record.grades import ungraded

        assignment = self.course.assignment(submission.assignment)
        report = Report.from_json(json.loads(submission.report))
        submitted = self.class_dir.root / submission.folder / assignment.notebook
        if submission.id is not None and counting is None:
            counting = self.counting(self.store.submissions(student=submission.student,
                                                            assignment=submission.assignment))
        if submission.id is None or submission.id in counting:
            recorded = self._recorded_grade(submission, assignment, report, submitted)
            if recorded is not None:
                return recorded
        return ungraded(assignment, report, submitted=submitted, timing=timing_from_json(submission.timing))

    def _recorded_grade(self, submission: Submission, assignment, report: Report, submitted) -> Grade | None:
        """The gradebook's grade of the submission it holds, reused while the gradebook file is
        unchanged (opening nbgrader's gradebook costs a quarter of a second, and a waiting client
        asks every few seconds)."""
        from nbgrader.api import MissingEntry

        from rlcourse.record.gradebook import open_gradebook
        from rlcourse.record.grades import grade_of_record

        try:
            stamp = (self.class_dir.root / "gradebook.db").stat().st_mtime_ns
        except OSError:
            return None
        key = (submission.student, submission.assignment, submission.id, submission.sha256, stamp)
        with self._grade_lock:
            if key in self._grades:
                return self._grades[key]
        try:
            with open_gradebook(self.class_dir.db_url) as gradebook:
                grade = grade_of_record(gradebook, assignment, submission.student, report, submitted=submitted)
        except MissingEntry:
            return None
        with self._grade_lock:
            self._grades = {old: value for old, value in self._grades.items() if old[-1] == stamp}
            self._grades[key] = grade
        return grade

    def lateness(self, submission: Submission, *, shows_score: bool) -> dict:
        """On time or late, by how much, and (when the policy shows the score) the penalty: from
        the gradebook's timing once recorded, else against the student's deadline now."""
        timing = timing_from_json(submission.timing)
        if timing is not None and timing.timestamp is not None:
            deadline, seconds, penalty = timing.deadline, timing.seconds_late, timing.penalty
        else:
            deadline = self.deadline(submission.student, submission.assignment)
            seconds = max(0.0, (submission.created - deadline).total_seconds()) if deadline else 0.0
            penalty = None
        penalty = penalty if shows_score else None
        if deadline is None:
            text = "no due date"
        elif seconds <= 0:
            text = "on time"
        else:
            text = f"late by {format_duration(seconds)}" + (f", late penalty {penalty:g}" if penalty else "")
        return {"late": seconds > 0, "seconds_late": seconds, "penalty": penalty, "describe": text}

    def exchange_work(self, student: str, assignment: str, rows: list[Submission] | None = None) -> Submission | None:
        """The student's work that arrived through nbgrader's exchange and is what the gradebook
        holds (the ledger's recorded report, rlcourse.record.ledger, of a notebook no upload to
        this service had), as an unsaved Submission (no id, origin "exchange") that
        `view_json` and `feedback_page` show like any other; None when there is none."""
        from rlcourse.record.ledger import ledger_path, read_ledger

        try:
            spec = self.course.assignment(assignment)
        except CourseError:
            return None
        saved = read_ledger(self.class_dir, spec, student)
        if not saved or not saved.get("recorded"):
            return None
        sha256 = str(saved["key"]).split()[0].removeprefix("sha256:")
        if rows is None:
            rows = self.store.submissions(student=student, assignment=assignment)
        if any(row.sha256 == sha256 for row in rows if row.student == student and row.assignment == assignment):
            return None
        timing = saved.get("timing")
        recorded = datetime.datetime.fromtimestamp(
            ledger_path(self.class_dir, spec, student).stat().st_mtime, datetime.timezone.utc).replace(tzinfo=None)
        stamp = timing_from_json(json.dumps(timing)).timestamp if timing else None
        return Submission(id=None, student=student, assignment=assignment, status=GRADED,
                          created=stamp or recorded, finished=recorded, sha256=sha256,
                          folder=str(Path("submitted") / student / assignment),
                          report=json.dumps(saved["report"]), timing=json.dumps(timing) if timing else None)

    def counting(self, rows: list[Submission]) -> set[int]:
        """The ids among `rows` whose grades the gradebook holds: per student and assignment,
        the latest graded submission, or under `[web] counts = "best"` the best (a submission
        the staff are regrading still counts meanwhile)."""
        graded: dict[tuple[str, str], list[Submission]] = {}
        for row in rows:
            if row.status == GRADED or (row.regrade and row.report is not None):
                graded.setdefault((row.student, row.assignment), []).append(row)
        return {counting_among(entries, self.course.assignment(name).web.counts,
                               self.course.assignment(name).feedback).id
                for (_, name), entries in graded.items()}

    def feedback_page(self, submission: Submission, *, regrades: dict | None = None) -> str:
        """The feedback page for this submission: its grade (the grade of record, written answers
        included, for the submission the gradebook holds) as the policy shows it now; with
        `regrades`, the regrade requests' part of it (rlcourse.web.regrades.RegradeDesk.panel)."""
        from rlcourse.course.diagnoses import load_diagnoses
        from rlcourse.course.submission import NotebookProblem, load_submission
        from rlcourse.explain.feedback import assignment_figures, render_feedback, sealed_item_ids, todo_cell_ids
        from rlcourse.record.ledger import figures_folder

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
                               figures=assignment_figures(assignment, grade.report, sealed=sealed_item_ids(
                                   grade, policy=assignment.feedback, deadline=deadline, now=moment),
                                   keep_in=figures_folder(self.class_dir, assignment, submission.student))
                               if level == "full" else [],
                               assignment_title=assignment.title, policy=assignment.feedback,
                               deadline=deadline, now=moment, regrades=regrades)


def read_dues(class_dir: ClassDirectory, student: str) -> dict[str, Due]:
    """assignment -> the student's Due, for every assignment of nbgrader's gradebook (its API,
    read only, one session)."""
    from nbgrader.api import Gradebook, MissingEntry

    from rlcourse.record.gradebook import nbgrader_on_path

    if not (class_dir.root / "gradebook.db").is_file():
        return {}
    nbgrader_on_path()
    with Gradebook(class_dir.db_url) as gradebook:
        dues = {assignment.name: Due(assignment.duedate) for assignment in gradebook.assignments}
        try:
            submissions = gradebook.find_student(student).submissions
        except MissingEntry:
            submissions = []
        for submission in submissions:
            if submission.extension and submission.assignment.name in dues:
                dues[submission.assignment.name] = Due(submission.assignment.duedate, submission.extension)
        return dues


def read_class_dues(class_dir: ClassDirectory) -> dict[str, dict[str, Due]]:
    """`read_dues` for every student of the gradebook, in one session."""
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import nbgrader_on_path

    if not (class_dir.root / "gradebook.db").is_file():
        return {}
    nbgrader_on_path()
    with Gradebook(class_dir.db_url) as gradebook:
        plain = {assignment.name: Due(assignment.duedate) for assignment in gradebook.assignments}
        dues = {student.id: dict(plain) for student in gradebook.students}
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                if submission.extension:
                    dues.setdefault(submission.student.id, dict(plain))[assignment.name] = \
                        Due(assignment.duedate, submission.extension)
        return dues


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
    """The staff's live class view: submissions per state, students, the mean of the grades of
    record (the gradebook's totals, after late penalties, written answers included), how many
    students have written answers awaiting a TA, and the most common diagnoses in those grades."""
    from rlcourse.record.grades import class_grades

    rows = service.store.submissions(assignment=assignment)
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    try:
        grades = class_grades(service.class_dir, service.course.assignment(assignment))
    except CourseError:
        grades = {}
    tags: dict[str, set[str]] = {}
    for student, grade in grades.items():
        for item in grade.report.items:
            if item.diagnosis:
                tags.setdefault(item.diagnosis, set()).add(student)
    scores = [grade.score for grade in grades.values()]
    return {"assignment": assignment, "counts": counts,
            "students": len({row.student for row in rows} | set(grades)),
            "graded_students": len(grades), "mean": sum(scores) / len(scores) if scores else None,
            "max_score": max((grade.max_score for grade in grades.values()), default=None),
            "pending": sum(1 for grade in grades.values() if grade.pending),
            "diagnoses": sorted(((len(who), tag) for tag, who in tags.items()), reverse=True)[:10]}
