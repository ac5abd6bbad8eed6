"""The TA's marking sheet for the manually graded answers: `reports/<assignment>/rubric.html`.

For each manually graded question: what the students were asked, the model answer, the rubric
(rlcourse.course.rubrics), and every student's answer, grouped so that a TA reads each distinct
answer once: answers equal up to whitespace and case share one group, and the empty ones (left
blank, or the release's placeholder) share one at the end. Beside it, `rubric-template.csv`
has one row per student and question, in the sheet's order (identical answers on adjacent rows,
with their group number), ready for the criteria each answer meets; `rlcourse rubric import`
reads it back. Marks already in the gradebook are shown with each student.

The sheet holds the model answer and names students: it is written under reports/, which is
for staff only, and never beside the feedback pages.
"""
from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory, find_submissions, student_id_problem
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.rubrics import ManualQuestion, Rubrics, written_answers

CSV_COLUMNS = ("student", "question", "group", "criteria", "comment")
"""`group` is for the TA's eye only; the import reads student, question, criteria and comment."""


@dataclasses.dataclass
class Group:
    number: int
    text: str
    """One student's answer as written (the group's first, in student order)."""
    students: list[str]
    empty: bool = False


@dataclasses.dataclass
class Question:
    question: ManualQuestion
    groups: list[Group]


def normalised(text: str, placeholder: str = "") -> str:
    """What decides that two answers are the same: their words, in lower case; the release's
    placeholder (nbgrader's "YOUR ANSWER HERE") counts as nothing."""
    words = " ".join(text.split()).lower()
    return "" if words == " ".join(placeholder.split()).lower() else words


def group_answers(answers: dict[str, str | None], placeholder: str = "") -> list[Group]:
    """Students grouped by their normalised answer, largest group first, the empty ones last
    (None: no readable notebook, counted as empty)."""
    by_text: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for student in sorted(answers):
        key = normalised(answers[student] or "", placeholder)
        by_text.setdefault(key, []).append(student)
        first.setdefault(key, answers[student] or "")
    ordered = sorted((key for key in by_text if key), key=lambda key: (-len(by_text[key]), by_text[key][0]))
    groups = [Group(number, first[key], by_text[key]) for number, key in enumerate(ordered, start=1)]
    if "" in by_text:
        groups.append(Group(len(groups) + 1, "", by_text[""], empty=True))
    return groups


def class_answers(assignment: Assignment, class_dir: ClassDirectory, grade_ids) -> dict[str, dict]:
    """student -> {grade_id: answer} of each submission (an unreadable notebook: {})."""
    from rlcourse.course.submission import NotebookProblem

    answers = {}
    for entry in find_submissions(class_dir, assignment):
        if student_id_problem(entry.student):
            continue
        try:
            answers[entry.student] = written_answers(entry.path, grade_ids) if entry.path else {}
        except NotebookProblem:
            answers[entry.student] = {}
    return answers


def rubric_sheet(assignment: Assignment, class_dir: ClassDirectory) -> tuple[list[Question], dict]:
    """The questions with their grouped answers, and the marks already in the gradebook
    (student -> grade_id -> rlcourse.record.marks.Mark)."""
    from rlcourse.course.release import Release

    rubrics = Rubrics.of(assignment)
    release = Release.read_or_empty(assignment.release_notebook)
    answers = class_answers(assignment, class_dir, rubrics.ids)
    questions = []
    for question in rubrics.questions:
        released = release.cell(question.grade_id)
        placeholder = released.source if released is not None else ""
        questions.append(Question(question, group_answers(
            {student: theirs.get(question.grade_id) for student, theirs in answers.items()}, placeholder)))
    return questions, _marks(assignment, class_dir, answers, rubrics.ids)


def _marks(assignment: Assignment, class_dir: ClassDirectory, answers: dict, grade_ids) -> dict:
    from rlcourse.record.marks import read_marks
    from rlcourse.record.gradebook import open_gradebook

    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        return {}
    with open_gradebook(class_dir.db_url) as gradebook:
        return {student: read_marks(gradebook, assignment, student, grade_ids) for student in answers}


def template_csv(questions: list[Question]) -> str:
    """One row per student and question, in the sheet's order, criteria and comment blank."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for question in questions:
        for group in question.groups:
            for student in group.students:
                writer.writerow([student, question.question.grade_id,
                                 "empty" if group.empty else group.number, "", ""])
    return buffer.getvalue()


def write_rubric_sheet(assignment: Assignment, class_dir: ClassDirectory) -> Path | None:
    """reports/<assignment>/rubric.html and rubric-template.csv; None when the assignment has no
    manually graded answer or no source notebook to take the rubrics from."""
    from rlcourse.explain.pages import render

    if not Path(assignment.source_notebook).is_file():
        return None
    questions, marks = rubric_sheet(assignment, class_dir)
    if not questions:
        return None
    folder = class_dir.reports / assignment.name
    write_atomic(folder / "rubric-template.csv", template_csv(questions).encode("utf-8"))
    students = sorted({student for question in questions for group in question.groups
                       for student in group.students})
    html = render("rubric.html", assignment=assignment.name, questions=questions, marks=marks,
                  students=students, anchor=lambda grade_id: f"question-{grade_id}")
    return write_atomic(folder / "rubric.html", html.encode("utf-8"))
