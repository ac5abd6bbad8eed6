"""JAX's compilation cache as workers use it: served by the grader, by key, and holding only
programs of the given code.

Why: compiled programs are most of a JAX submission's grading time (a ps1 notebook took 12 s
without the cache and 5 s with it, most of it the given rollout and the small programs of
eager array operations), but the cache was a folder every worker could read, and it was warmed
by the reference solution: its entries deserialize inside the worker, so a student read the
HLO of the instructor's `exact_return` (its function names, its loop) and ran the instructor's
compiled programs as an oracle (issue 29, findings 4 and 5). Two rules close that:

* **By key only.** A student worker gets no cache folder: not mounted in the sandbox, not among
  its Landlock paths, not in its configuration. JAX asks for an entry by its key, which is a
  hash of the program being compiled, and the worker's `ServedCache` forwards the question over
  a socket of its own to the grader's `CacheServer`, which answers with the entry or nothing. A
  key names a program, so a worker can only get the compiled form of a program it has just
  built itself: it cannot list, read or run anything else. It never writes.
* **Given code only.** The one run that writes the cache is the trusted reference run (the
  source notebook graded before any student), and `GivenCodeOnly` lets it write a program only
  when nothing of the program, and nothing on the Python stack that asked for it, comes from a
  line the release does not show every student (`given_lines`: the locked cells, and the lines
  of answer cells outside their solution regions). The instructor's answers, and every program
  the graders' calls compile through them, are compiled afresh and never stored; the given
  rollout, the training loop's sampling and the eager operations of the given cells are. So even
  whether a program is in the cache says nothing a student's release does not.

What a worker may still learn: that a program of the given code, which it just built, was
compiled before at the same shapes (the given cells' and the graders' calls to given functions,
whose arguments the student's code sees anyway when they are made).

Relies on JAX's own cache interface (`jax._src.compilation_cache`, pinned with JAX in
constraints.txt): where it changes, `configure_served` and `configure_writer` fail closed (the
worker compiles everything; the warm-up writes nothing) and tests/worker/test_compile_cache.py
fails.
"""
from __future__ import annotations

import os
import re
import socket
import stat
import struct
import sys
import threading
from pathlib import Path

KEY = re.compile(r"[A-Za-z0-9_.\-]{1,200}-[0-9a-f]{64}")
"""A JAX cache key: the program's module name and a SHA-256 hex digest (never a path)."""
MAX_KEY_BYTES = 300
MAX_ENTRY_BYTES = 64 << 20
"""The largest entry the grader serves (ps1's largest is under 100 kB)."""
LENGTH = struct.Struct(">Q")
CELL_LOCATION = re.compile(r'"<cell (\d+)>":(\d+)')
CELL_FILE = re.compile(r"<cell (\d+)>")


# --- the grader's side ---------------------------------------------------------------------------
class CacheServer:
    """Answers one worker's questions for cache entries of `folder`, by key, on `sock`, in a
    thread of the grader, until the worker or `close` ends the connection. Each question is a
    key and a newline; each answer an 8-byte length and that many bytes (0: no such entry). A
    question that is not a key ends the conversation: the worker then compiles everything."""

    def __init__(self, folder: str | Path, sock: socket.socket):
        self.folder = Path(folder)
        self.asked = 0
        self.served = 0
        self._sock = sock
        self._thread = threading.Thread(target=self._serve, name="rlcourse-compile-cache", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            with self._sock.makefile("rb") as questions:
                while True:
                    line = questions.readline(MAX_KEY_BYTES + 1)
                    if not line.endswith(b"\n"):
                        return  # the worker is gone, or sent something that is not a question
                    entry = self.entry(line[:-1].decode("ascii", "replace"))
                    self.asked += 1
                    self.served += bool(entry)
                    self._sock.sendall(LENGTH.pack(len(entry)) + entry)
        except (OSError, ValueError):
            return
        finally:
            self._hang_up()

    def _hang_up(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()

    def entry(self, key: str) -> bytes:
        """The entry stored under `key`, or b"": only a regular file of the folder named by the
        key (never a link), at most MAX_ENTRY_BYTES."""
        if not KEY.fullmatch(key):
            return b""
        try:
            descriptor = os.open(self.folder / f"{key}-cache",
                                 os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return b""
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
                return b""
            return handle.read(MAX_ENTRY_BYTES)

    def close(self) -> None:
        """End the conversation (a blocked read or write in the thread returns at once)."""
        self._hang_up()
        self._thread.join(timeout=5)


# --- the worker's side ---------------------------------------------------------------------------
def _cache_interface():
    from jax._src.compilation_cache_interface import CacheInterface

    return CacheInterface


def served_cache_class():
    """`ServedCache`, made on first use: it subclasses JAX's cache interface, which only a JAX
    worker imports."""
    class ServedCache(_cache_interface()):
        """JAX's persistent cache in a student worker: asks the grader for each key; writes
        nothing. Any failure of the conversation is a miss, and the program is compiled."""

        _path = None  # no folder: there is none to find

        def __init__(self, sock: socket.socket):
            self._sock = sock
            self._lock = threading.Lock()  # student code may compile from several threads

        def get(self, key: str) -> bytes | None:
            if not KEY.fullmatch(key):
                return None
            with self._lock:
                try:
                    self._sock.sendall(key.encode("ascii") + b"\n")
                    (length,) = LENGTH.unpack(_receive(self._sock, LENGTH.size))
                    if length > MAX_ENTRY_BYTES:
                        raise OSError("oversized entry")
                    return _receive(self._sock, length) if length else None
                except (OSError, struct.error):
                    self._sock.close()  # out of step: from now on, compile everything
                    return None

        def put(self, key: str, value: bytes) -> None:
            """A worker never writes the cache."""

        def clear(self) -> None:
            """Nothing of the grader's is this worker's to clear."""

    return ServedCache


def _receive(sock: socket.socket, count: int) -> bytes:
    chunks, missing = [], count
    while missing:
        chunk = sock.recv(min(missing, 1 << 20))
        if not chunk:
            raise OSError("the grader closed the cache's connection")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _common_settings() -> None:
    import jax

    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    # By default JAX also points XLA's GPU autotuning cache into the cache folder, and that
    # path is part of every entry's key: a course copied or moved (cp -r takes its
    # .rlcourse-cache along) then missed every entry. On the CPU those caches hold nothing, so
    # the keys no longer depend on where the cache lies, nor on whether there is a folder.
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")


def configure_served(fd: int) -> bool:
    """Use the grader's cache, by key, over the socket `fd` (a student worker). Returns False,
    and leaves JAX compiling everything, where JAX's cache interface is not the one expected."""
    sock = socket.socket(fileno=fd)
    try:
        from jax._src import compilation_cache
        cache = served_cache_class()(sock)
        _common_settings()
        import jax

        # Entries would have to take longer than this to compile before JAX offered them.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
        compilation_cache.reset_cache()
        compilation_cache._cache = cache
        compilation_cache._cache_initialized = True
    except (ImportError, AttributeError, TypeError):
        sock.close()
        return False
    return True


# --- the trusted warm-up's side ------------------------------------------------------------------
class GivenCodeOnly:
    """Whether a program the trusted warm-up compiles may be stored: only when each line of a
    notebook cell it was traced from, and each cell line on the Python stack that asked for it,
    is a line the release gives every student (`given_lines`: cell index -> line numbers)."""

    def __init__(self, given_lines: dict):
        self.given = {int(cell): {int(line) for line in lines} for cell, lines in given_lines.items()}

    def line_is_given(self, cell: int, line: int) -> bool:
        return line in self.given.get(cell, ())

    def allows(self, module, frame) -> bool:
        try:
            text = module.operation.get_asm(enable_debug_info=True, large_elements_limit=16)
        except Exception:  # noqa: BLE001 - a module we cannot read is never stored
            return False
        if not all(self.line_is_given(int(cell), int(line)) for cell, line in CELL_LOCATION.findall(text)):
            return False
        while frame is not None:
            found = CELL_FILE.fullmatch(frame.f_code.co_filename)
            if found and not self.line_is_given(int(found.group(1)), frame.f_lineno):
                return False
            frame = frame.f_back
        return True


def configure_writer(folder: str, given_lines: dict) -> bool:
    """Write the cache in `folder`, programs of the given code only (the trusted reference run).
    Returns False, and writes nothing, where JAX's compiler or cache are not the ones expected."""
    import jax

    _common_settings()
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    try:
        from jax._src import compilation_cache, compiler

        policy = GivenCodeOnly(given_lines)
        decided = threading.local()
        original = compiler.compile_or_get_cached
        base, _ = compilation_cache.get_file_cache(str(folder))

        def compile_or_get_cached(backend, computation, *args, **kwargs):
            decided.allowed = policy.allows(computation, sys._getframe(1))
            try:
                return original(backend, computation, *args, **kwargs)
            finally:
                decided.allowed = False

        class GivenCodeCache(_cache_interface()):
            """The folder's cache, storing only what `policy` allowed for the program being
            compiled on this thread."""

            _path = base._path

            def get(self, key):
                return base.get(key)

            def put(self, key, value):
                if getattr(decided, "allowed", False):
                    base.put(key, value)

        cache = GivenCodeCache()
        compilation_cache.reset_cache()
        compilation_cache._cache = cache
        compilation_cache._cache_initialized = True
        compiler.compile_or_get_cached = compile_or_get_cached
    except (ImportError, AttributeError, TypeError):
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
        return False
    return True
