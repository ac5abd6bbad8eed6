"""`rlcourse extension ASSIGNMENT STUDENT --days 2`: an extension, granted at any time, in nbgrader's
gradebook.

nbgrader keeps an extension on the student's submission row (`SubmittedAssignment.extension`),
and its `Gradebook.grant_extension` only finds that row: before the student has been graded
there is none, and it raises `MissingEntry`. nbgrader's `update_or_create_submission` makes
the row, but as the assignment stands in the gradebook at that moment: when its notebook and
cells are not there yet (the release was committed, not generated in this course directory),
the row gets no notebook, and recording the student's grades later fails (`MissingEntry: No
such submitted notebook`). So the assignment and its cells are written first, from the
release, as `nbgrader generate_assignment` writes them (rlcourse.record.gradebook), then the
student, then the row, then the extension: all through nbgrader's own API, so formgrader,
`nbgrader export` and `rlcourse autograde` read it as they read any extension.

Extensions replace, never add to, an earlier one (nbgrader's rule); `remove=True` removes it.
The next `rlcourse autograde` applies it: it sets each penalty afresh from the gradebook.
"""
from __future__ import annotations

import dataclasses
import datetime
import warnings

from rlcourse.course.class_directory import ClassDirectory, student_id_problem
from rlcourse.course.config import CourseError
from rlcourse.course.directory import Assignment


@dataclasses.dataclass(frozen=True)
class Extension:
    """What the gradebook holds for the student now."""

    student: str
    assignment: str
    duedate: datetime.datetime | None
    extension: datetime.timedelta | None

    @property
    def deadline(self) -> datetime.datetime | None:
        if self.duedate is None:
            return None
        return self.duedate + (self.extension or datetime.timedelta())

    def describe(self) -> str:
        from rlcourse.course.lateness import format_duration, iso

        granted = (f"an extension of {format_duration(self.extension.total_seconds())}"
                   if self.extension else "no extension")
        if self.duedate is None:
            return f"{self.student}: {self.assignment} has {granted} (the assignment has no due date yet)"
        return (f"{self.student}: {self.assignment} has {granted}: due {iso(self.deadline)} "
                f"(the class's due date is {iso(self.duedate)})")


def grant_extension(assignment: Assignment, student: str, *, class_dir: ClassDirectory,
                    minutes: float = 0, hours: float = 0, days: float = 0, weeks: float = 0,
                    remove: bool = False) -> Extension:
    """Give `student` an extension of the given length on `assignment` (replacing any earlier
    one), or with `remove` take it away; works before the student has submitted or been graded,
    and before the assignment is in the gradebook at all. Returns what the gradebook holds."""
    from rlcourse.record.gradebook import ensure_assignment_in_gradebook, open_gradebook

    problem = student_id_problem(student)
    if problem:
        raise CourseError(problem)
    length = datetime.timedelta(minutes=minutes, hours=hours, days=days, weeks=weeks)
    if remove == (length > datetime.timedelta()):
        raise CourseError("give the extension's length (--minutes, --hours, --days, --weeks), "
                          "or --remove to take an extension away")
    ensure_assignment_in_gradebook(class_dir.db_url, assignment)
    with open_gradebook(class_dir.db_url) as gradebook, warnings.catch_warnings():
        # nbgrader's add_submission builds rows before adding them to its session, which
        # SQLAlchemy 2 reports as a warning (rlcourse.record.gradebook says the same).
        warnings.simplefilter("ignore")
        gradebook.update_or_create_student(student)
        gradebook.update_or_create_submission(assignment.name, student)
        if remove:
            gradebook.grant_extension(assignment.name, student)  # no length: nbgrader removes it
        else:
            gradebook.grant_extension(assignment.name, student, minutes=length.total_seconds() / 60)
        submission = gradebook.find_submission(assignment.name, student)
        return Extension(student, assignment.name, submission.assignment.duedate, submission.extension)
