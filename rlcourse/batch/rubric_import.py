"""`rlcourse rubric import ASSIGNMENT FILE.csv`: a TA's marking, into nbgrader's gradebook.

The CSV has a header with `student`, `question` (the answer cell's grade_id) and `criteria` (the
numbers of the rubric criteria the answer meets: `1;3`, `1,3`, `none`), and optionally `comment`
and `answer_hash`; other columns (the sheet's `group` and `state`) are ignored, and a row whose
`criteria` is blank is not marked yet and left alone. Each marked row sets the Grade's
manual_score to the sum of the met criteria's points and the Comment to the criteria line and
the TA's comment (rlcourse.record.marks), through nbgrader's Gradebook API, all rows in one
commit, and clears the Grade's re-marking flag.

`answer_hash` binds a row to the answer the TA read (rlcourse.report.rubric_sheet writes it):
the row marks that answer or nothing. A row without one (a file written by hand) marks the
answer recorded now.

A file with any bad row is refused whole, with one line per bad row, its line number first:
an unknown question or criterion, a question whose rubric is missing or does not add up, a
student or question twice, a student with no submission in the gradebook, and a row whose
answer has changed since its sheet was written (the student resubmitted: the freshest sheet
has the new answer). Every row is checked against the gradebook and the ledger before anything
is written. A row that holds exactly the mark the gradebook has, current, is left as it is, so
importing a pre-filled sheet again changes nothing.

Each mark written goes in the audit log (rlcourse.record.audit) with the file and its row.
Then, for each student marked, what a mark changes is brought up to date as `autograde` would:
the late penalty (which may depend on the score), the ledger's timing, the feedback page (now
showing the criteria met) and the rubric sheet.
"""
from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory, student_id_problem
from rlcourse.course.config import CourseError
from rlcourse.course.directory import Assignment
from rlcourse.report.spreadsheet import read_spreadsheet_text

REQUIRED = ("student", "question", "criteria")
ANSWER_CHANGED = "the answer changed since this sheet was written: mark it from a fresh sheet"
_SEPARATORS = re.compile(r"[;,\s]+")


@dataclasses.dataclass
class Imported:
    marked: list[tuple[str, str, float]]
    """(student, question, score) of each mark written."""
    blank: int
    """Rows left for later (criteria blank)."""
    pages: list[Path]
    unchanged: int = 0
    """Rows holding the mark the gradebook already has: nothing written for them."""
    sheet: Path | None = None
    """The freshest marking CSV after the import (rlcourse.report.rubric_sheet)."""


def parse_criteria(text: str) -> tuple[int, ...]:
    """`1;3`, `1, 3`, `3 1` -> (1, 3); `none`, `-` or `0` -> (); anything else raises ValueError."""
    text = text.strip()
    if text.lower() in ("none", "-", "0"):
        return ()
    numbers = [part for part in _SEPARATORS.split(text) if part]
    if not numbers or not all(part.isdigit() for part in numbers):
        raise ValueError(f"criteria {text!r} is not a list of criterion numbers such as 1;3 or none")
    return tuple(sorted({int(part) for part in numbers}))


def parse_rows(path: Path, rubrics, shown: str) -> tuple[list, int, list]:
    """(line, rlcourse.record.marks.NewMark) of each well-formed marked row, the number of blank
    rows, and (line, problem) of each bad one; CourseError if the file cannot be read at all."""
    from rlcourse.record.marks import NewMark

    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            columns = [(name or "").strip() for name in reader.fieldnames or []]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise CourseError(f"{shown}: cannot be read ({error})") from None
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise CourseError(f"{shown}: needs a header with the columns {', '.join(REQUIRED)} "
                          f"(and optionally comment, answer_hash); missing {', '.join(missing)}")
    marks, problems, blank, seen = [], [], 0, set()
    for line, row in enumerate(rows, start=2):
        row = {(key or "").strip(): read_spreadsheet_text((value or "").strip()) if isinstance(value, str) else ""
               for key, value in row.items()}  # the ' the sheet put before a formula's first character, off
        student, grade_id = row["student"], row["question"]
        if not row["criteria"]:
            blank += 1
            continue
        question = rubrics.question(grade_id)
        try:
            met = parse_criteria(row["criteria"])
        except ValueError as error:
            problems.append((line, str(error)))
            continue
        if student_id_problem(student) or not student:
            problems.append((line, f"{student!r} is not a student id"))
        elif question is None:
            problems.append((line, f"{grade_id!r} is not a manually graded question "
                                   f"(one of {', '.join(rubrics.ids) or 'none'})"))
        elif not question.usable:
            problems.append((line, f"{grade_id} cannot be marked by criteria: "
                                   + (question.problem() or "it has no rubric in the source notebook "
                                                            "(enter its score in formgrader)")))
        elif question.unknown(met):
            problems.append((line, f"{grade_id} has criteria 1 to {len(question.criteria)}, "
                                   f"not {', '.join(map(str, question.unknown(met)))}"))
        elif (student, grade_id) in seen:
            problems.append((line, f"{student} {grade_id} is marked twice"))
        else:
            seen.add((student, grade_id))
            marks.append((line, NewMark(student, grade_id, question.score(met), met, len(question.criteria),
                                        row.get("comment", ""), row.get("answer_hash") or None)))
    return marks, blank, problems


def read_rows(path: Path, rubrics, shown: str, *, check=None) -> tuple[list, int]:
    """The marks of the CSV as rlcourse.record.marks.NewMark, and the number of blank rows;
    CourseError naming every bad row by its line. `check(mark)`: what is wrong with a
    well-formed row (its student or its answer against the gradebook), or None."""
    marks, blank, problems = parse_rows(path, rubrics, shown)
    if check is not None:
        problems += [(line, problem) for line, mark in marks if (problem := check(mark))]
    refuse_bad_rows(problems, shown)
    return [mark for _, mark in marks], blank


def refuse_bad_rows(problems: list[tuple[int, str]], shown: str) -> None:
    """CourseError with one line per bad row, in the file's order (none: return)."""
    if problems:
        raise CourseError(f"{len(problems)} bad row(s), nothing imported:\n"
                          + "\n".join(f"{shown}:{line}: {problem}" for line, problem in sorted(problems)))


def gradebook_check(gradebook, assignment: Assignment, class_dir: ClassDirectory):
    """`read_rows`'s check against the class: the student has this answer in the gradebook, and
    a row's answer_hash is the answer recorded now (rlcourse.record.ledger.recorded_answers)."""
    from nbgrader.api import MissingEntry

    from rlcourse.record.ledger import recorded_answers

    notebook_id = Path(assignment.notebook).stem

    def check(mark) -> str | None:
        try:
            gradebook.find_submission(assignment.name, mark.student)
        except MissingEntry:
            return (f"{mark.student!r} has no {assignment.name} submission in the gradebook "
                    f"(a typo, or not autograded yet?)")
        try:
            gradebook.find_grade(mark.grade_id, notebook_id, assignment.name, mark.student)
        except MissingEntry:
            return (f"the gradebook's {assignment.name} has no {mark.grade_id} for {mark.student}: "
                    f"run `rlcourse autograde {assignment.name}` first")
        if mark.answer_hash is None:
            return None
        recorded = recorded_answers(class_dir, assignment, mark.student)
        if recorded is None:
            return (f"{mark.student} {mark.grade_id}: rlcourse has no record of the answer autograded: "
                    f"run `rlcourse autograde {assignment.name}`, then mark it from a fresh sheet")
        if recorded.get(mark.grade_id) != mark.answer_hash:
            return f"{mark.student} {mark.grade_id}: {ANSWER_CHANGED}"
        return None

    return check


def import_marks(assignment: Assignment, class_dir: ClassDirectory, path: Path, *, log=None) -> Imported:
    """Check every row against the rubrics, the gradebook and the answers recorded, then write
    the marks that differ from the gradebook's, then refresh each marked student's penalty,
    ledger timing and feedback page, and the rubric sheet."""
    from nbgrader.api import MissingEntry

    from rlcourse.batch.autograde import class_lock, refresh_student
    from rlcourse.record.audit import AuditLog, Cause, account, account_unexplained
    from rlcourse.course.rubrics import Rubrics
    from rlcourse.record.gradebook import open_gradebook
    from rlcourse.record.marks import read_marks, set_marks
    from rlcourse.report.rubric_sheet import write_marking_sheet

    log = log or (lambda message: None)
    if not Path(assignment.source_notebook).is_file():
        raise CourseError(f"{assignment.name}: the source notebook, which holds the rubrics, is missing")
    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        raise CourseError(f"{class_dir.root}: no gradebook yet; run `rlcourse autograde {assignment.name}` first")
    shown, pages = str(path), []
    parsed, blank, problems = parse_rows(Path(path), Rubrics.of(assignment), shown)
    if not parsed:  # nothing to check against the class, nothing to write
        refuse_bad_rows(problems, shown)
        return Imported([], blank, [])
    with (class_lock(class_dir, log), open_gradebook(class_dir.db_url) as gradebook,
          AuditLog(class_dir.root) as audit):
        check = gradebook_check(gradebook, assignment, class_dir)
        refuse_bad_rows(problems + [(line, problem) for line, mark in parsed if (problem := check(mark))], shown)
        marks = [mark for _, mark in parsed]
        changed = [(line, mark) for line, mark in parsed if not mark.same_as(
            read_marks(gradebook, assignment, mark.student, [mark.grade_id]).get(mark.grade_id))]
        students = sorted({mark.student for _, mark in changed})
        for student in students:  # a formgrader edit since the last command is logged as such first
            account_unexplained(audit, gradebook, assignment, student, report=log)
        try:
            set_marks(gradebook, assignment, [mark for _, mark in changed])
        except MissingEntry as error:
            raise CourseError(f"{path}: nothing imported: the gradebook has no such submission or "
                              f"cell ({error}); is every student's {assignment.name} autograded?") from None
        for line, mark in changed:
            account(audit, gradebook, assignment, mark.student,
                    Cause("rubric_import", {"file": shown, "row": line}), items={mark.grade_id})
        for student in students:
            rows = [line for line, mark in changed if mark.student == student]
            page = refresh_student(class_dir, assignment, student, gradebook=gradebook, log=log, audit=audit,
                                   cause=Cause("rubric_import", {"file": shown, "rows": rows}))
            if page is not None:
                pages.append(page)
    sheet = write_marking_sheet(assignment, class_dir)
    return Imported([(mark.student, mark.grade_id, mark.score) for _, mark in changed], blank, pages,
                    unchanged=len(marks) - len(changed), sheet=sheet.csv if sheet is not None else None)
