"""The grading thread: takes queued submissions oldest first and grades each in a warm child
process (rlcourse.web.job), started on first use and again whenever it dies or goes stale.

The queue is the database (rlcourse.web.store), not memory: a submission is `queued` from the
moment it is accepted, `running` while its child grades it, then `graded` (report and timing
kept) or, after `MAX_ATTEMPTS` children failed, `failed` with the reason, for the staff to see
(and retry). Whatever is graded, the gradebook and `submitted/` end holding the submission that
counts (`[web] counts`), never a failed one or an older one the staff graded again.
A service that stops mid-grading finds the submission `running` when it starts again and
queues it again, so a restart loses nothing.
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading

from rlcourse.batch.dask_security import Scheduler
from rlcourse.web.store import FAILED, GRADED, QUEUED, now

MAX_ATTEMPTS = 3
JOB_TIMEOUT = 30 * 60
"""A child that runs longer is killed and the grading tried again: the assignment's own limits
stop a student's code long before this."""


class GradingProcess:
    """The warm child: one JSON request per line in, one JSON reply per line out."""

    def __init__(self, command: list[str], *, env: dict, cwd):
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env, cwd=cwd)
        self._replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, name="rlcourse-grading-replies", daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("{"):
                self._replies.put(json.loads(line))
        self._replies.put(None)  # end of output: the child exited or was killed

    def ask(self, request: dict, *, timeout: float) -> dict:
        """The child's reply; `{"died": reason}` if it exits or outlives `timeout` first."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            reply = self._replies.get(timeout=timeout)
        except (BrokenPipeError, OSError):
            reply = None
        except queue.Empty:
            self.close()
            return {"died": f"grading took longer than {timeout:g} s"}
        if reply is None:
            status = self.process.wait()
            return {"died": f"the grading process ended (status {status})"}
        return reply

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class Lane:
    """One grading thread's warm process: started on first use, replaced when it dies or its
    graders go stale. `rlcourse web --graders N` runs N lanes side by side; each grades outside
    the class's lock and takes it only to record (rlcourse.web.job)."""

    def __init__(self, queue: "GradingQueue", number: int):
        self.queue, self.number = queue, number
        self.child: GradingProcess | None = None
        self.to_warm: list[str] = []
        """The open assignments this lane's process is still to make ready (`GradingQueue.start`)."""

    def ask(self, request: dict) -> dict:
        for _ in range(2):  # a stale child is replaced once, without counting an attempt
            result = self._process().ask(request, timeout=JOB_TIMEOUT)
            if "stale" not in result:
                break
            self.queue.log(f"rlcourse web: a new grading process ({result['stale']})")
            self.close()
        if self.child is not None and ("died" in result or not self.child.alive()):
            self.close()
        return result

    def _process(self) -> GradingProcess:
        if self.child is None or not self.child.alive():
            service = self.queue.service
            # -P: the child runs in the course directory (its graders' relative paths), which
            # `-m` would otherwise put first on sys.path; a course made from this template holds
            # a copy of rlcourse/ there, which would then be imported instead of the installed
            # engine, and the sandboxed workers (`python -I`, the engine's own folder mounted)
            # could not import rlcourse at all. A course's own plugins are imported by name
            # from the class directory (rlcourse.course.lateness.course_plugin_importable).
            command = [sys.executable, "-P", "-m", "rlcourse.web.job"]
            if service.scheduler:  # checked again: a plain address beyond the loopback is refused
                command += Scheduler.checked(service.scheduler).arguments()
            self.child = GradingProcess(command,
                                        env=dict(os.environ, RLCOURSE_ROOT=str(service.course.root)),
                                        cwd=service.course.root)
            self.queue.log(f"rlcourse web: grading process {self.child.process.pid} started")
        return self.child

    def close(self) -> None:
        child, self.child = self.child, None
        if child is not None:
            child.close()


class Readiness:
    """The open assignments the service is still making ready since it started (each lane's
    grading process warms each of them: `{"warm": name}`, rlcourse.web.job), for the pages to
    say that a submission now may wait a little longer than usual."""

    def __init__(self):
        self._lock = threading.Lock()
        self._pending: dict[str, int] = {}

    def expect(self, names: list[str], lanes: int) -> None:
        with self._lock:
            for name in names:
                self._pending[name] = lanes

    def done(self, name: str) -> None:
        with self._lock:
            if self._pending.get(name):
                self._pending[name] -= 1

    def getting_ready(self, name: str) -> bool:
        with self._lock:
            return bool(self._pending.get(name))


class GradingQueue:
    def __init__(self, service, log=None, *, graders: int = 1, warm: bool = False):
        """`warm`: at `start`, every lane makes every open assignment ready before the first
        submission comes (a submission that comes first is graded first, which warms its own)."""
        self.service = service
        self.warm_at_start = warm
        self.readiness = Readiness()
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._claim = threading.Lock()  # one thread at a time takes the next queued submission
        self.lanes = [Lane(self, number) for number in range(graders)]
        self._threads = [threading.Thread(target=self._run, args=(lane,), name=f"rlcourse-grading-{lane.number}",
                                          daemon=True) for lane in self.lanes]

    def start(self) -> None:
        requeued = self.service.store.requeue_interrupted()
        if requeued:
            self.log(f"rlcourse web: {requeued} submission(s) interrupted by the last stop queued again")
        if self.warm_at_start:
            names = self.service.open_assignments()
            self.readiness.expect(names, len(self.lanes))
            for lane in self.lanes:
                lane.to_warm = list(names)
            if names:
                self.log(f"rlcourse web: making {', '.join(names)} ready for grading")
        for thread in self._threads:
            thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        for lane in self.lanes:
            lane.close()

    def _run(self, lane: Lane) -> None:
        while not self._stop.is_set():
            with self._claim:
                submission = self.service.store.next_queued()
            if submission is None and lane.to_warm:
                self._warm(lane, lane.to_warm.pop(0))
                continue
            if submission is None:
                self._wake.wait(timeout=5)
                self._wake.clear()
                continue
            try:
                self._grade(submission, lane)
            except Exception as error:  # noqa: BLE001 - the thread must outlive any one grading
                self._retry_or_fail(submission, f"{type(error).__name__}: {error}")

    def _warm(self, lane: Lane, name: str) -> None:
        """One open assignment made ready in the lane's grading process, between submissions
        (a queued one always goes first). A failure here costs nothing but the time: the first
        submission of the assignment then starts its grading as it would have."""
        try:
            result = lane.ask({"warm": name})
        except Exception as error:  # noqa: BLE001 - warming is an optimisation, never a failure
            result = {"error": f"{type(error).__name__}: {error}"}
        if "warmed" in result:
            self.log(f"rlcourse web: {name} ready for grading in lane {lane.number} "
                     f"({result['seconds']:.1f} s)")
        else:
            reason = result.get("died") or result.get("error") or result.get("stale") or "no reply"
            self.log(f"rlcourse web: {name} could not be made ready in lane {lane.number} ({reason}); "
                     "its first submission prepares it instead")
        self.readiness.done(name)  # after the log: what the log says last, the pages say from now

    def _grade(self, submission, lane: Lane) -> None:
        service = self.service
        assignment = service.course.assignment(submission.assignment)
        service.intake.install(submission, assignment)
        request = {"assignment": submission.assignment, "student": submission.student,
                   "root": str(service.class_dir.root), "submission": submission.id}
        self.log(f"rlcourse web: grading #{submission.id} ({submission.student}, {submission.assignment})"
                 + (" again, for the staff" if submission.regrade else ""))
        if submission.regrade:
            request.update(force=True, by=submission.requested_by)
        result = lane.ask(request)
        if not result.get("graded"):
            reason = result.get("died") or result.get("error") or result.get("stale") or "no reply"
            self._retry_or_fail(submission, f"the grading process failed: {reason}")
            return
        submission.report, submission.timing = json.dumps(result["report"]), json.dumps(result["timing"])
        self.log(f"rlcourse web: graded #{submission.id}: {result['report']['score']:g}/"
                 f"{result['report']['max_score']:g}")
        # Before the row says "graded": whoever reads it then finds the gradebook as it stays.
        self._keep_counting(submission, assignment, request, lane)
        service.store.update(submission.id, status=GRADED, finished=now(), error=None, regrade=False,
                             report=submission.report, timing=submission.timing)
        service.forget_deadline(submission.student, submission.assignment)

    def counting_submission(self, submission, assignment):
        """Which of the student's graded submissions of the assignment the gradebook must hold
        once `submission` (graded just now, its report set but not stored yet) is: the latest
        under `counts = "latest"`, the best after late penalty under "best"."""
        rows = self.service.store.submissions(student=submission.student, assignment=submission.assignment)
        graded = [row for row in rows if row.id != submission.id and row.report is not None
                  and (row.status == GRADED or row.regrade)] + [submission]
        return counting_among(graded, assignment.web.counts, assignment.feedback)

    def _keep_counting(self, submission, assignment, request: dict, lane: Lane) -> None:
        """If the submission just graded is not the one that counts (a lower score under
        `counts = "best"`; an older submission retried or regraded by the staff), put the one
        that counts back in `submitted/` and record it again, so the gradebook, `nbgrader
        export` and a later `rlcourse autograde` all hold it. Its report is already in the
        ledger when it was the last recorded; otherwise it is graded again."""
        counting = self.counting_submission(submission, assignment)
        if counting is None or counting.id == submission.id:
            return
        self.service.intake.install(counting, assignment)
        result = lane.ask(dict(request, submission=counting.id))
        if not result.get("graded"):
            self.log(f"rlcourse web: #{counting.id} (the one that counts) could not be recorded again: "
                     f"{result.get('died') or result.get('error') or result.get('stale')}; "
                     "the next `rlcourse autograde` records it")
            return
        self.log(f"rlcourse web: #{counting.id} counts for {submission.student} "
                 f"({net_score(counting, assignment.feedback):g} points after any late penalty, "
                 "before the items that wait for the due date), recorded again")

    def _retry_or_fail(self, submission, reason: str) -> None:
        """Queue a grading that failed on the service's side again, or after `MAX_ATTEMPTS` give
        up: a new submission is kept as `failed` (not counted against the student's limit; the
        staff see it and may retry it), a staff regrade goes back to `graded` as it was. Either
        way the submission that counts goes back into `submitted/`: the failed one never
        replaces it there (its grade never reached the gradebook)."""
        if self._stop.is_set():
            return  # stopping: left running, so the next start queues it again
        again = submission.attempts < MAX_ATTEMPTS
        self.log(f"rlcourse web: #{submission.id} not graded ({reason}); "
                 + ("queued again" if again else "given up: staff see it as failed"))
        if again:
            self.service.store.update(submission.id, status=QUEUED, error=reason, finished=None)
            return
        if submission.regrade:
            self.service.store.update(submission.id, status=GRADED, regrade=False,
                                      error=f"a regrade failed: {reason}")
        else:
            self.service.store.update(submission.id, status=FAILED, error=reason, finished=now())
        assignment = self.service.course.assignment(submission.assignment)
        counting = counting_among(self.service.store.submissions(
            student=submission.student, assignment=submission.assignment, status=(GRADED,)),
            assignment.web.counts, assignment.feedback)
        if counting is not None:
            self.service.intake.install(counting, assignment)


def net_score(submission, policy=None) -> float:
    """A graded submission's score after its late penalty, counting only the items a student
    may see before the due date under the feedback `policy` (rlcourse.course.visibility; the
    default's): an item sealed until the due date (a prediction, a concept check) never decides
    which submission is the best, or trying every option of a prediction would pick the right
    one without the student ever committing to it."""
    from rlcourse.course.visibility import FeedbackPolicy
    from rlcourse.grading.report import Report

    policy = policy or FeedbackPolicy()
    report = Report.from_json(json.loads(submission.report))
    timing = json.loads(submission.timing) if submission.timing else {}
    shown = sum(item.score for item in report.items if not policy.seals(item))
    return round(shown - ((timing or {}).get("penalty") or 0.0), 6)


def best_submission(graded: list, policy=None):
    """The graded submission with the highest score after penalty (sealed items left out: see
    `net_score`); the newest of equals."""
    return max(graded, key=lambda entry: (net_score(entry, policy), entry.id), default=None)


def counting_among(graded: list, counts: str, policy=None):
    """The one of a student's graded submissions of an assignment the gradebook holds: the
    latest, or under `[web] counts = "best"` the best (by what the feedback `policy` lets a
    student see before the due date); None without any."""
    if counts == "best":
        return best_submission(graded, policy)
    return max(graded, key=lambda entry: entry.id, default=None)
