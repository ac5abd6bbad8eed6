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

A mark is bound to the answer it was made on. rlcourse keeps, in the ledger
(rlcourse.record.ledger), a hash of each written answer of the submission the gradebook holds
(`answer_hash`); when `autograde` records a submission whose answer differs from the one a mark
was made on, it sets nbgrader's own `needs_manual_grade` on that Grade and keeps the score and
the comment (`MarkBinding.bind`). The flag is the mark's state: formgrader lists the answer as
needing grading, `Mark.stale` reads it back, and a re-mark clears it, in formgrader (its grade
handler clears the flag whenever it saves a score) or through `rlcourse rubric import`
(`set_marks`). So the gradebook stays the one record of score, comment and state; the ledger
only remembers which answer each mark was made on.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
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
    stale: bool = False
    """Marked, but on an answer that has changed since: the score and comment are kept in the
    gradebook, and wait for a TA to mark the new answer (nbgrader's `needs_manual_grade` on a
    Grade that has a manual score)."""

    @property
    def marked(self) -> bool:
        return self.score is not None

    @property
    def pending(self) -> bool:
        """Waiting for a TA: not marked yet, or marked on an answer that has changed since."""
        return not self.marked or self.stale

    def to_json(self) -> dict:
        return {"grade_id": self.grade_id, "score": self.score, "max_score": self.max_score,
                "met": list(self.met) if self.met is not None else None, "comment": self.comment,
                "stale": self.stale, "pending": self.pending}


def normalised_answer(text: str, placeholder: str = "") -> str:
    """What decides that two answers are the same answer: their words, in lower case; the
    release's placeholder (nbgrader's "YOUR ANSWER HERE") counts as nothing.

    The TA's sheet groups answers by this (rlcourse.report.rubric_sheet), and a mark is bound to
    it (`answer_hash`), so a mark follows what the TA read: re-spacing or re-wrapping an answer
    is not a change that sends it back for marking. Case does not count either, because the
    sheet does not show it: a group of answers equal up to case is read once, as its first
    student's text, and marked for all of them; a mark bound to the exact case would send back
    an answer the TA could only see as unchanged. (An answer whose meaning hangs on case alone,
    A for the advantage against a for an action, is as rare in prose as it is on the sheet.)"""
    words = " ".join((text or "").split()).lower()
    return "" if words == " ".join(placeholder.split()).lower() else words


def answer_hash(text: str | None, placeholder: str = "") -> str:
    """A short, stable name of an answer as normalised by `normalised_answer` (a missing or
    blank answer, or the placeholder, all hash as the empty answer). 64 bits of SHA-256: enough
    that no student can write a different answer that passes for the marked one."""
    digest = hashlib.sha256(normalised_answer(text or "", placeholder).encode("utf-8"))
    return digest.hexdigest()[:16]


def written_cells(release_notebook) -> dict[str, str]:
    """grade_id -> the release's placeholder text of each written answer (an nbgrader markdown
    cell with `grade` and `solution`), in the notebook's order; none if the release is missing."""
    path = Path(release_notebook)
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return {}
    return dict(_written_cells(path, stamp))


@functools.lru_cache(maxsize=8)
def _written_cells(path: Path, _stamp: int) -> tuple[tuple[str, str], ...]:
    from rlcourse.course.release import Release

    release = Release.read_or_empty(path)
    return tuple((cell.grade_id, cell.source) for cell in release.cells
                 if cell.cell_type == "markdown" and cell.grade and cell.solution and cell.grade_id)


def hash_answers(answers: dict[str, str], cells: dict[str, str]) -> dict[str, str]:
    """grade_id -> answer_hash of each written answer in `cells` (written_cells); an answer the
    submission lacks hashes as the empty one."""
    return {grade_id: answer_hash(answers.get(grade_id), placeholder)
            for grade_id, placeholder in cells.items()}


@dataclasses.dataclass
class MarkBinding:
    """Which answer each mark was made on, as the ledger keeps it for one student, and the
    flagging of the marks whose answer a new recording changes.

    A mark the gradebook holds as current (`needs_manual_grade` false) was made on the answer
    recorded until now (`recorded`): rlcourse imports marks only onto that answer, and formgrader
    shows that answer's autograded notebook. A mark rlcourse has flagged was made on the answer
    it remembers in `marked_on`. So when the submission with `answers` is recorded, each mark is
    compared with the answer it was made on: changed, it is flagged and remembered; the same (an
    unchanged re-record, or a student who went back to the marked answer), it stays or becomes
    current. A mark flagged by another tool (`nbgrader autograde`'s "needs review") and unknown
    here is left flagged: only a re-mark clears it."""

    key: str
    """The ledger key of the submission whose answers these are."""
    answers: dict[str, str]
    """grade_id -> answer_hash of the submission being recorded (after `bind`: recorded)."""
    recorded: dict[str, str] | None = None
    """grade_id -> answer_hash of the submission recorded until now; None when rlcourse has no
    record of it (then a current mark is taken as made on the answer recorded now)."""
    marked_on: dict[str, str] = dataclasses.field(default_factory=dict)
    """grade_id -> answer_hash of the answer each flagged mark was made on."""

    def bind(self, grades) -> dict[str, bool]:
        """Flag, on nbgrader Grades of the submission being recorded (`cell.name`,
        `manual_score`, `needs_manual_grade`), each mark whose answer changed, and clear a flag
        of rlcourse's whose answer is back to the marked one; manual scores are never touched.
        Returns grade_id -> stale for every marked written answer."""
        stale = {}
        for grade in grades:
            grade_id = grade.cell.name
            if grade_id not in self.answers:
                continue
            if grade.manual_score is None:
                self.marked_on.pop(grade_id, None)
                continue
            if grade.needs_manual_grade:
                made_on = self.marked_on.get(grade_id)
            else:
                made_on = (self.recorded or {}).get(grade_id, self.answers[grade_id])
            if made_on is not None:
                grade.needs_manual_grade = made_on != self.answers[grade_id]
                if grade.needs_manual_grade:
                    self.marked_on[grade_id] = made_on
                else:
                    self.marked_on.pop(grade_id, None)
            stale[grade_id] = bool(grade.needs_manual_grade)
        self.recorded = dict(self.answers)
        return stale

    def to_json(self) -> dict:
        """What the ledger keeps once the submission is recorded."""
        return {"key": self.key, "answers": dict(self.answers), "marked_on": dict(self.marked_on)}


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
        stale = grade.manual_score is not None and bool(grade.needs_manual_grade)
        marks[grade_id] = Mark(grade_id, grade.manual_score, float(grade.max_score), met, comment, stale)
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
    answer_hash: str | None = None
    """The answer_hash of the answer the TA marked (the sheet's row), checked against the answer
    recorded now before anything is written; None: a row written by hand, which marks the
    answer recorded now."""

    def same_as(self, mark: "Mark | None") -> bool:
        """Whether the gradebook already holds exactly this mark, as current (a re-import of a
        pre-filled sheet then writes nothing)."""
        return (mark is not None and mark.marked and not mark.stale and mark.met == self.met
                and abs(mark.score - self.score) < 1e-9 and mark.comment == (self.comment or "").strip())


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
