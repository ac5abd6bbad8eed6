"""Readable terminal output for reports: one table per submission, and a class summary."""
from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.grading.grade import Grade
from rlcourse.grading.report import Report


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def plain(text) -> str:
    """Text from a submission (a message, a folder name) made safe for a terminal: control
    characters, escape sequences and bidirectional overrides removed (newlines and tabs kept)."""
    return _CONTROL.sub("", str(text))


def safe(text) -> str:
    """`plain`, with rich markup escaped too: for anything passed to rich (a student's "[/]" in a
    folder name once crashed autograde, and "[red]..." would have styled the TA's screen)."""
    return escape(plain(text))


def _console() -> Console:
    # Reports are often piped to a file or a pager; keep them readable at a fixed, wide width.
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=140)
    return console


def print_report(grade: Grade, *, diagnoses_dir=None, console: Console | None = None) -> None:
    """One submission's grade (rlcourse.grading.grade.Grade): its total on the gradebook's basis,
    every item, and each written answer with its state. Staff read this: nothing is withheld."""
    console = console or _console()
    diagnoses = load_diagnoses(diagnoses_dir)
    report = grade.report
    table = Table(title=f"{safe(report.assignment)} · {safe(report.notebook)} · {total(grade)}",
                  title_justify="left", show_lines=False, expand=False)
    table.add_column("item")
    table.add_column("points", justify="right")
    table.add_column("diagnosis")
    table.add_column("what happened", overflow="fold", max_width=90)
    for item in report.items:
        mark = "[green]✓[/]" if item.passed else "[red]✗[/]"
        message = safe(item.message)
        if not item.passed and item.fix:
            message += f"\n[dim]To fix it: {safe(item.fix)}[/]"
        elif not item.passed and item.diagnosis in diagnoses:
            message += f"\n[dim]Fix: {safe(diagnoses[item.diagnosis].fix)}[/]"
        table.add_row(f"{mark} {safe(item.id)}", f"{item.score:g}/{item.max_score:g}",
                      safe(item.diagnosis or ""), message)
    for answer in grade.written:
        shown = "–" if answer.score is None else f"{answer.score:g}"
        table.add_row(f"[cyan]✎[/] {safe(answer.grade_id)}", f"{shown}/{answer.max_score:g}", "",
                      {"awaiting": "written answer: awaiting a TA",
                       "marked": "written answer: marked by a TA",
                       "re-marking": "written answer: changed since it was marked; awaiting a TA "
                                     "again (the earlier mark counts until then)"}[answer.state])
    console.print(table)
    for error in report.errors:
        console.print(f"  [yellow]notebook:[/] {safe(error)}", soft_wrap=True)
    console.print()


def total(grade: Grade) -> str:
    """A grade's total as every view states it: the final score out of the gradebook's maximum,
    then what is pending and the late penalty."""
    text = f"{grade.score:g} / {grade.max_score:g}"
    notes = []
    if grade.pending:
        notes.append(f"{grade.pending:g} pending a TA")
    if grade.penalty:
        notes.append(f"late penalty -{grade.penalty:g}")
    return text + (f" ({', '.join(notes)})" if notes else "")


def print_summary(rows: list[tuple[str, Report, Grade | None]], *, console: Console | None = None) -> None:
    """One row per student: the grade of record's total (after any late penalty, out of the
    gradebook's maximum, written answers included), how late and what it cost, the written
    points awaiting a TA, and each failed item with its diagnosis. A submission with no grade
    (refused, not graded) shows why."""
    console = console or _console()
    table = Table(title="Scores", title_justify="left")
    table.add_column("student")
    table.add_column("score", justify="right")
    table.add_column("late", justify="right")
    table.add_column("penalty", justify="right")
    table.add_column("pending", justify="right")
    table.add_column("failed items (diagnosis)", overflow="fold", max_width=100)
    for student, report, grade in rows:
        failed = report.failed()
        tags = {item.diagnosis for item in failed}
        if len(failed) == len(report.items) > 1 and len(tags) == 1:
            text = f"every item ({tags.pop()})"
        else:
            text = ", ".join(f"{item.id} ({item.diagnosis})" for item in failed)
        if grade is None:
            table.add_row(safe(student), "—", "—", "—", "—",
                          safe("not graded: " + "; ".join(report.errors) if not report.items else text or "—"))
            continue
        timing = grade.timing
        late = ("?" if timing and timing.warning and timing.timestamp is None else
                _late(timing.seconds_late) if timing and timing.late else "—")
        table.add_row(safe(student), f"{grade.score:g} / {grade.max_score:g}", late,
                      f"-{grade.penalty:g}" if grade.penalty else "—",
                      f"{grade.pending:g}" if grade.pending else "—", safe(text or "—"))
    console.print(table)


def _late(seconds: float) -> str:
    from rlcourse.course.lateness import format_duration

    return format_duration(seconds)
