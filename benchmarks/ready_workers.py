"""Benchmark: what a spare worker (issue 35, item 2) saves each framework, with and without it.

A measurement, not a test: the machines are shared and noisy, so it prints medians and no
threshold makes it fail.

    .venv/bin/python benchmarks/ready_workers.py [--assignments ps1 ps2 ps3] [--repeats 5]
                                                 [--gap 3] [--grade ps1]

What it prints, per assignment and with the spare off, then on:
1. from `launch()` to the end of a first cell that does nothing (the worker is confined and
   serving: the first cell's start), and to the end of a second cell with one small operation of
   the framework (where a worker forked on demand starts its backend); each submission follows
   the last after `--gap` seconds, the time its graders would take, in which the spare prepares;
2. with `--grade`, that assignment's reference notebook graded `--repeats` times in a row by one
   `Grader` (as a batch or a service lane does), with the report's worker_start, run_cells and
   total.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcourse.course.directory import Course  # noqa: E402
from rlcourse.worker.launchers import SPARE_SWITCH, WorkerOptions, make_launcher  # noqa: E402

FIRST_OPERATION = {
    "jax": "import jax.numpy as jnp\nvalue = float(jnp.arange(3.0).sum())",
    "torch": "import torch\nvalue = float(torch.arange(3.0).sum())",
    "numpy": "import numpy as np\nvalue = float(np.arange(3.0).sum())",
}


def time_launches(framework: str, *, spare: bool, repeats: int, gap: float,
                  compile_cache: str | None) -> list[tuple[float, float]]:
    """(launch to a first empty cell's end, launch to a second cell's end with one operation of
    the framework), for `repeats` submissions in a row `gap` seconds apart."""
    launcher = make_launcher(WorkerOptions(framework, compile_cache=compile_cache, spare=spare))
    figures = []
    try:
        launcher.wait_ready()
        for _ in range(repeats + 1):
            time.sleep(gap)  # the last submission's graders: the spare prepares meanwhile
            started = time.perf_counter()
            worker = launcher.launch()
            worker.request("run_cell", {"index": 0, "source": "pass"}, timeout=120)
            serving = time.perf_counter() - started
            worker.request("run_cell", {"index": 1, "source": FIRST_OPERATION[framework]}, timeout=120)
            figures.append((serving, time.perf_counter() - started))
            worker.kill()
    finally:
        launcher.close()
    return figures[1:]  # the first launch has no spare yet, whatever the option


def time_gradings(assignment: str, *, spare: bool, repeats: int) -> list[dict]:
    """The reference notebook graded `repeats` times in a row by one Grader, as a lane does."""
    from rlcourse.grading.pipeline import Grader

    os.environ[SPARE_SWITCH] = "1" if spare else "0"
    found = Course(ROOT).assignment(assignment)
    with tempfile.TemporaryDirectory(prefix="rlcourse-bench-ready-") as folder:
        notebook = Path(folder) / "student.ipynb"
        notebook.write_bytes(found.source_notebook.read_bytes())
        grader = Grader(found, log=lambda message: None)
        try:
            grader.wait_ready()
            timings = []
            for _ in range(repeats + 1):
                started = time.perf_counter()
                report = grader.grade(notebook, student="bench")
                timing = dict(report.timings)
                timing["wall"] = time.perf_counter() - started
                timings.append(timing)
        finally:
            grader.close()
            os.environ.pop(SPARE_SWITCH, None)
    return timings[1:]


def median(values) -> str:
    values = list(values)
    return f"{statistics.median(values):5.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignments", nargs="+", default=["ps1", "ps2", "ps3"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--gap", type=float, default=3.0, help="seconds between submissions")
    parser.add_argument("--grade", help="also grade this assignment's reference notebook in a row")
    options = parser.parse_args()
    course = Course(ROOT)
    print(f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; median (min-max) of "
          f"{options.repeats}, {options.gap:g} s apart")
    for name in options.assignments:
        assignment = course.assignment(name)
        cache = None
        if assignment.framework == "jax":
            from rlcourse.grading.pipeline import given_code_cache

            cache = str(given_code_cache(assignment))
        for spare in (False, True):
            figures = time_launches(assignment.framework, spare=spare, repeats=options.repeats,
                                    gap=options.gap, compile_cache=cache)
            print(f"{name} ({assignment.framework:5s}) spare {'on ' if spare else 'off'}: launch to first "
                  f"cell's start {median(f[0] for f in figures)} s; to a first operation's end "
                  f"{median(f[1] for f in figures)} s")
    if options.grade:
        for spare in (False, True):
            timings = time_gradings(options.grade, spare=spare, repeats=options.repeats)
            print(f"{options.grade} graded in a row, spare {'on ' if spare else 'off'}: " + "; ".join(
                f"{key} {median(t.get(key, 0.0) for t in timings)}"
                for key in ("worker_start", "run_cells", "total", "wall")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
