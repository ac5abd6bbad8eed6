"""`rlcourse override ASSIGNMENT STUDENT CELL SCORE --comment WHY`: a TA's score for an
autograded cell, set where formgrader sets it (the Grade's `manual_score` in nbgrader's
gradebook), with the reason in the audit log.

The automatic score stays in the gradebook beside it (`auto_score`), so the original is never
lost: the staff see both side by side, and the student's feedback page says the score was
changed by staff, with the comment (rlcourse.grading.grade.Override). A later autograde keeps
the override, as nbgrader does (a manual score wins over the automatic one); `--remove` gives
the cell back its automatic score. Formgrader's own overrides work too, without a comment:
the audit log finds and records them as unexplained.
"""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError
from rlcourse.course.directory import Assignment


def override_score(assignment: Assignment, student: str, cell: str, score: float | None, *,
                   class_dir: ClassDirectory, comment: str = "", log=None, cause=None,
                   by: str | None = None) -> Path | None:
    """Set (or with `score` None, remove) a TA's score for `student`'s autograded `cell`; log it
    with `comment` under the OS user (or `by`, and under `cause` instead of `override`: an
    accepted regrade request); redraw the late penalty and the feedback page. Returns the page
    (None for a student not autograded by rlcourse)."""
    from nbgrader.api import MissingEntry

    from rlcourse.batch.autograde import class_lock, refresh_student
    from rlcourse.record.audit import OVERRIDE, AuditLog, Cause, account, account_unexplained
    from rlcourse.record.gradebook import open_gradebook
    from rlcourse.record.grades import written_of

    log = log or (lambda message: None)
    if cell in {grade_id for grade_id, _ in written_of(assignment)}:
        raise CourseError(f"{cell} is a written answer: mark it with `rlcourse rubric import` or in formgrader")
    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        raise CourseError(f"{class_dir.root}: no gradebook yet; run `rlcourse autograde {assignment.name}` first")
    with class_lock(class_dir, log), open_gradebook(class_dir.db_url) as gradebook, \
            AuditLog(class_dir.root) as audit:
        try:
            grade = gradebook.find_grade(cell, Path(assignment.notebook).stem, assignment.name, student)
        except MissingEntry:
            raise CourseError(f"the gradebook's {assignment.name} has no autograded cell {cell!r} for "
                              f"{student!r} (a typo, or not autograded yet?)") from None
        if score is not None and not 0 <= score <= float(grade.max_score):
            raise CourseError(f"{cell} is worth {float(grade.max_score):g} points: {score:g} is out of range")
        account_unexplained(audit, gradebook, assignment, student, report=log)
        grade.manual_score = score
        grade.needs_manual_grade = False
        gradebook.db.commit()
        cause = cause or Cause(OVERRIDE, {"comment": comment, "automatic": grade.auto_score}
                               if score is not None else {"removed": True, "automatic": grade.auto_score})
        account(audit, gradebook, assignment, student, cause, by=by, items={cell})
        return refresh_student(class_dir, assignment, student, gradebook=gradebook, log=log, audit=audit,
                               cause=cause)
