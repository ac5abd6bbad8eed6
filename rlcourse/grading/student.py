"""The graders' handle on one submission: call its functions, read its variables, get plain data.

`StudentCode` starts a worker on first use, runs the notebook's code cells in it, and forwards
each grader call. When a call kills or hangs the worker, that call fails (and with it the item
that made it); the next call starts a fresh worker and runs the cells again, skipping any cell
that itself crashed or hung, so one bad function does not cost the items that do not use it.

Hangs are paid once per submission. Each request carries its time to the worker, whose watchdog
answers when it is up with the notebook function the code was stuck in, its arguments and where
(rlcourse.worker.server.Watchdog). Then:

* a cell that hung (or took its worker down) is not run again in later workers; the cells after
  it still run;
* a function that hung, in a grader's call or while a cell ran, is not run again on the same
  arguments: the same grader call fails at once with the same message, and in every later worker
  the function raises that message instead of running on them, so the cells and functions that
  call it so (ps1's `train` calls `exact_return`) fail at once too;
* on other arguments it is tried, since they may finish (a loop reached only for one horizon),
  for at most a call's time even inside a cell; once it has hung twice it is not run again on
  any arguments. A call that raised MemoryError is refused on the same
  arguments at once; a function whose worker the kernel's memory cgroup killed is refused on any
  arguments at once (each such kill costs a worker); a call that merely took its worker down
  (os._exit) costs only itself, as a restart is cheap.

"The same arguments" are each argument's value when it is a plain scalar or string and its shape
when it is an array (`describe_arguments`): whether a Python loop ends depends on those, not on
the numbers inside arrays a jit trace never sees. A ps1 notebook whose `exact_return` loops
forever took 15 minutes (the whole budget) before these rules: every cell and item that used it
waited out its limit. Now it costs two cell limits, and every item that does not need
`exact_return` grades in full.

Over 300 lines on purpose: `StudentCode` is one object whose restart, hang and refusal rules
depend on each other; split, each rule would be read without the others it relies on.
"""
from __future__ import annotations

import json
import re
import shutil
import time

from rlcourse.course.submission import Submission
from rlcourse.worker.cgroup import MemoryCgroup
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.server import HUNG, NOT_RUN_AGAIN, WATCHDOG, describe_arguments

HANGS_BEFORE_ALL = 2
"""A function that hung on this many different arguments is not run again on any."""

GRACE_SECONDS = 2.0
"""How long past a request's time the grader waits for the worker's watchdog before it kills the
worker itself (code stuck in C holding the GIL never lets the watchdog run)."""


def cell_number(index: int) -> int:
    """The number every message gives the cell at `index` (its position among all the
    notebook's cells, from 0): its place from the top, counted from 1 as a reader counts them.
    The feedback page's "Your code" headings count the same way; the worker names the cell's
    code by it too, so a traceback's "cell 13, line 4" is the same cell as "cell 13 (...)"."""
    return index + 1


class _Hung(Exception):
    """A request that overstayed its time: the worker's watchdog said where, or it said nothing."""

    def __init__(self, function: str = "", where: str = "", arguments: str = ""):
        super().__init__(function)
        self.function = function
        self.where = where
        self.arguments = arguments


class StudentCode:
    MAX_STARTS = 12
    """Fresh workers one submission may have. Each restart reruns the cells (a few seconds), so
    the submission's total time (`submission_seconds`) is the real bound; this cap only stops a
    notebook that takes every worker down from looping."""

    def __init__(self, submission: Submission, launcher, *, submission_seconds: float | None = None,
                 reference_seconds: dict | None = None, call_limits: dict | None = None):
        self.submission = submission
        self.launcher = launcher
        self.limits = launcher.options.limits
        if submission_seconds is None:
            submission_seconds = self.limits.submission_seconds
        self.deadline = time.monotonic() + submission_seconds
        self.call_limits = dict(call_limits or {})
        """Seconds per call of named functions (`rlcourse.grading.pipeline.call_limits`)."""
        self.reference_seconds = dict(reference_seconds or {})
        """The reference solution's slowest cell and call ({"cell": s, "call": s}), for messages."""
        self._refused: dict[str, dict] = {}
        """Functions not run again, as the worker is told (`Session.refuse`): {name: {"all":
        (kind, message, where) or None, "arguments": {described arguments: message}, "hangs": n}}."""
        self._refused_calls: dict[tuple[str, str], tuple[str, str, str]] = {}
        """Grader calls that hung, by function and arguments: asked again, they fail at once."""
        self._memory: MemoryCgroup | None = None
        """The memory cgroup of the current worker, if the machine has one."""
        self.longest = {"cell": 0.0, "call": 0.0}
        self.engine_failure: str | None = None
        """Why no worker could be started at all, if so: the engine failed, not the student."""
        self.longest_calls: dict[str, float] = {}
        self._last_seconds = 0.0
        """The longest call of each function (the reference run's set per-function limits)."""
        """The longest cell and call so far, in seconds (the reference run's are recorded)."""
        self._cell_errors: dict[int, str] = {}
        self.timings: dict[str, float] = {}
        self._worker = None
        self._starts = 0
        self._bad_cells: set[int] = set()
        self._starting = None

    # --- what graders call --------------------------------------------------------------------
    def call(self, function: str, *args, compiled: bool = False, **kwargs):
        """Call `function(*args, **kwargs)` in the submission; returns plain numpy data.

        `compiled=True` asks the worker to compile the call once per signature (jax.jit), which
        pays off for a function called many times with arrays of the same shapes; code that
        cannot be compiled runs as written, so the result never depends on it.
        """
        return self._call(function, dict(function=function, args=list(args), kwargs=kwargs,
                                         compiled=compiled))["value"]

    def value_and_grad(self, function: str, *args, wrt: str | tuple, compiled: bool = False, **kwargs):
        """Value and gradient with respect to one argument (or a key inside a dict argument)."""
        path = [wrt] if isinstance(wrt, str) else list(wrt)
        reply = self._call(function, dict(function=function, args=list(args), kwargs=kwargs,
                                          grad_wrt=path, compiled=compiled))
        return reply["value"], reply["grad"]

    def _call(self, function: str, arguments: dict) -> dict:
        refused = self._refused.get(function, {}).get("all")
        key = (function, describe_arguments({name: arguments.get(name) for name in
                                             ("args", "kwargs", "grad_wrt")}))
        refused = refused or self._refused_calls.get(key)
        if refused:
            kind, message, where = refused
            raise WorkerError(kind, message, where=where)
        try:
            reply = self._request("call", arguments, timeout=self._call_limit(function))
            self.longest_calls[function] = max(self.longest_calls.get(function, 0.0),
                                                self._last_seconds)
        except _Hung as hung:
            message = self._hang_message(function, hung, "call", again=False)
            final = self._note_hang(hung.function or function, hung.arguments, message, hung.where)
            self._refused_calls[key] = ("timeout", final, hung.where)
            raise WorkerError("timeout", final, where=hung.where) from None
        except WorkerError as error:
            text = str(error)
            if error.kind == "raised" and text.startswith(NOT_RUN_AGAIN + ": "):
                # The message says where the function it called hung.
                raise WorkerError("timeout", f"calling {function}: {text[len(NOT_RUN_AGAIN) + 2:]}") from None
            if error.kind == "raised" and text.startswith("MemoryError"):
                # Refused on these arguments only: the worker is still alive, and other arguments
                # (another horizon) may well fit, as for a loop reached only for some of them.
                message = (f"calling {function} ran out of memory ({self.limits.memory_bytes >> 20} MB "
                           f"allowed); it is not run again on these arguments")
                self._refused_calls[key] = ("raised", message, error.where)
                raise WorkerError("raised", message, where=error.where) from None
            if error.kind in ("raised", "not_implemented"):
                raise WorkerError(error.kind, f"calling {function} raised {error}",
                                  where=error.where) from None
            if error.kind == "timeout":  # the submission's own time is up
                raise WorkerError(error.kind, f"{function} did not return: {error}") from None
            if error.kind == "worker_crashed":
                if self._out_of_memory():
                    message = (f"calling {function}: the worker was killed for holding more than "
                               f"{self.limits.resident_bytes >> 20} MB of memory; it is not run again")
                    self._refuse_all(function, "worker_crashed", message)
                    raise WorkerError(error.kind, message) from None
                raise WorkerError(error.kind, f"calling {function}: {error}") from None
            raise
        if not isinstance(reply, dict) or "value" not in reply or (
                "grad_wrt" in arguments and "grad" not in reply):
            raise WorkerError("bad_reply", f"the answer to a call of {function} is incomplete")
        return reply

    def get(self, *names: str) -> dict:
        """Values of top-level notebook variables; a missing name raises WorkerError."""
        try:
            reply = self._request("get", dict(names=list(names)), timeout=self.limits.call_seconds)
        except _Hung as hung:
            raise WorkerError("timeout", self._hang_message("reading " + ", ".join(names), hung,
                                                            "call", again=False),
                              where=hung.where) from None
        if not (isinstance(reply, dict) and isinstance(reply.get("values"), dict)
                and isinstance(reply.get("missing"), list)
                and set(reply["values"]) | set(map(str, reply["missing"])) >= set(names)):
            raise WorkerError("bad_reply", "the answer listing notebook variables is malformed")
        if reply["missing"]:
            raise WorkerError("missing_name", "not defined after running the notebook: "
                              + ", ".join(map(str, reply["missing"])))
        return reply["values"]

    # --- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker and run the cells now, in a background thread, so they run while
        the grader process collects its items; the first request waits for them. Failures are
        not raised here: the first request meets them as it would have."""
        import threading

        self._starting = threading.Thread(target=self._start_quietly, name="rlcourse-cells", daemon=True)
        self._starting.start()

    def _start_quietly(self) -> None:
        try:
            self._ready_worker()
        except Exception:  # noqa: BLE001 - the first request retries and reports it
            pass

    def _wait_for_start(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None:
            starting.join()

    def close(self) -> None:
        self._wait_for_start()
        if self._worker is not None:
            self._worker.kill()
            shutil.rmtree(self._worker.scratch, ignore_errors=True)
            self._worker = None
        self._release_memory_group()

    def output_tail(self) -> str:
        self._wait_for_start()
        return self._worker.output_tail("stdout.txt") if self._worker else ""

    def _request(self, op, arguments, *, timeout):
        self._wait_for_start()
        worker = self._ready_worker()
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerError("timeout", f"the submission used up its total time "
                              f"({self._total_seconds():g} s)")
        return self._watched(worker, op, arguments, min(timeout, remaining))

    def _watched(self, worker, op: str, arguments: dict, seconds: float):
        """`worker.request` with a watchdog of `seconds`; raises _Hung when the time is up
        (the worker is then stopped)."""
        started = time.perf_counter()
        try:
            reply = worker.request(op, dict(arguments, **{WATCHDOG: seconds}),
                                   timeout=seconds + GRACE_SECONDS)
            scope = "cell" if op == "run_cell" else "call"
            self._last_seconds = time.perf_counter() - started  # the worker's time, no waiting
            self.longest[scope] = max(self.longest[scope], self._last_seconds)
            return reply
        except WorkerError as error:
            if error.kind == "raised" and str(error).startswith(HUNG + ": "):
                worker.kill()
                function, _, arguments = str(error)[len(HUNG) + 2:].partition(" ")
                try:
                    json.loads(arguments)
                except ValueError:
                    arguments = ""  # cut short: the function is then refused on any arguments
                if not re.fullmatch(r"[A-Za-z_]\w*", function):
                    function, arguments = "", ""
                raise _Hung(function, error.where, arguments) from None
            if error.kind == "timeout" and not worker.alive:
                raise _Hung() from None
            raise

    def _call_limit(self, function: str) -> float:
        """The time one call of `function` may take: `call_limits[function]` when the reference
        run measured it (so a quick function is not given a training run's time), else the
        assignment's `call_seconds`."""
        return min(self.limits.call_seconds, self.call_limits.get(function, self.limits.call_seconds))

    def _total_seconds(self) -> float:
        return self.limits.submission_seconds

    def _hang_message(self, subject: str, hung: _Hung, scope: str, *, context: str = "",
                      again: bool = True) -> str:
        """What a student reads about code that did not finish: what, where, the limit, and how
        long the reference solution takes."""
        limit = self._call_limit(subject) if scope == "call" else self.limits.cell_seconds
        message = f"{subject} did not finish within {limit:g} s{context} (the limit for one {scope}"
        reference = self.reference_seconds.get(scope)
        own = (self.reference_seconds.get("calls") or {}).get(subject) if scope == "call" else None
        if isinstance(own, (int, float)):
            message += f"; the reference solution's slowest call of {subject} takes {own:.2g} s"
        elif reference is not None:
            message += f"; the reference solution's slowest {scope} takes {reference:.2g} s"
        message += ")"
        if hung.function and hung.function != subject:
            message += f"; it was still running {hung.function}"
        return message + ("; it is not run again" if again else "")

    def _note_hang(self, function: str, arguments: str, message: str, where: str) -> str:
        """Record that `function` hung on `arguments` (as `describe_arguments` puts them; "" when
        the watchdog could not say): it is not run again on those, or, after HANGS_BEFORE_ALL
        hangs, on any. Returns `message` completed with what happens next."""
        entry = self._refused.setdefault(function, {"all": None, "arguments": {}, "hangs": 0})
        entry["hangs"] += 1
        if entry["hangs"] >= HANGS_BEFORE_ALL:
            message += f"; having hung {entry['hangs']} times, {function} is not run again"
            entry["all"] = ("timeout", message, where)
        else:
            message += f"; {function} is not run again on the same arguments"
            if arguments:
                entry["arguments"][arguments] = message + (f" (at {where})" if where else "")
        self._push_refusals()
        return message

    def _refuse_all(self, function: str, kind: str, message: str, where: str = "") -> None:
        """From now on `function` fails at once with `message`, whatever its arguments."""
        entry = self._refused.setdefault(function, {"all": None, "arguments": {}, "hangs": 0})
        entry["all"] = entry["all"] or (kind, message, where)
        self._push_refusals()

    def _push_refusals(self) -> None:
        if self._worker is not None and self._worker.alive:
            self._send_refusals(self._worker)

    def _send_refusals(self, worker) -> None:
        if not self._refused:
            return
        functions = {name: {"arguments": entry["arguments"], "retry_seconds": self.limits.call_seconds,
                            "all": entry["all"] and entry["all"][1] + (
                                f" (at {entry['all'][2]})" if entry["all"][2] else "")}
                     for name, entry in self._refused.items()}
        try:
            worker.request("refuse", dict(functions=functions), timeout=10)
        except WorkerError:
            pass  # the worker died: the next request starts another, which is told again

    def _ready_worker(self):
        if self._worker is not None and self._worker.alive:
            return self._worker
        if self._worker is not None:
            shutil.rmtree(self._worker.scratch, ignore_errors=True)
        if self._starts >= self.MAX_STARTS:
            raise WorkerError("worker_crashed", f"the notebook's process stopped {self._starts} "
                              "times; no further calls are made")
        self._starts += 1
        started = time.perf_counter()
        self._worker = self._launch()
        self.timings.setdefault("worker_start", time.perf_counter() - started)
        self._run_cells()
        return self._worker

    def _launch(self):
        """A fresh worker, told which functions not to run; a launcher that cannot start one (its
        template was killed by an earlier submission, say) is restarted once before the failure
        counts against this one."""
        try:
            worker = self.launcher.launch()
        except Exception:  # noqa: BLE001 - any launch failure, whatever killed the launcher
            try:
                self.launcher.restart()
                worker = self.launcher.launch()
            except Exception as error:  # noqa: BLE001
                # The engine's failure, not the student's: the grader reports it as such.
                self.engine_failure = f"no worker could be started ({error})"
                raise WorkerError("worker_crashed", self.engine_failure) from None
        self._release_memory_group()
        # A spare worker's launcher made its memory cgroup when it forked it, as is done here.
        self._memory = getattr(worker, "memory", None) or MemoryCgroup.for_worker(
            self.limits.resident_bytes, getattr(worker, "_cgroup", None))
        self._send_refusals(worker)
        return worker

    def _release_memory_group(self) -> None:
        if self._memory is not None:
            self._memory.remove()
            self._memory = None

    def _out_of_memory(self) -> bool:
        return self._memory is not None and self._memory.oom_killed()

    def _run_cells(self) -> None:
        """Run every code cell in order; a cell that takes the worker down is dropped, and the
        cells are run again from the top in a fresh worker, so later cells still see earlier ones."""
        started = time.perf_counter()
        while not self._run_cells_once():
            self._worker = self._launch()
        self.timings.setdefault("run_cells", time.perf_counter() - started)

    def _run_cells_once(self) -> bool:
        for cell in self.submission.cells:
            if cell.index in self._bad_cells:
                continue
            label = f"cell {cell_number(cell.index)}" + (f" ({cell.grade_id})" if cell.grade_id else "")
            try:
                self._watched(self._worker, "run_cell",
                              dict(index=cell_number(cell.index), source=cell.source),
                              min(self.limits.cell_seconds, max(0.1, self.deadline - time.monotonic())))
            except _Hung as hung:
                # A cell that hung is not run again; the function it was stuck in is not run
                # again either, so the cells after it that call it fail at once.
                self._bad_cells.add(cell.index)
                # A function that hung before is retried for a call's time only (Session.refuse).
                scope = "call" if hung.function in self._refused else "cell"
                message = self._hang_message(label, hung, scope)
                self._cell_errors.setdefault(cell.index, message + (f" (at {hung.where})" if hung.where else ""))
                if hung.function:
                    self._note_hang(hung.function, hung.arguments, self._hang_message(
                        hung.function, hung, scope, context=f" when {label} called it", again=False),
                        hung.where)
                return False
            except WorkerError as error:
                text = str(error)
                if error.kind == "raised" and text.startswith(NOT_RUN_AGAIN + ": "):
                    text = text[len(NOT_RUN_AGAIN) + 2:]
                self._cell_errors.setdefault(cell.index, f"{label}: {text}")
                if not self._worker.alive:
                    self._bad_cells.add(cell.index)
                    return False
        return True

    @property
    def cell_errors(self) -> list[str]:
        return [self._cell_errors[index] for index in sorted(self._cell_errors)]
