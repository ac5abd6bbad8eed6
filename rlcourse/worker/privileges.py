"""Who a worker runs as and what it may mount, and the floor below which grading refuses.

Under the rlimits fallback a root grader starts its workers as an unprivileged user, or gives
them read-only private mounts; where neither is possible, `check_floor` refuses to grade unless
the instructor says otherwise (docs/threat-model.md)."""
from __future__ import annotations

import dataclasses
import functools
import os
import subprocess
import sys
from pathlib import Path

from rlcourse.worker import confine
from rlcourse.worker.limits import Limits

UNPRIVILEGED = confine.UNPRIVILEGED
"""The uid and gid ("nobody") a worker takes under the resource-limits fallback when the grader
runs as root, so that file permissions keep it out of the gradebook and the course."""


def drops_privileges(isolation: str) -> bool:
    return isolation == "rlimits" and os.geteuid() == 0 and _unprivileged_python_runs()


@functools.lru_cache(maxsize=1)
def _unprivileged_python_runs() -> bool:
    """Whether this interpreter starts as the unprivileged user (it cannot when it is installed
    under a home directory only root may enter, such as /root/.pyenv)."""
    try:
        result = subprocess.run([sys.executable, "-I", "-c", "import numpy"], capture_output=True,
                                timeout=60, cwd="/", preexec_fn=lambda: apply_limits(
                                    Limits(), unprivileged=True))
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def apply_limits(limits: Limits, *, unprivileged: bool = False) -> None:
    """Set rlimits in the worker itself, before any student code runs; as root under the
    fallback, also become an unprivileged user (the process count limit only binds then)."""
    confine.set_limits(dataclasses.asdict(limits), unprivileged=unprivileged)
    if unprivileged:
        confine.become_unprivileged()


def hand_over(path: Path, isolation: str) -> Path:
    """Make a worker's scratch directory its own when the worker will run as another user."""
    if drops_privileges(isolation):
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    return path


def workers_may_mount(isolation: str) -> bool:
    """Whether this launcher's workers can make their private mounts (rlcourse.worker.confine):
    under rlimits, when the grader holds CAP_SYS_ADMIN (root, outside a locked-down container);
    under bwrap, when the grader is root (the fork template then keeps CAP_SYS_ADMIN and
    CAP_SETPCAP in its own user namespace, for its children to use and drop before student
    code; the spawn launcher gets the same tmpfs from bwrap itself)."""
    if isolation == "bwrap":
        return os.geteuid() == 0
    return confine.can_mount()


ALLOW_UNCONFINED = "RLCOURSE_ALLOW_UNCONFINED"
"""Set to 1 to grade under the rlimits fallback without its floor (see `check_floor`)."""


class NoFloor(RuntimeError):
    """The rlimits fallback cannot keep a worker's hands off the grader's files here."""


def check_floor(isolation: str) -> None:
    """The rlimits fallback's floor: its workers either have read-only private mounts (a root
    grader) or run as an unprivileged user; otherwise a worker of the grader's own uid may
    chmod, touch or give xattrs to every file the grader owns (Landlock does not govern them).
    Then the engine refuses, loudly, unless the instructor sets RLCOURSE_ALLOW_UNCONFINED=1."""
    if isolation != "rlimits" or workers_may_mount(isolation) or drops_privileges(isolation):
        return
    message = ("the rlimits fallback cannot protect the course here: workers would run as the "
               "grader's own user, without private read-only mounts, and could change the metadata "
               "of every file it owns (docs/threat-model.md). Use bubblewrap, run as root, or set "
               f"{ALLOW_UNCONFINED}=1 to grade trusted notebooks anyway")
    if os.environ.get(ALLOW_UNCONFINED) != "1":
        raise NoFloor(message)
    print(f"rlcourse: WARNING: {message} ({ALLOW_UNCONFINED}=1 is set)", file=sys.stderr)
