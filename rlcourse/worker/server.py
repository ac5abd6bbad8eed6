"""The worker side: runs a submission's code cells and answers the grader's calls with plain data.

Everything in this module runs in the untrusted process. It decides nothing: it executes cells,
calls named functions on the arguments it is sent, and sends back what they returned (or the
exception they raised). Student code can patch anything here; the grader assumes it may.

Over 300 lines on purpose: this is everything the worker process runs after it confines itself,
in one file a reviewer can read whole to know what student code shares its process with.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback

from rlcourse.worker import protocol
from rlcourse.worker.confine import ConfinementError, confine
from rlcourse.worker.frameworks import framework_named

MAX_ERROR_CHARS = 600
HUNG = "rlcourse.Hung"
"""The error type of the reply a worker's watchdog sends when a request overstays its time."""
NOT_RUN_AGAIN = "rlcourse.NotRunAgain"
"""The error type a function known to hang raises instead of running (see `Session.refuse`)."""


class _QuietIPython:
    """Stands in for `get_ipython()` so cells with magics (`%matplotlib inline`, `!ls`) still run."""

    def run_line_magic(self, *args, **kwargs):
        return None

    run_cell_magic = run_line_magic
    system = run_line_magic
    getoutput = run_line_magic


def _transform_cell(source: str) -> str:
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return "\n".join(line for line in source.splitlines()
                         if not line.lstrip().startswith(("%", "!")))
    return TransformerManager().transform_cell(source)


def _describe(error: BaseException) -> dict:
    text = f"{type(error).__name__}: {error}"
    return {"type": type(error).__name__, "message": text[:MAX_ERROR_CHARS]}


def _where_in_student_code(error: BaseException) -> str:
    """The last frame of the traceback that lies in a notebook cell, e.g. 'cell 4, line 12'."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if frame.filename.startswith("<cell ")]
    if not frames:
        return ""
    last = frames[-1]
    return f"{last.filename.strip('<>')}, line {last.lineno}"


class NotRunAgain(Exception):
    """Raised by a function that hung (or ran out of memory) earlier in this submission."""


NotRunAgain.__name__ = NOT_RUN_AGAIN  # a name no student exception has by accident


def describe_arguments(values: dict) -> str:
    """What decides whether a call may end as an earlier one did: each argument's value if it is
    a plain scalar or string (a horizon, a method name), its shape if it is an array (jit traces
    by shape, and an endless Python loop cannot depend on traced values), its type otherwise."""
    def describe(value, depth=0):
        if value is None or isinstance(value, (bool, int, float, str)):
            return repr(value)[:80]
        shape = getattr(value, "shape", None)
        if isinstance(shape, tuple):
            return f"shape{shape}"
        if depth < 3 and isinstance(value, dict):
            return {str(key): describe(item, depth + 1) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))[:50]}
        if depth < 3 and isinstance(value, (list, tuple)):
            return [describe(item, depth + 1) for item in value[:50]]
        return type(value).__name__
    import json

    return json.dumps({name: describe(value) for name, value in values.items()}, sort_keys=True)


def _bound_arguments(function, args, kwargs) -> dict | None:
    try:
        bound = inspect.signature(inspect.unwrap(function)).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _refusing(name: str, original, refusals: dict, session):
    """`original`, except that it raises NotRunAgain instead of running on arguments it hung on
    before (`refusals["arguments"]`: described arguments -> message), or on any arguments once
    `refusals["all"]` holds a message; on other arguments it runs, for at most
    `refusals["retry_seconds"]` more."""
    def refused(*args, **kwargs):
        if refusals.get("all"):
            raise NotRunAgain(refusals["all"])
        values = _bound_arguments(original, args, kwargs)
        message = refusals["arguments"].get(describe_arguments(values)) if values is not None else None
        if message:
            raise NotRunAgain(message)
        watchdog = session.watchdog
        if not (refusals.get("retry_seconds") and watchdog is not None):
            return original(*args, **kwargs)
        before = watchdog.tighten(refusals["retry_seconds"])
        try:
            return original(*args, **kwargs)
        finally:
            watchdog.restore(before)

    refused.__name__ = refused.__qualname__ = name
    refused.__wrapped__ = original  # so a hang inside it is still found in `original`
    refused.rlcourse_refused = True
    return refused


class Session:
    """The namespace a submission's cells run in, and the operations the grader may ask for."""

    def __init__(self, framework):
        self.framework = framework
        self.namespace = {"__name__": "__main__", "get_ipython": _QuietIPython}
        self._refused: dict[str, dict] = {}
        self.watchdog = None

    def run_cell(self, *, index: int, source: str):
        code = compile(_transform_cell(source), f"<cell {index}>", "exec")
        try:
            exec(code, self.namespace)  # noqa: S102 - running the submission is this process's job
        finally:
            self._replace_refused()
        return None

    def refuse(self, *, functions: dict):
        """Make named notebook functions raise NotRunAgain(message) instead of running on the
        arguments they hung on (or on any, with "all"), from now on and whenever a cell defines
        them again, so that the cells and functions that call them fail at once.
        `functions`: {name: {"all": message or None, "arguments": {described: message}}}."""
        for name, refusals in functions.items():
            entry = self._refused.setdefault(str(name), {"all": None, "arguments": {}})
            entry["all"] = entry["all"] or refusals.get("all")
            entry["arguments"].update(refusals.get("arguments") or {})
            entry["retry_seconds"] = refusals.get("retry_seconds")
        self._replace_refused()
        return None

    def _replace_refused(self) -> None:
        for name, refusals in self._refused.items():
            current = self.namespace.get(name)
            if callable(current) and not getattr(current, "rlcourse_refused", False):
                self.namespace[name] = _refusing(name, current, refusals, self)

    def call(self, *, function: str, args: list, kwargs: dict, grad_wrt: list | None = None,
             compiled: bool = False):
        target = self._lookup_callable(function)
        args = [self.framework.to_native(value) for value in args]
        kwargs = {key: self.framework.to_native(value) for key, value in kwargs.items()}

        def compute(args, kwargs):
            value = target(*args, **kwargs)
            grad = None if grad_wrt is None else self._gradient(target, args, kwargs, grad_wrt)
            return value, grad

        if compiled:
            value, grad = self.framework.evaluate((function, tuple(grad_wrt or ())), compute, args, kwargs)
        else:
            value, grad = compute(args, kwargs)
        result = {"value": self.framework.to_plain(value)}
        if grad_wrt is not None:
            result["grad"] = self.framework.to_plain(grad)
        return result

    def get(self, *, names: list):
        found, missing = {}, []
        for name in names:
            if name in self.namespace:
                found[name] = self.framework.to_plain(self.namespace[name])
            else:
                missing.append(name)
        return {"values": found, "missing": missing}

    def _lookup_callable(self, name):
        if name not in self.namespace:
            raise LookupError(f"{name} is not defined")
        target = self.namespace[name]
        if not callable(target):
            raise TypeError(f"{name} is a {type(target).__name__}, not a function")
        return target

    def _gradient(self, target, args, kwargs, path):
        """Differentiate target with respect to one leaf of its arguments, named by a path.

        The path starts with a parameter name and may go into dicts: ["records", "old_logp"].
        """
        bound = inspect.signature(target).bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        head, *rest = path
        leaf = arguments[head]
        for key in rest:
            leaf = leaf[key]

        def with_leaf(new_leaf):
            replaced = dict(arguments)
            replaced[head] = _replace_in(replaced[head], rest, new_leaf)
            return target(**replaced)

        return self.framework.gradient(with_leaf, leaf)


def _replace_in(container, path, new_leaf):
    if not path:
        return new_leaf
    key, *rest = path
    copy = dict(container)
    copy[key] = _replace_in(container[key], rest, new_leaf)
    return copy


OPERATIONS = {"run_cell", "call", "get", "refuse"}
WATCHDOG = "watchdog_seconds"
"""The argument (removed before the operation runs) giving a request's time: when it is up,
the worker's watchdog answers in its place with where the code was (`Watchdog`)."""


def _hang_site(frame, namespace: dict) -> tuple[str, str, str]:
    """(function, arguments, where) for a stack that overstayed its time: the innermost frame of
    a notebook cell, and the innermost top-level notebook function on the stack with its
    arguments as `describe_arguments` puts them ("" if there is none, as for a loop written at a
    cell's top level)."""
    where, function, arguments = "", "", ""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<cell "):
            if not where:
                where = f"{code.co_filename.strip('<>')}, line {frame.f_lineno}"
            if not function and code.co_name != "<module>" and code.co_qualname == code.co_name:
                bound = namespace.get(code.co_name)
                if callable(bound) and getattr(inspect.unwrap(bound), "__code__", None) is code:
                    function = code.co_name
                    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
                    try:
                        arguments = describe_arguments({name: frame.f_locals[name] for name in names
                                                        if name in frame.f_locals})
                    except Exception:  # noqa: BLE001 - odd objects: blame the function alone
                        arguments = ""
        frame = frame.f_back
    return function, arguments, where


class Watchdog:
    """Answers a request that is still running when its time is up, naming the function it was
    stuck in and where (the grader cannot ask a process it is about to kill), then ends the
    worker. Works while the stuck code runs Python or releases the GIL; code that holds the GIL
    in C for good is stopped by the grader's own, slightly later, deadline without a location.

    One thread watches every request of the worker's life, started before any student code
    runs. A thread started for each request cost 0.6-0.7 ms of every call (its creation and
    the start-up handshake between two threads that take turns with the GIL), and ps1's
    training items alone make about 800 calls a submission. Between requests the thread waits
    without a timeout, so an idle worker (a spare kept for hours) spends no CPU time on it."""

    POLL_SECONDS = 0.1
    """How often a running request's deadline is looked at again (it may be moved: `tighten`)."""

    def __init__(self, sock: socket.socket, session: Session):
        self._sock = sock
        self._session = session
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._main = threading.main_thread().ident
        self._deadline = None
        self._running: tuple[int, object] | None = None
        """(the request's number in this worker's life, its id) while a request runs."""
        self._count = 0
        session.watchdog = self
        try:
            threading.Thread(target=self._watch, name="rlcourse-watchdog", daemon=True).start()
        except RuntimeError:
            pass  # no thread to be had (the pids cgroup is full): the grader's deadline holds

    def run(self, request_id, seconds, operation):
        """`operation()`'s reply, or None when the watchdog has answered (the process then ends)."""
        with self._lock:
            self._count += 1
            self._running = (self._count, request_id)
            self._deadline = time.monotonic() + float(seconds) if seconds else None
            if self._deadline is not None:
                self._changed.notify()  # wakes the watchdog if it waits for a request
        try:
            return operation()
        finally:
            # Once the watchdog has chosen to answer, it holds the lock until the process ends.
            with self._lock:
                self._running, self._deadline = None, None

    def tighten(self, seconds: float):
        """Let the running request go on for at most `seconds` more, until `restore`: a function
        that hung before, tried again on other arguments, gets a call's time, not a cell's.
        Returns the deadline to restore."""
        before = self._deadline
        if before is not None:
            self._deadline = min(before, time.monotonic() + seconds)
        return before

    def restore(self, deadline) -> None:
        self._deadline = deadline

    def _watch(self) -> None:
        while True:
            with self._lock:
                while self._running is None or self._deadline is None:
                    self._changed.wait()
                running, remaining = self._running, self._deadline - time.monotonic()
                if remaining > 0:
                    self._changed.wait(min(self.POLL_SECONDS, remaining))
                    continue
            # Its time is up: where it is stuck, found without the lock (describing the
            # arguments may take a while), then the answer, unless it finished meanwhile.
            frame = sys._current_frames().get(self._main)
            function, arguments, where = _hang_site(frame, self._session.namespace)
            del frame
            with self._lock:
                if (self._running != running or self._deadline is None
                        or time.monotonic() < self._deadline):
                    continue
                _flush_output()
                try:
                    protocol.send_message(self._sock, {"id": running[1], "ok": False, "error": {
                        "type": HUNG, "message": f"{HUNG}: {function} {arguments}"[:MAX_ERROR_CHARS],
                        "where": where}})
                finally:
                    os._exit(0)

    def send(self, reply: dict) -> None:
        with self._lock:
            protocol.send_message(self._sock, reply)


def serve(sock: socket.socket, session: Session) -> None:
    """Answer requests until the grader closes the connection."""
    watchdog = Watchdog(sock, session)
    while True:
        try:
            request = protocol.receive_message(sock)
        except protocol.WorkerGone:
            return
        reply = {"id": request.get("id")}
        op = request.get("op")
        try:
            if op not in OPERATIONS:
                raise ValueError(f"unknown operation {op!r}")
            arguments = protocol.decode(request.get("arguments", {}))
            seconds = arguments.pop(WATCHDOG, None) if isinstance(arguments, dict) else None
            result = watchdog.run(request.get("id"), seconds,
                                  lambda: getattr(session, op)(**arguments))
            reply.update(ok=True, result=protocol.encode(result))
        except BaseException as error:  # noqa: BLE001 - any student failure becomes a reply
            if isinstance(error, KeyboardInterrupt):
                raise
            reply.update(ok=False, error=dict(_describe(error), where=_where_in_student_code(error)))
        _flush_output()
        try:
            watchdog.send(reply)
        except (ValueError, TypeError) as error:
            watchdog.send({"id": request.get("id"), "ok": False,
                           "error": dict(_describe(error), where="")})


def _flush_output() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a student may have replaced or closed the stream
            pass


def redirect_output(stdout: int | None = None, stderr: int | None = None) -> None:
    """Make the submission's prints go to the pipes the grader gave this worker (`stdout` and
    `stderr`, moved onto descriptors 1 and 2; by default they already are), never to the
    protocol channel and never to a file: a file in the scratch directory is the student's to
    replace (with a link to a secret, or a FIFO that blocks its reader), a pipe is not."""
    sys.stdout.flush()
    sys.stderr.flush()
    for target, fd in ((stdout, 1), (stderr, 2)):
        if target is not None and target != fd:
            os.dup2(target, fd)
            os.close(target)
    # Writing past the file-size limit should fail the write, not kill the whole worker.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def private_home(scratch: str) -> None:
    """Point HOME, TMPDIR and matplotlib's configuration at the scratch directory: the only
    place a confined worker may write, and nothing there is shared with other students."""
    os.environ.update(HOME=scratch, TMPDIR=scratch, MPLCONFIGDIR=os.path.join(scratch, ".matplotlib"))
    tempfile.tempdir = None


def forget_the_engine() -> None:
    """Drop rlcourse's modules from `sys.modules`, last thing before any student code runs.

    What answers the grader (`serve`, the `Session`, the framework, the protocol) keeps the
    modules it was loaded with; a cell that imports rlcourse then gets fresh copies, which
    nothing that answers the grader uses. A cell once patched `rlcourse.worker.server.Session.
    _gradient` so that every gradient with respect to old_logp came back zero, and a loss that
    let gradients flow into it kept its points (issue 29, finding 8); now that patch lands on a
    copy. This covers names only: code that walks the stack's frames or the garbage collector
    to the running objects still reaches them, as it reaches anything in its own process, and
    the grader re-derives what it can from values instead (docs/threat-model.md)."""
    for name in [name for name in sys.modules if name == "rlcourse" or name.startswith("rlcourse.")]:
        del sys.modules[name]


def run_worker(fd: int, *, scratch: str, framework_name: str, compile_cache: dict | None,
               confinement: dict | None = None, output: tuple[int, int] | None = None,
               spare: bool = False) -> None:
    """Serve the grader on `fd`, printing to the grader's pipes (`output`: stdout and stderr
    descriptors; by default 1 and 2 already are). With `confinement` (the fork template's
    children), apply it first: a worker that cannot be confined as the grader asked exits
    before any student code, saying why on its stderr (which the grader quotes).
    `compile_cache`: how it uses the compilation cache (rlcourse.worker.frameworks.configure).
    A `spare` worker, prepared before its submission arrives, also starts its framework's
    backend (confined already) and sends protocol.READY before it waits for its first request."""
    sock = socket.socket(fileno=fd)
    redirect_output(*(output or (None, None)))
    if confinement is not None:
        try:
            confine(confinement)
        except (ConfinementError, OSError) as error:
            print(f"the worker could not be confined: {error}", file=sys.stderr, flush=True)
            os._exit(71)
    os.chdir(scratch)  # after confine: its private scratch mount, if any, is there now
    private_home(scratch)
    framework = framework_named(framework_name)
    framework.preload()
    framework.configure(compile_cache=compile_cache)
    if spare:
        framework.start_backend()
    session = Session(framework)
    forget_the_engine()
    try:
        if spare:
            protocol.send_message(sock, protocol.READY)
        serve(sock, session)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main(argv=None):
    parser = argparse.ArgumentParser(description="rlcourse worker: runs one submission (internal).")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--framework", required=True)
    parser.add_argument("--compile-cache", type=json.loads, help="its description, as JSON")
    options = parser.parse_args(argv)
    run_worker(options.fd, scratch=options.scratch, framework_name=options.framework,
               compile_cache=options.compile_cache)


if __name__ == "__main__":
    main()
