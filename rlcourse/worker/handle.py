"""One live worker as the grader holds it: send a request, get an answer or a WorkerError.

The grader trusts nothing the worker leaves behind: the worker's prints come back over pipes
the grader made (never a file in the scratch directory, which the student could replace with a
link or a FIFO), its files are measured while it runs, and the scratch directory is removed as
soon as the worker is stopped."""
from __future__ import annotations

import collections
import os
import secrets
import select
import signal
import socket
import time
from pathlib import Path

from rlcourse.worker import protocol
from rlcourse.worker.cgroup import PidsCgroup
from rlcourse.worker.compile_cache import CacheServer
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.limits import Limits
from rlcourse.worker.processes import kill_process_group
from rlcourse.worker.scratch import DiskQuotaExceeded, disk_use, remove_scratch

DISK_CHECK_SECONDS = 0.5
"""How often the grader measures a worker's files while it waits for an answer: the most a
worker can write beyond its quota is what it writes in this time."""


class Worker:
    """One live worker process. Every failure surfaces as a WorkerError, never a hang or a crash."""

    def __init__(self, sock: socket.socket, pid: int, scratch: Path, limits: Limits, reap=None,
                 killer=None, cgroup: PidsCgroup | None = None, output: dict[str, int] | None = None,
                 cache_server: CacheServer | None = None):
        self._sock = sock
        self.cache_server = cache_server
        """The grader's end of the worker's compilation cache (None without one)."""
        self.pid = pid
        self.scratch = scratch
        self.limits = limits
        self._reap = reap
        self._killer = killer
        self._cgroup = cgroup
        self._output = _OutputPipes(output or {}, keep_bytes=4 * limits.output_chars)
        self.alive = True
        self.memory = None
        """Its memory cgroup (rlcourse.worker.cgroup.MemoryCgroup) when the launcher made one (a
        spare's, made when it was forked); else `StudentCode` makes it."""

    def wait_ready(self, *, timeout: float) -> bool:
        """Whether a spare worker says READY within `timeout`, its first and only unasked
        message (protocol.READY, from rlcourse.worker.server.run_worker), and is still alive: a
        spare that died, was killed or says anything else is not ready, and is then not used."""
        try:
            if protocol.receive_message(self._sock, timeout=timeout, max_bytes=64) != protocol.READY:
                return False
            # READY may have waited in the socket since before the spare was killed: a spare
            # still alive has nothing more to say, a dead one's end of the socket is closed.
            readable, _, _ = select.select([self._sock], [], [], 0)
        except (protocol.ProtocolError, OSError, ValueError):
            return False
        return not readable and not (self._cgroup is not None and not self._cgroup.members())

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
            raise WorkerError("timeout", f"no answer within {timeout:g} s; the worker was stopped") from None
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
            if self.cache_server:
                self.cache_server.close()
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
