"""Readable terminal output for reports: one table per submission, and a class summary."""
from __future__ import annotations

import re

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from rlcourse.course.diagnoses import load_diagnoses
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


def print_report(report: Report, *, diagnoses_dir=None, console: Console | None = None) -> None:
    console = console or _console()
    diagnoses = load_diagnoses(diagnoses_dir)
    table = Table(title=f"{safe(report.assignment)} · {safe(report.notebook)} · "
                        f"{report.score:g} / {report.max_score:g}", title_justify="left",
                  show_lines=False, expand=False)
    table.add_column("item")
    table.add_column("points", justify="right")
    table.add_column("diagnosis")
    table.add_column("what happened", overflow="fold", max_width=90)
    for item in report.items:
        mark = "[green]✓[/]" if item.passed else "[red]✗[/]"
        message = safe(item.message)
        if not item.passed and item.diagnosis in diagnoses:
            message += f"\n[dim]Fix: {safe(diagnoses[item.diagnosis].fix)}[/]"
        table.add_row(f"{mark} {safe(item.id)}", f"{item.score:g}/{item.max_score:g}",
                      safe(item.diagnosis or ""), message)
    console.print(table)
    for error in report.errors:
        console.print(f"  [yellow]notebook:[/] {safe(error)}", soft_wrap=True)
    console.print()


def print_summary(rows: list[tuple[str, Report]], *, console: Console | None = None,
                  timings: dict | None = None) -> None:
    """One row per student: score, and each failed item with its diagnosis; with `timings`
    (student -> rlcourse.course.lateness.Timing), how late each was and the penalty, and the score is
    the final one (after the penalty, as `nbgrader export` gives it)."""
    console = console or _console()
    timings = timings or {}
    table = Table(title="Scores", title_justify="left")
    table.add_column("student")
    table.add_column("score", justify="right")
    if timings:
        table.add_column("late", justify="right")
        table.add_column("penalty", justify="right")
    table.add_column("failed items (diagnosis)", overflow="fold", max_width=100)
    for student, report in rows:
        failed = report.failed()
        tags = {item.diagnosis for item in failed}
        if len(failed) == len(report.items) > 1 and len(tags) == 1:
            text = f"every item ({tags.pop()})"
        else:
            text = ", ".join(f"{item.id} ({item.diagnosis})" for item in failed)
        if not report.items:
            text = "not graded: " + "; ".join(report.errors)
        timing = timings.get(student)
        if not timings:
            table.add_row(safe(student), f"{report.score:g} / {report.max_score:g}", safe(text or "—"))
            continue
        score = report.score - timing.penalty if timing and report.items else report.score
        late = ("?" if timing and timing.warning and timing.timestamp is None else
                _late(timing.seconds_late) if timing and timing.late else "—")
        penalty = f"-{timing.penalty:g}" if timing and timing.penalty else "—"
        table.add_row(safe(student), f"{max(score, 0.0):g} / {report.max_score:g}", late, penalty,
                      safe(text or "—"))

    console.print(table)


def _late(seconds: float) -> str:
    from rlcourse.course.lateness import format_duration

    return format_duration(seconds)
