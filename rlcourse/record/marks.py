"""A TA's marks of the manually graded answers, kept in nbgrader's gradebook and nowhere else.

The score is the Grade's `manual_score`, as formgrader sets it. Which rubric criteria were met
is written on the first line of the cell's Comment (`manual_comment`), above the TA's own words:

    Rubric criteria met: 1, 3 (of 4)

    A good account of the min; the second half misses the drift.

Why the comment and not a file beside the reports: the gradebook is the one record of a grade
that nbgrader's tools share. A TA who corrects a mark in formgrader sees the line and can edit it
there; `nbgrader export`, `generate_feedback` and a backup of gradebook.db carry it; and nothing
can drift out of step with the score. The line is plain text a person reads, and this module is
the only one that writes or parses it. A mark entered in formgrader without the line still
counts: its score and comment are shown, with its criteria "not recorded".
"""
from __future__ import annotations

import dataclasses
import re
import warnings
from pathlib import Path

CRITERIA_LINE = re.compile(r"\A[ \t]*Rubric criteria met:[ \t]*(?P<met>none|\d+(?:[ \t]*,[ \t]*\d+)*)"
                           r"[^\n]*(?:\n|\Z)")


@dataclasses.dataclass(frozen=True)
class Mark:
    """What the gradebook holds of one student's answer to one manually graded cell."""

    grade_id: str
    score: float | None
    """The TA's manual_score; None while nobody has marked it."""
    max_score: float
    met: tuple[int, ...] | None
    """The rubric criteria met, by number; None when the mark does not say (formgrader)."""
    comment: str
    """The TA's comment, without the criteria line."""

    @property
    def marked(self) -> bool:
        return self.score is not None

    def to_json(self) -> dict:
        return {"grade_id": self.grade_id, "score": self.score, "max_score": self.max_score,
                "met": list(self.met) if self.met is not None else None, "comment": self.comment}


def comment_text(met, criteria_count: int, comment: str = "") -> str:
    """The comment stored for a mark: the criteria line, then the TA's comment."""
    numbers = ", ".join(str(number) for number in sorted(set(met))) or "none"
    line = f"Rubric criteria met: {numbers} (of {criteria_count})"
    comment = (comment or "").strip()
    return f"{line}\n\n{comment}" if comment else line


def parse_comment(text: str | None) -> tuple[tuple[int, ...] | None, str]:
    """(criteria met or None, the TA's own comment) from a stored comment."""
    text = text or ""
    match = CRITERIA_LINE.match(text)
    if match is None:
        return None, text.strip()
    met = () if match["met"] == "none" else tuple(sorted({int(n) for n in match["met"].split(",")}))
    return met, text[match.end():].strip()


def read_marks(gradebook, assignment, student: str, grade_ids) -> dict[str, Mark]:
    """grade_id -> Mark of each manually graded cell of the student's submission in an open
    nbgrader Gradebook (cells the gradebook does not have for them are left out)."""
    from nbgrader.api import MissingEntry

    notebook_id = Path(assignment.notebook).stem
    marks = {}
    for grade_id in grade_ids:
        try:
            grade = gradebook.find_grade(grade_id, notebook_id, assignment.name, student)
        except MissingEntry:
            continue
        try:
            stored = gradebook.find_comment(grade_id, notebook_id, assignment.name, student).manual_comment
        except MissingEntry:
            stored = None
        met, comment = parse_comment(stored)
        marks[grade_id] = Mark(grade_id, grade.manual_score, float(grade.max_score), met, comment)
    return marks


def read_marks_from(db_url: str, assignment, student: str, grade_ids) -> dict[str, Mark]:
    """read_marks with a gradebook opened (and closed) here."""
    from rlcourse.record.gradebook import open_gradebook

    with open_gradebook(db_url) as gradebook:
        return read_marks(gradebook, assignment, student, grade_ids)


@dataclasses.dataclass(frozen=True)
class NewMark:
    """One row of a TA's marking, checked against the rubric: what `set_marks` writes."""

    student: str
    grade_id: str
    score: float
    met: tuple[int, ...]
    criteria_count: int
    comment: str = ""


def set_marks(gradebook, assignment, marks: list[NewMark]) -> None:
    """Write every mark in one commit (nbgrader's Gradebook API: the Grade's manual_score, the
    Comment's manual_comment; needs_manual_grade cleared as formgrader clears it). A missing
    student, submission or cell raises nbgrader's MissingEntry and nothing is written."""
    notebook_id = Path(assignment.notebook).stem
    with warnings.catch_warnings():
        from sqlalchemy.exc import SAWarning

        warnings.simplefilter("ignore", category=SAWarning)
        try:
            for mark in marks:
                grade = gradebook.find_grade(mark.grade_id, notebook_id, assignment.name, mark.student)
                comment = gradebook.find_comment(mark.grade_id, notebook_id, assignment.name, mark.student)
                grade.manual_score = mark.score
                grade.needs_manual_grade = False
                comment.manual_comment = comment_text(mark.met, mark.criteria_count, mark.comment)
            gradebook.db.commit()
        except BaseException:
            gradebook.db.rollback()
            raise
        gradebook.db.expire_all()
