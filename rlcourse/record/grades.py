"""The grade of record of each submission, read from nbgrader's gradebook.

`grade_of_record` builds a `Grade` (rlcourse.grading.grade) from what the gradebook holds for one
student (each cell's score, automatic or set by a TA, the written answers' marks and whether
they need re-marking, the late penalty) and from the ledger's report, which explains the
autograded cells item by item. Every view that shows a recorded grade asks here, so the terminal,
the pages, the service and the exports state the gradebook's total and nothing else.
"""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Assignment
from rlcourse.grading.grade import AWAITING, MARKED, REMARKING, Criterion, Grade, Override, Written
from rlcourse.grading.report import Report
from rlcourse.record.gradebook import cell_scores


def written_of(assignment: Assignment):
    """(grade_id, points) of the assignment's manually graded cells, from the release."""
    from rlcourse.course.release import Release

    return Release.read_or_empty(assignment.release_notebook).written


def _questions(assignment: Assignment) -> dict:
    """grade_id -> the rubric's question (prompt and criteria), or nothing when the source
    notebook is not at hand (a grading machine given only the release)."""
    from rlcourse.course.rubrics import Rubrics

    try:
        return {question.grade_id: question for question in Rubrics.of(assignment).questions}
    except (OSError, ValueError):
        return {}


def _answers(submitted: Path | None, grade_ids) -> dict[str, str]:
    from rlcourse.course.rubrics import written_answers
    from rlcourse.course.submission import NotebookProblem

    if submitted is None:
        return {}
    try:
        return written_answers(submitted, grade_ids)
    except (NotebookProblem, OSError, ValueError):
        return {}


def heading(prompt: str) -> str:
    """A question's heading: the first line of its prompt, without markdown's #."""
    return next((line.lstrip("#").strip() for line in prompt.splitlines() if line.strip()), "")


def written_answer(grade_id: str, points: float, mark, question=None, answer: str | None = None) -> Written:
    """One written answer of a grade from its mark (rlcourse.record.marks.Mark, or None) and its
    rubric question: the criteria only, never the model answer."""
    if mark is None or mark.score is None:
        state, score = AWAITING, None
    else:
        state, score = (REMARKING if mark.stale else MARKED), mark.score
    criteria = ()
    if question is not None and score is not None:
        met = mark.met
        criteria = tuple(Criterion(criterion.number, criterion.points, criterion.text,
                                   None if met is None else criterion.number in met)
                         for criterion in question.criteria)
    return Written(grade_id, float(points), score, state,
                   heading=heading(question.prompt) if question is not None else "",
                   criteria=criteria, comment=mark.comment if score is not None else "",
                   answer=answer)


def grade_of_record(gradebook, assignment: Assignment, student: str, report: Report, *,
                    submitted: Path | None = None) -> Grade:
    """`student`'s grade as the open nbgrader `gradebook` holds it, explained by `report` (the
    ledger's). `submitted`: the notebook graded, for the student's own written answers."""
    from rlcourse.course.lateness import timing_of
    from rlcourse.record.audit import latest_regrade, override_notes
    from rlcourse.record.marks import read_marks

    notebook_id = Path(assignment.notebook).stem
    submission = gradebook.find_submission(assignment.name, student)
    notebook = gradebook.find_submission_notebook(notebook_id, assignment.name, student)
    cells = written_of(assignment)
    written_ids = [grade_id for grade_id, _ in cells]
    marks = read_marks(gradebook, assignment, student, written_ids)
    questions, answers = _questions(assignment), _answers(submitted, written_ids)
    written = tuple(written_answer(grade_id, points, marks.get(grade_id), questions.get(grade_id),
                                   answers.get(grade_id)) for grade_id, points in cells)
    graded = cell_scores(report)
    autograded = [grade for grade in notebook.grades if grade.cell.name not in written_ids]
    notes = override_notes(Path(gradebook.engine.url.database).parent, assignment.name, student) if any(
        grade.manual_score is not None for grade in autograded) else {}
    overrides = tuple(Override(grade.cell.name, graded.get(grade.cell.name, 0.0), float(grade.manual_score),
                               *notes.get(grade.cell.name, ("", "")))
                      for grade in autograded if grade.manual_score is not None)
    recorded = (sum(float(grade.score or 0.0) for grade in autograded),
                sum(float(grade.max_score or 0.0) for grade in autograded))
    regrade = latest_regrade(Path(gradebook.engine.url.database).parent, assignment.name, student)
    return Grade(report, written, overrides, timing=timing_of(submission), recorded=recorded, regrade=regrade)


def ungraded(assignment: Assignment, report: Report, *, submitted: Path | None = None,
             timing=None) -> Grade:
    """A grade no gradebook holds (`rlcourse grade`, Gradescope's container, a submission that
    does not count): every written answer awaits a TA."""
    cells = written_of(assignment)
    questions, answers = _questions(assignment), _answers(submitted, [grade_id for grade_id, _ in cells])
    return Grade(report, tuple(written_answer(grade_id, points, None, questions.get(grade_id),
                                              answers.get(grade_id)) for grade_id, points in cells),
                 timing=timing)


def class_grades(class_dir: ClassDirectory, assignment: Assignment) -> dict[str, Grade]:
    """student -> Grade of every student the ledger and the gradebook both hold (a student graded
    but not yet recorded, or recorded by another tool, is left out)."""
    from nbgrader.api import MissingEntry

    from rlcourse.course.class_directory import find_submissions
    from rlcourse.record.gradebook import open_gradebook
    from rlcourse.record.ledger import read_ledger

    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        return {}
    paths = {entry.student: entry.path for entry in find_submissions(class_dir, assignment)}
    grades = {}
    folder = class_dir.autograded
    with open_gradebook(class_dir.db_url) as gradebook:
        for student_dir in sorted(folder.iterdir()) if folder.is_dir() else []:
            entry = read_ledger(class_dir, assignment, student_dir.name)
            if entry is None or not entry.get("recorded"):
                continue
            try:
                grades[student_dir.name] = grade_of_record(
                    gradebook, assignment, student_dir.name, Report.from_json(entry["report"]),
                    submitted=paths.get(student_dir.name))
            except MissingEntry:
                continue
    return grades
