"""What a worker does to itself between fork (or exec) and the first line of student code.

Resource limits alone leave doors open, most of them wide for a worker that runs as root (the
usual case in CI containers, where the interpreter cannot start as `nobody`): root ignores
RLIMIT_NPROC, may raise its own limits again (CAP_SYS_RESOURCE), writes every root-owned file,
signals every process and opens any socket. `confine` closes them in this order, in a process
that is still single-threaded (Landlock binds only the calling thread and what it starts later):

1. `join_cgroup`: enter the pids cgroup the grader made for this worker (rlcourse.worker.cgroup):
   a hard cap on its processes and threads, and a way for the grader to kill every one of them,
   including children that left the process group with setsid().
2. `set_limits`: address space, CPU time, file size, open files, no core files.
2b. `private_mounts` (where the worker may mount: a root grader, or the bubblewrap template's
   user namespace): a mount namespace of its own in which every mount is read-only and its
   scratch directory is a fresh tmpfs of fixed size. Landlock decides what may be opened, but
   not what may be chmod-ed, chown-ed, touched or given xattrs: a worker running as uid 0
   (without capabilities, but the owner of every root-owned file, host device nodes bound
   into bubblewrap's /dev included) could change all of those. Read-only mounts refuse them
   (EROFS) whoever asks. The tmpfs makes the kernel enforce the disk quota (fallocate with
   FALLOC_FL_KEEP_SIZE and unlinked open files included), and it vanishes with the worker's
   last process: nothing a crashed worker wrote outlives it.
3. `leave_network`: a new, empty network namespace when the worker may create one (root): no
   UDP, no raw sockets, nothing Landlock's TCP rules leave open. Without the privilege to do so
   the worker keeps the host's network (Landlock still denies TCP).
4. Landlock (rlcourse.worker.landlock) with the rules of rlcourse.worker.sandbox.landlock_rules:
   files outside the allowed paths, TCP, signals and abstract sockets outside the worker.
5. `drop_bounding_set` and `clear_capabilities`: a root worker keeps uid 0 but loses every
   capability, so it can no longer raise its limits, mount, trace, load modules, change the
   clock or reboot (the bounding set goes before Landlock, which hides /proc/sys).

Under bubblewrap the sandbox already gives a private network and the template holds no
capabilities (`--cap-drop ALL`); repeating steps 3 and 5 costs nothing.

A step that the grader asked for and that fails (Landlock refusing, say) raises: the caller must
then exit without running any student code.
"""
from __future__ import annotations

import ctypes
import functools
import os
import resource
import struct

from rlcourse.worker import landlock

_CLONE_NEWNET = 0x40000000
_PR_CAPBSET_DROP = 24
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
UNPRIVILEGED = 65534
"""The uid and gid ("nobody") a worker takes when asked to (`unprivileged`)."""


class ConfinementError(RuntimeError):
    """A restriction the grader asked for could not be put in place."""


@functools.lru_cache(maxsize=1)
def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> ConfinementError:
    error = ctypes.get_errno()
    return ConfinementError(f"{what}: {os.strerror(error)}")


def confine(spec: dict) -> None:
    """Apply a worker's confinement, described by the grader in plain data:

    * `limits`: a dict of rlcourse.worker.limits.Limits fields;
    * `cgroup_fd`: a descriptor open on the worker's cgroup.procs, or None;
    * `network`: "leave" to enter a private network namespace where allowed, or None;
    * `landlock`: None, or the arguments of rlcourse.worker.sandbox.landlock_rules (`scratch`,
      `readable`, `writable`): then Landlock must be applied, or this raises;
    * `capabilities`: "drop" to give up every capability, or None (bwrap itself needs them);
    * `unprivileged`: become nobody (only where the interpreter can start as nobody);
    * `private_mounts`: None, or the arguments of `private_mounts` (`scratch`, `scratch_bytes`,
      `scratch_files`, `writable`, `hidden`): then they must be put in place, or this raises."""
    if spec.get("cgroup_fd") is not None:
        join_cgroup(spec["cgroup_fd"])
    set_limits(spec["limits"], unprivileged=spec.get("unprivileged", False))
    if spec.get("private_mounts") is not None:
        owner = UNPRIVILEGED if spec.get("unprivileged") else os.getuid()
        private_mounts(**spec["private_mounts"], owner=owner)
    if spec.get("network") == "leave":
        leave_network()
    if spec.get("capabilities") == "drop":
        drop_bounding_set()  # reads /proc/sys, which Landlock then hides
    if spec.get("landlock") is not None:
        apply_landlock(**spec["landlock"])
    if spec.get("unprivileged"):
        become_unprivileged()  # needs CAP_SETUID: before the capabilities go
    if spec.get("capabilities") == "drop":
        clear_capabilities()


def apply_landlock(*, scratch: str, readable=(), writable=()) -> int:
    """Landlock with the worker's rules; raises unless it is in force afterwards."""
    from rlcourse.worker.sandbox import landlock_rules

    try:
        applied = landlock.restrict(landlock_rules(scratch, readable=readable, writable=writable))
    except OSError as error:
        raise ConfinementError(f"Landlock refused the worker's rules: {error}") from None
    if applied < 1:
        raise ConfinementError("Landlock was expected but the kernel does not provide it")
    return applied


def join_cgroup(fd: int) -> None:
    """Move this process into the cgroup whose `cgroup.procs` the grader opened for it ("0" means
    the writer itself); every process it starts from now on is born inside."""
    try:
        os.write(fd, b"0")
    except OSError as error:
        raise ConfinementError(f"could not join the worker's cgroup: {error}") from None
    finally:
        os.close(fd)


def set_limits(limits: dict, *, unprivileged: bool = False) -> None:
    """Resource limits, soft and hard alike (a worker without CAP_SYS_RESOURCE cannot raise
    them again); RLIMIT_NPROC only for a worker that becomes its own user (it counts every
    process of the user, and root ignores it)."""
    for kind, key in ((resource.RLIMIT_AS, "memory_bytes"), (resource.RLIMIT_CPU, "cpu_seconds"),
                      (resource.RLIMIT_FSIZE, "file_bytes"), (resource.RLIMIT_NOFILE, "open_files")):
        resource.setrlimit(kind, (limits[key], limits[key]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if unprivileged:
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))


_CLONE_NEWNS = 0x00020000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REMOUNT, _MS_BIND = 1, 2, 4, 8, 32, 4096
_MS_REC, _MS_PRIVATE = 1 << 14, 1 << 18
_SYS_MOUNT_SETATTR = 442
_AT_FDCWD, _AT_RECURSIVE = -100, 0x8000
_MOUNT_ATTR_RDONLY = 0x1


def private_mounts(*, scratch: str, scratch_bytes: int, scratch_files: int, writable=(),
                   hidden=(), owner: int = 0) -> None:
    """Enter a mount namespace of this worker's own, make every mount in it read-only, and mount
    a tmpfs of `scratch_bytes` and `scratch_files` inodes on `scratch` (mode 0700, owned by
    `owner`); `writable` paths (the compilation cache of a trusted warm-up run) stay writable;
    each existing folder of `hidden` (the course's `.rlcourse-cache`, with the grading service's
    socket and key) is covered by an empty, read-only tmpfs, so that nothing in it can be found,
    read or connected to. Needs CAP_SYS_ADMIN (in the worker's user namespace); raises
    ConfinementError otherwise. Read-only is applied with mount_setattr(AT_RECURSIVE) (Linux
    5.12), so no mount below / is missed."""
    libc = _libc()
    if libc.unshare(_CLONE_NEWNS) != 0:
        raise _fail("entering a private mount namespace")
    if libc.mount(None, b"/", None, ctypes.c_ulong(_MS_REC | _MS_PRIVATE), None) != 0:
        raise _fail("making the worker's mounts private")
    attr = ctypes.create_string_buffer(struct.pack("=QQQQ", _MOUNT_ATTR_RDONLY, 0, 0, 0))
    libc.syscall.restype = ctypes.c_long
    if libc.syscall(ctypes.c_long(_SYS_MOUNT_SETATTR), ctypes.c_int(_AT_FDCWD), b"/",
                    ctypes.c_uint(_AT_RECURSIVE), attr, ctypes.c_size_t(len(attr.raw))) != 0:
        raise _fail("making every mount read-only")
    options = f"size={scratch_bytes},nr_inodes={scratch_files},mode=0700,uid={owner},gid={owner}"
    if libc.mount(b"tmpfs", os.fsencode(scratch), b"tmpfs", ctypes.c_ulong(_MS_NOSUID | _MS_NODEV),
                  options.encode()) != 0:
        raise _fail(f"mounting the scratch tmpfs on {scratch}")
    for path in writable:
        target = os.fsencode(path)
        if (libc.mount(target, target, None, ctypes.c_ulong(_MS_BIND | _MS_REC), None) != 0
                or libc.mount(None, target, None, ctypes.c_ulong(_MS_BIND | _MS_REMOUNT), None) != 0):
            raise _fail(f"keeping {path} writable")
    for path in hidden:
        if os.path.isdir(path) and libc.mount(
                b"rlcourse-hidden", os.fsencode(path), b"tmpfs",
                ctypes.c_ulong(_MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC),
                b"size=4k,nr_inodes=1,mode=0555") != 0:
            raise _fail(f"hiding {path}")


def can_mount() -> bool:
    """Whether this process may create a private mount namespace (CAP_SYS_ADMIN is effective)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << 21))
    return False


def leave_network() -> bool:
    """Enter a new network namespace (only a loopback, down) if this process may; True if so."""
    if _libc().unshare(_CLONE_NEWNET) == 0:
        return True
    return False


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_bounding_set() -> None:
    """Empty the capability bounding set, so that no program this process executes (as root or
    set-uid) is granted a capability again. Needs CAP_SETPCAP; a process without capabilities
    has nothing to drop."""
    if not has_capabilities():
        return
    with open("/proc/sys/kernel/cap_last_cap") as handle:
        last = int(handle.read())
    for capability in range(last + 1):
        if _libc().prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise _fail(f"dropping capability {capability} from the bounding set")


def clear_capabilities() -> None:
    """Give up the ambient, effective, permitted and inheritable capabilities (always allowed)."""
    libc = _libc()
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    nothing = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), nothing) != 0:
        raise _fail("dropping capabilities")


def has_capabilities() -> bool:
    """Whether this process holds any effective capability (root usually holds them all)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16) != 0
    return False


def become_unprivileged() -> None:
    """Become user and group nobody (only when the interpreter can start as nobody)."""
    os.setgroups([])
    os.setgid(UNPRIVILEGED)
    os.setuid(UNPRIVILEGED)
