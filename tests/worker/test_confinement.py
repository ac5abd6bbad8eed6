"""A worker confines itself before student code runs (rlcourse.worker.confine): Landlock keeps it
to its scratch directory, away from TCP and from other processes' signals; it holds no
capability, so it can neither raise its limits nor remount anything; its pids cgroup caps its
processes and lets the grader kill every one of them; its files are capped in number and size.
Where the machine lacks a mechanism the test says so and is skipped."""
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlcourse.worker import confine, landlock
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.sandbox import bwrap_status, confinement

pytestmark = [pytest.mark.slow, pytest.mark.serial]

LIMITS = Limits(call_seconds=10, cell_seconds=10, memory_bytes=2 << 30, file_bytes=1 << 20)
HAS_BWRAP = bwrap_status()[0]
ABI = landlock.abi_version()
needs_landlock = pytest.mark.skipif(ABI < 1, reason="Landlock is not available on this kernel")
needs_cgroup = pytest.mark.skipif(not confinement()["pids_cgroup"], reason="no writable pids cgroup here")
needs_bwrap = pytest.mark.skipif(not HAS_BWRAP, reason=f"bubblewrap unavailable: {bwrap_status()[1]}")
LANDLOCKED = [("fork", "rlimits"), ("spawn", "rlimits")] + ([("fork", "bwrap")] if HAS_BWRAP else [])
"""Launchers whose workers apply Landlock (spawn under bwrap relies on the sandbox alone)."""
ALL = LANDLOCKED + ([("spawn", "bwrap")] if HAS_BWRAP else [])


@contextlib.contextmanager
def worker_for(strategy, isolation, limits=LIMITS, **options):
    launcher = make_launcher(WorkerOptions("numpy", limits, isolation=isolation, **options), strategy=strategy)
    worker = None
    try:
        worker = launcher.launch()
        yield worker
    finally:
        if worker is not None:
            worker.kill()
        launcher.close()


def run(worker, source):
    return worker.request("run_cell", {"index": 0, "source": source}, timeout=10)


def call(worker, function, *args):
    return worker.request("call", {"function": function, "args": list(args), "kwargs": {}}, timeout=10)["value"]


ATTEMPT = """
import os, socket
def attempt(what, *args):
    try:
        result = ATTEMPTS[what](*args)
        return "allowed" if result is None else f"allowed: {result}"
    except OSError as error:
        return f"denied: {type(error).__name__}"

def _write(path):
    with open(path, "w") as handle:
        handle.write("written by a worker")

def _read(path):
    with open(path) as handle:
        handle.read()

ATTEMPTS = {
    "write": _write,
    "read": _read,
    "connect": lambda port: socket.create_connection(("127.0.0.1", port), timeout=1).close(),
    "signal": lambda pid: os.kill(pid, 0),
    "status": lambda: [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0],
}
"""


def pids_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def wait_until_running(marker: str, timeout: float = 10.0) -> list[int]:
    """The processes with `marker` on their command line, once there are any: a child forked
    just before its parent answered may not have reached its exec yet (the serial suite, a
    loaded machine, saw it miss)."""
    deadline = time.monotonic() + timeout
    while not pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids_with(marker)


def wait_until_gone(marker: str, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while pids_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = pids_with(marker)
    for pid in left:  # ours: clean up before failing
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return left


@needs_landlock
@pytest.mark.parametrize("strategy,isolation", LANDLOCKED, ids="-".join)
def test_landlock_keeps_a_worker_to_its_own_scratch_directory(strategy, isolation, tmp_path):
    secret = tmp_path / "hidden.py"
    secret.write_text("hidden")
    with worker_for(strategy, isolation) as worker:
        run(worker, ATTEMPT)
        assert call(worker, "attempt", "write", str(worker.scratch / "mine.txt")) == "allowed"
        # beside it: another worker's scratch directory in the same run (bwrap binds the run's
        # folder writable), or the grader's temporary directory
        beside = worker.scratch.parent / f"{worker.scratch.name}-beside.txt"
        assert call(worker, "attempt", "write", str(beside)).startswith("denied")
        assert not beside.exists()
        assert call(worker, "attempt", "read", str(secret)).startswith("denied")
        assert call(worker, "attempt", "write", str(Path(confine.__file__).with_name("planted.txt"))) \
            .startswith("denied")
    assert not Path(confine.__file__).with_name("planted.txt").exists()


@needs_landlock
def test_without_landlock_the_fallback_worker_reads_wherever_its_user_may(tmp_path):
    """The difference Landlock makes (rlcourse doctor reports which case holds): reading. Writing
    outside scratch is refused by the read-only private mounts where the worker has them, and
    allowed (its user permitting) where it has not."""
    secret = tmp_path / "hidden.py"
    secret.write_text("hidden")
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, isolation="rlimits", landlock=False), strategy="fork")
    assert launcher.confinement["landlock"] == 0
    try:
        worker = launcher.launch()
        run(worker, ATTEMPT)
        assert call(worker, "attempt", "read", str(secret)) == "allowed"
        beside = worker.scratch.parent / f"{worker.scratch.name}-beside.txt"
        outcome = call(worker, "attempt", "write", str(beside))
        if launcher.confinement["private_mounts"]:
            assert outcome.startswith("denied") and not beside.exists()
        else:
            assert outcome == "allowed"
            beside.unlink()
        worker.kill()
    finally:
        launcher.close()


@pytest.mark.skipif(ABI < 6, reason="Landlock's signal scope needs ABI 6")
@pytest.mark.parametrize("strategy,isolation", LANDLOCKED, ids="-".join)
def test_a_worker_cannot_signal_its_parent_or_the_grader(strategy, isolation):
    with worker_for(strategy, isolation) as worker:
        run(worker, ATTEMPT)
        run(worker, "def parent_signal():\n    return attempt('signal', os.getppid())")
        assert call(worker, "parent_signal").startswith("denied")
        if isolation == "rlimits":  # under bwrap the grader is not even in the PID namespace
            assert call(worker, "attempt", "signal", os.getpid()).startswith("denied")


@pytest.mark.skipif(not (HAS_BWRAP or ABI >= 4), reason="neither bubblewrap nor Landlock ABI 4 here")
@pytest.mark.parametrize("strategy,isolation", [case for case in ALL if case[1] == "bwrap" or ABI >= 4],
                         ids="-".join)
def test_no_tcp_connection_leaves_a_worker(strategy, isolation):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    try:
        with worker_for(strategy, isolation) as worker:
            run(worker, ATTEMPT)
            assert call(worker, "attempt", "connect", port).startswith("denied")
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


@pytest.mark.parametrize("strategy,isolation", ALL, ids="-".join)
def test_a_worker_holds_no_capability_so_it_cannot_raise_its_limits_or_remount(strategy, isolation):
    with worker_for(strategy, isolation) as worker:
        run(worker, ATTEMPT + "\nimport ctypes, resource\n"
                    "def raise_memory_limit():\n"
                    "    try:\n"
                    "        resource.setrlimit(resource.RLIMIT_AS, (-1, -1))\n"
                    "        return 'raised'\n"
                    "    except (ValueError, OSError):\n"
                    "        return 'refused'\n"
                    "def remount(path):\n"
                    "    return ctypes.CDLL(None, use_errno=True).mount(None, path.encode(), None, 32 | 4096, None)\n")
        assert int(call(worker, "attempt", "status").split(": ")[1], 16) == 0
        assert call(worker, "raise_memory_limit") == "refused"
        assert call(worker, "remount", str(Path(confine.__file__).parent)) == -1


FORK_BOMB = """
import os, time
def bomb(marker):
    started, children = time.monotonic(), 0
    while time.monotonic() - started < 3 and children < 200:
        try:
            pid = os.fork()
        except OSError:
            break
        if pid == 0:
            try:
                os.setsid()  # out of the worker's process group
                os.execv("/bin/sleep", ["sleep", marker])
            finally:
                os._exit(0)
        children += 1
    return children
"""


@needs_cgroup
@pytest.mark.parametrize("strategy,isolation", ALL, ids="-".join)
def test_the_pids_cgroup_caps_a_fork_bomb_and_kills_children_that_left_the_group(strategy, isolation):
    marker = f"3598.{os.getpid() % 1000}{len(strategy)}{len(isolation)}"
    with worker_for(strategy, isolation, Limits(**{**LIMITS.__dict__, "processes": 24})) as worker:
        run(worker, FORK_BOMB)
        children = call(worker, "bomb", marker)
        assert 0 < children < 24
        assert wait_until_running(marker)  # they are running, in sessions of their own
    assert wait_until_gone(marker, timeout=2.0) == []


@needs_bwrap
@pytest.mark.parametrize("strategy", ["spawn", "fork"])
def test_without_a_cgroup_the_sandbox_still_ends_every_process_it_holds(strategy):
    """bubblewrap's PID namespace and --die-with-parent: a child that left the worker's process
    group dies with the sandbox (spawn: the worker's own; fork: the run's, at its end)."""
    marker = f"3597.{os.getpid() % 1000}{len(strategy)}"
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, isolation="bwrap", pids_cgroup=False),
                             strategy=strategy)
    assert launcher.confinement["pids_cgroup"] is False
    try:
        worker = launcher.launch()
        run(worker, FORK_BOMB.replace("children < 200", "children < 3"))
        assert call(worker, "bomb", marker) == 3 and wait_until_running(marker)
        worker.kill()
    finally:
        launcher.close()
    assert wait_until_gone(marker) == []


@pytest.mark.skipif(not (HAS_BWRAP and os.geteuid() == 0), reason="a fact about bubblewrap run by root")
def test_rlimit_nproc_does_not_bind_a_root_grader_s_sandbox_even_as_nobody():
    """Why workers need a pids cgroup: bwrap maps the sandbox's uid (0, or 65534 with --uid) to
    root outside, and the kernel exempts root from RLIMIT_NPROC."""
    probe = ("import os, resource\nresource.setrlimit(resource.RLIMIT_NPROC, (4, 4))\nforked = 0\n"
             "for _ in range(8):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n"
             "    forked += 1\nprint(forked)")
    command = ["bwrap", "--unshare-all", "--uid", "65534", "--gid", "65534", "--die-with-parent",
               "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", sys.executable, "-I", "-c", probe]
    assert subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip() == "8"


@pytest.mark.parametrize("strategy,isolation", [("fork", "rlimits")] + ([("fork", "bwrap")] if HAS_BWRAP else []),
                         ids="-".join)
def test_a_worker_that_fills_its_scratch_with_files_is_stopped(strategy, isolation):
    limits = Limits(**{**LIMITS.__dict__, "scratch_bytes": 4 << 20, "scratch_files": 100})
    with worker_for(strategy, isolation, limits) as worker:
        run(worker, "def fill():\n    for n in range(1000):\n"
                    "        with open(f'file{n}.bin', 'wb') as handle:\n"
                    "            handle.write(b'x' * 100_000)\n    return n")
        with pytest.raises(WorkerError) as stopped:
            call(worker, "fill")
        if _has_private_mounts(isolation):
            # the kernel refuses the write: its tmpfs is full (of blocks or of inodes)
            assert stopped.value.kind == "raised" and "No space left on device" in str(stopped.value)
            assert worker.alive
        else:  # the grader measured it and stopped it
            assert stopped.value.kind == "worker_crashed" and "4 MB or 100 files" in str(stopped.value)
            assert not worker.alive


def _has_private_mounts(isolation):
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, isolation=isolation), strategy="spawn")
    launcher.close()
    return launcher.confinement["private_mounts"]


def test_a_worker_that_expects_landlock_and_cannot_have_it_refuses_to_start(monkeypatch, tmp_path):
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    with pytest.raises(confine.ConfinementError, match="Landlock was expected"):
        confine.apply_landlock(scratch=str(tmp_path))


def test_without_landlock_nothing_is_restricted_and_doctor_says_so(monkeypatch):
    assert landlock.restrict([("/", landlock.READ)], abi=0) == 0
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    assert landlock.status() == (0, "Landlock is not available (kernel older than 5.13 or not enabled at boot)")


@needs_landlock
def test_doctor_reports_landlock_and_the_pids_cgroup():
    rlcourse = str(Path(sys.executable).with_name("rlcourse"))
    report = subprocess.run([rlcourse, "doctor", "--isolation", "rlimits"], capture_output=True, text=True,
                            check=True).stdout
    assert f"Landlock ABI {ABI}" in report
    assert ("pids cgroup: yes" if confinement()["pids_cgroup"] else "pids cgroup: no") in report


METADATA = """
import os
def change_metadata(path, harmless):
    # harmless: the same mode, owner and times again (shared files such as /dev/null must never
    # be damaged, even where the defence is missing); a successful call still moves st_ctime.
    outcome = {}
    try:
        info = os.stat(path)
    except OSError as error:
        return {"stat": f"denied: {error.strerror}"}
    mode, times = (info.st_mode & 0o7777, (info.st_atime_ns, info.st_mtime_ns)) if harmless else (0, (0, 0))
    for what, change in (("chmod", lambda: os.chmod(path, mode)),
                         ("chown", lambda: os.chown(path, info.st_uid, info.st_gid)),
                         ("utime", lambda: os.utime(path, ns=times)),
                         ("setxattr", lambda: os.setxattr(path, "user.rlcourse", b"planted"))):
        try:
            change()
            outcome[what] = "allowed"
        except OSError as error:
            outcome[what] = f"denied: {error.strerror}"
    return outcome
"""


def metadata(path):
    info = os.lstat(path)
    return info.st_mode, info.st_uid, info.st_gid, info.st_mtime_ns, info.st_ctime_ns


@pytest.mark.parametrize("strategy,isolation", LANDLOCKED, ids="-".join)
def test_no_metadata_outside_scratch_can_be_changed(strategy, isolation, tmp_path):
    """chmod, chown, utime and setxattr: Landlock does not govern them, and a worker that runs
    as uid 0 without capabilities still owns every root-owned file, host device nodes in
    bubblewrap's /dev included. Its private mounts are read-only outside its scratch tmpfs."""
    course_file = tmp_path / "gradebook.db"
    course_file.write_text("grades")
    with worker_for(strategy, isolation) as worker:
        targets = [str(course_file), str(worker.scratch.parent), confine.__file__, "/dev/null"]
        before = {path: metadata(path) for path in targets}
        run(worker, METADATA)
        outcomes = {path: call(worker, "change_metadata", path, path != str(course_file)) for path in targets}
        assert call(worker, "change_metadata", str(worker.scratch), False)["chmod"] == "allowed"  # its own
        after = {path: metadata(path) for path in targets}
        planted = [path for path in targets[:3] if "user.rlcourse" in os.listxattr(path)]
    for path in planted:
        os.removexattr(path, "user.rlcourse")
    if strategy == "spawn":  # the spawn launcher's scratch folders are made in the shared /tmp,
        before[targets[1]], after[targets[1]] = before[targets[1]][:3], after[targets[1]][:3]  # whose times move
    assert after == before and not planted
    for path, outcome in outcomes.items():
        if path != str(course_file) or isolation != "bwrap":  # under bwrap it is simply not there
            assert all(result.startswith("denied") for result in outcome.values()), (path, outcome)


FALLOCATE = """
import ctypes, os
def hold_unlinked_allocations(count, each):
    libc = ctypes.CDLL(None, use_errno=True)
    held, allocated = [], 0
    for n in range(count):
        fd = os.open(f"hole{n}", os.O_RDWR | os.O_CREAT, 0o600)
        os.unlink(f"hole{n}")
        held.append(fd)
        # FALLOC_FL_KEEP_SIZE: blocks are allocated, st_size stays 0, RLIMIT_FSIZE never binds
        if libc.fallocate(fd, 1, ctypes.c_long(0), ctypes.c_long(each)) != 0:
            return allocated, os.strerror(ctypes.get_errno())
        allocated += each
    return allocated, "none"
"""


@pytest.mark.parametrize("strategy,isolation", ALL, ids="-".join)
def test_the_kernel_caps_a_worker_s_disk_even_for_unlinked_fallocated_files(strategy, isolation):
    limits = Limits(**{**LIMITS.__dict__, "scratch_bytes": 16 << 20})
    launcher = make_launcher(WorkerOptions("numpy", limits, isolation=isolation), strategy=strategy)
    if not launcher.confinement["private_mounts"] and not (strategy == "spawn" and isolation == "bwrap"):
        launcher.close()
        pytest.skip("workers cannot have a private tmpfs here (the grader lacks CAP_SYS_ADMIN)")
    worker = launcher.launch()
    try:
        run(worker, FALLOCATE)
        # each below RLIMIT_FSIZE (1 MB here), which bounds each fallocate, not their sum
        allocated, error = call(worker, "hold_unlinked_allocations", 40, 512 << 10)
        assert allocated <= 16 << 20 and error == os.strerror(28)  # ENOSPC
        assert worker.alive
    finally:
        worker.kill()
        launcher.close()


def test_the_fallback_without_its_floor_refuses_unless_the_instructor_allows_it(monkeypatch):
    """No private mounts and no unprivileged user: a worker would own the grader's files."""
    from rlcourse.worker import privileges

    monkeypatch.setattr(privileges.confine, "can_mount", lambda: False)
    monkeypatch.setattr(privileges, "drops_privileges", lambda isolation: False)
    monkeypatch.delenv(privileges.ALLOW_UNCONFINED, raising=False)
    with pytest.raises(privileges.NoFloor, match="RLCOURSE_ALLOW_UNCONFINED=1"):
        make_launcher(WorkerOptions("numpy", LIMITS, isolation="rlimits"), strategy="spawn")
    monkeypatch.setenv(privileges.ALLOW_UNCONFINED, "1")
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, isolation="rlimits"), strategy="spawn")
    assert launcher.confinement["private_mounts"] is False
    launcher.close()


@pytest.mark.parametrize("strategy", ["fork", "spawn"])
def test_private_mounts_cover_a_hidden_folder_with_an_empty_one(strategy, tmp_path):
    """The course's `.rlcourse-cache` (WorkerOptions.hidden) holds the grading service's socket
    and key: in a worker with private mounts it is an empty, read-only folder, so there is
    nothing to list, read or connect to, whatever Landlock governs (issue 29)."""
    if not _has_private_mounts("rlimits"):
        pytest.skip("workers have no private mounts here")
    hidden = tmp_path / ".rlcourse-cache"
    (hidden / "service").mkdir(parents=True)
    (hidden / "service" / "grade.sock.key").write_text("the service's key")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(hidden / "service" / "grade.sock"))
    listener.listen()
    try:
        with worker_for(strategy, "rlimits", hidden=(str(hidden),)) as worker:
            run(worker, ATTEMPT + "\nATTEMPTS['list'] = lambda path: os.listdir(path)\n"
                "ATTEMPTS['knock'] = lambda path: socket.socket(socket.AF_UNIX).connect(path)\n")
            # empty, or not even listable (Landlock); either way the socket and key are gone:
            assert call(worker, "attempt", "list", str(hidden)) in ("allowed: []", "denied: PermissionError")
            assert call(worker, "attempt", "read", str(hidden / "service" / "grade.sock.key")) \
                == "denied: FileNotFoundError"
            assert call(worker, "attempt", "knock", str(hidden / "service" / "grade.sock")) \
                == "denied: FileNotFoundError"
            assert call(worker, "attempt", "write", str(hidden / "planted.txt")).startswith("denied")
    finally:
        listener.close()
    assert sorted(path.name for path in hidden.rglob("*")) == ["grade.sock", "grade.sock.key", "service"]
