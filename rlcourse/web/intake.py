"""Accepting a submission: every check a student can be refused by, then the files on disk.

In order, before anything is written: the assignment exists; the upload is under the size cap;
it reads as a notebook (rlcourse.course.submission, which never runs it); the student has no
other submission of this assignment queued or running; the rolling window's limit ([web] in
assignment.toml) leaves room; and, when the assignment refuses late work, the student's
deadline (due date plus extension, from nbgrader's gradebook) has not passed. Each refusal is
one sentence the student can act on.

An accepted upload is written once, into its own history folder
(`web/history/<student>/<assignment>/<id>/<notebook>` with nbgrader's `timestamp.txt`), and kept
there for good; the grading thread copies the one it grades into nbgrader's
`submitted/<student>/<assignment>/`, so the gradebook, `rlcourse autograde` and `nbgrader` see
exactly the latest submission.
"""
from __future__ import annotations

import datetime
import secrets
import shutil
import tempfile
import threading
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory, student_id_problem
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.lateness import TIMESTAMP_FILE, iso
from rlcourse.course.submission import NotebookProblem, load_submission
from rlcourse.web.store import IN_FLIGHT, QUEUED, Store, Submission, now

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
"""A course notebook with its outputs is a few MB; the grader's own cap (100 MB) is for files
already on disk, not for what anyone on the network may send."""
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"
"""nbgrader's exchange writes `timestamp.txt` in this format (ExchangeSubmit.timestamp_format)."""


def too_large() -> str:
    return (f"the upload is over {MAX_UPLOAD_BYTES / 2**20:.0f} MB, the most a submission may be "
            "(clear large outputs, save, and submit again)")


class Refused(Exception):
    """A submission the service will not grade; the message is for the student."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Intake:
    """Checks and stores uploads for one class. One lock makes "nothing in flight, room in the
    window" and the new row one step, so two uploads at once cannot both pass."""

    def __init__(self, class_dir: ClassDirectory, store: Store, deadline):
        self.class_dir, self.store, self.deadline = class_dir, store, deadline
        self.history = class_dir.root / "web" / "history"
        self._lock = threading.Lock()

    def accept(self, assignment: Assignment, student: str, data: bytes) -> Submission:
        if student_id_problem(student):
            raise Refused(403, f"{student!r} cannot submit: {student_id_problem(student)}")
        if len(data) > MAX_UPLOAD_BYTES:
            raise Refused(413, too_large())
        sha256 = check_notebook(data, assignment.notebook)
        with self._lock:
            self._check_limits(assignment, student)
            received = now()
            folder = self.history / student / assignment.name / (
                received.strftime("%Y%m%dT%H%M%S%f") + "-" + secrets.token_hex(4))
            write_atomic(folder / assignment.notebook, data)
            write_atomic(folder / TIMESTAMP_FILE, received.strftime(TIMESTAMP_FORMAT).encode())
            with self.store.session.begin() as db:
                submission = Submission(student=student, assignment=assignment.name, status=QUEUED,
                                        created=received, sha256=sha256,
                                        folder=str(folder.relative_to(self.class_dir.root)))
                db.add(submission)
            return submission

    def _check_limits(self, assignment: Assignment, student: str) -> None:
        mine = self.store.submissions(student=student, assignment=assignment.name)
        busy = [entry for entry in mine if entry.status in IN_FLIGHT]
        if busy:
            raise Refused(409, f"your submission #{busy[0].id} of {assignment.name} is still "
                               f"{busy[0].status}; submit again once it is graded")
        policy = assignment.web
        window = datetime.timedelta(minutes=policy.window_minutes)
        recent = [entry.created for entry in mine if entry.created > now() - window]
        if len(recent) >= policy.submissions_per_window:
            next_allowed = min(recent) + window
            raise Refused(429, f"at most {policy.submissions_per_window} submissions of "
                               f"{assignment.name} per {policy.window_minutes} min; the next is "
                               f"allowed at {iso(next_allowed.replace(microsecond=0))}")
        deadline = self.deadline(student, assignment.name)
        if not policy.accept_late and deadline is not None and now() > deadline:
            raise Refused(403, f"{assignment.name} was due at {iso(deadline)} (with any extension "
                               "you have); this course does not accept late submissions")

    def install(self, submission: Submission, assignment: Assignment) -> Path:
        """Copy a history folder's upload into nbgrader's `submitted/` layout (what is graded)."""
        source = self.class_dir.root / submission.folder
        target = self.class_dir.submitted / submission.student / submission.assignment
        for name in (assignment.notebook, TIMESTAMP_FILE):
            write_atomic(target / name, (source / name).read_bytes())
        return target / assignment.notebook


def check_notebook(data: bytes, name: str) -> str:
    """The upload's SHA-256 if it reads as a notebook (the grader's own checks, which run
    nothing); else Refused with what is wrong."""
    with tempfile.TemporaryDirectory(prefix="rlcourse-upload-") as scratch:
        path = Path(scratch) / name
        path.write_bytes(data)
        try:
            return load_submission(path).sha256
        except NotebookProblem as problem:
            raise Refused(422, f"not a notebook that can be graded: {problem}") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
