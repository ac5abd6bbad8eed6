"""Landlock: a worker restricts itself, for good, before any student code runs.

Why: bubblewrap hides the course from a worker by giving it a private view of the file system.
Where bubblewrap cannot run, a worker would see everything its grader sees, and a grader running
as root cannot keep a worker out of the gradebook with file permissions. Landlock (Linux 5.13+)
lets any process, privileged or not, restrict itself and every process it later starts; nothing
can lift the restriction afterwards, whatever the user or capabilities. The worker allows itself
only the paths `sandbox.landlock_rules` lists (read-only: the Python installation, the
environment, the engine, /usr; read-write: its scratch directory) and calls `restrict`.

What the kernel's Landlock ABI version adds (all used when available):

1. opening, creating, removing and executing files beneath the allowed paths only;
2. renaming or linking across directories (REFER);
3. truncating (TRUNCATE);
4. TCP bind and connect: denied outright (no rule allows any port);
5. ioctl on devices (IOCTL_DEV): only on the few allowed devices such as /dev/null;
6. scopes: signals only to processes in the worker's own domain (not its parent, the template
   or the grader), and no connecting to abstract UNIX sockets created outside it.

Landlock does not cover (docs/threat-model.md): UDP and other non-TCP sockets, UNIX sockets that
have a path, metadata operations (stat, chmod, chown), and files opened before `restrict` (the
grader's socket and the output files stay usable: that is what the worker needs).

Layouts and constants follow the kernel's `include/uapi/linux/landlock.h` and
Documentation/userspace-api/landlock.rst; the three system calls have the same numbers on every
architecture Linux added them to after 5.13 (444, 445, 446).
"""
from __future__ import annotations

import ctypes
import functools
import os
import stat
import struct

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights (bit, first ABI): the kernel rejects a right it does not know.
EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13         # ABI 2
TRUNCATE = 1 << 14      # ABI 3
IOCTL_DEV = 1 << 15     # ABI 5

# Network access rights (ABI 4) and scopes (ABI 6).
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
"""Read and execute, for the installation, the environment and the engine."""
WRITE = (READ | WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
         | MAKE_SYM | REFER | TRUNCATE)
"""Everything but making device nodes, for the scratch directory."""
DEVICE = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV
"""For /dev/null and its kind: open for reading and writing (also with O_TRUNC), and ioctl."""
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on a file (rather than a directory) may carry."""


class LandlockError(OSError):
    """Landlock is available but the restriction could not be put in place."""


@functools.lru_cache(maxsize=1)
def _syscall():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def _call(number: int, *args) -> int:
    result = _syscall().syscall(ctypes.c_long(number), *args)
    if result < 0:
        error = ctypes.get_errno()
        raise LandlockError(error, os.strerror(error))
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled at boot."""
    try:
        return _call(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (LandlockError, AttributeError):
        return 0


def status() -> tuple[int, str]:
    """(ABI version, a sentence saying what it restricts) for `rlcourse doctor` and logs."""
    abi = abi_version()
    if abi < 1:
        return 0, "Landlock is not available (kernel older than 5.13 or not enabled at boot)"
    covers = ["files"]
    if abi >= 4:
        covers.append("TCP")
    if abi >= 6:
        covers.append("signals and abstract UNIX sockets")
    return abi, f"Landlock ABI {abi}: restricts {', '.join(covers)}"


def handled_rights(abi: int) -> tuple[int, int, int]:
    """(filesystem, network, scope) rights a ruleset of this ABI version handles: all it knows."""
    filesystem = (1 << 13) - 1
    for version, right in ((2, REFER), (3, TRUNCATE), (5, IOCTL_DEV)):
        if abi >= version:
            filesystem |= right
    network = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scopes = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    return filesystem, network, scopes


def restrict(rules: list[tuple[str, int]], *, abi: int | None = None) -> int:
    """Restrict this thread (a worker is single-threaded here) and its future children to
    `rules`, pairs (path, allowed rights); paths that do not exist are skipped. Returns the ABI
    version applied, 0 if Landlock is unavailable (nothing is restricted then). Raises
    LandlockError when Landlock is there but refuses: the caller must not run student code."""
    abi = abi_version() if abi is None else abi
    if abi < 1:
        return 0
    filesystem, network, scopes = handled_rights(abi)
    fields = [filesystem] + ([network] if abi >= 4 else []) + ([scopes] if abi >= 6 else [])
    attr = ctypes.create_string_buffer(struct.pack(f"={len(fields)}Q", *fields))
    ruleset = _call(_CREATE_RULESET, attr, ctypes.c_size_t(len(attr.raw)), ctypes.c_uint32(0))
    try:
        for path, allowed in rules:
            _allow(ruleset, path, allowed & filesystem)
        # Required to restrict oneself without CAP_SYS_ADMIN, and wanted anyway: no set-uid
        # program can give a worker's child back what the worker gave up.
        if _syscall().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            error = ctypes.get_errno()
            raise LandlockError(error, f"PR_SET_NO_NEW_PRIVS: {os.strerror(error)}")
        _call(_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return abi


def _allow(ruleset: int, path: str, allowed: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            allowed &= _FILE_RIGHTS
        # struct landlock_path_beneath_attr { __u64 allowed_access; __s32 parent_fd; } (packed)
        attr = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
        try:
            _call(_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), attr,
                  ctypes.c_uint32(0))
        except LandlockError as error:
            raise LandlockError(error.errno, f"allowing {path}: {error.strerror}") from None
    finally:
        os.close(fd)
