"""Benchmark: what pathological submissions cost, per assignment. A measurement, not a test.

    .venv/bin/python benchmarks/worst_cases.py [ps1 ps2 ps3] [--no-alloc] [--only TEXT] [--no-nbgrader]

Each submission is the reference student (the release with every answer filled in) changed in
one way:

* `loop in <function>`: `while True: pass` as the first statement of the first function each
  solution cell defines, one cell at a time (cells without a function get it at top level);
* `top-level loop`: a `while True: pass` after the code of the first solution cell;
* `5x slower` / `20x slower`: every function of every solution cell wrapped to sleep four (or
  nineteen) times as long as it ran, counting a call made inside another slowed call once (the
  result is unchanged);
* `unbounded allocation`: the first function allocates 16 MB blocks until it fails.

For each it prints the score, the wall time of `Grader.grade` and the core-seconds it cost (the
grading process and every process below it: CPU times sampled every 0.1 s, so a process's last
0.1 s may be missed), and both as a ratio to one `nbgrader autograde` of the reference student
timed in the same run (its wall time, and the CPU time of it and its kernel, from the kernel's
own counters once both have exited; `--no-nbgrader` leaves it out). Targets (issue 16): no case over 90 s wall; the 5x slower submission keeps
full marks. The limits are the ones the reference run derived (rlcourse.grading.pipeline.budget).
"""
from __future__ import annotations

import argparse
import ast
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from rlcourse.course.bank import reference_student  # noqa: E402
from rlcourse.course.directory import Course  # noqa: E402
from rlcourse.grading.pipeline import Grader  # noqa: E402

# Only the outermost slowed call sleeps: its time includes the slowed functions it calls, so a
# function that calls another (ps2's training_run calls ppo_update) takes `factor` times as long
# in all, not `factor` times `factor`. The sleep owed is paid once it reaches 2 ms, and what a
# sleep overshoots is taken off the next: ps3's training calls functions of a few microseconds
# 180,000 times, and sleeping after each overshot so far that "5x" ran about 10x as long.
SLOWED = '''
import functools as _functools, time as _time
_slowed_state = {"depth": 0, "owed": 0.0}
def _slowed(function, factor):
    @_functools.wraps(function)
    def slowed(*args, **kwargs):
        started = _time.perf_counter()
        _slowed_state["depth"] += 1
        try:
            result = function(*args, **kwargs)
        finally:
            _slowed_state["depth"] -= 1
        if _slowed_state["depth"] == 0:
            _slowed_state["owed"] += (factor - 1) * (_time.perf_counter() - started)
            if _slowed_state["owed"] >= 0.002:
                before = _time.perf_counter()
                _time.sleep(_slowed_state["owed"])
                _slowed_state["owed"] -= _time.perf_counter() - before
        return result
    return slowed
'''


class CoreSeconds:
    """CPU time of this process and of every process below it, sampled."""

    def __init__(self, interval: float = 0.1):
        import psutil

        self._psutil = psutil
        self.interval = interval
        self._seen: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self):
        self._own = os.times()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample_once()
        own = os.times()
        self.seconds = (own.user - self._own.user + own.system - self._own.system
                        + sum(self._seen.values()))

    def _sample_once(self):
        try:
            children = self._psutil.Process().children(recursive=True)
        except self._psutil.Error:
            return
        for process in children:
            try:
                with process.oneshot():
                    key = (process.pid, process.create_time())
                    times = process.cpu_times()
            except self._psutil.Error:
                continue
            used = times.user + times.system
            base = self._base.setdefault(key, used) if hasattr(self, "_base") else 0.0
            self._seen[key] = max(self._seen.get(key, 0.0), used - base)

    def _sample(self):
        self._base = {}
        # Processes alive at the start (the fork template) count from now on only.
        for process in self._psutil.Process().children(recursive=True):
            try:
                times = process.cpu_times()
                self._base[(process.pid, process.create_time())] = times.user + times.system
            except self._psutil.Error:
                pass
        while not self._stop.wait(self.interval):
            self._sample_once()


def _first_function(source: str):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            return node
    return None


def _functions(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


def loop_inside(source: str, body: str = "while True:\n    pass") -> str:
    """`body` as the first statement of the cell's first function (after its docstring), or at
    the cell's top when it defines none."""
    function = _first_function(source)
    if function is None:
        return body + "\n" + source
    first = function.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
    lines = source.splitlines()
    anchor = function.body[1] if docstring and len(function.body) > 1 else first
    at = (first.end_lineno if docstring else first.lineno - 1)
    indent = " " * anchor.col_offset
    inserted = [indent + line for line in body.splitlines()]
    return "\n".join(lines[:at] + inserted + lines[at:]) + "\n"


def variants(base: nbformat.NotebookNode, alloc: bool) -> list[tuple[str, nbformat.NotebookNode]]:
    import copy

    solution = [cell for cell in base.cells if cell.cell_type == "code"
                and cell.get("metadata", {}).get("nbgrader", {}).get("solution")]
    found = []

    def changed(label, edit):
        notebook = copy.deepcopy(base)
        cells = [cell for cell in notebook.cells if cell.cell_type == "code"
                 and cell.get("metadata", {}).get("nbgrader", {}).get("solution")]
        edit(cells)
        found.append((label, notebook))

    for position, cell in enumerate(solution):
        function = _first_function(cell.source)
        label = f"loop in {function.name}" if function else \
            f"loop at top of {cell.metadata['nbgrader']['grade_id']}"

        def edit(cells, position=position):
            cells[position].source = loop_inside(cells[position].source)

        changed(label, edit)
    first_with_function = next((i for i, cell in enumerate(solution) if _functions(cell.source)), 0)

    def top_level(cells):
        cells[first_with_function].source += "\nwhile True:\n    pass\n"

    changed("top-level loop", top_level)
    for factor in (5, 20):
        def slow(cells, factor=factor):
            for cell in cells:
                names = _functions(cell.source)
                if names:
                    cell.source += SLOWED + "".join(f"{name} = _slowed({name}, {factor})\n"
                                                    for name in names)

        changed(f"{factor}x slower", slow)
    if alloc:
        def hog(cells):
            cells[first_with_function].source = loop_inside(
                cells[first_with_function].source,
                "_blocks = []\nwhile True:\n    _blocks.append(bytearray(16 << 20))")

        changed("unbounded allocation", hog)
    return found


def nbgrader_autograde(assignment, notebook: nbformat.NotebookNode) -> tuple[float, float]:
    """(wall seconds, core-seconds) of `nbgrader autograde` grading `notebook` alone, in a fresh
    nbgrader course holding the assignment (generated first, untimed, as an instructor would)."""
    binaries = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{binaries}:{os.environ.get('PATH', '')}")
    with tempfile.TemporaryDirectory(prefix="rlcourse-worst-nbgrader-") as folder:
        course = Path(folder)
        shutil.copy(ROOT / "nbgrader_config.py", course)
        shutil.copytree(assignment.source_notebook.parent, course / "source" / assignment.name)
        subprocess.run([str(binaries / "nbgrader"), "generate_assignment", assignment.name, "--force"],
                       cwd=course, env=env, check=True, capture_output=True)
        target = course / "submitted" / "someone" / assignment.name / assignment.notebook
        target.parent.mkdir(parents=True)
        nbformat.write(notebook, target)
        before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        # A loaded machine can keep a cell's first output past nbclient's 4 s: wait, as a person would.
        done = subprocess.run([str(binaries / "nbgrader"), "autograde", assignment.name, "--create",
                               "--force", "--Execute.iopub_timeout=120"],
                              cwd=course, env=env, capture_output=True, text=True)
        wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"nbgrader autograde failed:\n{done.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("assignments", nargs="*", default=["ps1", "ps2", "ps3"])
    parser.add_argument("--no-alloc", action="store_true", help="leave out unbounded allocation")
    parser.add_argument("--only", help="run only the cases whose label contains this")
    parser.add_argument("--verbose", action="store_true", help="print each lost item")
    parser.add_argument("--no-nbgrader", action="store_true",
                        help="leave out the ratio to one nbgrader autograde")
    options = parser.parse_args()
    course = Course(ROOT)
    worst = []
    for name in options.assignments:
        assignment = course.assignment(name)
        base = reference_student(assignment.source_notebook, assignment.release_notebook)
        with Grader(assignment) as grader, tempfile.TemporaryDirectory() as folder:
            limits = grader.limits
            print(f"\n{name}: limits cell {limits.cell_seconds:g} s, call {limits.call_seconds:g} s, "
                  f"submission {limits.submission_seconds:g} s (reference: {grader.reference})")
            nbgrader = None if options.no_nbgrader else nbgrader_autograde(assignment, base)
            if nbgrader:
                print(f"  nbgrader autograde of the reference student, same run: {nbgrader[0]:.1f} s "
                      f"wall, {nbgrader[1]:.1f} core-seconds (load average "
                      f"{os.getloadavg()[0]:.1f}); ratios below are to these")
            print(f"  {'case':40} {'score':>11} {'wall s':>7} {'core s':>7} {'wall/nbg':>9} {'core/nbg':>9}")
            cases = [("reference", base), *variants(base, alloc=not options.no_alloc)]
            for label, notebook in cases:
                if options.only and options.only not in label and label != "reference":
                    continue
                path = Path(folder) / assignment.notebook
                nbformat.write(notebook, path)
                started = time.perf_counter()
                with CoreSeconds() as cpu:
                    report = grader.grade(path)
                wall = time.perf_counter() - started
                worst.append((wall, name, label))
                ratios = (f" {wall / nbgrader[0]:8.2f}x {cpu.seconds / nbgrader[1]:8.2f}x"
                          if nbgrader else "")
                print(f"  {label:40} {report.score:5g}/{report.max_score:<5g} {wall:7.1f} "
                      f"{cpu.seconds:7.1f}{ratios}", flush=True)
                if options.verbose:
                    for entry in report.items:
                        if not entry.passed:
                            print(f"      lost {entry.id} ({entry.diagnosis}, {entry.seconds:.1f} s): "
                                  f"{entry.message[:160]}")
    wall, name, label = max(worst)
    print(f"\nslowest: {name} {label}, {wall:.1f} s wall (target: at most 90 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
