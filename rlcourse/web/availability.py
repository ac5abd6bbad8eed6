"""Which assignments the service takes from a student now: released to the class, and open.

**Released**, in nbgrader's terms, is what the instructor did to give the assignment to this
class, not merely to have written it:

1. `nbgrader generate_assignment` wrote the student version into the course's `release/<name>/`
   (without it there is nothing to compare a notebook with or to grade against; the engine
   already refuses an assignment whose release lacks its notebook);
2. the class's gradebook holds the assignment (nbgrader's `Assignment` row: `nbgrader db
   assignment add NAME --duedate=...`, formgrader, or `generate_assignment` run for this class):
   it is where the due date lives, and what `nbgrader export` and formgrader list. The course
   directory of this template holds every assignment of the course; the gradebook says which of
   them this class was given. Accepting an assignment without its row would have `autograde`
   create one with no due date, and every other student export a zero for it;
3. when the class uses nbgrader's exchange (`c.Exchange.root` set in the course's or the class's
   `nbgrader_config.py`, its folder present, and a `course_id`), `nbgrader release_assignment`
   has put it in the exchange's `<root>/<course_id>/outbound/<name>/`, the folder `nbgrader
   fetch_assignment` and `nbgrader list` read: what formgrader shows as "released" (nbgrader's
   `NbGraderAPI.get_assignment`). `nbgrader list --remove NAME` takes it back, and the service
   stops taking it too. A class without an exchange (notebooks handed out by the hub or an LMS)
   has no such folder, and the gradebook's row is the release.

**Open** is then the assignment's `[web]` table: not before `opens`, not after `closes` (moved by
the student's nbgrader extension, as the due date is), and not after the student's deadline when
`accept_late = false`.

What the class holds is read at most every `SNAPSHOT_SECONDS` (opening nbgrader's gradebook costs
a quarter of a second, too much for every page): an assignment released now is taken within that.
"""
from __future__ import annotations

import dataclasses
import datetime
import threading
import time
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course, CourseError
from rlcourse.course.lateness import iso

SNAPSHOT_SECONDS = 30


@dataclasses.dataclass(frozen=True)
class ClassAssignments:
    """What the class was given, as its gradebook and exchange say at one moment."""

    duedates: dict[str, datetime.datetime | None]
    """Each assignment of the class's gradebook, with its due date (naive UTC) or None."""
    outbound: frozenset[str] | None
    """The assignments in the exchange's outbound folder; None when the class has no exchange."""
    exchange: str | None = None
    """The outbound folder read, for messages."""

    def released(self, name: str) -> bool:
        return name in self.duedates and (self.outbound is None or name in self.outbound)


@dataclasses.dataclass(frozen=True)
class Availability:
    """Whether one student may submit one assignment now; why not, if not."""

    assignment: str
    released: bool
    open: bool
    reason: str = ""
    """One sentence for the student when closed ("" when open)."""
    status: int = 200
    """The HTTP status of a refusal: 404 for an assignment not released (to this class it does
    not exist), 403 for one that is closed."""


def read_class_assignments(course: Course, class_dir: ClassDirectory) -> ClassAssignments:
    """The gradebook's assignments and, with an exchange, its outbound folder (read only)."""
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import nbgrader_on_path

    duedates: dict[str, datetime.datetime | None] = {}
    if (class_dir.root / "gradebook.db").is_file():
        nbgrader_on_path()
        with Gradebook(class_dir.db_url) as gradebook:
            duedates = {assignment.name: assignment.duedate for assignment in gradebook.assignments}
    outbound_folder = exchange_outbound(course.root, class_dir.root)
    if outbound_folder is None:
        return ClassAssignments(duedates, None)
    released = frozenset(path.name for path in outbound_folder.iterdir() if path.is_dir()) \
        if outbound_folder.is_dir() else frozenset()
    return ClassAssignments(duedates, released, str(outbound_folder))


def exchange_outbound(course_root: Path, class_root: Path) -> Path | None:
    """`<Exchange.root>/<course_id>/outbound`, when the course's or the class's nbgrader
    configuration (the class's wins, as nbgrader's `--CourseDirectory.root` folder does) sets an
    exchange that exists here and a course id: nbgrader's `exchange_is_functional`, except that
    the exchange's default root counts only when named (a class without an exchange must not be
    judged by another course's exchange on the same machine)."""
    from rlcourse.course.lateness import course_config

    config = course_config(course_root)
    config.merge(course_config(class_root))
    root = config.Exchange.get("root") if "Exchange" in config else None
    course_id = config.CourseDirectory.get("course_id") if "CourseDirectory" in config else None
    if not (isinstance(root, str) and root and isinstance(course_id, str) and course_id):
        return None
    if not Path(root).is_dir():
        return None
    return Path(root) / course_id / "outbound"


class Availabilities:
    """The class's snapshot, read again after `SNAPSHOT_SECONDS`, and each student's answer."""

    def __init__(self, course: Course, class_dir: ClassDirectory, extension):
        self.course, self.class_dir, self.extension = course, class_dir, extension
        self._snapshot: tuple[float, ClassAssignments] | None = None
        self._lock = threading.Lock()

    def snapshot(self) -> ClassAssignments:
        with self._lock:
            if self._snapshot and time.monotonic() - self._snapshot[0] < SNAPSHOT_SECONDS:
                return self._snapshot[1]
        value = read_class_assignments(self.course, self.class_dir)
        with self._lock:
            self._snapshot = (time.monotonic(), value)
        return value

    def forget(self) -> None:
        with self._lock:
            self._snapshot = None

    def of(self, name: str, student: str | None, *, now: datetime.datetime) -> Availability:
        """May `student` submit `name` at `now` (naive UTC)? `student` None: the class as a
        whole (the staff's view), without anyone's extension."""
        snapshot = self.snapshot()
        if not snapshot.released(name):
            where = ("the class's gradebook" if name not in snapshot.duedates
                     else f"nbgrader's exchange ({snapshot.exchange})")
            return Availability(name, False, False, f"{name} is not released to this class yet "
                                f"(it is not in {where})", 404)
        try:
            policy = self.course.assignment(name).web
        except CourseError as error:
            return Availability(name, True, False, f"{name} cannot be graded now: {error}", 503)
        extension = (self.extension(student, name) if student else None) or datetime.timedelta(0)
        duedate = snapshot.duedates.get(name)
        if policy.opens and now < policy.opens:
            return Availability(name, True, False, f"{name} opens at {iso(policy.opens)}", 403)
        if policy.closes and now >= policy.closes + extension:
            shown = policy.closes + extension
            return Availability(name, True, False, f"{name} closed at {iso(shown)}"
                                + (" (with your extension)" if extension else ""), 403)
        if not policy.accept_late and duedate is not None and now > duedate + extension:
            return Availability(name, True, False, f"{name} was due at {iso(duedate + extension)} (with any "
                                "extension you have); this course does not accept late submissions", 403)
        return Availability(name, True, True)

