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
`Dask`        Dask distributed workers (`--backend dask`, or `--scheduler tls://HOST:8786`
              with `--dask-certs DIR`); without an address an embedded `LocalCluster` is
              started, on TLS with temporary certificates. A plain scheduler beyond the loopback,
              or a cluster with a plain listener beyond it, is refused (whoever reaches it runs
              code as the grader: rlcourse.batch.dask_security). The notebook's bytes
              travel with the task, so a worker on another machine needs only the course's
              graders and release (checked by fingerprint), not the class's files. A worker
              that dies mid-task costs nothing: the scheduler runs its tasks elsewhere, and the
              caller records each submission once, whichever worker finished it.

Over 300 lines on purpose: the three backends answer one interface (`grade(jobs)`), side by
side, so that what each promises a caller after a crash can be compared at a glance.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Iterator

from rlcourse.course.directory import Assignment, Course
from rlcourse.batch.dask_security import Scheduler, check_listeners, listeners
from rlcourse.batch.faults import crash_point
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
    """A submission the backend could not grade (the graders or the engine failed on it, its
    grading process or Dask worker died too often). Nothing is recorded for it; the next run
    grades it again. Its text is one line for the staff (`failure_reason`)."""


def failure_reason(error: BaseException, *, root: Path | None) -> str:
    """Why a submission was not graded, on one line: NotGraded's own reason (each grader
    failure by file and line, with the exception's type and message); any other exception, a
    bug of the engine, by where it was raised and its type and message. The traceback is for
    the staff's log (`log_failure`), never for this line, which a run's summary, the service's
    staff page and its log show."""
    from rlcourse.grading.pipeline import NotGraded
    from rlcourse.grading.plugin import exception_text, raised_where

    if isinstance(error, NotGraded):
        return str(error)
    where, in_course = raised_where(error, root=root)
    if in_course or where.startswith("rlcourse/"):
        return f"{where}: {exception_text(error)}"
    return exception_text(error)  # a library's own (Dask's KilledWorker): its place says nothing


def log_failure(error: BaseException, log=None) -> None:
    """The whole traceback of an engine's failure, for the staff (a NotGraded's grader
    tracebacks were logged by the Grader as it found them)."""
    import sys
    import traceback

    from rlcourse.grading.pipeline import NotGraded

    if isinstance(error, NotGraded):
        return
    text = "".join(traceback.format_exception(error)).rstrip()
    (log or (lambda message: print(message, file=sys.stderr)))(f"not graded, the engine failed:\n{text}")


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def make_backend(assignment: Assignment, settings: GraderSettings, *, workers: int | None = None,
                 backend: str = "local", scheduler: "str | Scheduler | None" = None, log=None):
    """The backend the command line asks for. `scheduler` implies Dask (an address is checked
    as `Scheduler.checked` checks it: plain beyond the loopback is refused)."""
    workers = workers or default_workers()
    if backend == "dask" or scheduler:
        return Dask(assignment, settings, scheduler=scheduler, workers=workers, log=log)
    if workers <= 1:
        return InProcess(assignment, settings, log=log)
    return LocalPool(assignment, settings, workers=workers, log=log)


def assignment_fingerprint(assignment: Assignment) -> str:
    """What decides a grade besides the notebook: the hidden graders and the release. A Dask
    worker compares its own copy with the caller's before grading anything."""
    from rlcourse.course.files import digest_files, files_under

    return digest_files(hashlib.sha256(), [*files_under(assignment.grader_dir), assignment.release_notebook],
                        relative_to=assignment.course.root).hexdigest()


def warm_once(assignment: Assignment, settings: GraderSettings, log=None) -> None:
    """Warm the JAX compilation cache with the reference before parallel processes start, so
    they find it ready instead of each warming it at once."""
    if not settings.warm_cache:
        return
    from rlcourse.grading.pipeline import Grader

    Grader(assignment, strategy=settings.strategy, isolation=settings.isolation, log=log,
           workers=False).close()


# --- grading one job, wherever it runs -----------------------------------------------------------
def grade_job(grader, job: Job) -> Report:
    if job.problem:
        return grader.unreadable(job.problem, notebook=grader.assignment.notebook)
    return grader.grade(job.path, student=job.student)


class InProcess:
    """One `Grader` here; submissions one after another."""

    def __init__(self, assignment: Assignment, settings: GraderSettings, *, log=None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self._grader = None
        self.workers = 1

    def prepare(self) -> None:
        """Build the `Grader` now rather than at the first submission: the reference measured
        (or read), the fork template started. A service calls it before any student submits."""
        if self._grader is None:
            from rlcourse.grading.pipeline import Grader

            self._grader = Grader(self.assignment, strategy=self.settings.strategy,
                                  isolation=self.settings.isolation,
                                  warm_cache=self.settings.warm_cache, log=self.log)

    def wait_ready(self) -> None:
        """`prepare`, then wait for the fork template's imports: what a service making an
        assignment ready calls, so that "ready" means the next submission starts at once."""
        self.prepare()
        self._grader.wait_ready()

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report | GradingFailed]]:
        for job in jobs:
            self.prepare()
            try:
                result = grade_job(self._grader, job)
            except Exception as error:  # noqa: BLE001 - the engine's failure: ungraded, not a zero
                log_failure(error, self.log)
                result = GradingFailed(failure_reason(error, root=self.assignment.course.root))
            yield job, result

    def close(self) -> None:
        if self._grader is not None:
            self._grader.close()
            self._grader = None


# --- N processes on this machine ----------------------------------------------------------------
def die_with_parent(parent: int) -> None:
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


def _grading_process(connection, parent: int, course_root: str, name: str,
                     settings: GraderSettings) -> None:
    """A `LocalPool` process: one `Grader`, then jobs one at a time until the pipe closes."""
    die_with_parent(parent)
    from rlcourse.grading.pipeline import Grader

    assignment = Course(Path(course_root)).assignment(name)
    with Grader(assignment, strategy=settings.strategy, isolation=settings.isolation,
                warm_cache=False) as grader:
        while True:
            try:
                job = connection.recv()
            except (EOFError, OSError):
                return
            crash_point("pool-grading", job.student)
            try:
                connection.send(("report", grade_job(grader, job).to_json()))
            except Exception as error:  # noqa: BLE001 - a grader bug: this job fails, not the run
                log_failure(error)  # this process's stderr is the run's
                connection.send(("error", failure_reason(error, root=assignment.course.root)))


@dataclasses.dataclass
class _Slot:
    process: object
    connection: object
    job: Job | None = None


class LocalPool:
    """N grading processes on this machine, each with its own `Grader` and fork template.

    Each process holds one job at a time, so when one dies (the operating system's OOM killer,
    say; the process runs only trusted code, student code dies in its own worker) the pool
    knows which submission it was grading: that one is tried again in a fresh process, and the
    others never notice. A submission that takes its grading process down `ATTEMPTS` times is
    returned as `GradingFailed`."""

    ATTEMPTS = 3

    def __init__(self, assignment: Assignment, settings: GraderSettings, *, workers: int, log=None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self.workers = workers
        self._slots: list[_Slot] = []

    def _start(self) -> _Slot:
        import multiprocessing

        # spawn, not fork: the caller has a progress thread and nbgrader's database open.
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(target=_grading_process, daemon=True, args=(
            theirs, os.getpid(), str(self.assignment.course.root), self.assignment.name,
            self.settings))
        process.start()
        theirs.close()  # the child's end lives in the child only: its death reads as EOF here
        return _Slot(process, ours)

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report | GradingFailed]]:
        from collections import Counter, deque
        from multiprocessing.connection import wait

        if not jobs:
            return
        warm_once(self.assignment, self.settings, self.log)
        queue, attempts = deque(jobs), Counter()
        self._slots = [self._start() for _ in range(min(self.workers, len(jobs)))]
        while queue or any(slot.job for slot in self._slots):
            for slot in self._slots:
                if slot.job is None and queue:
                    slot.job = queue.popleft()
                    attempts[slot.job.student] += 1
                    slot.connection.send(slot.job)
            busy = {slot.connection: slot for slot in self._slots if slot.job is not None}
            for connection in wait(list(busy)):
                slot = busy[connection]
                job, slot.job = slot.job, None
                try:
                    kind, data = connection.recv()
                except (EOFError, OSError):
                    yield from self._died(slot, job, attempts[job.student], queue)
                    continue
                yield job, (Report.from_json(data) if kind == "report" else GradingFailed(data))

    def _died(self, slot: _Slot, job: Job, attempt: int, queue) -> Iterator:
        slot.process.join(timeout=5)
        slot.connection.close()
        replacement = self._start()
        slot.process, slot.connection = replacement.process, replacement.connection
        if attempt < self.ATTEMPTS:
            if self.log:
                self.log(f"a grading process died while grading {job.student}; grading it again")
            queue.appendleft(job)
        else:
            yield job, GradingFailed(f"the grading process died {attempt} times while grading "
                                     "this submission")

    def close(self) -> None:
        for slot in self._slots:
            slot.connection.close()  # the process sees EOF and leaves after its current job
        for slot in self._slots:
            slot.process.join(timeout=30)
            if slot.process.is_alive():
                slot.process.kill()
        self._slots = []


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
        grader, loaded = _DASK_GRADERS.get(key, (None, None))
        if grader is not None and loaded != fingerprint:
            # pytest keeps the grader modules it imported for the life of the process, so a
            # Grader cannot reload them: grading on would use the old graders.
            raise RuntimeError(f"this worker loaded {name}'s graders before they changed at {root}; "
                               "restart it (dask worker) to grade with the new ones")
        if grader is None:
            from rlcourse.grading.pipeline import Grader

            grader = Grader(assignment, strategy=settings.strategy, isolation=settings.isolation,
                            warm_cache=settings.warm_cache)
            _DASK_GRADERS[key] = (grader, fingerprint)
        crash_point("dask-grading", student)
        if problem is not None:
            return grade_job(grader, Job(student, None, problem)).to_json()
        with tempfile.TemporaryDirectory(prefix="rlcourse-dask-") as folder:
            path = Path(folder) / notebook
            path.write_bytes(content)
            return grade_job(grader, Job(student, path)).to_json()


class Dask:
    """Submissions as tasks on a Dask cluster; results come back to the caller as data."""

    IN_FLIGHT = 64
    """Notebooks sent ahead of the results: each task carries its notebook's bytes, and the
    scheduler holds them until a worker takes the task, so a class of 2,000 is sent a window at
    a time (a few MB) rather than all at once (about 200 MB)."""

    def __init__(self, assignment: Assignment, settings: GraderSettings, *,
                 scheduler: "str | Scheduler | None", workers: int, log=None,
                 in_flight: int | None = None):
        self.assignment, self.settings, self.log = assignment, settings, log
        self.workers = workers
        self.in_flight = in_flight
        self.scheduler = Scheduler.checked(scheduler) if scheduler else None
        self._client = None
        self._cluster = None

    def _connect(self):
        from distributed import Client, LocalCluster

        if self._client is not None:  # a caller that grades again (rlcourse web) reuses it
            return
        if self.scheduler:
            client = Client(self.scheduler.address, security=self.scheduler.security(), timeout="30s")
            try:  # where the cluster listens, not what it advertises, before any notebook is sent
                check_listeners(self.scheduler, listeners(client))
            except BaseException:
                client.close()
                raise
            self._client = client
            if self.scheduler.plain and self.log:
                self.log(f"dask: {self.scheduler.address} is plain TCP: every user of this machine "
                         "can run code as the grader through it; prefer tls:// (rlcourse dask certs)")
        else:
            # TLS with temporary certificates: the loopback is every local user's too.
            self._cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                         processes=True, dashboard_address=None, security=True,
                                         host="127.0.0.1")
            self._client = Client(self._cluster)
        if self.log:
            where = self.scheduler.address if self.scheduler else "an embedded LocalCluster"
            count = len(self._client.scheduler_info().get("workers", {}))
            self.log(f"dask: grading on {where} ({count} workers)")

    def prepare(self) -> None:
        """The reference measured here once and the cluster connected, before any submission:
        the workers warm their own graders on their first task."""
        if self._client is None:
            warm_once(self.assignment, self.settings, self.log)
        self._connect()

    wait_ready = prepare

    def grade(self, jobs: list[Job]) -> Iterator[tuple[Job, Report | GradingFailed]]:
        if not jobs:
            return
        from distributed import as_completed

        self.prepare()
        fingerprint = assignment_fingerprint(self.assignment)
        window = self.in_flight or max(self.IN_FLIGHT,
                                       4 * len(self._client.scheduler_info().get("workers", {})))
        waiting = iter(jobs)
        futures = {}
        finished = as_completed()

        def send_next() -> None:
            job = next(waiting, None)
            if job is None:
                return
            content = job.path.read_bytes() if job.path is not None else None
            future = self._client.submit(
                grade_on_dask_worker, str(self.assignment.course.root), self.assignment.name,
                fingerprint, self.settings, job.student, self.assignment.notebook, content,
                job.problem, key=f"rlcourse-{self.assignment.name}-{job.student}-{os.urandom(4).hex()}",
                pure=False, retries=1)
            futures[future] = job
            finished.add(future)

        for _ in range(window):
            send_next()
        for future in finished:
            job = futures.pop(future)
            send_next()
            try:
                data = future.result()
            except Exception as error:  # noqa: BLE001 - KilledWorker, a refusing worker, ...
                log_failure(error, self.log)
                yield job, GradingFailed(failure_reason(error, root=self.assignment.course.root))
                continue
            yield job, Report.from_json(data)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
