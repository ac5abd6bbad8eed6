"""Exports for the platforms courses use: Gradescope's autograder results and a flat CSV.

Both read what `rlcourse autograde` left: the ledger reports (one per student) for the items, and
nbgrader's gradebook for each student's total, which includes any manual grades a TA entered, and
for the submission's time, deadline (with extension) and late penalty. The final score is
nbgrader's: raw score minus the late penalty, at least 0, exactly as `nbgrader export` gives it.
What the Gradescope results show a student, and from when, is the assignment's feedback policy
(rlcourse.course.visibility), in Gradescope's own `visibility` values.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.record.ledger import read_ledger
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.grading.report import Report


def graded_reports(class_dir: ClassDirectory, assignment: Assignment) -> dict[str, Report]:
    reports = {}
    folder = class_dir.autograded
    for student_dir in sorted(folder.iterdir()) if folder.is_dir() else []:
        entry = read_ledger(class_dir, assignment, student_dir.name)
        if entry is not None:
            reports[student_dir.name] = Report.from_json(entry["report"])
    return reports


def gradebook_totals(class_dir: ClassDirectory, assignment: Assignment) -> dict[str, tuple[float, float]]:
    """student -> (score, max_score) as nbgrader computes them (automatic and manual grades,
    before any late penalty)."""
    return {student: (timing.raw_score, timing.max_score)
            for student, timing in gradebook_timings(class_dir, assignment).items()}


def gradebook_timings(class_dir: ClassDirectory, assignment: Assignment) -> dict:
    """student -> rlcourse.course.lateness.Timing (raw score, penalty, time, deadline) from the gradebook."""
    from rlcourse.record.gradebook import nbgrader_on_path
    from rlcourse.course.lateness import gradebook_timings as read_timings

    nbgrader_on_path()
    return read_timings(class_dir.db_url, assignment.name)


def gradescope_results(report: Report, *, total: float | None = None, policy=None, timing=None) -> dict:
    """One submission as Gradescope's results.json: a test per item, shown to the student when
    the assignment's feedback policy allows (`visible` before the due date, `after_due_date`,
    or `hidden`): the item's title and points as one test, and, when the policy shows them
    later than the points, what went wrong as a test of its own worth 0 points. The total is
    the final score (after any late penalty); the late penalty is said in the output."""
    from rlcourse.course.visibility import FeedbackPolicy, gradescope_visibility, student_view

    policy = policy or FeedbackPolicy()
    items_when = gradescope_visibility(policy, "items")
    full_when = gradescope_visibility(policy, "full")
    full = student_view(report, level="full")
    tests = []
    for item in full.items:
        output = "Passed." if item.passed else f"{item.message}\nDiagnosis: {item.diagnosis}"
        name = f"{item.id}: {item.title}" if item.title else item.id
        test = {"name": name, "score": item.score, "max_score": item.max_score,
                "status": "passed" if item.passed else "failed", "visibility": items_when}
        if full_when == items_when:
            test.update(output=output, tags=[item.diagnosis] if item.diagnosis else [])
            tests.append(test)
            continue
        tests.append(test)
        if not item.passed and full_when != "hidden":
            tests.append({"name": f"{name} (what went wrong)", "score": 0, "max_score": 0,
                          "output": output, "tags": [item.diagnosis] if item.diagnosis else [],
                          "visibility": full_when})
    score_when = gradescope_visibility(policy, "score")
    raw = report.score if total is None else total
    penalty = timing.penalty if timing is not None else 0.0
    results = {"score": max(0.0, raw - penalty), "tests": tests,
               # the total is a grade: when the policy never shows it, staff publish it
               "visibility": "after_published" if score_when == "hidden" else score_when,
               "stdout_visibility": "hidden"}
    notes = []
    if timing is not None and (timing.timestamp is not None or timing.warning):
        notes.append(timing.describe())
    if report.errors and full_when != "hidden":
        if full_when == "visible":
            notes.append("Notes on your notebook:\n" + "\n".join(f"- {e}" for e in report.errors))
        else:  # top-level output has no visibility of its own: the notes wait with the messages
            tests.append({"name": "Notes on your notebook", "score": 0, "max_score": 0,
                          "output": "\n".join(f"- {e}" for e in report.errors),
                          "visibility": full_when})
    if notes:
        results["output"] = "\n".join(notes)
    if timing is not None:
        results["extra_data"] = {"late": timing.to_json()}
    return results


CSV_COLUMNS = ["student_id", "score", "max_score", "raw_score", "late_submission_penalty",
               "timestamp", "deadline", "seconds_late", "autograded_score"]


def export(assignment: Assignment, *, class_dir: ClassDirectory, format: str) -> Path:
    reports = graded_reports(class_dir, assignment)
    timings = gradebook_timings(class_dir, assignment)
    target = class_dir.exports / assignment.name
    if format == "gradescope":
        for student, report in reports.items():
            timing = timings.get(student)
            write_atomic(target / "gradescope" / student / "results.json",
                         json.dumps(gradescope_results(
                             report, total=timing.raw_score if timing else None,
                             policy=assignment.feedback, timing=timing), indent=2))
        return target / "gradescope"
    if format == "csv":
        from rlcourse.course.lateness import iso

        item_ids = [item.id for report in reports.values() for item in report.items]
        item_ids = list(dict.fromkeys(item_ids))
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow([*CSV_COLUMNS, *item_ids])
        for student, report in reports.items():
            timing = timings.get(student)
            raw, max_score = ((timing.raw_score, timing.max_score) if timing
                              else (report.score, report.max_score))
            penalty = timing.penalty if timing else 0.0
            by_id = {item.id: item.score for item in report.items}
            writer.writerow([student, max(0.0, raw - penalty), max_score, raw, penalty,
                             iso(timing.timestamp) if timing and timing.timestamp else "",
                             iso(timing.deadline) if timing and timing.deadline else "",
                             timing.seconds_late if timing else 0, report.score,
                             *(by_id.get(item_id, "") for item_id in item_ids)])
        path = target / f"{assignment.name}-grades.csv"
        write_atomic(path, buffer.getvalue())
        return path
    raise ValueError(f"unknown export format {format!r}: use gradescope or csv")
