"""A pids cgroup per worker: a hard cap on its processes, and a way to kill every one of them.

Why: a worker is killed with its process group, and a child that calls setsid() leaves the
group and would outlive the kill; RLIMIT_NPROC does not bind root, and counts all of a user's
processes rather than the worker's. A cgroup holds every process the worker ever starts (a
process cannot leave it without write access to the cgroup file system, which Landlock and the
sandbox deny), the kernel refuses forks beyond `pids.max` (threads count too), and the grader
can list and kill its members whatever their session or parent.

The grader creates the cgroup and opens its `cgroup.procs` for writing; the worker writes "0"
to that descriptor before any student code runs (rlcourse.worker.confine.join_cgroup), which
works from inside a bubblewrap sandbox too, where the cgroup file system is not mounted.

Needs a writable pids hierarchy: cgroup v1's `pids` controller (often at /sys/fs/cgroup/pids,
writable by root), or a cgroup v2 directory of this process that delegates the pids controller.
Elsewhere `PidsCgroup.create` returns None and workers are killed by process group only.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from pathlib import Path

PREFIX = "rlcourse-worker-"
"""Per-worker cgroups are named rlcourse-worker-<grader pid>-<random>."""


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, file system type, super options) of each mounted cgroup hierarchy."""
    found = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[4], tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per hierarchy: {"pids": "/...", "": "/..." (v2)}."""
    paths = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                paths[controller] = path
    return paths


def controller_parent(controller: str) -> tuple[Path, str] | None:
    """(folder, "v1" | "v2"): the cgroup directory under which per-worker cgroups with
    `controller` ("pids", "memory") can be made, if any."""
    own = _own_paths()
    for mount, kind, options in _mounts():
        if kind == "cgroup" and controller in options and controller in own:
            folder, version = Path(mount) / own[controller].lstrip("/"), "v1"
        elif kind == "cgroup2" and "" in own:
            folder, version = Path(mount) / own[""].lstrip("/"), "v2"
            with contextlib.suppress(OSError):
                if controller not in (folder / "cgroup.subtree_control").read_text().split():
                    continue
        else:
            continue
        if os.access(folder, os.W_OK):
            return folder, version
    return None


def pids_parent() -> Path | None:
    """The cgroup directory under which per-worker pids cgroups can be made, if any."""
    found = controller_parent("pids")
    return found[0] if found else None


class PidsCgroup:
    """One worker's cgroup. `kill_all` then `remove` when the worker is done."""

    def __init__(self, path: Path):
        self.path = path

    @classmethod
    def create(cls, max_processes: int) -> PidsCgroup | None:
        parent = pids_parent()
        if parent is None:
            return None
        _remove_stale(parent)
        path = parent / f"{PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path)
        try:
            (path / "pids.max").write_text(str(max_processes))
        except OSError:
            group.remove()
            return None
        return group

    def open_procs(self) -> int:
        """A descriptor open for writing on cgroup.procs, for the worker to join with."""
        return os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)

    def members(self) -> list[int]:
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the cgroup, forks refused meanwhile; True once it is empty
        (killed processes leave it as soon as they exit, before they are reaped)."""
        with contextlib.suppress(OSError):
            (self.path / "pids.max").write_text("0")
        if (self.path / "cgroup.kill").exists():  # cgroup v2: the kernel kills them all at once
            with contextlib.suppress(OSError):
                (self.path / "cgroup.kill").write_text("1")
        deadline = time.monotonic() + timeout
        while True:
            members = self.members()
            if not members:
                return True
            if time.monotonic() > deadline:
                return False
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def remove(self) -> None:
        """Delete the (empty) cgroup; retried briefly while the last members finish exiting."""
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)


def _remove_stale(parent: Path) -> None:
    """Empty and delete the cgroups of graders that are gone (killed before they cleaned up)."""
    for path in parent.glob(f"{PREFIX}*"):
        owner = path.name[len(PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            group = PidsCgroup(path)
            group.kill_all(timeout=1.0)
            group.remove()


# --- memory ---------------------------------------------------------------------------------------
MEMORY_PREFIX = "rlcourse-memory-"


def memory_parent() -> tuple[Path, str] | None:
    """(folder, "v1" | "v2") under which per-worker memory cgroups can be made, if any."""
    return controller_parent("memory")


class MemoryCgroup:
    """A cap on the memory one worker's processes hold, enforced by the kernel: RAM, page cache,
    shared memory and memfd files included (RLIMIT_AS counts none of what a process does not
    map: `memfd_create` + `fallocate` held 1.5 GB past it). Past the cap, the kernel reclaims or
    kills a process of the group, never anything outside it.

    Under cgroup v2 a process is in one cgroup only, so the cap is set on the worker's own pids
    cgroup (`for_worker`); under v1 the memory hierarchy is separate: the grader makes a group
    there and moves the worker into it before any student code runs (the worker is then alone
    and waiting for its first request; every process it starts later is born inside)."""

    def __init__(self, path: Path, version: str, *, owned: bool):
        self.path = path
        self.version = version
        self._owned = owned

    @classmethod
    def for_worker(cls, limit_bytes: int, pids_group: PidsCgroup | None) -> MemoryCgroup | None:
        """A memory cap for the worker whose pids cgroup is `pids_group` (its members), or None
        where the machine has no writable memory controller."""
        if pids_group is None:
            return None
        found = memory_parent()
        if found is None:
            return None
        parent, version = found
        if version == "v2":
            group = cls(pids_group.path, "v2", owned=False)
            return group if group._set_limit(limit_bytes) else None
        _remove_stale_memory(parent)
        path = parent / f"{MEMORY_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path, "v1", owned=True)
        deadline = time.monotonic() + 2.0
        while not (members := pids_group.members()) and time.monotonic() < deadline:
            time.sleep(0.005)  # a forked worker joins its pids cgroup just after the fork
        if not (members and group._set_limit(limit_bytes) and group._adopt(members)):
            group.remove()
            return None
        return group

    def _set_limit(self, limit_bytes: int) -> bool:
        names = (("memory.max", "memory.swap.max") if self.version == "v2"
                 else ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))
        try:
            (self.path / names[0]).write_text(str(limit_bytes))
        except OSError:
            return False
        with contextlib.suppress(OSError):  # no swap beyond the cap, where swap is accounted
            (self.path / names[1]).write_text("0" if self.version == "v2" else str(limit_bytes))
        return True

    def _adopt(self, pids: list[int]) -> bool:
        try:
            for pid in pids:
                (self.path / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def peak_bytes(self) -> int | None:
        name = "memory.peak" if self.version == "v2" else "memory.max_usage_in_bytes"
        try:
            return int((self.path / name).read_text())
        except (OSError, ValueError):
            return None

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group for want of memory."""
        name = "memory.events" if self.version == "v2" else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip() != "0":
                    return True
        except OSError:
            pass
        return False

    def remove(self) -> None:
        """Kill what is left in a group this made, and delete it (v2: the pids cgroup owns it)."""
        if not self._owned:
            return
        group = PidsCgroup(self.path)
        group.kill_all(timeout=2.0)
        group.remove()


def _remove_stale_memory(parent: Path) -> None:
    for path in parent.glob(f"{MEMORY_PREFIX}*"):
        owner = path.name[len(MEMORY_PREFIX):].split("-")[0]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            MemoryCgroup(path, "v1", owned=True).remove()
