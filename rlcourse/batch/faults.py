"""Fault injection for the tests that kill grading at chosen moments and check nothing is lost.

Inert unless the environment variable RLCOURSE_KILL_AT is set; nothing in normal use sets it.
"""
from __future__ import annotations

import os
import signal


def crash_point(stage: str, student: str) -> None:
    """RLCOURSE_KILL_AT=graded:alice kills this process with SIGKILL right after that stage for
    that student, as `kill -9` would. Stages: `graded` and `recorded` (rlcourse autograde),
    `pool-grading` (a local grading process, mid-task), `dask-grading` (a Dask worker),
    `serving` (`rlcourse serve`, before grading a notebook, keyed by the notebook's file name); with
    RLCOURSE_KILL_ONCE=FILE only the first process to create FILE is killed, so the task's
    second attempt, on another worker, goes through."""
    if os.environ.get("RLCOURSE_KILL_AT") != f"{stage}:{student}":
        return
    once = os.environ.get("RLCOURSE_KILL_ONCE")
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
    os.kill(os.getpid(), signal.SIGKILL)
