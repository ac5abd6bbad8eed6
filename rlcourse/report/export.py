"""Exports for the platforms courses use: Gradescope's autograder results and a flat CSV.

Both are views of the grade of record (rlcourse.record.grades): nbgrader's gradebook for each
student's total (automatic and written points), the written answers' marks and states, the
submission's time, deadline (with extension) and late penalty; the ledger's report for the items.
The final score is nbgrader's: raw score minus the late penalty, at least 0, exactly as `nbgrader
export` gives it. What the Gradescope results show a student, and from when, is the assignment's
feedback policy (rlcourse.course.visibility), in Gradescope's own `visibility` values.
"""
from __future__ import annotations

import json
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.grading.grade import Grade
from rlcourse.report.spreadsheet import csv_text


def gradescope_results(grade: Grade, *, policy: FeedbackPolicy | None = None, late: bool = False,
                       upload_problem: str | None = None) -> dict:
    """One submission's grade (rlcourse.grading.grade.Grade) as Gradescope's results.json.

    Each hidden item is a test, and so is each written answer (its TA mark, or 0 while it awaits
    one), so Gradescope's total is the grade of record's: the final score (after any late
    penalty) out of the gradebook's maximum. When each test may be shown is the assignment's
    feedback policy (rlcourse.course.visibility) in Gradescope's own `visibility` values:
    `visible` before the due date already, `after_due_date`, or `hidden`. Gradescope decides
    visibility per test, so a part the policy shows later than the points is a test of its own
    worth 0 points: what went wrong (when the level shows messages after the points), and the
    remedy (a grader's `fix`, never shown before the due date). An item the policy seals until
    the due date (a prediction, a concept check) is `after_due_date` whole, and so is the total,
    which counts it. `late`: the upload came after the deadline, so what waits for it is
    visible now. An unusable upload's reason is always shown: it says nothing about the graders."""
    from rlcourse.course.visibility import gradescope_visibility

    policy = policy or FeedbackPolicy()

    def when(what: str, *, sealed: bool = False) -> str:
        visibility = gradescope_visibility(policy, what)
        if sealed and visibility == "visible":
            visibility = "after_due_date"
        return "visible" if late and visibility == "after_due_date" else visibility

    report = grade.report
    tests, sealed_any = [], False
    for number, item in enumerate(report.items, 1):
        sealed = policy.seals(item)
        sealed_any = sealed_any or sealed
        items_when, full_when, fix_when = when("items", sealed=sealed), when("full", sealed=sealed), \
            when("full", sealed=True)
        name = f"{item.id}: {item.title}" if item.title else item.id
        output = "Passed." if item.passed else f"{item.message}\nDiagnosis: {item.diagnosis}"
        if item.fix and not item.passed and fix_when == full_when:
            output += f"\nTo fix it: {item.fix}"
        tags = [item.diagnosis] if item.diagnosis else []
        test = {"name": name, "number": str(number), "score": item.score, "max_score": item.max_score,
                "status": "passed" if item.passed else "failed", "visibility": items_when}
        if full_when == items_when:
            test.update(output=output, tags=tags)
        tests.append(test)
        if full_when != items_when and not item.passed and full_when != "hidden":
            tests.append({"name": f"{name} (what went wrong)", "number": f"{number}.1", "score": 0.0,
                          "max_score": 0.0, "output": output, "tags": tags, "visibility": full_when})
        if item.fix and not item.passed and fix_when not in (full_when, "hidden"):
            tests.append({"name": f"{name} (how to fix it)", "number": f"{number}.2", "score": 0.0,
                          "max_score": 0.0, "output": item.fix, "visibility": fix_when})
    for number, answer in enumerate(grade.written, len(report.items) + 1):
        tests.append({"name": f"{answer.grade_id}: written answer", "number": str(number),
                      "score": answer.score or 0.0, "max_score": answer.max_score,
                      "output": _written_output(answer), "visibility": when("items")})
    full_when = when("full")
    notes = []
    if upload_problem:
        notes.append(f"This upload could not be graded: {upload_problem}")
    elif report.errors and full_when != "hidden":
        text = "\n".join(f"- {error}" for error in report.errors)
        if full_when == "visible":
            notes.append("Notes on your notebook:\n" + text)
        else:  # the top-level output has no visibility of its own: the notes wait with the messages
            tests.append({"name": "Notes on your notebook", "number": str(len(tests) + 1),
                          "score": 0.0, "max_score": 0.0, "output": text, "visibility": full_when})
    timing = grade.timing
    if timing is not None and (timing.timestamp is not None or timing.warning):
        notes.append(timing.describe())
    if grade.pending:
        notes.append(f"{grade.pending:g} points of written answers await a TA: they count once marked.")
    score_when = when("score", sealed=sealed_any)
    results = {"score": grade.score, "tests": tests,
               # the total is a grade: when the policy never shows it, staff publish it
               "visibility": "after_published" if score_when == "hidden" else score_when,
               "stdout_visibility": "hidden",
               "extra_data": {"max_score": grade.max_score, "raw_score": grade.raw_score,
                              "late_penalty": grade.penalty, "pending": grade.pending}}
    if timing is not None:
        results["extra_data"]["late"] = timing.to_json()
    if notes:
        results["output"] = "\n".join(notes)
    return results


def _written_output(answer) -> str:
    if answer.state == "awaiting":
        return "Awaiting a TA: this answer is marked by hand."
    if answer.state == "re-marking":
        return ("Re-marking: the answer changed after a TA marked it; the earlier mark counts until "
                "a TA marks the new one.")
    met = [criterion.number for criterion in answer.criteria if criterion.met]
    lines = ["Marked by a TA."]
    if answer.criteria and any(criterion.met is not None for criterion in answer.criteria):
        lines.append("Criteria met: " + (", ".join(map(str, met)) or "none")
                     + f" (of {len(answer.criteria)}).")
    if answer.comment:
        lines.append(f"TA comment: {answer.comment}")
    return "\n".join(lines)


CSV_COLUMNS = ["student_id", "score", "max_score", "raw_score", "late_submission_penalty",
               "timestamp", "deadline", "seconds_late", "autograded_score"]


def grades_csv(grades: dict) -> str:
    """One row per student: nbgrader's `score` (after the late penalty) and `max_score` (written
    answers included), the penalty and times, the autograded part, one column per written answer
    (its TA mark; blank while none), `manual_pending` (the points of written answers not marked
    yet, or marked on an answer that has changed since), and one column per hidden item. Every
    text cell through rlcourse.report.spreadsheet (an id such as `+A1+A1` runs no formula)."""
    from rlcourse.course.lateness import iso

    written_ids = list(dict.fromkeys(answer.grade_id for grade in grades.values() for answer in grade.written))
    item_ids = list(dict.fromkeys(item.id for grade in grades.values() for item in grade.report.items))
    rows = []
    for student, grade in grades.items():
        timing = grade.timing
        marks = {answer.grade_id: answer.score for answer in grade.written}
        by_id = {item.id: item.score for item in grade.report.items}
        rows.append([student, grade.score, grade.max_score, grade.raw_score,
                     grade.penalty, iso(timing.timestamp) if timing and timing.timestamp else "",
                     iso(timing.deadline) if timing and timing.deadline else "",
                     timing.seconds_late if timing else 0, grade.auto_score,
                     *("" if marks.get(grade_id) is None else marks[grade_id] for grade_id in written_ids),
                     grade.pending, *(by_id.get(item_id, "") for item_id in item_ids)])
    return csv_text([*CSV_COLUMNS, *written_ids, "manual_pending", *item_ids], rows)


def export(assignment: Assignment, *, class_dir: ClassDirectory, format: str) -> Path:
    """Every recorded student's grade of record (rlcourse.record.grades), for Gradescope or an LMS."""
    from rlcourse.record.grades import class_grades

    if format not in ("gradescope", "csv"):
        raise ValueError(f"unknown export format {format!r}: use gradescope or csv")
    grades = class_grades(class_dir, assignment)
    target = class_dir.exports / assignment.name
    if format == "gradescope":
        for student, grade in grades.items():
            write_atomic(target / "gradescope" / student / "results.json",
                         json.dumps(gradescope_results(grade, policy=assignment.feedback), indent=2))
        return target / "gradescope"
    path = target / f"{assignment.name}-grades.csv"
    write_atomic(path, grades_csv(grades))
    return path
