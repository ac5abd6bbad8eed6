"""nbgrader's gradebook, written through nbgrader's own API: the assignment and its cells from
the release, and each student's automatic scores, timestamp and late penalty.

Manual scores are never touched; each student's grades are one commit, so a plugin or a crash
mid-way leaves that student's grades as they were. A TA's mark of a written answer that the
submission being recorded changes is flagged in that commit (nbgrader's `needs_manual_grade`,
rlcourse.record.marks.MarkBinding), its score and comment kept.
"""
from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from rlcourse.course.directory import Assignment, CourseError
from rlcourse.grading.report import Report

def nbgrader_on_path() -> None:
    """nbgrader's Gradebook runs `alembic` by name; make this environment's scripts findable even
    when rlcourse was started by its full path without activating the environment."""
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def cell_scores(report: Report) -> dict[str, float]:
    """The report's items added up per nbgrader test cell."""
    totals: dict[str, float] = {}
    for item in report.items:
        if item.cell:
            totals[item.cell] = totals.get(item.cell, 0.0) + item.score
    return totals


def _sqlalchemy_warning():
    from sqlalchemy.exc import SAWarning

    return SAWarning


class GradebookOutOfDate(CourseError):
    """The gradebook's cells for an assignment are not the release's, and nbgrader cannot change
    them because submissions are recorded against the old ones."""


def ensure_assignment_in_gradebook(db_url: str, assignment: Assignment) -> None:
    """Create the assignment, its notebook and its cells in the gradebook from the release, as
    `nbgrader generate_assignment` would (nbgrader's own SaveCells preprocessor), and bring them
    up to date when the release changed: otherwise the scores of a new test cell would have no
    row to go in, and the totals and the late penalty would be taken over the old cells. nbgrader
    refuses to add or remove cells once submissions are recorded; that is GradebookOutOfDate."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import SaveCells

    from rlcourse.course.release import Release

    nbgrader_on_path()
    notebook_id = Path(assignment.notebook).stem
    release = Release.read(assignment.release_notebook)
    wanted = {cell.grade_id: cell.points for cell in release.cells if cell.grade}
    with Gradebook(db_url) as gradebook:
        gradebook.update_or_create_assignment(assignment.name)
        try:
            notebook = gradebook.find_notebook(notebook_id, assignment.name)
            held = {cell.name: float(cell.max_score) for cell in notebook.grade_cells}
            if held == wanted:
                return
        except MissingEntry:
            held = None
    try:
        SaveCells().preprocess(release.notebook(), {"nbgrader": {
            "db_url": db_url, "assignment": assignment.name, "notebook": notebook_id}})
    except RuntimeError as error:  # nbgrader: "Cannot add or remove cells ... submissions"
        held = held or {}
        raise GradebookOutOfDate(
            f"the gradebook's {assignment.name} was made from an older release (test cells added "
            f"since: {', '.join(sorted(set(wanted) - set(held))) or 'none'}; removed: "
            f"{', '.join(sorted(set(held) - set(wanted))) or 'none'}), and nbgrader cannot change "
            f"its cells once submissions are recorded ({error}). Grade the new release in a new "
            "gradebook, or release it under a new assignment name") from None


def record_in_gradebook(db_url: str, assignment: Assignment, student: str, report: Report | None,
                        *, timestamp=None, policy=None, gradebook=None, written=None):
    """Set the automatic score of every test cell the report covers (None: leave the scores as
    they are); leave manual scores alone; record the submission's timestamp (when known, as
    `nbgrader autograde` does) and the late penalty the course's policy (rlcourse.course.lateness.
    LatePolicy) charges for it. Scores, timestamp and penalty go in one commit: a plugin that
    fails leaves this student's grades as they were. `gradebook`: an open nbgrader Gradebook
    to use (a run keeps one open), else one is opened. `written`: the submission's written
    answers beside those its marks were made on (rlcourse.record.marks.MarkBinding, from
    rlcourse.record.ledger.mark_binding): a mark whose answer changed is flagged for re-marking
    in the same commit, and `written` is left holding what the ledger should keep. Returns the
    submission's Timing as the gradebook now holds it."""
    from nbgrader.api import Gradebook, MissingEntry

    from rlcourse.course.lateness import timing_of

    if gradebook is None:
        with Gradebook(db_url) as opened:
            return record_in_gradebook(db_url, assignment, student, report, timestamp=timestamp,
                                       policy=policy, gradebook=opened, written=written)
    notebook_id = Path(assignment.notebook).stem
    totals = cell_scores(report) if report is not None else {}
    with warnings.catch_warnings():
        # nbgrader's add_submission builds rows before adding them to its session, which
        # SQLAlchemy 2 reports as a warning on every new submission; the rows are committed.
        warnings.simplefilter("ignore", category=_sqlalchemy_warning())
        gradebook.update_or_create_student(student)
        try:
            submission = gradebook.find_submission(assignment.name, student)
        except MissingEntry:
            submission = gradebook.add_submission(assignment.name, student)
        submitted = gradebook.find_submission_notebook(notebook_id, assignment.name, student)
        try:
            for grade in submitted.grades:
                if grade.cell.name in totals:
                    grade.auto_score = totals[grade.cell.name]
                    grade.needs_manual_grade = grade.manual_score is not None
                elif grade.cell.cell_type == "markdown" and grade.manual_score is None:
                    # A written answer awaits a TA, as `nbgrader autograde` flags it for formgrader.
                    grade.needs_manual_grade = True
            if written is not None:
                written.bind(submitted.grades)
            if timestamp is not None:
                submission.timestamp = timestamp
            if policy is not None:
                gradebook.db.flush()
                gradebook.db.expire_all()  # the scores are SQL expressions over the grades just set
                submitted.late_submission_penalty = policy.penalty(
                    student, score=submitted.score, seconds_late=submission.total_seconds_late,
                    cap=submitted.score)
            gradebook.db.commit()
        except BaseException:
            gradebook.db.rollback()
            raise
        gradebook.db.expire_all()
        return timing_of(submission)


# --- the run ------------------------------------------------------------------------------------


def open_gradebook(db_url: str):
    from nbgrader.api import Gradebook

    nbgrader_on_path()
    return Gradebook(db_url)


def gradebook_students(db_url: str) -> set[str]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        return {student.id for student in gradebook.students}
