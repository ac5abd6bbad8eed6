"""Readable terminal output for reports: one table per submission, and a class summary."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from rlcourse.diagnoses import load_diagnoses
from rlcourse.grading.report import Report


def _console() -> Console:
    # Reports are often piped to a file or a pager; keep them readable at a fixed, wide width.
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=140)
    return console


def print_report(report: Report, *, diagnoses_dir=None, console: Console | None = None) -> None:
    console = console or _console()
    diagnoses = load_diagnoses(diagnoses_dir)
    table = Table(title=f"{report.assignment} · {report.notebook} · "
                        f"{report.score:g} / {report.max_score:g}", title_justify="left",
                  show_lines=False, expand=False)
    table.add_column("item")
    table.add_column("points", justify="right")
    table.add_column("diagnosis")
    table.add_column("what happened", overflow="fold", max_width=90)
    for item in report.items:
        mark = "[green]✓[/]" if item.passed else "[red]✗[/]"
        message = item.message
        if not item.passed and item.diagnosis in diagnoses:
            message += f"\n[dim]Fix: {diagnoses[item.diagnosis].fix}[/]"
        table.add_row(f"{mark} {item.id}", f"{item.score:g}/{item.max_score:g}",
                      item.diagnosis or "", message)
    console.print(table)
    for error in report.errors:
        console.print(f"  [yellow]notebook:[/] {error}", soft_wrap=True)
    console.print()


def print_summary(rows: list[tuple[str, Report]], *, console: Console | None = None) -> None:
    """One row per student: score, and each failed item with its diagnosis."""
    console = console or _console()
    table = Table(title="Scores", title_justify="left")
    table.add_column("student")
    table.add_column("score", justify="right")
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
        table.add_row(student, f"{report.score:g} / {report.max_score:g}", text or "—")
    console.print(table)
