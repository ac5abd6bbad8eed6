"""The web service's grading process: `python -m rlcourse.web.job [--scheduler ADDRESS [--dask-certs
DIR] [--insecure]]`, kept warm.

The service never grades in its own process. It starts this child once and sends it one JSON
request per line on stdin, `{"assignment": "ps1", "student": "ada", "root": "/class"}` (with
`"force": true` for a staff regrade: graded again even when the ledger holds the report); the child
runs the batch's `autograde` for that one student (the hidden graders here, the student's code in
the sandboxed workers its `Grader` forks; the ledger, the gradebook with the late penalty, the
autograded notebook and the feedback page, exactly as for a class) and answers one JSON line:
`{"graded": true, "status", "report", "timing"}`, `{"graded": false, "error"}`, or
`{"stale": reason}` when the graders, the assignment's configuration or the engine changed since
it loaded them (pytest keeps imported grader modules for the life of a process, as
rlcourse.batch.service explains), after which it exits and the service starts a fresh one.

`{"warm": "ps1"}` grades nothing: it makes the assignment's grading ready (`WarmGraders.warm`) and
answers `{"warmed": "ps1", "seconds": ...}`. The service sends it for every open assignment when
it starts (rlcourse.web.queue), so the first submission of the day pays nothing extra.

Why warm: a cold child pays for Python, pytest, the graders and a fork template importing JAX
or torch before any student cell runs, which is most of a submission's wait. Kept alive, it pays
them once per assignment, as `rlcourse serve` does for `rlcourse grade`.

If it dies or is killed, nothing half-written is kept (autograde's own guarantee) and the
service grades the submission again in a new child. It dies with the service (PDEATHSIG), so a
killed service leaves no grading running for nobody.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


class GradedAhead:
    """The backend `autograde` is given: the student's submission already graded, before the
    class's lock was taken, so several grading processes grade side by side and queue only to
    record (the ledger, the gradebook, the outputs: autograde's lock). A notebook that is not
    the one graded ahead (changed in between) is graded by the warm backend as usual."""

    def __init__(self, backend, ready: dict):
        self.backend, self.ready = backend, ready

    @classmethod
    def prepare(cls, backend, class_dir, assignment, student: str, grading_by: str, *,
                force: bool = False) -> "GradedAhead":
        """Grade `student`'s submission now, unless the ledger already holds its report (then
        autograde records that and grades nothing) and `force` (a staff regrade) is not given."""
        from rlcourse.batch.backends import Job
        from rlcourse.course.class_directory import find_submissions
        from rlcourse.record.ledger import read_ledger, submission_key

        entry = find_submissions(class_dir, assignment, [student])[0]
        if entry.path is None:
            return cls(backend, {})
        saved = read_ledger(class_dir, assignment, student)
        if saved and saved["key"] == f"{submission_key(entry)} {grading_by}" and not force:
            return cls(backend, {})
        notebook = entry.path.read_bytes()
        job = Job(entry.student, entry.path, entry.problem)
        (_, result), = backend.grade([job])
        return cls(backend, {job: (notebook, result)})

    def grade(self, jobs):
        for job in jobs:
            notebook, result = self.ready.get(job, (None, None))
            if result is not None and job.path.read_bytes() == notebook:
                yield job, result
            else:
                yield from self.backend.grade([job])

    def close(self) -> None:
        """The warm backend stays open for the next grading."""


class WarmGraders:
    """One in-process backend per assignment, built on first use and reused while current."""

    def __init__(self, scheduler=None):
        from rlcourse.batch.service import engine_fingerprint

        self.scheduler = scheduler
        """A checked Dask scheduler (rlcourse.batch.dask_security.Scheduler): the gradings run on
        its workers (rlcourse.batch.backends.Dask); this process only sends them and records what
        comes back."""
        self.engine = engine_fingerprint()
        self.backends: dict[str, tuple[str, object]] = {}

    def _loaded(self, name: str):
        """(assignment, grading key, backend) for `name`, the backend built on first use; or the
        `{"stale": reason}` reply when the graders, the configuration or the engine changed since
        this process loaded them (pytest keeps imported grader modules: a new process must)."""
        from rlcourse.batch.autograde import grading_key
        from rlcourse.batch.backends import Dask, GraderSettings, InProcess
        from rlcourse.batch.service import engine_fingerprint
        from rlcourse.course.directory import Course

        assignment = Course.find().assignment(name)
        key = grading_key(assignment)
        loaded = self.backends.get(name)
        if engine_fingerprint() != self.engine or (loaded and loaded[0] != key):
            return {"stale": f"{name}'s graders, configuration or the engine changed"}
        if loaded is None:
            backend = (Dask(assignment, GraderSettings(), scheduler=self.scheduler, workers=1,
                            log=lambda message: print(message, file=sys.stderr, flush=True))
                       if self.scheduler else InProcess(assignment, GraderSettings()))
            loaded = self.backends[name] = (key, backend)
        return assignment, *loaded

    def warm(self, name: str) -> dict:
        """Make `name`'s grading ready before any submission of it arrives: the reference
        measured (and the JAX compilation cache filled) once for the course, the graders' checks
        made, and this process's fork template started and done importing its framework
        (rlcourse.batch.backends `wait_ready`), so that the first student of the day waits no
        longer than the next."""
        from rlcourse.batch.check import preflight

        started = time.perf_counter()
        loaded = self._loaded(name)
        if isinstance(loaded, dict):
            return loaded
        assignment, _, backend = loaded
        preflight(assignment)
        backend.wait_ready()
        return {"warmed": name, "seconds": round(time.perf_counter() - started, 3)}

    def grade(self, name: str, student: str, root: str, *, force: bool = False,
              submission: int | None = None, by: str | None = None) -> dict:
        """Grade `student`'s installed submission into the gradebook; the audit log names `by`
        (the staff account of a regrade) or else the service as who changed the scores, and
        `submission` (the service's id) in the cause."""
        from rlcourse.batch.autograde import autograde
        from rlcourse.batch.check import preflight
        from rlcourse.course.class_directory import ClassDirectory
        from rlcourse.course.lateness import LatePolicy

        loaded = self._loaded(name)
        if isinstance(loaded, dict):
            return loaded
        assignment, key, backend = loaded
        class_dir = ClassDirectory(Path(root))
        # autograde's own first checks, before any grading: an author's mistake or a late policy
        # that cannot load costs no grading (autograde makes them again under its lock).
        preflight(assignment)
        LatePolicy(class_dir.root).check()
        ahead = GradedAhead.prepare(backend, class_dir, assignment, student, key, force=force)
        outcomes = autograde(assignment, class_dir=class_dir, students=[student], force=force,
                             workers=1, progress=False, grading=ahead, audited_by=by or "rlcourse web",
                             audit_detail={"service_submission": submission})
        if not outcomes or outcomes[0].status in ("not graded", "refused"):
            errors = outcomes[0].report.errors if outcomes else ["no submission found"]
            return {"graded": False, "error": "; ".join(errors)}
        outcome = outcomes[0]
        push_to_lms(assignment, class_dir, student)
        return {"graded": True, "status": outcome.status, "report": outcome.report.to_json(),
                "timing": outcome.timing.to_json() if outcome.timing else None}

    def close(self) -> None:
        for _, backend in self.backends.values():
            backend.close()


def push_to_lms(assignment, class_dir, student: str) -> None:
    """The student's grade of record to the LMS when the class's lms.toml asks for it after every
    grading (rlcourse.batch.lms). Never the grading's failure: the grade is recorded, and what
    could not be sent is logged for the staff (`rlcourse lms push` sends it)."""
    from rlcourse.batch import lms

    try:
        push = lms.push_after_grading(assignment, class_dir=class_dir, students=[student])
    except Exception as error:  # noqa: BLE001 - LmsError, or the network's: never the grading's failure
        print(f"rlcourse web: {student}'s grade is recorded, not sent to the LMS: {error}",
              file=sys.stderr, flush=True)
        return
    if push is not None:
        for line in lms.describe_push(assignment.name, push):
            print(f"rlcourse web: lms: {line}", file=sys.stderr, flush=True)


def scheduler_from(arguments: list[str]):
    """The Dask scheduler the service named (`Scheduler.arguments`), checked again here, or None."""
    import argparse

    from rlcourse.batch.dask_security import Scheduler

    parser = argparse.ArgumentParser(prog="python -m rlcourse.web.job")
    parser.add_argument("--scheduler", default=None)
    parser.add_argument("--dask-certs", type=Path, default=None)
    parser.add_argument("--insecure", action="store_true")
    options = parser.parse_args(arguments)
    if not options.scheduler:
        return None
    return Scheduler.checked(options.scheduler, certificates=options.dask_certs,
                             insecure=options.insecure)


def main() -> int:
    from rlcourse.batch.backends import die_with_parent

    die_with_parent(os.getppid())
    # Replies go to the real stdout alone; anything else this process prints goes to stderr.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    graders = WarmGraders(scheduler=scheduler_from(sys.argv[1:]))
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                reply = (graders.warm(request["warm"]) if "warm" in request else
                         graders.grade(request["assignment"], request["student"], request["root"],
                                       force=bool(request.get("force")), submission=request.get("submission"),
                                       by=request.get("by")))
            except Exception as error:  # noqa: BLE001 - one grading's failure is that grading's reply
                # ... and this process's end: the next grading starts from a fresh one.
                replies.write(json.dumps({"graded": False, "error": f"{type(error).__name__}: {error}"}) + "\n")
                return 1
            replies.write(json.dumps(reply) + "\n")
            if "stale" in reply:
                return 0
    finally:
        graders.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
