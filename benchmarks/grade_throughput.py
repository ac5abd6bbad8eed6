"""Benchmark: `rlcourse autograde` against `nbgrader autograde` on the same class, same run.

A measurement, not a test: the machines are shared and noisy, so it prints medians and ratios,
and no threshold makes it fail.

    .venv/bin/python benchmarks/grade_throughput.py [--assignment ps1] [--submissions 50] [--repeats 5]
                                                    [--skip-nbgrader] [--no-dask]

What it prints:
1. where one submission's time goes: process start and imports, the fork template, parsing the
   notebook, the framework's backend start, each cell of the student's notebook (for JAX split into
   tracing, lowering, compiling and reading the compilation cache, as a worker compiles: same XLA
   flags, the course's cache read only), and each grader item; for ps1, the two training
   items' 720 calls into the student's functions made again without a worker (what they would
   cost if the worker and its messages cost nothing);
2. one notebook with `rlcourse grade`, from the command to the printed report (median), cold
   and answered by a running `rlcourse serve`;
3. the class (copies of the readable demo submissions for ps1; for ps2 and ps3, of six bank
   entries: the reference, two correct ports of the field's code and three common bugs) graded
   by `nbgrader autograde`, then by
   `rlcourse autograde` with 1, 2 and all cores and through Dask (an embedded LocalCluster):
   seconds per submission, submissions per minute, the ratio to nbgrader, the core-seconds each
   submission cost (CPU time of every process of the run, sampled) and the memory the grading
   processes held (proportional set size, sampled);
4. whether every rlcourse run gave every student the same score;
5. what `rlcourse autograde` does after a submission's grading, per submission (median over the
   class it graded): recording it in the gradebook, drawing the feedback page's figures, writing
   the page (figures included) and the autograded notebook.
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from rlcourse.course.bank import build_submission, load_entries, reference_student  # noqa: E402
from rlcourse.course.directory import Course  # noqa: E402
from rlcourse.demo import STUDENTS, demo_notebooks  # noqa: E402

READABLE = [student for student, entry in STUDENTS.items() if entry != "not_json"]
CLASS_MIX = {
    "ps2": ["reference", "correct_cleanrl_ppo_port", "correct_sb3_gae_port", "buggy_clip_without_min",
            "buggy_gae_forward_loop", "buggy_old_logp_not_frozen"],
    "ps3": ["reference", "correct_spinningup_port", "correct_einsum_and_cleanrl_ppo", "buggy_grad_sign",
            "buggy_softmax_overflow", "buggy_returns_leak_across_episodes"],
}
"""ps2's and ps3's classes: there are no demo students for them, so bank entries stand in, in about
the proportions of the ps1 demo class (half of it correct, written in different ways)."""
CORES = len(os.sched_getaffinity(0))


def environment() -> dict:
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")


def trusted_worker_environment() -> dict:
    """For a trusted process that runs a student's cells as a worker would: the workers' XLA
    flags (so its programs compile as theirs do) and a backend for matplotlib without a screen."""
    from rlcourse.worker.processes import WORKER_XLA_FLAGS

    return dict(environment(), MPLBACKEND="Agg", JAX_PLATFORMS="cpu", XLA_FLAGS=WORKER_XLA_FLAGS)


def run(command: list, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, check=True, capture_output=True, text=True,
                          env=env or environment(), **kwargs)


# --- the class -----------------------------------------------------------------------------------
def class_notebooks(assignment: str) -> dict[str, bytes]:
    """The notebooks a class is made of, by a name for their author: ps1's readable demo students,
    or CLASS_MIX's bank entries built on the reference student."""
    course = Course(ROOT)
    if assignment == "ps1":
        paths = demo_notebooks(course)
        return {student: paths[student].read_bytes() for student in READABLE}
    found = course.assignment(assignment)
    entries = {entry.name: entry for entry in load_entries(ROOT / "tests" / "bank" / assignment)}
    base = reference_student(found.source_notebook, found.release_notebook)
    return {name.replace("_", "-"): build_submission(entries[name], base) for name in CLASS_MIX[assignment]}


def make_class(folder: Path, count: int, assignment: str, notebooks: dict[str, bytes]) -> list[str]:
    """An nbgrader course directory holding `count` submissions, cycling through `notebooks`
    (`class_notebooks(assignment)`, built once for every run); returns the student ids."""
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    shutil.copytree(ROOT / "source" / assignment, folder / "source" / assignment)
    # nbgrader autograde needs the assignment in its gradebook: generate it as an instructor would.
    run([str(BIN / "nbgrader"), "generate_assignment", assignment, "--force"], cwd=folder)
    notebook_name = Course(ROOT).assignment(assignment).notebook
    authors = list(notebooks)
    students = []
    for index in range(count):
        author = authors[index % len(authors)]
        name = f"{author}{index:03d}"
        target = folder / "submitted" / name / assignment / notebook_name
        target.parent.mkdir(parents=True)
        target.write_bytes(notebooks[author])
        students.append(name)
    return students


# --- memory and CPU ----------------------------------------------------------------------------
class TreeSampler:
    """Peak proportional set size (shared pages split between sharers) of a process tree, and the
    CPU time its processes used (user + system, each process's last reading before it ended:
    a worker that lives less than the sampling interval is missed, so this is a lower bound)."""

    def __init__(self, pid: int, interval: float = 0.1):
        self.pid, self.interval = pid, interval
        self.peak_bytes = 0
        self._cpu: dict[tuple[int, float], float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @property
    def core_seconds(self) -> float:
        return sum(self._cpu.values())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _sample(self):
        import psutil

        samples = 0
        while not self._stop.wait(self.interval):
            try:
                root = psutil.Process(self.pid)
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                continue
            samples += 1
            total = 0
            for process in tree:
                try:
                    times = process.cpu_times()
                    self._cpu[(process.pid, process.create_time())] = times.user + times.system
                    if samples % 5 == 0:  # PSS reads every page table: every half second is enough
                        total += process.memory_full_info().pss
                except psutil.Error:
                    pass
            self.peak_bytes = max(self.peak_bytes, total)


# --- the runs ------------------------------------------------------------------------------------
def time_nbgrader(class_dir: Path, assignment: str) -> tuple[float, float]:
    """Wall seconds and core-seconds (nbgrader and the kernels it starts)."""
    started = time.perf_counter()
    process = subprocess.Popen([str(BIN / "nbgrader"), "autograde", assignment, "--create", "--force"],
                               cwd=class_dir, env=environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    with TreeSampler(process.pid) as tree:
        _, err = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"nbgrader autograde failed:\n{err[-2000:]}")
    return time.perf_counter() - started, tree.core_seconds


def nbgrader_scores(class_dir: Path, assignment: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        return {submission.student.id: submission.score
                for submission in gradebook.assignment_submissions(assignment)}


def time_rlcourse_autograde(class_dir: Path, assignment: str, *options: str) -> tuple[float, int, float]:
    command = [str(BIN / "rlcourse"), "autograde", assignment, "--course-dir", str(class_dir), *options]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    with TreeSampler(process.pid) as tree:
        out, err = process.communicate()
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{err[-2000:]}")
    return elapsed, tree.peak_bytes, tree.core_seconds


def ledger_scores(class_dir: Path, assignment: str, students: list[str]) -> dict[str, float]:
    scores = {}
    for student in students:
        ledger = class_dir / "autograded" / student / assignment / "rlcourse-report.json"
        scores[student] = json.loads(ledger.read_text())["report"]["score"]
    return scores


def time_grade_one(path: Path, assignment: str, *, service: Path | None = None) -> tuple[float, dict]:
    """`rlcourse grade` from the command to the printed report: cold (in its own process), or
    answered by a running `rlcourse serve` listening on `service`."""
    command = [str(BIN / "rlcourse"), "grade", assignment, str(path), "--json"]
    env = environment()
    if service is None:
        command.append("--no-service")
    else:
        env["RLCOURSE_SERVICE"] = str(service)
    started = time.perf_counter()
    result = run(command, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - started
    if service is not None and "graded by the running service" not in result.stderr:
        raise RuntimeError(f"the service did not answer: {result.stderr[-2000:]}")
    return elapsed, json.loads(result.stdout)


def time_grade_served(path: Path, assignment: str, repeats: int) -> list[float]:
    """The same through `rlcourse serve`, started once beforehand (its start is not timed)."""
    import socket

    with tempfile.TemporaryDirectory(prefix="rlcourse-bench-service-") as folder:
        where = Path(folder) / "grade.sock"
        service = subprocess.Popen([str(BIN / "rlcourse"), "serve", assignment], cwd=ROOT,
                                   env=dict(environment(), RLCOURSE_SERVICE=str(where)),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                with socket.socket(socket.AF_UNIX) as probe:
                    try:
                        probe.connect(str(where))
                        break
                    except OSError:
                        time.sleep(0.2)
            return [time_grade_one(path, assignment, service=where)[0] for _ in range(repeats)]
        finally:
            service.terminate()
            service.wait(timeout=60)


# --- where one submission's time goes ------------------------------------------------------------
def profile_start(assignment: str) -> dict[str, float]:
    """Process start and imports of the grading process, and a fork template's start."""
    figures = {}
    started = time.perf_counter()
    run([sys.executable, "-c", "pass"])
    figures["python start"] = time.perf_counter() - started
    started = time.perf_counter()
    run([sys.executable, "-c", "import rlcourse.cli, rlcourse.grading.pipeline"])
    figures["python start + grader imports (pytest, engine)"] = time.perf_counter() - started
    code = ("import time; from rlcourse.course.directory import Course; from rlcourse.worker.launchers import "
            f"WorkerOptions, make_launcher; a = Course.find().assignment({assignment!r}); "
            "t = time.perf_counter(); l = make_launcher(WorkerOptions(a.framework, a.limits)); "
            "w = l.launch(); w.request('run_cell', dict(index=0, source='x = 1'), timeout=60); "
            "print(time.perf_counter() - t); w.kill(); l.close()")
    framework = Course(ROOT).assignment(assignment).framework
    figures[f"fork template ready (imports {framework}, matplotlib)"] = float(
        run([sys.executable, "-c", code], cwd=ROOT).stdout)
    return figures


def profile_cells(path: Path, assignment: str, cache: str | None) -> dict:
    """Each code cell of a submission run in a fresh trusted process, as the worker runs it (its
    environment: the same XLA flags), after the framework's backend start (timed apart, as a
    spare worker does it before its submission). For JAX, each cell's time spent tracing,
    lowering, compiling and reading the compilation cache (its monitoring events) is split out;
    with the course's compilation cache (read only, as student workers use it) or without. The
    assignment's `skip_cells` are left out, as grading leaves them out."""
    code = r"""
import json, sys, time
import matplotlib
matplotlib.use("Agg")
from rlcourse.worker.frameworks import framework_named
framework = framework_named(sys.argv[2])
framework.preload()
events = []
if sys.argv[2] == "jax":
    import jax
    if sys.argv[3]:
        jax.config.update("jax_compilation_cache_dir", sys.argv[3])
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
        jax.config.update("jax_persistent_cache_enable_xla_caches", "none")  # as the worker sets it
    from jax import monitoring
    # What was spent, by phase. Not compile_time_saved_sec: that is what a hit spared, never
    # spent. A cache hit's retrieval also lies inside its backend_compile event, so it is
    # subtracted from that phase below.
    PHASES = {"/jax/core/compile/jaxpr_trace_duration": "trace",
              "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
              "/jax/core/compile/backend_compile_duration": "compile",
              "/jax/compilation_cache/cache_retrieval_time_sec": "cache read"}
    monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kwargs: events.append((PHASES[event], seconds)) if event in PHASES else None)
from rlcourse.course.submission import load_submission
from rlcourse.worker.server import _transform_cell
started = time.perf_counter()
framework.start_backend()
backend = time.perf_counter() - started
submission = load_submission(sys.argv[1])
namespace = {"__name__": "__main__"}
rows = []
skipped = set(json.loads(sys.argv[4]))
for cell in submission.cells:
    if cell.grade_id in skipped:
        continue
    before = len(events)
    started = time.perf_counter()
    exec(compile(_transform_cell(cell.source), f"<cell {cell.index}>", "exec"), namespace)
    if sys.argv[2] == "jax":
        jax.effects_barrier()
    phases = {}
    for phase, seconds in events[before:]:
        phases[phase] = phases.get(phase, 0.0) + seconds
    phases["compile"] = phases.get("compile", 0.0) - phases.get("cache read", 0.0)
    rows.append((cell.grade_id or f"cell {cell.index}", time.perf_counter() - started, phases))
print(json.dumps({"backend": backend, "cells": rows}))
"""
    env = trusted_worker_environment()
    found = Course(ROOT).assignment(assignment)
    result = run([sys.executable, "-c", code, str(path), found.framework, cache or "",
                  json.dumps(list(found.skip_cells))],
                 cwd=tempfile.gettempdir(), env=env)
    return json.loads(result.stdout.strip().splitlines()[-1])


TRAINING_FLOOR = r"""
import json, sys, time
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
from rlcourse.course.config import AssignmentConfig
from rlcourse.course.solutions import load_solution
from rlcourse.course.submission import load_submission
from rlcourse.worker.frameworks import framework_named
from rlcourse.worker.server import Session
root = Path(sys.argv[2])
framework = framework_named("jax")
framework.preload()
framework.start_backend()
session = Session(framework)
for cell in load_submission(sys.argv[1]).cells:
    session.run_cell(index=cell.index, source=cell.source)
sys.path.insert(0, str(root / "graders" / "ps1"))
import conftest
import test_training
params = AssignmentConfig.read(root / "graders" / "ps1" / "assignment.toml").variants.defaults
exact = load_solution(root, "ps1", "exact").for_parameters(params)


class InProcess:
    # What the training items ask of `student`, answered by the worker's own Session.call in
    # this process: the same conversions and the same compiled calls, without the worker.

    def call(self, function, *args, compiled=False, **kwargs):
        return session.call(function=function, args=list(args), kwargs=kwargs, compiled=compiled)["value"]

    def value_and_grad(self, function, *args, wrt, compiled=False, **kwargs):
        reply = session.call(function=function, args=list(args), kwargs=kwargs,
                             grad_wrt=[wrt] if isinstance(wrt, str) else list(wrt), compiled=compiled)
        return reply["value"], reply["grad"]


loop = conftest.GivenLoop(InProcess(), exact)
spent = []
for _ in range(3):  # the first builds the update's programs, as the items' first calls do
    started = time.perf_counter()
    for method, epochs in (("reinforce", 1), ("ppo", 3)):
        for seed in test_training.SEEDS:
            loop.train(seed, method=method, epochs=epochs)
    spent.append(time.perf_counter() - started)
print(json.dumps(spent))
"""
"""ps1's two training items (`graders/ps1/test_training.py`) with the given loop of
`graders/ps1/conftest.py`, run on a submission's functions in one trusted process: the cells
through the worker's `Session`, then the items' 720 calls through `Session.call` directly."""


def profile_training_floor(path: Path) -> list[float]:
    result = run([sys.executable, "-c", TRAINING_FLOOR, str(path), str(ROOT)],
                 cwd=tempfile.gettempdir(), env=trusted_worker_environment())
    return json.loads(result.stdout.strip().splitlines()[-1])


def print_profile(path: Path, assignment: str, report: dict) -> None:
    from rlcourse.course.submission import load_submission

    print("1. Where one submission's time goes (seconds)")
    for label, seconds in profile_start(assignment).items():
        print(f"   {label:58s} {seconds:6.2f}")
    started = time.perf_counter()
    load_submission(path)
    print(f"   {'parse the notebook':58s} {time.perf_counter() - started:6.3f}")
    print_cells(path, assignment)
    print_report_timings(report)
    if assignment == "ps1":
        spent = profile_training_floor(path)
        training = sum(item["seconds"] for item in report["items"] if item["id"].startswith("training."))
        print("   the training items' 720 calls without a worker (the same student's functions in a trusted")
        print(f"   process, through the worker's Session.call): {spent[1]:.2f} and {spent[2]:.2f} s once their"
              f" programs are")
        print(f"   built ({spent[0]:.2f} s the first time); in the worker, above: {training:.2f} s")


JAX_PHASES = ("trace", "lower", "compile", "cache read")


def print_cells(path: Path, assignment: str) -> None:
    framework = Course(ROOT).assignment(assignment).framework
    if framework != "jax":
        profile = profile_cells(path, assignment, None)
        label = f"{framework}'s backend start (a spare's, or the first cell's)"
        print(f"   {label:58s} {profile['backend']:6.2f}")
        print("   the student's cells (but skip_cells), each run once in a trusted process:")
        for name, seconds, _ in profile["cells"]:
            print(f"     {name:34s} {seconds:6.2f}")
        print(f"     {'all cells':34s} {sum(row[1] for row in profile['cells']):6.2f}")
        return
    from rlcourse.grading.pipeline import given_code_cache

    cache = given_code_cache(Course(ROOT).assignment(assignment))
    warm, cold = profile_cells(path, assignment, str(cache)), profile_cells(path, assignment, None)
    print(f"   {'jax: backend start, first operation (a spare does both)':58s} {warm['backend']:6.2f}")
    print("   the student's cells, each run once in a trusted process, as a worker compiles them,")
    print("   with the course's compilation cache (which holds the given code's programs), then without:")
    print(f"     {'cell':34s} {'total':>6s} {'trace':>6s} {'lower':>6s} {'compile':>7s} {'cache':>6s}"
          f"     {'total':>6s} {'compile':>7s}")

    def row(name, seconds, phases, cold_seconds, cold_phases):
        print(f"     {name:34s} {seconds:6.2f} " + " ".join(
            f"{phases.get(phase, 0.0):{7 if phase == 'compile' else 6}.2f}" for phase in JAX_PHASES)
            + f"     {cold_seconds:6.2f} {cold_phases.get('compile', 0.0):7.2f}")

    def summed(rows):
        return {phase: sum(r[2].get(phase, 0.0) for r in rows) for phase in JAX_PHASES}

    for (name, seconds, phases), (_, cold_seconds, cold_phases) in zip(warm["cells"], cold["cells"]):
        row(name, seconds, phases, cold_seconds, cold_phases)
    row("all cells", sum(r[1] for r in warm["cells"]), summed(warm["cells"]),
        sum(r[1] for r in cold["cells"]), summed(cold["cells"]))


def print_report_timings(report: dict) -> None:
    timings = report["timings"]
    print("   in `rlcourse grade` (worker side):")
    for key in ("worker_start", "run_cells", "graders", "feedback_data", "total"):
        print(f"     {key:40s} {timings.get(key, 0.0):6.2f}")
    print("   each grader item (the first one also waits for the cells to run):")
    for item in report["items"]:
        print(f"     {item['id']:52s} {item['seconds']:6.2f}")


def profile_after_grading(class_dir: Path, assignment: str, students: list[str]) -> dict[str, float]:
    """What `rlcourse autograde` does for each submission once it is graded, timed by calling the
    same functions on the class it graded (each student's ledger report): recording it in the
    gradebook (rlcourse.record.gradebook.record_in_gradebook, one commit), drawing the feedback
    page's figures (graders/<assignment>/feedback.py through assignment_figures), writing the
    page, figures drawn, and the autograded notebook (rlcourse.batch.autograde.write_outputs, as
    for a new grading), and writing the page again with the figures it kept (as after a mark or
    a regrade; the service's page reads the same set). Medians over the students, seconds."""
    from rlcourse.batch.autograde import write_outputs
    from rlcourse.course.class_directory import ClassDirectory, Found
    from rlcourse.explain.feedback import assignment_figures
    from rlcourse.grading.report import Report
    from rlcourse.record.gradebook import open_gradebook, record_in_gradebook
    from rlcourse.record.ledger import figures_folder

    found = Course(ROOT).assignment(assignment)
    classroom = ClassDirectory(class_dir)
    spent = {"gradebook": [], "figures": [], "page (figures drawn) and autograded notebook": [],
             "page again (figures kept)": []}
    with open_gradebook(classroom.db_url) as gradebook:
        for student in students:
            ledger = class_dir / "autograded" / student / assignment / "rlcourse-report.json"
            report = Report.from_json(json.loads(ledger.read_text())["report"])
            started = time.perf_counter()
            record_in_gradebook(classroom.db_url, found, student, report, gradebook=gradebook)
            spent["gradebook"].append(time.perf_counter() - started)
            started = time.perf_counter()
            assignment_figures(found, report)
            spent["figures"].append(time.perf_counter() - started)
            submitted = class_dir / "submitted" / student / assignment / found.notebook
            (class_dir / "autograded" / student / assignment / found.notebook).unlink(missing_ok=True)
            shutil.rmtree(figures_folder(classroom, found, student), ignore_errors=True)
            started = time.perf_counter()
            write_outputs(classroom, found, Found(student, submitted), report, gradebook=gradebook,
                          force_page=True)
            spent["page (figures drawn) and autograded notebook"].append(time.perf_counter() - started)
            started = time.perf_counter()
            write_outputs(classroom, found, Found(student, submitted), report, gradebook=gradebook,
                          force_page=True)
            spent["page again (figures kept)"].append(time.perf_counter() - started)
    return {label: statistics.median(values) for label, values in spent.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assignment", choices=["ps1", "ps2", "ps3"], default="ps1")
    parser.add_argument("--submissions", type=int, default=50, help="size of the class")
    parser.add_argument("--repeats", type=int, default=5, help="single-notebook runs to take the median of")
    parser.add_argument("--skip-nbgrader", action="store_true", help="leave nbgrader out (it is slow)")
    parser.add_argument("--no-dask", action="store_true", help="leave the Dask runs out")
    options = parser.parse_args()
    name = options.assignment

    print(f"machine: {CORES} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB; "
          f"python {sys.version.split()[0]}; assignment {name}")
    notebooks = class_notebooks(name)
    with tempfile.TemporaryDirectory(prefix="rlcourse-bench-one-") as folder:
        author = next(iter(notebooks))
        one = Path(folder) / f"{author}.ipynb"
        one.write_bytes(notebooks[author])
        warm_started = time.perf_counter()
        time_grade_one(one, name)  # warms the compilation cache if it was cold (a trusted, once-per-course step)
        print(f"first run (measures the reference, and warms JAX's compilation cache, if not done): "
              f"{time.perf_counter() - warm_started:.1f} s\n")

        singles = [time_grade_one(one, name) for _ in range(options.repeats)]
        print_profile(one, name, singles[-1][1])
        seconds = [elapsed for elapsed, _ in singles]
        print(f"\n2. `rlcourse grade {name} ONE.ipynb` ({author}), command to report: median "
              f"{statistics.median(seconds):.2f} s over {len(seconds)} runs ({', '.join(f'{s:.2f}' for s in seconds)})")
        served = time_grade_served(one, name, options.repeats)
        print(f"   answered by a running `rlcourse serve {name}`: median {statistics.median(served):.2f} s "
              f"over {len(served)} runs ({', '.join(f'{s:.2f}' for s in served)})\n")

    rows = []
    scores = {}
    with tempfile.TemporaryDirectory(prefix="rlcourse-bench-") as folder:
        base = Path(folder)
        count = options.submissions
        students = None
        if not options.skip_nbgrader:
            class_dir = base / "nbgrader"
            students = make_class(class_dir, count, name, notebooks)
            elapsed, core_seconds = time_nbgrader(class_dir, name)
            rows.append(("nbgrader autograde (serial)", elapsed, None, core_seconds))
            scores["nbgrader (visible tests only)"] = nbgrader_scores(class_dir, name)
        runs = [("rlcourse autograde --workers 1", ["--workers", "1"]),
                ("rlcourse autograde --workers 2", ["--workers", "2"])]
        if CORES > 2:
            runs.append((f"rlcourse autograde --workers {CORES} (all)", ["--workers", str(CORES)]))
        if not options.no_dask:
            runs += [("rlcourse autograde --backend dask (1 worker)", ["--backend", "dask", "--workers", "1"]),
                     (f"rlcourse autograde --backend dask ({CORES} workers)",
                      ["--backend", "dask", "--workers", str(CORES)])]
        after_grading = None
        for label, extra in runs:
            class_dir = base / label.replace(" ", "_").replace("-", "")
            students = make_class(class_dir, count, name, notebooks)
            elapsed, peak, core_seconds = time_rlcourse_autograde(class_dir, name, *extra)
            rows.append((label, elapsed, peak, core_seconds))
            scores[label] = ledger_scores(class_dir, name, students)
            if after_grading is None:
                after_grading = profile_after_grading(class_dir, name, students)

    print(f"3. A class of {count} {name} submissions (copies of {', '.join(notebooks)}), same machine, same run")
    nbgrader = next(((seconds, cpu) for label, seconds, _, cpu in rows if label.startswith("nbgrader")), None)
    print(f"   {'tool':46s} {'total s':>8s} {'s/sub':>6s} {'subs/min':>9s} {'vs nbgrader':>12s} "
          f"{'core-s/sub':>10s} {'vs nbgrader':>12s} {'peak PSS':>9s}")
    for label, elapsed, peak, core_seconds in rows:
        ratio = f"{nbgrader[0] / elapsed:11.1f}x" if nbgrader else "-"
        cpu_ratio = f"{nbgrader[1] / core_seconds:11.1f}x" if nbgrader and core_seconds else "-"
        memory = f"{peak / 2**20:7.0f} MB" if peak else "-"
        cpu = f"{core_seconds / count:10.2f}" if core_seconds else "-"
        print(f"   {label:46s} {elapsed:8.1f} {elapsed / count:6.2f} {60 * count / elapsed:9.1f} {ratio:>12s} "
              f"{cpu:>10s} {cpu_ratio:>12s} {memory:>9s}")
    local = {label: elapsed for label, elapsed, *_ in rows if label.startswith("rlcourse autograde --workers")}
    one_worker, two_workers = local.get("rlcourse autograde --workers 1"), local.get("rlcourse autograde --workers 2")
    if one_worker and two_workers:
        print(f"   scaling 1 -> 2 local workers: {one_worker / two_workers:.2f}x (2.00x would be linear)")
    dask = {label: elapsed for label, elapsed, *_ in rows if "dask" in label}
    dask_all = dask.get(f"rlcourse autograde --backend dask ({CORES} workers)")
    local_all = local.get(f"rlcourse autograde --workers {CORES}") or local.get(
        f"rlcourse autograde --workers {CORES} (all)")
    if dask_all and local_all:
        print(f"   Dask against local workers, all cores: {dask_all / local_all:.2f}x the time")

    ours = [values for label, values in scores.items() if label.startswith("rlcourse")]
    same = all(values == ours[0] for values in ours)
    print(f"\n4. Every rlcourse run gave every student the same score: {'yes' if same else 'NO'}")
    if students:
        theirs = scores.get("nbgrader (visible tests only)", {})
        by_notebook = {}
        for student in students:
            by_notebook.setdefault(student.rstrip("0123456789"), (theirs.get(student), ours[0][student]))
        print("   score per notebook: nbgrader (visible tests only) | rlcourse (hidden graders)")
        for author, (their, our) in by_notebook.items():
            print(f"     {author:32s} {their if their is not None else '-':>6} | {our:5.1f}")
    if after_grading:
        print("\n5. What `rlcourse autograde` does after each grading (median over the class, seconds)")
        for label, seconds in after_grading.items():
            print(f"   {label:46s} {seconds:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
