"""Exports for the platforms courses use: Gradescope's autograder results and a flat CSV.

Both read what `rlcourse autograde` left: the ledger reports (one per student) for the items, and
nbgrader's gradebook for each student's total, which includes any manual grades a TA entered.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from rlcourse.autograde import ClassDirectory, read_ledger
from rlcourse.course import Assignment
from rlcourse.files import write_atomic
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
    """student -> (score, max_score) as nbgrader computes them (automatic and manual grades)."""
    from nbgrader.api import Gradebook, MissingEntry

    from rlcourse.autograde import nbgrader_on_path

    nbgrader_on_path()
    totals = {}
    with Gradebook(class_dir.db_url) as gradebook:
        try:
            submissions = gradebook.assignment_submissions(assignment.name)
        except MissingEntry:
            return {}
        for submission in submissions:
            totals[submission.student.id] = (submission.score, submission.max_score)
    return totals


def gradescope_results(report: Report, *, total: float | None = None) -> dict:
    """One submission as Gradescope's results.json: one test per item, visible to the student
    (messages are written for students and never quote hidden tests)."""
    tests = []
    for item in report.items:
        output = "Passed." if item.passed else f"{item.message}\nDiagnosis: {item.diagnosis}"
        tests.append({"name": f"{item.id}: {item.title}" if item.title else item.id,
                      "score": item.score, "max_score": item.max_score, "output": output,
                      "visibility": "visible", "tags": [item.diagnosis] if item.diagnosis else []})
    results = {"score": report.score if total is None else total, "tests": tests,
               "visibility": "visible", "stdout_visibility": "hidden"}
    if report.errors:
        results["output"] = "Notes on your notebook:\n" + "\n".join(f"- {e}" for e in report.errors)
    return results


def export(assignment: Assignment, *, class_dir: ClassDirectory, format: str) -> Path:
    reports = graded_reports(class_dir, assignment)
    totals = gradebook_totals(class_dir, assignment)
    target = class_dir.exports / assignment.name
    if format == "gradescope":
        for student, report in reports.items():
            score = totals.get(student, (None,))[0]
            write_atomic(target / "gradescope" / student / "results.json",
                         json.dumps(gradescope_results(report, total=score), indent=2))
        return target / "gradescope"
    if format == "csv":
        item_ids = [item.id for report in reports.values() for item in report.items]
        item_ids = list(dict.fromkeys(item_ids))
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(["student_id", "score", "max_score", "autograded_score", *item_ids])
        for student, report in reports.items():
            score, max_score = totals.get(student, (report.score, report.max_score))
            by_id = {item.id: item.score for item in report.items}
            writer.writerow([student, score, max_score, report.score,
                             *(by_id.get(item_id, "") for item_id in item_ids)])
        path = target / f"{assignment.name}-grades.csv"
        write_atomic(path, buffer.getvalue())
        return path
    raise ValueError(f"unknown export format {format!r}: use gradescope or csv")
