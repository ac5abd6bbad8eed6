"""What `rlcourse doctor` finds: which isolation grading would use and why, and what else
confines each worker on this machine. Findings are lines of text; the CLI only prints them."""
from __future__ import annotations

import os

from rlcourse.worker import landlock
from rlcourse.worker.privileges import drops_privileges, workers_may_mount
from rlcourse.worker.sandbox import bwrap_status, choose_isolation, confinement


def findings(isolation: str | None = None) -> list[str]:
    """One line per finding, for `isolation` as the instructor asked ("bwrap", "rlimits", or
    None/"auto" for the best available)."""
    available, reason = bwrap_status()
    level, why = choose_isolation(isolation)
    lines = [f"bubblewrap: {'available' if available else 'not available'} ({reason})",
             f"isolation in force: {level} ({why})"]
    abi, covers = landlock.status()
    if abi:
        lines.append(f"landlock: {covers}; every worker applies it to itself")
    else:
        lines.append(f"landlock: {covers}" + ("; a worker can read and write whatever its user can"
                                              if level == "rlimits" else ""))
    lines.append("pids cgroup: " + ("yes (each worker's processes are capped, and all are killed with it)"
                                    if confinement()["pids_cgroup"] else
                                    "no (workers are killed by process group: see docs/threat-model.md)"))
    lines.append("private mounts: " + ("yes (everything read-only but a tmpfs scratch of fixed size)"
                                       if workers_may_mount(level) else
                                       "no (metadata outside scratch is not protected, and the disk quota "
                                       "is measured: see docs/threat-model.md)"))
    if level == "rlimits":
        who = ("an unprivileged user (nobody)" if drops_privileges(level) else
               "the grader's own user" + (" (root), without any capability" if os.geteuid() == 0 else ""))
        lines.append(f"workers run as: {who}")
    return lines
