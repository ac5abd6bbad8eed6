"""The TA's class report for one assignment: where the class lost points, and why.

`write_class_report` writes three files into `reports/<assignment>/`:

* `scores.csv`: one row per student and item (student, item, title, score, max_score, passed,
  diagnosis, and the student's seconds_late and late_penalty), then a row per written answer
  (its TA mark, blank while it awaits one; `passed` says its state), for a spreadsheet;
* `summary.png`: the score histogram and the count of students per diagnosis tag;
* `summary.html`: a self-contained page with the class size, mean and median, that figure, the
  pass rate per item, and the diagnosis tags sorted by how many students they affect, each with
  its documented summary and fix, so a TA sees which misconception to address in section.

Every total is the grade of record's (rlcourse.grading.grade.Grade, read from the gradebook by
rlcourse.record.grades): the final score after any late penalty, out of the gradebook's maximum
(written answers included), with the written points still awaiting a TA said per student.
"""
from __future__ import annotations

import base64
import dataclasses
import math
import statistics
from pathlib import Path

from rlcourse.course.files import write_atomic
from rlcourse.explain.feedback import figure_png, fmt_points
from rlcourse.report.spreadsheet import csv_text

CSV_COLUMNS = ("student", "item", "title", "score", "max_score", "passed", "diagnosis")
LATE_COLUMNS = ("seconds_late", "late_penalty")


@dataclasses.dataclass(frozen=True)
class TagCount:
    tag: str
    students: tuple[str, ...]
    """Students with at least one item failed with this tag, sorted."""
    items: int
    """Failed items carrying this tag, over the whole class."""


@dataclasses.dataclass(frozen=True)
class ItemStats:
    id: str
    title: str
    max_score: float
    passed: int
    graded: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.graded if self.graded else 0.0


def write_class_report(out_dir: Path, *, assignment: str, grades: dict, diagnoses: dict) -> dict[str, Path]:
    """Write scores.csv, summary.png and summary.html (atomically) from each student's grade of
    record (student -> rlcourse.grading.grade.Grade); return {file name: path}."""
    out_dir = Path(out_dir)
    reports = {student: grade.report for student, grade in grades.items()}
    counts = diagnosis_counts(reports)
    stats = item_stats(reports)
    png = _summary_figure(assignment, grades, counts)
    return {
        "scores.csv": write_atomic(out_dir / "scores.csv", scores_csv(grades).encode("utf-8")),
        "summary.png": write_atomic(out_dir / "summary.png", png),
        "summary.html": write_atomic(out_dir / "summary.html", _summary_html(
            assignment, grades, counts, stats, diagnoses, png).encode("utf-8")),
    }


# --- the numbers ---------------------------------------------------------------------------------
def scores_csv(grades: dict) -> str:
    """Every text cell through rlcourse.report.spreadsheet: ids, titles and tags run no formula."""
    rows = []
    for student in sorted(grades):
        grade = grades[student]
        timing = grade.timing
        late = (f"{timing.seconds_late:g}", fmt_points(timing.penalty)) if timing else ("", "")
        for item in grade.report.items:
            rows.append([student, item.id, item.title, fmt_points(item.score), fmt_points(item.max_score),
                         "true" if item.passed else "false", item.diagnosis or "", *late])
        for answer in grade.written:
            rows.append([student, answer.grade_id, "written answer",
                         "" if answer.score is None else fmt_points(answer.score),
                         fmt_points(answer.max_score), answer.state, "", *late])
    return csv_text(CSV_COLUMNS + LATE_COLUMNS, rows, lineterminator="\n")


def diagnosis_counts(reports: dict) -> list[TagCount]:
    """Tags of failed items, most students first (then most items, then by name)."""
    students: dict[str, set[str]] = {}
    items: dict[str, int] = {}
    for student, report in reports.items():
        for item in report.items:
            if item.passed or not item.diagnosis:
                continue
            students.setdefault(item.diagnosis, set()).add(student)
            items[item.diagnosis] = items.get(item.diagnosis, 0) + 1
    counts = [TagCount(tag, tuple(sorted(names)), items[tag]) for tag, names in students.items()]
    return sorted(counts, key=lambda count: (-len(count.students), -count.items, count.tag))


def item_stats(reports: dict) -> list[ItemStats]:
    """Pass counts per item, in the order the items first appear in the reports."""
    order: dict[str, list] = {}
    for report in reports.values():
        for item in report.items:
            entry = order.setdefault(item.id, [item.title, item.max_score, 0, 0])
            entry[0] = entry[0] or item.title
            entry[2] += int(bool(item.passed))
            entry[3] += 1
    return [ItemStats(item_id, title, max_score, passed, graded)
            for item_id, (title, max_score, passed, graded) in order.items()]


# --- the figure ----------------------------------------------------------------------------------
def _summary_figure(assignment: str, grades: dict, counts: list[TagCount]) -> bytes:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    scores = [grade.score for grade in grades.values()]
    max_score = max((grade.max_score for grade in grades.values()), default=0.0)
    figure = Figure(figsize=(11, 4.2), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    histogram, tags = figure.subplots(1, 2, width_ratios=(1, 1.2))

    if scores:
        # About a dozen bins of whole points: narrow enough to see groups, wide enough to read.
        width = max(1.0, float(round(max_score / 12)))
        # The last bin is closed on the right, so full marks share it with the scores just below.
        edges = [index * width for index in range(max(1, math.ceil(max_score / width)) + 1)]
        histogram.hist(scores, bins=edges, color="#2b6cb0", edgecolor="white")
        histogram.axvline(statistics.mean(scores), color="#dd6b20", linewidth=2,
                          label=f"mean {statistics.mean(scores):.1f}")
        histogram.axvline(statistics.median(scores), color="#1a202c", linestyle="--",
                          linewidth=1.5, label=f"median {statistics.median(scores):g}")
        histogram.legend(loc="best", fontsize=9)
        histogram.yaxis.get_major_locator().set_params(integer=True)
        histogram.set_xlim(0, edges[-1])
    else:
        histogram.text(0.5, 0.5, "no submissions", ha="center", transform=histogram.transAxes)
    histogram.set_xlabel(f"total score (out of {fmt_points(max_score)})")
    histogram.set_ylabel("students")
    histogram.set_title(f"{assignment}: scores of {len(scores)} students")

    shown = counts[:12]
    if shown:
        labels = [count.tag for count in reversed(shown)]
        values = [len(count.students) for count in reversed(shown)]
        bars = tags.barh(labels, values, color="#c05621")
        tags.bar_label(bars, padding=3, fontsize=9)
        tags.set_xlim(0, max(values) * 1.15 + 0.5)
        tags.xaxis.get_major_locator().set_params(integer=True)
    else:
        tags.text(0.5, 0.5, "no failed items", ha="center", transform=tags.transAxes)
    tags.set_xlabel("students with a failed item carrying this diagnosis")
    tags.set_title("diagnoses, most common first")
    return figure_png(figure)


# --- the page ------------------------------------------------------------------------------------
def _summary_html(assignment: str, grades: dict, counts: list[TagCount], stats: list[ItemStats],
                  diagnoses: dict, png: bytes) -> str:
    """The page (templates/class_report.html, rlcourse.explain.pages)."""
    from rlcourse.course.lateness import format_duration
    from rlcourse.explain.pages import render

    scores = [grade.score for grade in grades.values()]
    max_score = max((grade.max_score for grade in grades.values()), default=0.0)
    mean = statistics.mean(scores) if scores else 0.0
    median = statistics.median(scores) if scores else 0.0
    full = sum(1 for grade in grades.values() if grade.max_score and grade.score >= grade.max_score)
    with_errors = sum(1 for grade in grades.values() if grade.report.errors)
    pending = sum(1 for grade in grades.values() if grade.pending)
    overview = [("class-size", len(grades), "students"),
                ("mean", f"{mean:.1f}", f"mean score (of {fmt_points(max_score)})"),
                ("median", fmt_points(median), "median score"),
                ("full-marks", full, "full marks"),
                ("pending", pending, "with written answers awaiting a TA"),
                ("with-errors", with_errors, "notebooks with errors"),
                ("late", sum(1 for grade in grades.values() if grade.timing and grade.timing.late),
                 "late submissions")]
    students = []
    for student in sorted(grades):
        grade = grades[student]
        timing = grade.timing
        late = None
        if timing is not None:
            late = "time unknown" if timing.timestamp is None else (
                format_duration(timing.seconds_late) if timing.late else "on time")
        students.append({"student": student, "grade": grade, "late": late,
                         "penalty": fmt_points(-grade.penalty) if grade.penalty else "",
                         "errors": "; ".join(grade.report.errors)[:300]})
    return render("class_report.html", title=f"{assignment}: class report", stats=overview,
                  image=base64.b64encode(png).decode("ascii"),
                  tags=[(count, diagnoses.get(count.tag)) for count in counts], items=stats,
                  students=students,
                  overrides=[(student, override) for student in sorted(grades)
                             for override in grades[student].overrides],
                  with_parameters=any(grade.report.parameters for grade in grades.values()))
