"""A class whose written answers a TA marks, for the tests of marks bound to the answer they
marked (tests/record, tests/report, tests/batch): ps1 with explain_clipping's rubric, students
whose notebooks hold the answers a test writes, recorded through the real `autograde` (ledger,
gradebook, outputs) with reports made in advance, so no student code runs: these tests are
about what is recorded of an answer, not how code is graded. A TA marks through
`rlcourse rubric import` or as formgrader's handlers do."""
import csv
import io
import shutil
from pathlib import Path

import nbformat
from conftest import ROOT, add_clipping_rubric
from course_copy import copy_course

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course
from rlcourse.grading.report import Report

BASE = ROOT / "demo" / "submitted" / "alan" / "ps1" / "ps1.ipynb"
QUESTION = "explain_clipping"
FIRST_ANSWER = "Clipping bounds the ratio, so the policy cannot move far."
REWRITTEN = ("The min takes the pessimistic term, so pushing a ratio past the band earns nothing; "
             "but clipping is no trust region: ratios still leave the band over epochs.")


class ReadyReports:
    """`autograde`'s backend (rlcourse.batch.backends' interface): every submission's report is
    ready, an empty ps1 report (0 automatic points): only what is recorded is under test."""

    def grade(self, jobs):
        for job in jobs:
            yield job, Report("ps1", "ps1.ipynb", [])

    def close(self):
        pass


class ScoredReports:
    """`autograde`'s backend whose report for each student scores one autograded cell
    (test_returns_to_go, out of 4) as `scores` says: a grade that moves, with no code run."""

    CELL = "test_returns_to_go"

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def grade(self, jobs):
        from rlcourse.grading.report import ItemResult

        for job in jobs:
            score = self.scores[job.student]
            yield job, Report("ps1", "ps1.ipynb", [ItemResult("returns", 4.0, score, score == 4.0, cell=self.CELL)])

    def close(self):
        pass


def make_course(folder: Path):
    course = copy_course(Path(folder) / "course")
    add_clipping_rubric(course / "source" / "ps1" / "ps1.ipynb")
    return Course(course).assignment("ps1")


def submit(class_dir: ClassDirectory, student: str, answer: str) -> Path:
    """`student` hands in alan's demo notebook with `answer` in explain_clipping."""
    notebook = nbformat.read(BASE, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == QUESTION)
    cell.source = answer
    path = class_dir.submitted / student / "ps1" / "ps1.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


def record(assignment, class_dir: ClassDirectory, students=None) -> dict[str, str]:
    """`autograde` over the class (or `students`): student -> status."""
    from rlcourse.batch.autograde import autograde

    outcomes = autograde(assignment, class_dir=class_dir, students=students, progress=False,
                         grading=ReadyReports(), log=lambda message: None)
    return {outcome.student: outcome.status for outcome in outcomes}


def new_class(folder: Path, answers: dict[str, str]) -> ClassDirectory:
    class_dir = ClassDirectory(Path(folder))
    for student, answer in answers.items():
        submit(class_dir, student, answer)
    shutil.copy(ROOT / "demo" / "nbgrader_config.py", class_dir.root)
    return class_dir


def copy_class(class_dir: ClassDirectory, target: Path) -> ClassDirectory:
    shutil.copytree(class_dir.root, target)
    return ClassDirectory(target)


def import_csv(assignment, class_dir: ClassDirectory, path: Path, text: str | None = None):
    from rlcourse.batch.rubric_import import import_marks

    if text is not None:
        Path(path).write_text(text)
    return import_marks(assignment, class_dir, Path(path))


def mark_by_hand(assignment, class_dir: ClassDirectory, student: str, criteria: str, comment: str = "",
                 folder: Path | None = None):
    """A TA's hand-written CSV (no answer hash) marking `student`'s explain_clipping."""
    folder = Path(folder or class_dir.root)
    rows = io.StringIO()
    csv.writer(rows, lineterminator="\n").writerows([("student", "question", "criteria", "comment"),
                                                     (student, QUESTION, criteria, comment)])
    return import_csv(assignment, class_dir, folder / f"{student}-marks.csv", rows.getvalue())


def formgrader_mark(class_dir: ClassDirectory, student: str, score: float, comment: str) -> None:
    """What formgrader's grade and comment handlers do when a TA saves a score and a comment
    (nbgrader.server_extensions.formgrader.apihandlers: GradeHandler.put, CommentHandler.put):
    find the Grade and the Comment by id, set them, clear needs_manual_grade since a score is
    set, commit."""
    from nbgrader.api import Gradebook

    with Gradebook(class_dir.db_url) as gradebook:
        grade_id = gradebook.find_grade(QUESTION, "ps1", "ps1", student).id
        comment_id = gradebook.find_comment(QUESTION, "ps1", "ps1", student).id
        grade = gradebook.find_grade_by_id(grade_id)
        grade.manual_score = score
        grade.extra_credit = None
        grade.needs_manual_grade = grade.manual_score is None and grade.auto_score is None
        gradebook.db.commit()
        gradebook.find_comment_by_id(comment_id).manual_comment = comment
        gradebook.db.commit()


def held(class_dir: ClassDirectory, student: str) -> tuple:
    """(manual_score, needs_manual_grade, manual_comment) of the student's explain_clipping, as
    nbgrader's gradebook holds them."""
    from nbgrader.api import Gradebook

    with Gradebook(class_dir.db_url) as gradebook:
        grade = gradebook.find_grade(QUESTION, "ps1", "ps1", student)
        comment = gradebook.find_comment(QUESTION, "ps1", "ps1", student)
        return grade.manual_score, grade.needs_manual_grade, comment.manual_comment


def mark_of(assignment, class_dir: ClassDirectory, student: str):
    from rlcourse.record.marks import read_marks_from

    return read_marks_from(class_dir.db_url, assignment, student, [QUESTION]).get(QUESTION)


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def class_of_five(folder: Path):
    """Five students autograded, then marked: ada not yet; bob 0 by rubric import, then his
    answer rewritten and recorded again (re-marking); cy 1.5 in formgrader; dee's answer
    rewritten after grading and not autograded yet; ed 2 (criteria 1;2) by rubric import. bob's
    new answer and dee's are ed's. No sheet written yet. Returns (assignment, class_dir)."""
    folder = Path(folder)
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {student: FIRST_ANSWER for student in ("ada", "bob", "cy", "dee")}
                          | {"ed": REWRITTEN})
    record(assignment, class_dir)
    mark_by_hand(assignment, class_dir, "bob", "none", folder=folder)
    mark_by_hand(assignment, class_dir, "ed", "1;2", "Both halves, well put.", folder=folder)
    formgrader_mark(class_dir, "cy", 1.5, "Nearly.")
    submit(class_dir, "bob", REWRITTEN)
    record(assignment, class_dir)
    submit(class_dir, "dee", REWRITTEN)
    shutil.rmtree(class_dir.reports)
    return assignment, class_dir
