"""What a worker may see: a bubblewrap sandbox, or plain resource limits where bwrap cannot run.

Under bubblewrap (`bwrap`) a worker starts in fresh user, mount, PID, network, IPC and UTS
namespaces and sees only:

* the system's `/usr` (and the `/lib`, `/bin` links into it) and the dynamic linker's cache;
* the Python installation, the environment (`sys.prefix`) and the worker's own code, read-only;
* its scratch directory, writable, which holds nothing but its own output files;
* JAX's compilation cache, read-only (writable only for the trusted run that warms it);
* an empty `/tmp`, `/proc` of its own PID namespace, a minimal `/dev`.

Not the course: `graders/`, `solutions/`, `source/`, the gradebook, other students' folders,
the home directory and the network are simply not there. The environment is cleared except
for what Python, JAX and matplotlib need, and the sandbox dies with the grader. The sandbox
holds no capabilities (`--cap-drop ALL`): when the grader runs as root, bwrap would otherwise
keep them all inside, and a worker could remount the read-only binds (the engine, the
environment) writable.

Where bubblewrap cannot start (no user namespaces, not installed), the engine falls back to
the limited subprocess alone and says so (`isolation: "rlimits"` in every report).
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

ISOLATION_LEVELS = ("bwrap", "rlimits")


def _engine_code() -> Path:
    return Path(__file__).resolve().parents[1]


def readable_paths() -> list[str]:
    """Host paths a worker needs to read: the interpreter, the environment, the engine."""
    paths = {sys.base_prefix, sys.prefix, str(_engine_code())}
    return sorted(path for path in paths if os.path.exists(path))


def bwrap_command(command: list[str], *, environment: dict, writable=(), readable=(),
                  chdir: str | None = None) -> list[str]:
    """`command` wrapped in a bubblewrap sandbox (see the module docstring)."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            argv += ["--ro-bind", f"/{name}", f"/{name}"]
    if os.path.exists("/etc/ld.so.cache"):
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    argv += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for path in [*readable_paths(), *readable]:
        argv += ["--ro-bind", str(path), str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for key, value in environment.items():
        argv += ["--setenv", key, value]
    if chdir:
        argv += ["--chdir", chdir]
    return argv + ["--"] + command


@functools.lru_cache(maxsize=1)
def bwrap_status() -> tuple[bool, str]:
    """Whether bubblewrap can start a sandbox here, and why not if it cannot."""
    if shutil.which("bwrap") is None:
        return False, "bubblewrap (bwrap) is not installed"
    probe = bwrap_command([sys.executable, "-I", "-c", "pass"], environment={})
    try:
        result = subprocess.run(probe, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bwrap could not start: {error}"
    if result.returncode != 0:
        reason = (result.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"bwrap could not start a sandbox ({reason}); user namespaces may be disabled"
    return True, "bubblewrap sandbox: private mounts, PID and network namespaces"


def choose_isolation(requested: str | None = None) -> tuple[str, str]:
    """The isolation level in force, and why: `requested` ("bwrap", "rlimits" or None/"auto",
    default from $RLCOURSE_ISOLATION) is honoured when possible; bwrap is preferred."""
    requested = requested or os.environ.get("RLCOURSE_ISOLATION") or "auto"
    if requested not in (*ISOLATION_LEVELS, "auto"):
        raise ValueError(f"isolation must be bwrap, rlimits or auto, not {requested!r}")
    if requested == "rlimits":
        return "rlimits", "resource limits only (requested)"
    available, reason = bwrap_status()
    if available:
        return "bwrap", reason
    if requested == "bwrap":
        raise RuntimeError(f"bubblewrap isolation was requested but is not available: {reason}")
    return "rlimits", f"resource limits only: {reason}"
