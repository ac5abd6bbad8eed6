"""The grader's side of a worker: start it with limits, send requests, and survive whatever it does.

Two ways to start a worker share one `Worker` handle:

* `SpawnLauncher` starts `python -m rlcourse.worker.server` for every submission: simple, and the
  slowest (each worker imports numpy and JAX afresh).
* `ForkLauncher` starts one trusted *template* process per grading run that imports the heavy
  libraries once, and forks a fresh child for each submission before any student code runs. No
  state passes from one student to the next: every child starts from the same clean template.

Either way the worker talks over a private socket (never its stdout), confines itself before
student code runs (rlcourse.worker.confine: resource limits, a pids cgroup, a private read-only
view of the mounts with a size-capped tmpfs as its scratch directory, Landlock, no
capabilities), is killed outright when it overstays a call, and is stopped when its files take
more disk than `Limits.scratch_bytes` / `scratch_files` (enforced by the kernel where the worker
has its tmpfs; measured by the grader otherwise).

The grader trusts nothing the worker leaves behind: the worker's prints come back over pipes
the grader made (never a file in the scratch directory, which the student could replace with a
link or a FIFO), and the scratch directory is removed as soon as its worker is stopped.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import os
import stat
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rlcourse.worker import confine, landlock, protocol
from rlcourse.worker.cgroup import PidsCgroup
from rlcourse.worker.sandbox import bwrap_command, choose_isolation


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resources one worker may use. Defaults suit the course's small CPU-only assignments."""

    memory_bytes: int = 6 << 30
    """Address-space limit (RLIMIT_AS). JAX reserves generously, so this is above real use."""
    resident_bytes: int = 3 << 30
    """Memory the worker's processes may hold, shared memory and memfd files included (a memory
    cgroup, where the machine has one: rlcourse.worker.cgroup.MemoryCgroup)."""
    cpu_seconds: int = 900
    """CPU time for the whole worker (RLIMIT_CPU); the per-call wall clock is usually hit first."""
    file_bytes: int = 64 << 20
    """Largest file the worker may write (RLIMIT_FSIZE), its captured output included."""
    open_files: int = 256
    """Open file descriptors (RLIMIT_NOFILE)."""
    cell_seconds: float = 120.0
    """Wall clock for running one notebook cell."""
    call_seconds: float = 60.0
    """Wall clock for one grader call into the submission."""
    submission_seconds: float = 900.0
    """Wall clock for one submission's cells and calls together, restarts included."""
    reply_bytes: int = 32 << 20
    """Largest reply accepted from the worker."""
    output_chars: int = 4000
    """How much of the worker's own prints a report may quote (the tail)."""
    processes: int = 128
    """Processes and threads the worker may have at once (`pids.max` of its cgroup; also
    RLIMIT_NPROC when it runs as its own user). JAX alone starts about 20 threads."""
    scratch_bytes: int = 256 << 20
    """Disk the worker's files may take in all (RLIMIT_FSIZE bounds each file, not their sum)."""
    scratch_files: int = 2000
    """Files and directories the worker may create."""


UNPRIVILEGED = confine.UNPRIVILEGED
"""The uid and gid ("nobody") a worker takes under the resource-limits fallback when the grader
runs as root, so that file permissions keep it out of the gradebook and the course."""
DISK_CHECK_SECONDS = 0.5
"""How often the grader measures a worker's files while it waits for an answer: the most a
worker can write beyond its quota is what it writes in this time."""


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


def _hand_over(path: Path, isolation: str) -> Path:
    """Make a worker's scratch directory its own when the worker will run as another user."""
    if drops_privileges(isolation):
        os.chown(path, UNPRIVILEGED, UNPRIVILEGED)
    return path


class WorkerError(Exception):
    """A request that did not produce an answer; `kind` says why, for diagnosis."""

    def __init__(self, kind: str, message: str, *, where: str = ""):
        super().__init__(message)
        self.kind = kind
        self.where = where


class Worker:
    """One live worker process. Every failure surfaces as a WorkerError, never a hang or a crash."""

    def __init__(self, sock: socket.socket, pid: int, scratch: Path, limits: Limits, reap=None,
                 killer=None, cgroup: PidsCgroup | None = None, output: dict[str, int] | None = None):
        self._sock = sock
        self.pid = pid
        self.scratch = scratch
        self.limits = limits
        self._reap = reap
        self._killer = killer
        self._cgroup = cgroup
        self._output = _OutputPipes(output or {}, keep_bytes=4 * limits.output_chars)
        self.alive = True

    def request(self, op: str, arguments: dict, *, timeout: float):
        if not self.alive:
            raise WorkerError("worker_crashed", "the worker has already stopped")
        request_id = secrets.token_hex(8)
        try:
            protocol.send_message(self._sock, {"id": request_id, "op": op,
                                               "arguments": protocol.encode(arguments)})
            reply = self._receive(timeout)
        except DiskQuotaExceeded as error:
            self.kill()
            raise WorkerError("worker_crashed", f"the worker was stopped: {error}") from None
        except protocol.WorkerTimeout:
            self.kill()
            raise WorkerError("timeout", f"no answer within {timeout:g} s; the worker was stopped")
        except (protocol.WorkerGone, BrokenPipeError, ConnectionResetError):
            notice = self._death_notice()  # before kill(), which would overwrite the exit status
            self.kill()
            raise WorkerError("worker_crashed", notice) from None
        except protocol.ProtocolError as error:
            self.kill()
            raise WorkerError("bad_reply", f"the worker sent a malformed reply ({error})") from None
        return self._unpack(reply, request_id)

    def _receive(self, timeout: float) -> dict:
        """The next reply, measuring the worker's files every DISK_CHECK_SECONDS meanwhile and
        once more when the reply has come."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise protocol.WorkerTimeout("no reply in time")
            ready, _, _ = select.select([self._sock, *self._output.open_ends()], [], [],
                                        min(remaining, DISK_CHECK_SECONDS))
            self._output.drain()
            self._check_disk()
            if self._sock in ready:
                reply = protocol.receive_message(self._sock, timeout=max(0.0, deadline - time.monotonic()),
                                                 max_bytes=self.limits.reply_bytes)
                self._output.drain()  # the worker flushes its prints before it replies
                self._check_disk()
                return reply

    def _check_disk(self) -> None:
        files, used = disk_use(self.scratch, max_files=self.limits.scratch_files)
        if files > self.limits.scratch_files or used > self.limits.scratch_bytes:
            raise DiskQuotaExceeded(
                f"its files took more than {self.limits.scratch_bytes >> 20} MB or "
                f"{self.limits.scratch_files} files of disk")

    def _unpack(self, reply: dict, request_id: str):
        if reply.get("id") != request_id or not isinstance(reply.get("ok"), bool):
            self.kill()
            raise WorkerError("bad_reply", "the worker's reply does not answer the request")
        if not reply["ok"]:
            error = reply.get("error")
            if not isinstance(error, dict):
                raise WorkerError("bad_reply", "the worker reported an error in a malformed way")
            kind = "not_implemented" if error.get("type") == "NotImplementedError" else "raised"
            if error.get("type") == "LookupError":
                kind = "missing_name"
            raise WorkerError(kind, str(error.get("message", ""))[:600],
                              where=str(error.get("where", ""))[:100])
        try:
            return protocol.decode(reply.get("result"))
        except protocol.ProtocolError as error:
            raise WorkerError("bad_reply", f"the worker's answer is malformed ({error})") from None

    def _death_notice(self) -> str:
        status = self._reap() if self._reap else None
        how = "the worker stopped unexpectedly"
        if status is not None:
            if status < 0:
                how = f"the worker was killed by signal {signal.Signals(-status).name}"
            else:
                how = f"the worker exited with status {status}"
        tail = self.output_tail("stderr.txt", 300)
        return f"{how} (it may have called sys.exit/os._exit or run out of memory)" + (
            f"; last output: {tail}" if tail else "")

    def output_tail(self, name: str, chars: int | None = None) -> str:
        """The last `chars` characters the worker printed to "stdout.txt" or "stderr.txt" (the
        names its output files once had; it now comes over the grader's pipes)."""
        self._output.drain()
        return self._output.tail(name)[-(chars or self.limits.output_chars):].strip()

    def kill(self) -> None:
        """Stop the worker and every process it started: its process group, then (where there is
        one) everything in its cgroup, which includes children that called setsid()."""
        if self.alive:
            self.alive = False
            if self._killer:
                self._killer(self.pid)
            else:
                kill_process_group(self.pid)
            if self._cgroup:
                self._cgroup.kill_all()
                self._cgroup.remove()
            if self._reap:
                self._reap()
            self._output.drain()
            self._output.close()
            remove_scratch(self.scratch)
        self._sock.close()

    close = kill


class _OutputPipes:
    """The read ends of a worker's stdout and stderr pipes, drained without blocking into a tail
    of `keep_bytes` each: a worker that prints without end costs the grader no memory, and one
    that never closes its end never blocks the grader."""

    def __init__(self, fds: dict[str, int], *, keep_bytes: int):
        self._fds = dict(fds)
        self._tails = {name: collections.deque(maxlen=keep_bytes) for name in fds}
        for fd in self._fds.values():
            os.set_blocking(fd, False)

    def open_ends(self) -> list[int]:
        return list(self._fds.values())

    def drain(self) -> None:
        for name, fd in list(self._fds.items()):
            for _ in range(64):  # at most 4 MB per call: a flood cannot starve the caller
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    os.close(fd)
                    del self._fds[name]
                    break
                self._tails[name].extend(data)

    def tail(self, name: str) -> str:
        return bytes(self._tails.get(name, ())).decode("utf-8", "replace")

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


def remove_scratch(path: Path) -> None:
    """Delete a stopped worker's scratch directory now, whatever the worker left in it: links
    are removed, never followed, and folders it made unreadable are opened up (by descriptor,
    O_NOFOLLOW) and removed on a second try. (Where the worker had its own tmpfs, its files went
    with its mount namespace and this folder is empty.)"""
    for attempt in range(2):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt:
                return
        _open_up(path)
        for folder, subfolders, _ in os.walk(path):
            for name in subfolders:
                _open_up(os.path.join(folder, name))


def _open_up(folder) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


class DiskQuotaExceeded(Exception):
    """A worker's files take more disk than its limits allow."""


def disk_use(root: Path, *, max_files: int) -> tuple[int, int]:
    """(entries, bytes on disk) under `root`, counted without following links; stops counting
    past `max_files` entries. Bytes are allocated blocks, so a sparse file costs what it uses."""
    entries = used = 0
    folders = [root]
    while folders and entries <= max_files:
        try:
            listing = os.scandir(folders.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                entries += 1
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    used += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    pass
    return entries, used


def kill_process_group(pid: int) -> None:
    """SIGKILL a worker and everything it started (it leads its own session)."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclasses.dataclass
class WorkerOptions:
    """What every worker in one grading run shares."""

    framework: str
    limits: Limits = dataclasses.field(default_factory=Limits)
    compile_cache: str | None = None
    cache_writable: bool = False
    isolation: str | None = None
    """"bwrap", "rlimits", or None for the best available (see rlcourse.worker.sandbox)."""
    landlock: bool = True
    """Workers restrict themselves with Landlock where the kernel provides it."""
    pids_cgroup: bool = True
    """Each worker gets its own pids cgroup where the machine lets the grader make one."""


def _scratch_dir(parent: Path | None = None) -> Path:
    return Path(tempfile.mkdtemp(prefix="rlcourse-worker-", dir=parent))


def _sandboxed(command: list[str], options: WorkerOptions, *, home: Path, private_home: bool = False,
               capabilities=()) -> list[str]:
    """`command` inside bubblewrap, seeing `home` (writable: bound from the host, or with
    `private_home` a tmpfs of `scratch_bytes` of its own) and the compilation cache."""
    cache = [options.compile_cache] if options.compile_cache else []
    environment = dict(worker_environment(), HOME=str(home), MPLCONFIGDIR="/tmp", TMPDIR="/tmp")
    return bwrap_command(command, environment=environment,
                         writable=[*([] if private_home else [home]),
                                   *(cache if options.cache_writable else [])],
                         private=[home] if private_home else [],
                         readable=[] if options.cache_writable else cache, chdir=str(home),
                         tmp_bytes=options.limits.scratch_bytes, capabilities=capabilities)


class _Launcher:
    """What both launchers share: how their workers confine themselves (rlcourse.worker.confine)."""

    def __init__(self, options: WorkerOptions, *, isolation: str = "rlimits"):
        self.options = options
        self.isolation = isolation
        self._landlock = landlock.abi_version() if options.landlock else 0
        self._cgroups = options.pids_cgroup
        self._mounts = workers_may_mount(isolation)

    @property
    def confinement(self) -> dict:
        """What confines this launcher's workers besides `isolation`, for reports and doctor:
        the Landlock ABI version they apply (0: none) and whether each has a pids cgroup."""
        from rlcourse.worker.cgroup import pids_parent

        return {"landlock": self._landlock, "pids_cgroup": self._cgroups and pids_parent() is not None,
                "private_mounts": self._mounts}

    @contextlib.contextmanager
    def _cgroup_for_launch(self, theirs: socket.socket):
        """A new pids cgroup for the worker being launched, with an open descriptor of its
        `cgroup.procs` for the worker to join (None, None where there are none). The cgroup is
        removed if the launch fails; the descriptors are closed here once it is handed over."""
        group = self._new_cgroup()
        procs = group.open_procs() if group else None
        try:
            yield group, procs
        except BaseException:
            if group:
                group.remove()
            raise
        finally:
            theirs.close()
            if procs is not None:
                os.close(procs)

    def _new_cgroup(self) -> PidsCgroup | None:
        group = PidsCgroup.create(self.options.limits.processes) if self._cgroups else None
        self._cgroups = group is not None  # not available here: do not try for every worker
        return group

    def _spec(self, scratch: Path, *, in_sandbox: bool) -> dict:
        """The worker's confinement as plain data (`rlcourse.worker.confine.confine`)."""
        options = self.options
        cache = [options.compile_cache] if options.compile_cache else []
        rules = {"scratch": str(scratch), "readable": [] if options.cache_writable else cache,
                 "writable": cache if options.cache_writable else []}
        mounts = {"scratch": str(scratch), "scratch_bytes": options.limits.scratch_bytes,
                  "scratch_files": options.limits.scratch_files,
                  "writable": cache if options.cache_writable else []}
        return {"limits": dataclasses.asdict(options.limits),
                "unprivileged": drops_privileges(self.isolation),
                "cgroup_fd": None,
                "network": None if in_sandbox else "leave",
                "landlock": rules if self._landlock else None,
                "private_mounts": mounts if self._mounts else None,
                "capabilities": "drop"}


def workers_may_mount(isolation: str) -> bool:
    """Whether this launcher's workers can make their private mounts (rlcourse.worker.confine):
    under rlimits, when the grader holds CAP_SYS_ADMIN (root, outside a locked-down container);
    under bwrap, when the grader is root (the fork template then keeps CAP_SYS_ADMIN and
    CAP_SETPCAP in its own user namespace, for its children to use and drop before student
    code; the spawn launcher gets the same tmpfs from bwrap itself)."""
    if isolation == "bwrap":
        return os.geteuid() == 0
    return confine.can_mount()


def _pipes() -> tuple[dict[str, int], list[int]]:
    """A stdout and a stderr pipe for a worker: (read ends by name, write ends)."""
    out_read, out_write = os.pipe2(os.O_CLOEXEC)
    err_read, err_write = os.pipe2(os.O_CLOEXEC)
    return {"stdout.txt": out_read, "stderr.txt": err_read}, [out_write, err_write]


class SpawnLauncher(_Launcher):
    """A fresh interpreter per submission.

    The worker confines itself between fork and exec (`preexec_fn`), while it is still a single
    thread. Under bubblewrap that code runs in `bwrap` itself, which needs its capabilities and
    its mounts: there the worker only joins its cgroup and sets its limits, and the sandbox does
    the rest (no Landlock layer with this launcher under bwrap; the fork launcher has one)."""

    def __init__(self, options: WorkerOptions, *, isolation: str = "rlimits"):
        super().__init__(options, isolation=isolation)
        if isolation == "bwrap":
            self._landlock = 0  # it would bind bwrap itself, which must still mount

    def restart(self) -> None:
        """Nothing to restart: every worker is a fresh process."""

    def launch(self) -> Worker:
        scratch = _hand_over(_scratch_dir(), self.isolation)
        ours, theirs = socket.socketpair()
        limits = self.options.limits
        # -I: the worker's sys.path holds the environment only, never the course directory.
        command = [sys.executable, "-I", "-m", "rlcourse.worker.server", "--fd", str(theirs.fileno()),
                   "--scratch", str(scratch), "--framework", self.options.framework]
        if self.options.compile_cache:
            command += ["--compile-cache", self.options.compile_cache]
        if self.options.cache_writable:
            command.append("--cache-writable")
        spec = self._spec(scratch, in_sandbox=False)
        if self.isolation == "bwrap":
            command = _sandboxed(command, self.options, home=scratch, private_home=True)
            spec.update(network=None, landlock=None, capabilities=None, private_mounts=None)
        output, ends = _pipes()
        with self._cgroup_for_launch(theirs) as (group, procs):
            spec["cgroup_fd"] = procs
            try:
                process = popen_from_lasting_thread(
                    command, pass_fds=[theirs.fileno(), *([procs] if group else [])],
                    stdin=subprocess.DEVNULL, stdout=ends[0], stderr=ends[1],
                    env=worker_environment(), start_new_session=True,
                    cwd=scratch, preexec_fn=lambda: confine.confine(spec))
            finally:
                for fd in ends:
                    os.close(fd)

        def reap():
            try:
                return process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                return None

        return Worker(ours, process.pid, scratch, limits, reap, cgroup=group, output=output)

    def close(self) -> None:
        pass


_SPAWNER = None
_SPAWNER_LOCK = threading.Lock()


def popen_from_lasting_thread(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen`, run in a thread that lives as long as this process.

    bubblewrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that
    started the sandbox exits, not the process. A worker started from a short-lived thread (the
    one that runs a submission's cells while pytest collects, or a grading service's request
    thread) was killed as soon as that thread finished: mid-grading, which cost items their
    points. Starting every sandbox from one lasting thread keeps --die-with-parent meaning
    "dies with the grader"."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            import concurrent.futures

            _SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                             thread_name_prefix="rlcourse-spawner")
    return _SPAWNER.submit(subprocess.Popen, *args, **kwargs).result()


def worker_environment() -> dict:
    """A small environment: what Python, JAX and matplotlib need, nothing of the grader's."""
    keep = ("PATH", "LANG", "LC_ALL", "HOME", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_force_host_platform_device_count=1",
               TF_CPP_MIN_LOG_LEVEL="2")
    return env


class ForkLauncher(_Launcher):
    """One template process imports the heavy libraries; each submission gets a fork of it.

    Under bubblewrap the template itself runs in the sandbox, with one writable run directory
    holding a scratch directory per child (each removed when its submission is done); PIDs are
    then those of the sandbox's namespace, so children are killed by the template on request.
    Each child confines itself right after the fork, before student code (template.py).
    """

    def __init__(self, options: WorkerOptions, *, isolation: str = "rlimits"):
        super().__init__(options, isolation=isolation)
        self._run_root = self._make_run_root()
        self._start_template()

    def _make_run_root(self) -> Path:
        """The run's folder, which holds a scratch folder per child: made by the grader, mode
        0755, and (for a root grader) owned by a user the workers are not, so that no worker may
        chmod, rename into or write it (a worker that made it mode 0 once stopped every later
        worker of the run from entering its scratch folder). `_run_root_intact` re-checks it
        before each launch."""
        root = Path(tempfile.mkdtemp(prefix="rlcourse-run-"))
        os.chmod(root, 0o755)
        if os.geteuid() == 0:
            os.chown(root, *(2 * (0 if drops_privileges(self.isolation) else UNPRIVILEGED,)))
        info = os.lstat(root)
        self._run_root_stat = (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))
        return root

    def _run_root_intact(self) -> bool:
        try:
            info = os.lstat(self._run_root)
        except OSError:
            return False
        return stat.S_ISDIR(info.st_mode) and (
            info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == self._run_root_stat

    def restart(self) -> None:
        """Start a new template: a submission may have killed the last one (its children can
        signal their parent where Landlock cannot scope signals). Workers already running are
        unaffected."""
        with contextlib.suppress(OSError):
            self._control.close()
        kill_process_group(self._template.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._template.wait(timeout=5)
        self._start_template()

    def _start_template(self) -> None:
        options, isolation = self.options, self.isolation
        self._control, theirs = socket.socketpair()
        command = [sys.executable, "-I", "-m", "rlcourse.worker.template", "--fd", str(theirs.fileno()),
                   "--framework", options.framework]
        if isolation == "bwrap":
            command = _sandboxed(command, options, home=self._run_root, capabilities=(
                ("CAP_SYS_ADMIN", "CAP_SETPCAP") if self._mounts else ()))
        self._template = popen_from_lasting_thread(command, pass_fds=(theirs.fileno(),),
                                          stdin=subprocess.DEVNULL, env=worker_environment(),
                                          start_new_session=True, cwd=self._run_root)
        theirs.close()

    def _ask(self, request: dict, fds=()) -> dict:
        socket.send_fds(self._control, [protocol.HEADER.pack(0)], list(fds))
        protocol.send_message(self._control, request)
        return protocol.receive_message(self._control, timeout=60)

    def launch(self) -> Worker:
        if not self._run_root_intact():  # damaged by a worker: a new folder and template
            old = self._run_root
            self._run_root = self._make_run_root()
            self.restart()
            remove_scratch(old)
        scratch = _hand_over(_scratch_dir(self._run_root), self.isolation)
        ours, theirs = socket.socketpair()
        request = {"op": "fork", "scratch": str(scratch),
                   "confinement": self._spec(scratch, in_sandbox=self.isolation == "bwrap"),
                   "compile_cache": self.options.compile_cache,
                   "cache_writable": self.options.cache_writable}
        output, ends = _pipes()
        try:
            with self._cgroup_for_launch(theirs) as (group, procs):
                reply = self._ask(request, [theirs.fileno(), *ends, *([procs] if group else [])])
        except BaseException:
            for fd in output.values():
                os.close(fd)
            remove_scratch(scratch)
            raise
        finally:
            for fd in ends:
                os.close(fd)
        pid = reply.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            if group:
                group.remove()
            for fd in output.values():
                os.close(fd)
            remove_scratch(scratch)
            raise RuntimeError(f"the worker template could not fork: {reply}")
        return Worker(ours, pid, scratch, self.options.limits, reap=None, killer=self._kill,
                      cgroup=group, output=output)

    def _kill(self, pid: int) -> None:
        try:
            self._ask({"op": "kill", "pid": pid})
        except (OSError, protocol.ProtocolError):
            pass  # the template is gone, and its children with it

    def close(self) -> None:
        self._control.close()
        try:
            self._template.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._template.kill()
            self._template.wait()
        shutil.rmtree(self._run_root, ignore_errors=True)


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


def make_launcher(options: WorkerOptions, *, strategy: str = "fork"):
    isolation, _ = choose_isolation(options.isolation)
    check_floor(isolation)
    if strategy == "fork":
        return ForkLauncher(options, isolation=isolation)
    if strategy == "spawn":
        return SpawnLauncher(options, isolation=isolation)
    raise ValueError(f"unknown worker strategy {strategy!r}")


def wait_for_exit(pid: int, timeout: float) -> bool:
    """True when a process is gone within `timeout` seconds (used by tests and the template)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False
