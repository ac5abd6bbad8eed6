"""Accepting a submission: every check a student can be refused by, then the files on disk.

In order, before anything is written: the assignment exists and is open to this student now
(released to the class, between its `[web]` dates, not late when the assignment refuses late
work: rlcourse.web.availability); the upload is under the size cap; it reads as a notebook
(rlcourse.course.submission, which never runs it); it is not another assignment's notebook
(rlcourse.web.matching); the student has no other submission of this assignment queued or
running; the rolling window's limit ([web] in assignment.toml) leaves room; and what the
student's uploads of this assignment already keep in `web/history/` leaves room for this one
(`[web] history_megabytes`). Each refusal is one sentence the student can act on, naming the file
they uploaded, and stores nothing and leaves the gradebook untouched; it is counted
(`Refusals`): a student refused REFUSALS_ALLOWED times within REFUSAL_WINDOW has every upload
refused, unread, until the oldest of those leaves the window, so that a stream of oversized or
broken uploads costs the service a bounded amount of bandwidth and work (issue 29, finding 6).

The size cap is the body's, counted as it arrives (rlcourse.web.app reads it through
`capped_body`), never its headers': a body sent with `Transfer-Encoding: chunked` has no
Content-Length, and Starlette's form parser once spooled a 400 MB file part to disk before the
route saw it. No more than MAX_BODY_BYTES of a request reaches the form parser, and so the disk.

The window counts real gradings only: a submission the service itself failed to grade
(`failed`, after its attempts) is not held against the student.

An accepted upload is written once, into its own history folder
(`web/history/<student>/<assignment>/<id>/<notebook>` with nbgrader's `timestamp.txt`), and kept
there for good; the grading thread copies the one it grades into nbgrader's
`submitted/<student>/<assignment>/`, so the gradebook, `rlcourse autograde` and `nbgrader` see
exactly the latest submission.
"""
from __future__ import annotations

import collections
import datetime
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path, PurePosixPath

from rlcourse.course.class_directory import ClassDirectory, student_id_problem
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.lateness import TIMESTAMP_FILE, iso
from rlcourse.course.submission import NotebookProblem, load_submission
from rlcourse.web.matching import Releases, describe, upload_grade_ids
from rlcourse.web.store import FAILED, IN_FLIGHT, QUEUED, Store, Submission, now

MAX_UPLOAD_BYTES = 20 * 1024 * 1024
"""A course notebook with its outputs is a few MB; the grader's own cap (100 MB) is for files
already on disk, not for what anyone on the network may send."""
MAX_BODY_BYTES = MAX_UPLOAD_BYTES + 64 * 1024
"""The most of a request body read into the form: the notebook's cap, plus its fields and the
multipart framing."""
DRAINED_BYTES = 4 * MAX_UPLOAD_BYTES
"""Past MAX_BODY_BYTES a body is read on and dropped (never kept) up to this, so that a sender just
over the cap reads the refusal instead of a closed connection; a body declared or sent beyond it
is refused without reading further (the client may see the connection closed)."""
REFUSALS_ALLOWED = 20
"""Refused uploads a student may send within REFUSAL_WINDOW before the service refuses their
uploads unread: generous for honest mistakes (a wrong file, a closed assignment), tight for a
loop sending 20 MB bodies."""
REFUSAL_WINDOW = datetime.timedelta(minutes=60)
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"
"""nbgrader's exchange writes `timestamp.txt` in this format (ExchangeSubmit.timestamp_format)."""


def too_large() -> str:
    """The refusal of a body over the cap (MAX_BODY_BYTES: the notebook's 20 MB with its form)."""
    return (f"the upload is over {MAX_UPLOAD_BYTES / 2**20:.0f} MB, the most a submission may be "
            "(clear large outputs, save, and submit again)")


async def capped_body(chunks, *, limit: int = MAX_BODY_BYTES, drained: int = DRAINED_BYTES):
    """The request body's chunks (`chunks`: Starlette's `request.stream()`) as they arrive, up to
    `limit` bytes in all; a body longer than that is read on and dropped up to `drained` bytes
    (so the sender reads the answer), then refused (413). The chunk that crosses `limit` is not
    passed on: whatever reads this generator (the form parser, which spools a file part to disk)
    never holds more than `limit` bytes of the body."""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > limit:
            async for rest in chunks:
                total += len(rest)
                if total > drained:
                    break
            raise Refused(413, too_large())
        yield chunk


class Refused(Exception):
    """A submission the service will not grade; the message is for the student."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class Refusals:
    """Each student's refused uploads within the last `window` (in memory: a restarted service
    forgets them). Thread-safe: the routes count from the event loop and from worker threads."""

    def __init__(self, allowed: int = REFUSALS_ALLOWED, window: datetime.timedelta = REFUSAL_WINDOW):
        self.allowed, self.window = allowed, window
        self._times: dict[str, collections.deque] = {}
        self._lock = threading.Lock()

    def _recent(self, student: str) -> collections.deque:
        times = self._times.setdefault(student, collections.deque())
        while times and times[0] <= now() - self.window:
            times.popleft()
        return times

    def check(self, student: str) -> None:
        """Refused (429) while the student has `allowed` refusals within the window; this
        refusal itself is not counted, so waiting is enough."""
        with self._lock:
            times = self._recent(student)
            if len(times) >= self.allowed:
                until = (times[0] + self.window).replace(microsecond=0)
                raise Refused(429, f"{len(times)} of your uploads were refused in the last "
                                   f"{self.window.total_seconds() / 60:.0f} min; the service takes no "
                                   f"upload from you until {iso(until)}")

    def count(self, student: str) -> None:
        with self._lock:
            self._recent(student).append(now())


class Intake:
    """Checks and stores uploads for one class. One lock makes "nothing in flight, room in the
    window" and the new row one step, so two uploads at once cannot both pass.

    `availability(name, student)`: whether the student may submit the assignment now
    (rlcourse.web.availability.Availability); `releases()`: name -> release notebook of every
    assignment of the course, what an upload is matched against."""

    def __init__(self, class_dir: ClassDirectory, store: Store, availability, releases=dict):
        self.class_dir, self.store, self.availability, self.releases = class_dir, store, availability, releases
        self.history = class_dir.root / "web" / "history"
        self.matcher = Releases()
        self.refusals = Refusals()
        self._lock = threading.Lock()

    def accept(self, assignment: Assignment, student: str, data: bytes, *, filename: str = "") -> Submission:
        if student_id_problem(student):
            raise Refused(403, f"{student!r} cannot submit: {student_id_problem(student)}")
        available = self.availability(assignment.name, student)
        if not available.open:
            raise Refused(available.status, available.reason)
        if len(data) > MAX_UPLOAD_BYTES:
            raise Refused(413, too_large())
        shown = upload_name(filename, assignment.notebook)
        sha256 = check_notebook(data, shown)
        looks_like = self.matcher.resemblance(upload_grade_ids(data), assignment.name, self.releases())
        if looks_like is not None:
            raise Refused(422, describe(looks_like, filename=shown, target=assignment.name))
        with self._lock:
            self._check_limits(assignment, student)
            self._check_quota(assignment, student, len(data), shown)
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
        recent = [entry.created for entry in counted(mine) if entry.created > now() - window]
        if len(recent) >= policy.submissions_per_window:
            next_allowed = min(recent) + window
            raise Refused(429, f"at most {policy.submissions_per_window} submissions of "
                               f"{assignment.name} per {policy.window_minutes} min; the next is "
                               f"allowed at {iso(next_allowed.replace(microsecond=0))}")

    def _check_quota(self, assignment: Assignment, student: str, size: int, shown: str) -> None:
        """Refused (413) when the student's kept uploads of this assignment in web/history/ and
        this one would take more than `[web] history_megabytes`."""
        allowed = assignment.web.history_megabytes * 2**20
        kept = folder_bytes(self.history / student / assignment.name)
        if kept + size > allowed:
            raise Refused(413, f"your uploads of {assignment.name} kept by the service take "
                               f"{kept / 2**20:.1f} MB of the {assignment.web.history_megabytes} MB each "
                               f"student may keep, and {shown} ({size / 2**20:.1f} MB) would pass it: "
                               "ask the course staff to remove old uploads from web/history/")

    def install(self, submission: Submission, assignment: Assignment) -> Path:
        """Copy a history folder's upload into nbgrader's `submitted/` layout (what is graded)."""
        source = self.class_dir.root / submission.folder
        target = self.class_dir.submitted / submission.student / submission.assignment
        for name in (assignment.notebook, TIMESTAMP_FILE):
            write_atomic(target / name, (source / name).read_bytes())
        return target / assignment.notebook


def counted(submissions: list[Submission]) -> list[Submission]:
    """The submissions that count against the rolling window: all but those the service failed
    to grade (its own failure, never the student's)."""
    return [entry for entry in submissions if entry.status != FAILED]


def folder_bytes(folder: Path) -> int:
    """The bytes of every file under `folder` (0 when missing), links not followed."""
    total, folders = 0, [folder]
    while folders:
        try:
            entries = list(os.scandir(folders.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def upload_name(filename: str, default: str) -> str:
    """The uploaded file's own name, as the student knows it, for messages: its last path part
    (browsers and clients send a bare name; anything else is cut), printable, at most 120
    characters and 200 bytes (a file name on disk); `default` when there is none."""
    name = PurePosixPath(str(filename or "").replace("\\", "/")).name
    name = "".join(character if character.isprintable() else "?" for character in name)[:120]
    while len(name.encode()) > 200:
        name = name[:-1]
    return name if name not in ("", ".", "..") else default


def check_notebook(data: bytes, name: str) -> str:
    """The upload's SHA-256 if it reads as a notebook (the grader's own checks, which run
    nothing); else Refused with what is wrong, naming the file `name` (the upload's own)."""
    with tempfile.TemporaryDirectory(prefix="rlcourse-upload-") as scratch:
        path = Path(scratch) / name  # upload_name's: one printable path part
        path.write_bytes(data)
        try:
            return load_submission(path).sha256
        except NotebookProblem as problem:
            raise Refused(422, f"not a notebook that can be graded: {problem}") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
