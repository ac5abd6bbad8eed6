"""The staff's actions on the service, besides viewing: what /staff's forms and the staff API
routes (rlcourse.web.app, which checks who is asking) do.

- retry a grading that failed on the service's side (its attempts counted from zero);
- regrade a graded submission, or every student's counting submission of an assignment (after a
  grader fix): graded afresh even where the ledger holds the report, and still counting while it
  waits (rlcourse.web.queue puts back whichever submission counts, whatever is graded);
- download any submission's notebook, as uploaded;
- export an assignment: `rlcourse export`'s CSV, or Gradescope's results zipped.

Each raises `Impossible` (an HTTP status and one sentence) when the action does not apply.
"""
from __future__ import annotations

import dataclasses
import io
import zipfile

from rlcourse.course.directory import CourseError
from rlcourse.web.store import Submission

EXPORT_FORMATS = ("csv", "gradescope")


class Impossible(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Download:
    content: bytes
    media_type: str
    filename: str


class StaffActions:
    def __init__(self, service):
        self.service = service

    def retry(self, submission_id: int) -> Submission:
        """A failed grading queued again; 409 for a submission in any other state."""
        submission = self.service.store.queue_again(submission_id, regrade=False)
        if submission is None:
            raise self._not_in_state(submission_id, "failed", "only a failed grading is retried")
        self.service.queue.wake()
        return submission

    def regrade(self, submission_id: int, *, by: str | None = None) -> Submission:
        """A graded submission queued to be graded afresh for the staff account `by` (whom the
        audit log names); 409 for any other state."""
        submission = self.service.store.queue_again(submission_id, regrade=True, by=by)
        if submission is None:
            raise self._not_in_state(submission_id, "graded", "only a graded submission is regraded")
        self.service.queue.wake()
        return submission

    def regrade_assignment(self, name: str, *, by: str | None = None) -> list[int]:
        """Every student's counting submission of the assignment, queued to be graded afresh.
        Work that came through nbgrader's exchange is `rlcourse autograde --force`'s: a student
        whose gradebook entry is such work is left alone (regrading their older upload would
        put it in the gradebook instead)."""
        self._assignment(name)
        store = self.service.store
        rows = store.submissions(assignment=name)
        counting = sorted(self.service.counting(rows))
        students = {row.id: row.student for row in rows}
        queued = [number for number in counting
                  if self.service.exchange_work(students[number], name, rows) is None
                  and store.queue_again(number, regrade=True, by=by)]
        self.service.queue.wake()
        return queued

    def notebook(self, submission_id: int) -> Download:
        submission = self.service.store.get(submission_id)
        if submission is None:
            raise Impossible(404, "no such submission")
        assignment = self._assignment(submission.assignment)
        path = self.service.class_dir.root / submission.folder / assignment.notebook
        return Download(path.read_bytes(), "application/x-ipynb+json",
                        f"{submission.student}-{submission.assignment}-{submission.id}.ipynb")

    def export(self, name: str, format: str) -> Download:  # noqa: A002 - the command line's word
        """`rlcourse export NAME --format csv|gradescope`, written to the class's exports/ as the
        command writes it, and handed back: the CSV, or Gradescope's results as a zip."""
        from rlcourse.report.export import export

        assignment = self._assignment(name)
        if format not in EXPORT_FORMATS:
            raise Impossible(422, f"format {format!r}: use {' or '.join(EXPORT_FORMATS)}")
        path = export(assignment, class_dir=self.service.class_dir, format=format)
        if format == "csv":
            return Download(path.read_bytes(), "text/csv; charset=utf-8", path.name)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for result in sorted(path.glob("*/results.json")):
                archive.write(result, result.relative_to(path).as_posix())
        return Download(buffer.getvalue(), "application/zip", f"{name}-gradescope.zip")

    def _assignment(self, name: str):
        if name not in self.service.assignments():
            raise Impossible(404, f"no assignment {name!r}")
        try:
            return self.service.course.assignment(name)
        except CourseError as error:
            raise Impossible(500, str(error)) from None

    def _not_in_state(self, submission_id: int, wanted: str, rule: str) -> Impossible:
        found = self.service.store.get(submission_id)
        if found is None:
            return Impossible(404, "no such submission")
        return Impossible(409, f"#{submission_id} is {found.status}, not {wanted}: {rule}")
