"""`rlcourse audit ASSIGNMENT`: the audit log of an assignment's grades (rlcourse.record.audit),
after first accounting for any gradebook value the log cannot explain (a formgrader edit since
the last rlcourse command), which is reported and recorded as unexplained before it is shown."""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Assignment
from rlcourse.record.audit import AuditLog, Entry, account_unexplained


def audit_trail(assignment: Assignment, *, class_dir: ClassDirectory, student: str | None = None,
                log=None) -> list[Entry]:
    """The log's entries for `assignment` (or one `student`'s), oldest first. Under the class's
    lock, so an autograde or an import running now is not taken for a change behind its back."""
    from nbgrader.api import MissingEntry

    from rlcourse.batch.autograde import class_lock
    from rlcourse.record.gradebook import open_gradebook

    log = log or (lambda message: None)
    with class_lock(class_dir, log), AuditLog(class_dir.root) as audit:
        if Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
            with open_gradebook(class_dir.db_url) as gradebook:
                try:
                    held = [s.student.id for s in gradebook.assignment_submissions(assignment.name)]
                except MissingEntry:
                    held = []
                for someone in held:
                    if student is None or someone == student:
                        account_unexplained(audit, gradebook, assignment, someone, report=log)
        return audit.entries(assignment.name, student=student)
