"""Where a batch of submissions is graded: in this process, in N local processes, or on Dask.

`rlcourse autograde` hands a backend a list of `Job`s and reads back `(job, result)` pairs in
the order they finish; `result` is a `Report`, or a `GradingFailed` for a submission the backend
could not grade (nothing is recorded for it and the next run tries again). Whatever the
backend, three things hold:

* every submission is graded in its own fresh, isolated worker (each grading process owns a
  `Grader`, whose fork template starts a new sandboxed child per submission), so no state
  passes between students;
* the points are decided by the hidden graders in a grading process, never in a worker;
* only the caller writes the ledger and the gradebook. Backends return reports as plain JSON
  data and touch nothing on disk but their own scratch files, so the gradebook has one writer.

Backends:

`InProcess`   one `Grader` in this process; the simplest, and what `--workers 1` means.
`LocalPool`   N grading processes on this machine (`--workers N`, default: every core). Each
              is started once and grades many submissions, so the fixed costs (importing
              pytest and the graders, starting the fork template that has imported JAX or
              torch) are paid N times per run, not once per student.
`Dask`        Dask distributed workers (`--backend dask`, or `--scheduler tcp://HOST:8786`);
              without an address an embedded `LocalCluster` is started. The notebook's bytes
              travel with the task, so a worker on another machine needs only the course's
              graders and release (checked by fingerprint), not the class's files. A worker
              that dies mid-task costs nothing: the scheduler runs its tasks elsewhere, and the
              caller records each submission once, whichever worker finished it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Iterator

from rlcourse.course import Assignment, Course
from rlcourse.faults import crash_point
from rlcourse.grading.report import Report


@dataclasses.dataclass(frozen=True)
class Job:
    """One submission to grade: a notebook on disk, or a reason it cannot be graded."""

    student: str
    path: Path | None
    problem: str | None = None


@dataclasses.dataclass(frozen=True)
class GraderSettings:
    """How every grading process builds its `Grader` (plain data, so it can travel)."""

    strategy: str = "fork"
    isolation: str | None = None
    warm_cache: bool = True


class GradingFailed(Exception):
    """A submission the backend could not grade (its grading process or Dask worker died too
    often). Nothing is recorded for it; the next run grades it again."""


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def make_backend(assignment: Assignment, settings: GraderSettings, *, workers: int | None = None,
                 backend: str = "local", scheduler: str | None = None, log=None):
    """The backend the command line asks for. `scheduler` implies Dask."""
    workers = workers or default_workers()
    if backend == "dask" or scheduler:
        return Dask(assignment, settings, scheduler=scheduler, workers=workers, log=log)
    if workers <= 1:
        return InProcess(assignment, settings, log=log)
    return LocalPool(assignment, settings, workers=workers, log=log)


def assignment_fingerprint(assignment: Assignment) -> str:
    """What decides a grade besides the notebook: the hidden graders and the release. A Dask
    worker compares its own copy with the caller's before grading anything."""
    digest = hashlib.sha256()
    files = sorted(path for path in assignment.grader_dir.rglob("*")
                   if path.is_file() and "__pycache__" not in path.parts)
    for path in [*files, assignment.release_notebook]:
        digest.update(str(path.relative_to(assignment.course.root)).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest.hexdigest()


def warm_once(assignment: Assignment, settings: GraderSettings, log=None) -> None:
    """Warm the JAX compilation cache with the reference before parallel processes start, so
    they find it ready instead of each warming it at once."""
    if not settings.warm_cache or assignment.framework != "jax":
        return
    from rlcourse.grading.pipeline import Grader

    Grader(assignment, strategy=settings.strategy, isolation=settings.isolation, log=log).close()


# --- grading one job, wherever it runs -----------------------------------------------------------
def grade_job(grader, job: Job) -> Report:
    if job.problem:
        return grader.unreadable(job.problem, notebook=grader.assignment.notebook)
    return grader.grade(job.path)


class InProcess:
    """One `Grader` here; submissions one after another."""

    def __init__(self, assignment: Assignment, settings: GraderSettings, *, log=None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self._grader = None
        self.workers = 1

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report]]:
        for job in jobs:
            if self._grader is None:
                from rlcourse.grading.pipeline import Grader

                self._grader = Grader(self.assignment, strategy=self.settings.strategy,
                                      isolation=self.settings.isolation,
                                      warm_cache=self.settings.warm_cache, log=self.log)
            yield job, grade_job(self._grader, job)

    def close(self) -> None:
        if self._grader is not None:
            self._grader.close()
            self._grader = None


# --- N processes on this machine ----------------------------------------------------------------
_PROCESS_GRADER = None
"""The `Grader` of a `LocalPool` process, made once by `_start_pool_process`."""


def _die_with_parent(parent: int) -> None:
    """Ask Linux to kill this process when the process that started it dies (a `kill -9` of
    `rlcourse autograde`), so no grading process outlives the run and keeps running students'
    code for nobody; its sandboxed workers go with it (bubblewrap's --die-with-parent)."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def _start_pool_process(parent: int, course_root: str, name: str, settings: GraderSettings) -> None:
    global _PROCESS_GRADER
    import atexit

    from rlcourse.grading.pipeline import Grader

    _die_with_parent(parent)
    assignment = Course(Path(course_root)).assignment(name)
    _PROCESS_GRADER = Grader(assignment, strategy=settings.strategy, isolation=settings.isolation,
                             warm_cache=False)
    atexit.register(_PROCESS_GRADER.close)


def _grade_in_pool_process(job: Job) -> dict:
    crash_point("pool-grading", job.student)
    return grade_job(_PROCESS_GRADER, job).to_json()


class LocalPool:
    """N grading processes on this machine, each with its own `Grader` and fork template."""

    RESTARTS = 2
    """New pools after a grading process died (the operating system's OOM killer, say). The
    grading process runs only trusted code, so this is rare; student code dies in its worker."""

    def __init__(self, assignment: Assignment, settings: GraderSettings, *, workers: int, log=None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self.workers = workers
        self._pool = None

    def _new_pool(self, size: int) -> ProcessPoolExecutor:
        import multiprocessing

        # spawn, not fork: the caller has a progress thread and nbgrader's database open.
        return ProcessPoolExecutor(
            max_workers=size, mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_pool_process,
            initargs=(os.getpid(), str(self.assignment.course.root), self.assignment.name,
                      self.settings))

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report]]:
        if not jobs:
            return
        warm_once(self.assignment, self.settings, self.log)
        remaining = list(jobs)
        for attempt in range(self.RESTARTS + 1):
            self._pool = self._new_pool(min(self.workers, len(remaining)))
            pending = {self._pool.submit(_grade_in_pool_process, job): job for job in remaining}
            broken = False
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    job = pending.pop(future)
                    try:
                        data = future.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    remaining.remove(job)
                    yield job, Report.from_json(data)
            self.close()
            if not broken:
                return
            if self.log:
                self.log(f"a grading process died; {len(remaining)} submissions are graded again")
        for job in remaining:
            yield job, GradingFailed(f"the grading process died {self.RESTARTS + 1} times "
                                     f"while {job.student}'s submission was pending")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


# --- Dask distributed ----------------------------------------------------------------------------
_DASK_GRADERS: dict = {}
_DASK_LOCK = threading.Lock()
"""A Dask worker process keeps one `Grader` per assignment and grades one submission at a time
(pytest is not thread-safe), whatever --nthreads the worker was started with."""


def grade_on_dask_worker(course_root: str, name: str, fingerprint: str, settings: GraderSettings,
                         student: str, notebook: str, content: bytes | None,
                         problem: str | None) -> dict:
    """The Dask task: grade one notebook sent as bytes; return the report as JSON data.

    The course is found at $RLCOURSE_ROOT on the worker if set (a worker on another machine),
    else at the caller's path. A worker whose graders differ from the caller's refuses, rather
    than grade with another version of them."""
    root = os.environ.get("RLCOURSE_ROOT") or course_root
    with _DASK_LOCK:
        assignment = Course(Path(root)).assignment(name)
        if assignment_fingerprint(assignment) != fingerprint:
            raise RuntimeError(f"this worker's copy of {name}'s graders or release at {root} "
                               "differs from the caller's; update it before grading")
        key = (root, name, settings)
        grader = _DASK_GRADERS.get(key)
        if grader is None:
            from rlcourse.grading.pipeline import Grader

            grader = Grader(assignment, strategy=settings.strategy, isolation=settings.isolation,
                            warm_cache=settings.warm_cache)
            _DASK_GRADERS[key] = grader
        crash_point("dask-grading", student)
        if problem is not None:
            return grade_job(grader, Job(student, None, problem)).to_json()
        with tempfile.TemporaryDirectory(prefix="rlcourse-dask-") as folder:
            path = Path(folder) / notebook
            path.write_bytes(content)
            return grade_job(grader, Job(student, path)).to_json()


class Dask:
    """Submissions as tasks on a Dask cluster; results come back to the caller as data."""

    def __init__(self, assignment: Assignment, settings: GraderSettings, *, scheduler: str | None,
                 workers: int, log=None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self.workers = workers
        self.scheduler = scheduler
        self._client = None
        self._cluster = None

    def _connect(self):
        from distributed import Client, LocalCluster

        if self.scheduler:
            self._client = Client(self.scheduler, timeout="30s")
        else:
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None)
            self._client = Client(self._cluster)
        if self.log:
            where = self.scheduler or "an embedded LocalCluster"
            count = len(self._client.scheduler_info().get("workers", {}))
            self.log(f"dask: grading on {where} ({count} workers)")

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report]]:
        if not jobs:
            return
        from distributed import as_completed

        warm_once(self.assignment, self.settings, self.log)
        self._connect()
        fingerprint = assignment_fingerprint(self.assignment)
        futures = {}
        for job in jobs:
            content = job.path.read_bytes() if job.path is not None else None
            future = self._client.submit(
                grade_on_dask_worker, str(self.assignment.course.root), self.assignment.name,
                fingerprint, self.settings, job.student, self.assignment.notebook, content,
                job.problem, key=f"rlcourse-{self.assignment.name}-{job.student}-{os.urandom(4).hex()}",
                pure=False, retries=1)
            futures[future] = job
        for future in as_completed(futures):
            job = futures[future]
            try:
                yield job, Report.from_json(future.result())
            except Exception as error:  # noqa: BLE001 - KilledWorker, a refusing worker, ...
                yield job, GradingFailed(f"{type(error).__name__}: {error}")

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
