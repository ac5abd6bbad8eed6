"""Starting workers: the grader's side of a worker, confined and sandboxed, by one of two launchers.

Two ways to start a worker share one `Worker` handle (rlcourse.worker.handle):

* `SpawnLauncher` starts `python -m rlcourse.worker.server` for every submission: simple, and the
  slowest (each worker imports numpy and JAX afresh).
* `ForkLauncher` starts one trusted *template* process per grading run that imports the heavy
  libraries once, and forks a fresh child for each submission before any student code runs. No
  state passes from one student to the next: every child starts from the same clean template.
  Where it pays (JAX, `Framework.spare_by_default`), it keeps one child forked ahead: a *spare*,
  confined and with its framework's backend started before its submission arrives, handed to
  exactly one submission if it is still healthy (docs/operators/performance/ready-workers.md).

Either way the worker talks over a private socket (never its stdout), asks the grader for the
compilation cache's entries over another (rlcourse.worker.compile_cache), confines itself before
student code runs (rlcourse.worker.confine: resource limits, a pids cgroup, a private read-only
view of the mounts with a size-capped tmpfs as its scratch directory, Landlock, no
capabilities), is killed outright when it overstays a call, and is stopped when its files take
more disk than `Limits.scratch_bytes` / `scratch_files` (enforced by the kernel where the worker
has its tmpfs; measured by the grader otherwise).

Over 300 lines on purpose: the two launchers and the confinement they share are read side by
side, since a change to how one confines its workers must be made to the other too.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

from rlcourse.worker import confine, landlock, protocol
from rlcourse.worker.cgroup import MemoryCgroup, PidsCgroup
from rlcourse.worker.compile_cache import CacheServer
from rlcourse.worker.frameworks import FRAMEWORKS
from rlcourse.worker.handle import Worker
from rlcourse.worker.limits import Limits
from rlcourse.worker.privileges import (UNPRIVILEGED, check_floor, drops_privileges, hand_over,
                                        workers_may_mount)
from rlcourse.worker.processes import kill_process_group, popen_from_lasting_thread, worker_environment
from rlcourse.worker.sandbox import bwrap_command, choose_isolation
from rlcourse.worker.scratch import remove_run_folder, remove_scratch, run_folder, scratch_dir


@dataclasses.dataclass
class WorkerOptions:
    """What every worker in one grading run shares."""

    framework: str
    limits: Limits = dataclasses.field(default_factory=Limits)
    compile_cache: str | None = None
    """The compilation cache's folder (JAX): a student's worker asks the grader for its entries
    by key and never sees the folder; with `cache_writable`, the trusted warm-up writes it
    (rlcourse.worker.compile_cache)."""
    cache_writable: bool = False
    given_lines: dict[int, list[int]] | None = None
    """For the warm-up that writes the cache: per cell index, the lines every student is given;
    a program from any other line of a cell is not stored (compile_cache.GivenCodeOnly)."""
    hidden: tuple[str, ...] = ()
    """Folders a worker's private mounts cover with an empty, read-only one (the course's
    `.rlcourse-cache`, which holds the grading service's socket and key)."""
    isolation: str | None = None
    """"bwrap", "rlimits", or None for the best available (see rlcourse.worker.sandbox)."""
    landlock: bool = True
    """Workers restrict themselves with Landlock where the kernel provides it."""
    pids_cgroup: bool = True
    """Each worker gets its own pids cgroup where the machine lets the grader make one."""
    spare: bool | None = None
    """Whether a `ForkLauncher` keeps one spare worker ready (forked, confined, its backend
    started) for the next submission; None: the operator's `RLCOURSE_SPARE_WORKERS`, else the
    framework's default (`spare_by_default`).
    Never for the trusted warm-up that writes the compilation cache."""


def _sandboxed(command: list[str], options: WorkerOptions, *, home: Path, private_home: bool = False,
               capabilities=()) -> list[str]:
    """`command` inside bubblewrap, seeing `home` (writable: bound from the host, or with
    `private_home` a tmpfs of `scratch_bytes` of its own) and, for the warm-up that writes it
    only, the compilation cache."""
    environment = dict(worker_environment(), HOME=str(home), MPLCONFIGDIR="/tmp", TMPDIR="/tmp",
                       XDG_CACHE_HOME="/tmp")
    return bwrap_command(command, environment=environment,
                         writable=[*([] if private_home else [home]), *_writable_cache(options)],
                         private=[home] if private_home else [], chdir=str(home),
                         tmp_bytes=options.limits.scratch_bytes, capabilities=capabilities)


def _writable_cache(options: WorkerOptions) -> list[str]:
    """The cache's folder, for the one run that may write it; nothing for a student's worker."""
    return [options.compile_cache] if options.compile_cache and options.cache_writable else []


def _served_cache(options: WorkerOptions) -> tuple[CacheServer | None, socket.socket | None]:
    """For a student's worker with a compilation cache: the grader's server of its entries and
    the worker's end of their conversation (rlcourse.worker.compile_cache)."""
    if not options.compile_cache or options.cache_writable:
        return None, None
    ours, theirs = socket.socketpair()
    return CacheServer(options.compile_cache, ours), theirs


def _cache_description(options: WorkerOptions, served_fd: int | None) -> dict | None:
    """How the worker uses the cache (rlcourse.worker.frameworks.configure)."""
    if not options.compile_cache:
        return None
    if options.cache_writable:
        return {"folder": options.compile_cache,
                "given_lines": {str(cell): sorted(lines) for cell, lines in (options.given_lines or {}).items()}}
    return {"served": served_fd}


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
        cache = _writable_cache(options)
        rules = {"scratch": str(scratch), "readable": [], "writable": cache}
        mounts = {"scratch": str(scratch), "scratch_bytes": options.limits.scratch_bytes,
                  "scratch_files": options.limits.scratch_files, "writable": cache,
                  "hidden": [str(path) for path in options.hidden]}
        return {"limits": dataclasses.asdict(options.limits),
                "unprivileged": drops_privileges(self.isolation),
                "cgroup_fd": None,
                "network": None if in_sandbox else "leave",
                "landlock": rules if self._landlock else None,
                "private_mounts": mounts if self._mounts else None,
                "capabilities": "drop"}


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
        scratch = hand_over(scratch_dir(), self.isolation)
        ours, theirs = socket.socketpair()
        limits = self.options.limits
        cache_server, cache_end = _served_cache(self.options)
        # -I: the worker's sys.path holds the environment only, never the course directory.
        command = [sys.executable, "-I", "-m", "rlcourse.worker.server", "--fd", str(theirs.fileno()),
                   "--scratch", str(scratch), "--framework", self.options.framework]
        cache = _cache_description(self.options, cache_end.fileno() if cache_end else None)
        if cache:
            command += ["--compile-cache", json.dumps(cache)]
        spec = self._spec(scratch, in_sandbox=False)
        if self.isolation == "bwrap":
            command = _sandboxed(command, self.options, home=scratch, private_home=True)
            spec.update(network=None, landlock=None, capabilities=None, private_mounts=None)
        output, ends = _pipes()
        try:
            with self._cgroup_for_launch(theirs) as (group, procs):
                spec["cgroup_fd"] = procs
                try:
                    process = popen_from_lasting_thread(
                        command, pass_fds=[theirs.fileno(), *([procs] if group else []),
                                           *([cache_end.fileno()] if cache_end else [])],
                        stdin=subprocess.DEVNULL, stdout=ends[0], stderr=ends[1],
                        env=worker_environment(), start_new_session=True,
                        cwd=scratch, preexec_fn=lambda: confine.confine(spec))
                finally:
                    for fd in ends:
                        os.close(fd)
        except BaseException:
            if cache_server:
                cache_server.close()
            raise
        finally:
            if cache_end:
                cache_end.close()

        def reap():
            try:
                return process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                return None

        return Worker(ours, process.pid, scratch, limits, reap, cgroup=group, output=output,
                      cache_server=cache_server)

    def close(self) -> None:
        pass


class ForkLauncher(_Launcher):
    """One template process imports the heavy libraries; each submission gets a fork of it.

    Under bubblewrap the template itself runs in the sandbox, with one writable run directory
    holding a scratch directory per child (each removed when its submission is done); PIDs are
    then those of the sandbox's namespace, so children are killed by the template on request.
    Each child confines itself right after the fork, before student code (template.py).
    """

    def __init__(self, options: WorkerOptions, *, isolation: str = "rlimits"):
        super().__init__(options, isolation=isolation)
        self._asking = threading.Lock()  # the spare is forked from another thread
        self._handing_out = threading.RLock()  # a spare goes to one launch, whatever the threads
        self._spare: tuple[Worker, str, tuple] | None = None
        self._preparing: threading.Thread | None = None
        self._run_root = self._make_run_root()
        self._start_template()

    def _make_run_root(self) -> Path:
        """The run's folder, which holds a scratch folder per child: made by the grader, mode
        0755, and (for a root grader) owned by a user the workers are not, so that no worker may
        chmod, rename into or write it (a worker that made it mode 0 once stopped every later
        worker of the run from entering its scratch folder). `_run_root_intact` re-checks it
        before each launch."""
        root = run_folder()  # removed by close(); by the next run's start if this process is killed
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
        unaffected; the spare, if any, is not kept."""
        self._discard_spare()
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

    def wait_ready(self) -> None:
        """Return once the template has imported its framework, so the next `launch` forks at
        once (the template answers only after its imports); where this launcher keeps a spare,
        start preparing it, so that the first submission (a service's, after it warmed the
        assignment) gets a ready worker too."""
        self._ask({"op": "ready"})
        with self._handing_out:
            if self._keeps_spare and self._spare is None and self._preparing is None:
                self._prepare_in_background()

    def _ask(self, request: dict, fds=()) -> dict:
        with self._asking:
            socket.send_fds(self._control, [protocol.HEADER.pack(0)], list(fds))
            protocol.send_message(self._control, request)
            return protocol.receive_message(self._control, timeout=60)

    def launch(self) -> Worker:
        """A fresh worker for one submission: the spare, if it is healthy, else one forked now;
        then (in the background) the next spare. A worker is handed out once, never again."""
        with self._handing_out:
            if not self._run_root_intact():  # damaged by a worker: a new folder and template
                old = self._run_root
                self._run_root = self._make_run_root()
                self.restart()
                remove_run_folder(old)
            worker = self._take_spare() or self._fork()
            if self._keeps_spare:
                self._prepare_in_background()
            return worker

    def _fork(self, *, spare: bool = False) -> Worker:
        """Ask the template for a new child, confined in a new scratch folder (a `spare` also
        starts its backend, then says READY)."""
        scratch = hand_over(scratch_dir(self._run_root), self.isolation)
        ours, theirs = socket.socketpair()
        cache_server, cache_end = _served_cache(self.options)
        request = {"op": "fork", "scratch": str(scratch), "spare": spare,
                   "confinement": self._spec(scratch, in_sandbox=self.isolation == "bwrap"),
                   "compile_cache": _cache_description(self.options, None)}
        output, ends = _pipes()

        def abandon():
            if cache_server:
                cache_server.close()
            for fd in output.values():
                os.close(fd)
            remove_scratch(scratch)

        try:
            with self._cgroup_for_launch(theirs) as (group, procs):
                names = ["worker", "stdout", "stderr", *(["compile_cache"] if cache_end else []),
                         *(["cgroup"] if group else [])]
                fds = [theirs.fileno(), *ends, *([cache_end.fileno()] if cache_end else []),
                       *([procs] if group else [])]
                reply = self._ask(dict(request, descriptors=names), fds)
        except BaseException:
            abandon()
            raise
        finally:
            for fd in ends:
                os.close(fd)
            if cache_end:
                cache_end.close()
        pid = reply.get("pid")
        if not isinstance(pid, int) or pid <= 0:
            if group:
                group.remove()
            abandon()
            raise RuntimeError(f"the worker template could not fork: {reply}")
        return Worker(ours, pid, scratch, self.options.limits, reap=None, killer=self._kill,
                      cgroup=group, output=output, cache_server=cache_server)

    # --- the spare ------------------------------------------------------------------------------
    # One per launcher (one Grader of one assignment, one grading lane): an idle process, blocked
    # on its socket, that costs no CPU while it waits. Its wall and CPU budgets are the
    # submission's as for any worker: StudentCode's clock starts when it takes the worker, and
    # RLIMIT_CPU counts only the CPU the spare used (its backend's start-up, which a worker
    # forked on demand spends in its first cell instead).

    @property
    def _keeps_spare(self) -> bool:
        options = self.options
        if options.cache_writable:
            return False  # the trusted warm-up grades one notebook, and writes the cache
        if options.spare is not None:
            return options.spare
        switch = os.environ.get(SPARE_SWITCH, "").strip()
        if switch in ("0", "1"):
            return switch == "1"
        framework = FRAMEWORKS.get(options.framework)
        return bool(framework and framework.spare_by_default)

    def _options_key(self) -> str:
        return json.dumps([dataclasses.asdict(self.options), self.isolation, str(self._run_root)],
                          sort_keys=True, default=str)

    def _prepare_in_background(self) -> None:
        self._preparing = threading.Thread(target=self._prepare_spare, name="rlcourse-spare", daemon=True)
        self._preparing.start()

    def _prepare_spare(self) -> None:
        """Fork the next submission's worker now, put it in its memory cgroup as `StudentCode`
        does a worker it launched (rlcourse.worker.cgroup.MemoryCgroup), and remember what it was
        made for. A failure leaves no spare: the next launch forks as it would without one."""
        try:
            spare = self._fork(spare=True)
        except Exception:  # noqa: BLE001 - the next launch forks on demand and meets it there
            return
        spare.memory = MemoryCgroup.for_worker(self.options.limits.resident_bytes, spare._cgroup)
        self._spare = (spare, self._options_key(), _folder_stat(spare.scratch))

    def _take_spare(self) -> Worker | None:
        """The spare, if it is healthy: made with these options in this run folder, its scratch
        folder as it was made and empty (a spare writes nothing before its submission; where
        workers mount their own tmpfs there, nothing is written beneath it), and alive, confined and
        ready (its READY arrives within SPARE_READY_SECONDS). Otherwise it is killed and None."""
        self._wait_for_spare()
        if self._spare is None:
            return None
        (spare, key, scratch_stat), self._spare = self._spare, None
        healthy = (key == self._options_key() and self._run_root_intact()
                   and _folder_stat(spare.scratch) == scratch_stat
                   and not _has_entries(spare.scratch)
                   and spare.wait_ready(timeout=SPARE_READY_SECONDS))
        if healthy:
            return spare
        _discard(spare)
        return None

    def _wait_for_spare(self) -> None:
        preparing, self._preparing = self._preparing, None
        if preparing is not None:
            preparing.join()

    def _discard_spare(self) -> None:
        with self._handing_out:
            self._wait_for_spare()
            if self._spare is not None:
                (spare, _, _), self._spare = self._spare, None
                _discard(spare)

    def _kill(self, pid: int) -> None:
        try:
            self._ask({"op": "kill", "pid": pid})
        except (OSError, protocol.ProtocolError):
            pass  # the template is gone, and its children with it

    def close(self) -> None:
        """Stop the spare (its process and scratch folder go), the template, and the run folder."""
        self._discard_spare()
        self._control.close()
        try:
            self._template.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._template.kill()
            self._template.wait()
        remove_run_folder(self._run_root)


SPARE_SWITCH = "RLCOURSE_SPARE_WORKERS"
"""The operator's switch: "0" keeps no spare worker for any framework, "1" one for every framework;
unset (or anything else), each framework's default (`spare_by_default`). `WorkerOptions.spare`,
when set, comes first."""
SPARE_READY_SECONDS = 30.0
"""How long a launch waits for a spare still starting its backend before it forks another."""


def _folder_stat(path: Path) -> tuple | None:
    """What identifies a folder as the one the launcher made: its inode, owner and mode."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (stat.S_ISDIR(info.st_mode), info.st_ino, info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode))


def _has_entries(path: Path) -> bool:
    """Whether anything is in a spare's scratch folder, as the grader sees it: a spare writes
    nothing before its submission, so anything there was put in from outside."""
    try:
        with os.scandir(path) as entries:
            return any(True for _ in entries)
    except OSError:
        return True


def _discard(spare: Worker) -> None:
    """Kill a spare that will not be used, with its processes, cgroups and scratch folder."""
    spare.kill()
    if spare.memory is not None:
        spare.memory.remove()


def make_launcher(options: WorkerOptions, *, strategy: str = "fork"):
    isolation, _ = choose_isolation(options.isolation)
    check_floor(isolation)
    if strategy == "fork":
        return ForkLauncher(options, isolation=isolation)
    if strategy == "spawn":
        return SpawnLauncher(options, isolation=isolation)
    raise ValueError(f"unknown worker strategy {strategy!r}")
