"""What a worker may see: a bubblewrap sandbox, or plain resource limits where bwrap cannot run.

Under bubblewrap (`bwrap`) a worker starts in fresh user, mount, PID, network, IPC and UTS
namespaces and sees only:

* the system's `/usr` (and the `/lib`, `/bin` links into it) and the dynamic linker's cache;
* the Python installation, the environment (`sys.prefix`) and the worker's own code, read-only;
* its scratch directory, writable, which holds nothing but its own output files;
* an empty `/tmp`, `/proc` of its own PID namespace, a minimal `/dev`.

Not JAX's compilation cache either: a student's worker gets its entries from the grader by key
(rlcourse.worker.compile_cache); only the trusted run that warms it has the folder, writable.

Not the course: `graders/`, `solutions/`, `source/`, the gradebook, other students' folders,
the home directory and the network are simply not there. The environment is cleared except
for what Python, JAX and matplotlib need, and the sandbox dies with the grader. The sandbox
holds no capabilities (`--cap-drop ALL`): when the grader runs as root, bwrap would otherwise
keep them all inside, and a worker could remount the read-only binds (the engine, the
environment) writable.

Where bubblewrap cannot start (no user namespaces, not installed), the engine falls back to
the limited subprocess alone and says so (`isolation: "rlimits"` in every report).

Under either level each worker then confines itself before student code runs
(rlcourse.worker.confine): a pids cgroup, Landlock with `landlock_rules` (the same view as the
sandbox's, enforced by the kernel instead of by mounts), no capabilities. `confinement` says
which of these this machine provides.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rlcourse.worker import landlock

ISOLATION_LEVELS = ("bwrap", "rlimits")
SYSTEM_READABLE = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache",
                   "/proc/self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat")
"""Read-only for a worker under Landlock: what bubblewrap binds, plus the worker's own /proc
entry and the few system-wide /proc files numerical libraries read (not other processes')."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
"""Devices a worker may open (JAX's random_device reads /dev/urandom)."""


def _engine_code() -> Path:
    return Path(__file__).resolve().parents[1]


def readable_paths() -> list[str]:
    """Host paths a worker needs to read: the interpreter, the environment, the engine."""
    paths = {sys.base_prefix, sys.prefix, str(_engine_code())}
    return sorted(path for path in paths if os.path.exists(path))


def readable_by_workers(path) -> bool:
    """Whether a worker may read `path` at every level (what bubblewrap binds and Landlock lets
    it read, without its own compilation cache or scratch): a place for nothing of the staff's,
    such as the grading service's socket and key."""
    target = os.path.realpath(path)
    shared = [*SYSTEM_READABLE, "/etc/fonts", *readable_paths()]
    return any(target == place or target.startswith(place.rstrip("/") + "/")
               for place in (os.path.realpath(entry) for entry in shared))


def landlock_rules(scratch: str, *, readable=(), writable=()) -> list[tuple[str, int]]:
    """The paths a worker may use under Landlock, with their rights: read and execute the system,
    the Python installation, the environment, the engine and `readable`; read and write only its
    scratch directory and `writable` (the compilation cache, for the trusted run that warms it);
    a few devices. `/proc/self` is resolved when the rules are made, so it must be called in the
    worker itself."""
    rules = [(path, landlock.READ) for path in (*SYSTEM_READABLE, *readable_paths(), *readable)]
    rules += [(path, landlock.DEVICE) for path in DEVICES]
    rules += [(str(path), landlock.WRITE) for path in (scratch, *writable)]
    return rules


def bwrap_command(command: list[str], *, environment: dict, writable=(), readable=(),
                  private=(), chdir: str | None = None, tmp_bytes: int | None = None,
                  capabilities=()) -> list[str]:
    """`command` wrapped in a bubblewrap sandbox (see the module docstring); `tmp_bytes` caps
    the size of its private /tmp and of each `private` folder (a tmpfs of its own, mode 0700,
    gone with the sandbox). `capabilities` are kept inside the sandbox's user namespace (the
    fork template's children need CAP_SYS_ADMIN for their private mounts and drop it, with
    every other capability, before student code)."""
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--cap-drop", "ALL"]
    for capability in capabilities:
        argv += ["--cap-add", capability]
    argv += ["--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
        elif os.path.isdir(f"/{name}"):
            argv += ["--ro-bind", f"/{name}", f"/{name}"]
    if os.path.exists("/etc/ld.so.cache"):
        argv += ["--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    if os.path.isdir("/etc/fonts"):  # matplotlib lists the system's fonts with fc-list
        argv += ["--ro-bind", "/etc/fonts", "/etc/fonts"]
    if tmp_bytes and _bwrap_knows("--size"):  # bubblewrap 0.7 and later
        argv += ["--size", str(tmp_bytes)]
    argv += ["--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for path in [*readable_paths(), *readable]:
        argv += ["--ro-bind", str(path), str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for path in private:
        if tmp_bytes and _bwrap_knows("--size"):
            argv += ["--size", str(tmp_bytes)]
        argv += ["--perms", "0700", "--tmpfs", str(path)]
    for key, value in environment.items():
        argv += ["--setenv", key, value]
    if chdir:
        argv += ["--chdir", chdir]
    return argv + ["--"] + command


@functools.lru_cache(maxsize=None)
def _bwrap_knows(option: str) -> bool:
    try:
        usage = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return option in usage.stdout + usage.stderr


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


@functools.lru_cache(maxsize=1)
def confinement() -> dict:
    """What confines a fork-template worker on this machine besides its isolation level, as
    `rlcourse doctor` states it: the Landlock ABI version it applies (0: none) and whether it
    gets its own pids cgroup. (Every worker also gives up its capabilities.)"""
    from rlcourse.worker.cgroup import pids_parent

    return {"landlock": landlock.abi_version(), "pids_cgroup": pids_parent() is not None}
