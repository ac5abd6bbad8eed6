"""`rlcourse rubric import ASSIGNMENT FILE.csv`: a TA's marking, into nbgrader's gradebook.

The CSV has a header with `student`, `question` (the answer cell's grade_id) and `criteria` (the
numbers of the rubric criteria the answer meets: `1;3`, `1,3`, `none`), and optionally `comment`;
other columns (the template's `group`) are ignored, and a row whose `criteria` is blank is not
marked yet and left alone. Each marked row sets the Grade's manual_score to the sum of the met
criteria's points and the Comment to the criteria line and the TA's comment
(rlcourse.record.marks), through nbgrader's Gradebook API, all rows in one commit: a file with
any bad row (an unknown student, question or criterion, a question whose rubric is missing or
does not add up, a student or question twice) is refused whole, with one line per bad row.

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

REQUIRED = ("student", "question", "criteria")
_SEPARATORS = re.compile(r"[;,\s]+")


@dataclasses.dataclass
class Imported:
    marked: list[tuple[str, str, float]]
    """(student, question, score) of each mark written."""
    blank: int
    """Rows left for later (criteria blank)."""
    pages: list[Path]


def parse_criteria(text: str) -> tuple[int, ...]:
    """`1;3`, `1, 3`, `3 1` -> (1, 3); `none`, `-` or `0` -> (); anything else raises ValueError."""
    text = text.strip()
    if text.lower() in ("none", "-", "0"):
        return ()
    numbers = [part for part in _SEPARATORS.split(text) if part]
    if not numbers or not all(part.isdigit() for part in numbers):
        raise ValueError(f"criteria {text!r} is not a list of criterion numbers such as 1;3 or none")
    return tuple(sorted({int(part) for part in numbers}))


def read_rows(path: Path, rubrics, shown: str) -> tuple[list, int]:
    """The marks of the CSV as rlcourse.record.marks.NewMark, and the number of blank rows;
    CourseError naming every bad row."""
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
                          f"(and optionally comment); missing {', '.join(missing)}")
    marks, problems, blank, seen = [], [], 0, set()
    for line, row in enumerate(rows, start=2):
        row = {(key or "").strip(): (value or "").strip() if isinstance(value, str) else ""
               for key, value in row.items()}
        student, grade_id = row["student"], row["question"]
        if not row["criteria"]:
            blank += 1
            continue
        question = rubrics.question(grade_id)
        try:
            met = parse_criteria(row["criteria"])
        except ValueError as error:
            problems.append(f"{shown}:{line}: {error}")
            continue
        if student_id_problem(student) or not student:
            problems.append(f"{shown}:{line}: {student!r} is not a student id")
        elif question is None:
            problems.append(f"{shown}:{line}: {grade_id!r} is not a manually graded question "
                            f"(one of {', '.join(rubrics.ids) or 'none'})")
        elif not question.usable:
            problems.append(f"{shown}:{line}: {grade_id} cannot be marked by criteria: "
                            + (question.problem() or "it has no rubric in the source notebook "
                                                     "(enter its score in formgrader)"))
        elif question.unknown(met):
            problems.append(f"{shown}:{line}: {grade_id} has criteria 1 to {len(question.criteria)}, "
                            f"not {', '.join(map(str, question.unknown(met)))}")
        elif (student, grade_id) in seen:
            problems.append(f"{shown}:{line}: {student} {grade_id} is marked twice")
        else:
            seen.add((student, grade_id))
            marks.append(NewMark(student, grade_id, question.score(met), met, len(question.criteria),
                                 row.get("comment", "")))
    if problems:
        raise CourseError(f"{len(problems)} bad row(s), nothing imported:\n" + "\n".join(problems))
    return marks, blank


def import_marks(assignment: Assignment, class_dir: ClassDirectory, path: Path, *, log=None) -> Imported:
    """Write the CSV's marks into the gradebook, then refresh each marked student's penalty,
    ledger timing and feedback page, and the rubric sheet."""
    from nbgrader.api import MissingEntry

    from rlcourse.batch.autograde import class_lock, refresh_student
    from rlcourse.course.rubrics import Rubrics
    from rlcourse.record.gradebook import open_gradebook
    from rlcourse.record.marks import set_marks
    from rlcourse.report.rubric_sheet import write_rubric_sheet

    log = log or (lambda message: None)
    if not Path(assignment.source_notebook).is_file():
        raise CourseError(f"{assignment.name}: the source notebook, which holds the rubrics, is missing")
    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        raise CourseError(f"{class_dir.root}: no gradebook yet; run `rlcourse autograde {assignment.name}` first")
    marks, blank = read_rows(Path(path), Rubrics.of(assignment), str(path))
    pages = []
    with class_lock(class_dir, log), open_gradebook(class_dir.db_url) as gradebook:
        try:
            set_marks(gradebook, assignment, marks)
        except MissingEntry as error:
            raise CourseError(f"{path}: nothing imported: the gradebook has no such submission or "
                              f"cell ({error}); is every student's {assignment.name} autograded?") from None
        for student in sorted({mark.student for mark in marks}):
            page = refresh_student(class_dir, assignment, student, gradebook=gradebook, log=log)
            if page is not None:
                pages.append(page)
    write_rubric_sheet(assignment, class_dir)
    return Imported([(mark.student, mark.grade_id, mark.score) for mark in marks], blank, pages)
