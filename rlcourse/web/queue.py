"""The grading thread: takes queued submissions oldest first and grades each in a child process.

The queue is the database (rlcourse.web.store), not memory: a submission is `queued` from the
moment it is accepted, `running` while its child grades it, then `graded` (report and timing
kept) or, after `MAX_ATTEMPTS` children failed, `failed` with the reason, for the staff to see.
A service that stops mid-grading finds the submission `running` when it starts again and
queues it again, so a restart loses nothing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from rlcourse.web.store import FAILED, GRADED, QUEUED, now

MAX_ATTEMPTS = 3
JOB_TIMEOUT = 30 * 60
"""A child that runs longer is killed and the grading tried again: the assignment's own limits
stop a student's code long before this."""


class GradingQueue:
    def __init__(self, service, log=None):
        self.service = service
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rlcourse-grading", daemon=True)

    def start(self) -> None:
        requeued = self.service.store.requeue_interrupted()
        if requeued:
            self.log(f"rlcourse web: {requeued} submission(s) interrupted by the last stop queued again")
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            submission = self.service.store.next_queued()
            if submission is None:
                self._wake.wait(timeout=5)
                self._wake.clear()
                continue
            try:
                self._grade(submission)
            except Exception as error:  # noqa: BLE001 - the thread must outlive any one grading
                self._retry_or_fail(submission, f"{type(error).__name__}: {error}")

    def _grade(self, submission) -> None:
        service = self.service
        assignment = service.course.assignment(submission.assignment)
        service.intake.install(submission, assignment)
        environment = dict(os.environ, RLCOURSE_ROOT=str(service.course.root))
        command = [sys.executable, "-m", "rlcourse.web.job", submission.assignment, submission.student,
                   str(service.class_dir.root)]
        self.log(f"rlcourse web: grading #{submission.id} ({submission.student}, {submission.assignment})")
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=environment,
                                  cwd=service.course.root, timeout=JOB_TIMEOUT)
        except subprocess.TimeoutExpired:
            self._retry_or_fail(submission, f"grading took longer than {JOB_TIMEOUT} s")
            return
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        result = json.loads(lines[-1]) if lines else {"graded": False}
        if not result.get("graded"):
            reason = result.get("error") or (done.stderr.strip().splitlines() or ["no output"])[-1]
            self._retry_or_fail(submission, f"the grading process failed (status {done.returncode}): {reason}")
            return
        service.store.update(submission.id, status=GRADED, finished=now(), error=None,
                             report=json.dumps(result["report"]), timing=json.dumps(result["timing"]))
        service.forget_deadline(submission.student, submission.assignment)
        self.log(f"rlcourse web: graded #{submission.id}: {result['report']['score']:g}/"
                 f"{result['report']['max_score']:g}")

    def _retry_or_fail(self, submission, reason: str) -> None:
        if self._stop.is_set():
            return  # stopping: left running, so the next start queues it again
        again = submission.attempts < MAX_ATTEMPTS
        self.log(f"rlcourse web: #{submission.id} not graded ({reason}); "
                 + ("queued again" if again else "given up: staff see it as failed"))
        self.service.store.update(submission.id, status=QUEUED if again else FAILED, error=reason,
                                  finished=None if again else now())
