"""Benchmark: seconds per submission for `rlcourse grade` against `nbgrader autograde`.

Both grade the same notebooks (copies of the readable demo submissions) in the same run, on the
same machine. This is a measurement, not a test: the machines are shared and noisy, so it prints
medians and ratios, and no threshold makes it fail.

    .venv/bin/python benchmarks/grade_throughput.py [--copies 2] [--repeats 3]

What it prints:
* nbgrader autograde: total seconds for the batch, and per submission;
* rlcourse grade (one process for the batch, fork strategy): the same, and the ratio;
* rlcourse grade on one notebook, start to report (median of --repeats runs);
* where one submission's time goes (worker start, running cells, each grader item);
* each student's score from both tools side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from rlcourse.course import Course  # noqa: E402
from rlcourse.demo import STUDENTS, demo_notebooks  # noqa: E402

READABLE = [student for student, entry in STUDENTS.items() if entry != "not_json"]


def environment() -> dict:
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")


def make_class(course_dir: Path, copies: int) -> list[tuple[str, Path]]:
    """A throwaway nbgrader course holding `copies` of each readable demo submission."""
    shutil.copy(ROOT / "nbgrader_config.py", course_dir)
    shutil.copytree(ROOT / "source" / "ps1", course_dir / "source" / "ps1")
    subprocess.run([str(BIN / "nbgrader"), "generate_assignment", "ps1", "--force"], cwd=course_dir,
                   check=True, capture_output=True, env=environment())
    notebooks = demo_notebooks(Course(ROOT))
    students = []
    for copy in range(copies):
        for student in READABLE:
            name = f"{student}{copy}"
            target = course_dir / "submitted" / name / "ps1" / "ps1.ipynb"
            target.parent.mkdir(parents=True)
            shutil.copy(notebooks[student], target)
            students.append((name, target))
    return students


def time_nbgrader(course_dir: Path) -> float:
    started = time.perf_counter()
    subprocess.run([str(BIN / "nbgrader"), "autograde", "ps1", "--create", "--force"],
                   cwd=course_dir, check=True, capture_output=True, env=environment())
    return time.perf_counter() - started


def nbgrader_scores(course_dir: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gradebook:
        return {submission.student.id: submission.score
                for submission in gradebook.assignment_submissions("ps1")}


def time_rlcourse(paths: list[Path]) -> tuple[float, list[dict]]:
    started = time.perf_counter()
    result = subprocess.run([str(BIN / "rlcourse"), "grade", "ps1", *map(str, paths), "--json"],
                            cwd=ROOT, check=True, capture_output=True, text=True, env=environment())
    elapsed = time.perf_counter() - started
    reports = json.loads(result.stdout)
    return elapsed, reports if isinstance(reports, list) else [reports]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=2, help="copies of each demo submission")
    parser.add_argument("--repeats", type=int, default=3, help="single-notebook runs to take the median of")
    options = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    # The persistent compilation cache is warmed once by the reference (a trusted step that
    # every grading run does when the cache is missing); measure it, then grade warm.
    warm_started = time.perf_counter()
    time_rlcourse([demo_notebooks(Course(ROOT))["ada"]])
    print(f"first rlcourse run (includes warming the cache if it was cold): "
          f"{time.perf_counter() - warm_started:.1f} s")

    with tempfile.TemporaryDirectory(prefix="rlcourse-bench-") as folder:
        course_dir = Path(folder)
        students = make_class(course_dir, options.copies)
        count = len(students)
        print(f"class: {count} submissions ({options.copies} copies of {', '.join(READABLE)})\n")

        nbgrader_seconds = time_nbgrader(course_dir)
        theirs = nbgrader_scores(course_dir)
        ours_seconds, reports = time_rlcourse([path for _, path in students])

        singles = [time_rlcourse([students[0][1]])[0] for _ in range(options.repeats)]

        print(f"{'tool':34s} {'total s':>8s} {'s/submission':>13s} {'throughput/min':>15s}")
        for label, seconds in (("nbgrader autograde (serial)", nbgrader_seconds),
                               ("rlcourse grade (1 process, fork)", ours_seconds)):
            print(f"{label:34s} {seconds:8.1f} {seconds / count:13.2f} {60 * count / seconds:15.1f}")
        print(f"\nratio nbgrader / rlcourse per submission: {nbgrader_seconds / ours_seconds:.1f}x")
        print(f"rlcourse grade on one notebook, start to report: median {statistics.median(singles):.2f} s "
              f"(runs: {', '.join(f'{s:.2f}' for s in singles)})")

        per_submission = [report["timings"] for report in reports]
        print("\nwhere one submission's time goes (median over the batch, seconds):")
        for key in ("worker_start", "run_cells", "graders", "total"):
            values = [timing.get(key, 0.0) for timing in per_submission]
            print(f"  {key:14s} {statistics.median(values):6.2f}")
        print("  grader items (worker already running; the first item also waits for the cells):")
        for index, item in enumerate(reports[0]["items"]):
            values = [report["items"][index]["seconds"] for report in reports]
            print(f"    {item['id']:48s} {statistics.median(values):6.2f}")

        print(f"\n{'student':10s} {'nbgrader':>9s} {'rlcourse':>9s}  (nbgrader counts the visible tests only)")
        for (name, _), report in zip(students, reports):
            print(f"{name:10s} {theirs.get(name, float('nan')):9.1f} {report['score']:9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
