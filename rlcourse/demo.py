"""The bundled demo: a small class of ps1 submissions, graded and tabulated.

The demo notebooks live in `demo/submitted/<student>/ps1/ps1.ipynb` (nbgrader's layout). They
are built from entries of the test bank, so each demo student is also a tested case:
`python -m rlcourse.demo --rebuild` writes them again after the source notebook changes, and
a test fails while they are stale.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rlcourse.bank import build_submission, load_entries, reference_student
from rlcourse.course import Course

ASSIGNMENT = "ps1"
STUDENTS = {
    "ada": "reference",
    "grace": "correct_cleanrl_form",
    "alan": "buggy_clip_without_min",
    "barbara": "unfinished",
    "ken": "cheat_patches_allclose",
    "edsger": "not_json",
}
"""Demo student -> bank entry: correct, correct in another style, a classic bug, unfinished
work, the in-kernel cheat that fools `nbgrader autograde`, and a file that is not a notebook."""


def demo_dir(course: Course) -> Path:
    return course.root / "demo" / "submitted"


def demo_notebooks(course: Course) -> dict[str, Path]:
    assignment = course.assignment(ASSIGNMENT)
    return {student: demo_dir(course) / student / ASSIGNMENT / assignment.notebook
            for student in STUDENTS}


def built_demo(course: Course) -> dict[str, bytes]:
    """What each demo notebook should contain, built from the bank."""
    assignment = course.assignment(ASSIGNMENT)
    entries = {entry.name: entry for entry in load_entries(course.root / "tests" / "bank" / ASSIGNMENT)}
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    return {student: build_submission(entries[name], base) for student, name in STUDENTS.items()}


def rebuild(course: Course) -> None:
    targets = demo_notebooks(course)
    for student, content in built_demo(course).items():
        targets[student].parent.mkdir(parents=True, exist_ok=True)
        targets[student].write_bytes(content)


def run_demo(course: Course, *, strategy: str = "fork") -> int:
    from rlcourse.grading.pipeline import Grader
    from rlcourse.render import print_report, print_summary

    assignment = course.assignment(ASSIGNMENT)
    notebooks = demo_notebooks(course)
    print(f"Grading {len(notebooks)} demo submissions of {ASSIGNMENT} from {demo_dir(course)} ...",
          file=sys.stderr)
    rows = []
    started = time.perf_counter()
    with Grader(assignment, strategy=strategy) as grader:
        for student, path in notebooks.items():
            report = grader.grade(path)
            rows.append((student, report))
            print(f"  {student:8s} {report.score:5g} / {report.max_score:g}  "
                  f"({report.timings.get('total', 0):.1f} s)", file=sys.stderr)
    elapsed = time.perf_counter() - started
    for student, report in rows:
        if report.failed():
            print(f"\n{student}:")
            print_report(report, diagnoses_dir=assignment.grader_dir)
    print_summary(rows)
    print(f"{len(rows)} submissions graded in {elapsed:.1f} s "
          f"({elapsed / len(rows):.1f} s each, isolation: {rows[0][1].isolation}).")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build or grade the bundled demo submissions.")
    parser.add_argument("--rebuild", action="store_true", help="write the demo notebooks from the bank")
    options = parser.parse_args(argv)
    course = Course.find()
    if options.rebuild:
        rebuild(course)
        return 0
    return run_demo(course)


if __name__ == "__main__":
    sys.exit(main())
