"""The `rlcourse` command line: a thin layer over the library functions it names."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlcourse.course import Course, CourseError


def _grade(options) -> int:
    from rlcourse.grading.pipeline import grade_notebooks
    from rlcourse.render import print_report

    assignment = Course.find().assignment(options.assignment)
    reports = grade_notebooks(assignment, options.paths, strategy=options.strategy)
    if options.json:
        payload = [report.to_json() for report in reports]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        for report in reports:
            print_report(report, diagnoses_dir=assignment.grader_dir)
    return 0


def _demo(options) -> int:
    from rlcourse.demo import run_demo

    return run_demo(Course.find(), strategy=options.strategy)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlcourse", description="Grade reinforcement-learning notebooks with hidden, exact graders.")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade notebooks of one assignment and print reports")
    grade.add_argument("assignment", help="assignment name, e.g. ps1")
    grade.add_argument("paths", nargs="+", type=Path, help="submitted .ipynb files")
    grade.add_argument("--json", action="store_true",
                       help="print one JSON object (a list for several notebooks) instead of tables")
    grade.set_defaults(run=_grade)

    demo = commands.add_parser("demo", help="grade the bundled demo submissions and print a table")
    demo.set_defaults(run=_demo)

    for sub in (grade, demo):
        sub.add_argument("--strategy", choices=("fork", "spawn"), default="fork",
                         help="start workers by forking a warm template (default) or afresh")
    return parser


def main(argv=None) -> int:
    options = build_parser().parse_args(argv)
    try:
        return options.run(options)
    except CourseError as error:
        print(f"rlcourse: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
