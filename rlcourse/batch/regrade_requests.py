"""Answering a student's regrade request (rlcourse.record.requests): the one place an outcome
reaches the grade of record, for the service's staff pages, its API and `rlcourse regrade-requests`.

Accepting writes the new score where a TA's score goes in nbgrader's gradebook, as `rlcourse
override` does (an autograded cell's `manual_score`, its automatic score kept beside it; a
written answer's `manual_score`, its rubric line kept and the staff's comment added), with an
audit-log entry whose cause is `regrade_request` with the request's id, under the staff
account that answered. Declining changes nothing of the gradebook: the request's state and the
staff's reason are its whole record.

It lives in `batch/`, beside `overrides`, because it takes the class's lock and redraws the
student's feedback page as a run does (rlcourse.batch.autograde.refresh_student).
"""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError
from rlcourse.course.directory import Assignment
from rlcourse.record.requests import AUTOGRADED, RegradeRequest, RegradeRequests, RequestRefused


def answer_request(course, request_id: int, *, class_dir: ClassDirectory, accept: bool, by: str, text: str,
                   score: float | None = None, log=None) -> RegradeRequest:
    """Accept (with `score`, the cell's new score, and `text` as the comment) or decline (with
    `text` as the reason) the open request `request_id`, answered by the staff account `by`."""
    from rlcourse.record.audit import REGRADE_REQUEST, Cause

    log = log or (lambda message: None)

    def write(request: RegradeRequest) -> None:
        assignment = course.assignment(request.assignment)
        cause = Cause(REGRADE_REQUEST, {"request": request.id, "comment": text, "automatic": request.automatic})
        try:
            if request.kind == AUTOGRADED:
                from rlcourse.batch.overrides import override_score

                override_score(assignment, request.student, request.cell, score, class_dir=class_dir,
                               comment=text, log=log, cause=cause, by=by)
            else:
                set_written_score(assignment, request.student, request.cell, score, class_dir=class_dir,
                                  comment=f"Regrade request #{request.id}: {text}", cause=cause, by=by, log=log)
        except CourseError as error:
            raise RequestRefused(409, str(error)) from None

    with RegradeRequests(class_dir.root) as store:
        return store.answer(request_id, accept=accept, by=by, text=text, score=score,
                            write=write if accept else None)


def list_requests(class_dir: ClassDirectory, *, assignment: str | None = None,
                  open_only: bool = False) -> list[RegradeRequest]:
    """The class's requests (of `assignment`), open ones first; none for a class without any."""
    from rlcourse.record.requests import OPEN, requests_path

    if not requests_path(class_dir.root).is_file():
        return []
    with RegradeRequests(class_dir.root) as store:
        return store.list(assignment=assignment, state=OPEN if open_only else None)


def set_written_score(assignment: Assignment, student: str, cell: str, score: float, *, class_dir: ClassDirectory,
                      comment: str, cause, by: str, log=None) -> Path | None:
    """A written answer's mark set to `score`, as formgrader sets it (the Grade's manual_score,
    needs_manual_grade cleared), the criteria line and the TA's comment kept and `comment` added
    below them; the change in the audit log under `cause` by `by`; the page redrawn."""
    from nbgrader.api import MissingEntry

    from rlcourse.batch.autograde import class_lock, refresh_student
    from rlcourse.record.audit import AuditLog, account, account_unexplained
    from rlcourse.record.gradebook import open_gradebook

    log = log or (lambda message: None)
    notebook = Path(assignment.notebook).stem
    with class_lock(class_dir, log), open_gradebook(class_dir.db_url) as gradebook, AuditLog(class_dir.root) as audit:
        try:
            grade = gradebook.find_grade(cell, notebook, assignment.name, student)
            stored = gradebook.find_comment(cell, notebook, assignment.name, student)
        except MissingEntry:
            raise CourseError(f"the gradebook's {assignment.name} has no written answer {cell!r} for {student!r}") from None
        account_unexplained(audit, gradebook, assignment, student, report=log)
        grade.manual_score = score
        grade.needs_manual_grade = False
        stored.manual_comment = "\n\n".join(part for part in ((stored.manual_comment or "").strip(), comment) if part)
        gradebook.db.commit()
        account(audit, gradebook, assignment, student, cause, by=by, items={cell})
        return refresh_student(class_dir, assignment, student, gradebook=gradebook, log=log, audit=audit,
                               cause=cause)
