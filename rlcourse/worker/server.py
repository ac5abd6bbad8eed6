"""The worker side: runs a submission's code cells and answers the grader's calls with plain data.

Everything in this module runs in the untrusted process. It decides nothing: it executes cells,
calls named functions on the arguments it is sent, and sends back what they returned (or the
exception they raised). Student code can patch anything here; the grader assumes it may.
"""
from __future__ import annotations

import argparse
import inspect
import os
import signal
import socket
import sys
import tempfile
import traceback

from rlcourse.worker import protocol
from rlcourse.worker.confine import ConfinementError, confine
from rlcourse.worker.frameworks import framework_named

MAX_ERROR_CHARS = 600


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


class Session:
    """The namespace a submission's cells run in, and the operations the grader may ask for."""

    def __init__(self, framework):
        self.framework = framework
        self.namespace = {"__name__": "__main__", "get_ipython": _QuietIPython}

    def run_cell(self, *, index: int, source: str):
        code = compile(_transform_cell(source), f"<cell {index}>", "exec")
        exec(code, self.namespace)  # noqa: S102 - running the submission is this process's job
        return None

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


OPERATIONS = {"run_cell", "call", "get"}


def serve(sock: socket.socket, session: Session) -> None:
    """Answer requests until the grader closes the connection."""
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
            result = getattr(session, op)(**arguments)
            reply.update(ok=True, result=protocol.encode(result))
        except BaseException as error:  # noqa: BLE001 - any student failure becomes a reply
            if isinstance(error, KeyboardInterrupt):
                raise
            reply.update(ok=False, error=dict(_describe(error), where=_where_in_student_code(error)))
        _flush_output()
        try:
            protocol.send_message(sock, reply)
        except (ValueError, TypeError) as error:
            protocol.send_message(sock, {"id": request.get("id"), "ok": False,
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


def run_worker(fd: int, *, scratch: str, framework_name: str, compile_cache: str | None,
               cache_writable: bool, confinement: dict | None = None,
               output: tuple[int, int] | None = None) -> None:
    """Serve the grader on `fd`, printing to the grader's pipes (`output`: stdout and stderr
    descriptors; by default 1 and 2 already are). With `confinement` (the fork template's
    children), apply it first: a worker that cannot be confined as the grader asked exits
    before any student code, saying why on its stderr (which the grader quotes)."""
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
    framework.configure(compile_cache=compile_cache, cache_writable=cache_writable)
    try:
        serve(sock, Session(framework))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main(argv=None):
    parser = argparse.ArgumentParser(description="rlcourse worker: runs one submission (internal).")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--framework", required=True)
    parser.add_argument("--compile-cache")
    parser.add_argument("--cache-writable", action="store_true")
    options = parser.parse_args(argv)
    run_worker(options.fd, scratch=options.scratch, framework_name=options.framework,
               compile_cache=options.compile_cache, cache_writable=options.cache_writable)


if __name__ == "__main__":
    main()
