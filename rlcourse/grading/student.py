"""The graders' handle on one submission: call its functions, read its variables, get plain data.

`StudentCode` starts a worker on first use, runs the notebook's code cells in it, and forwards
each grader call. When a call kills or hangs the worker, that call fails (and with it the item
that made it); the next call starts a fresh worker and runs the cells again, skipping any cell
that itself crashed or hung, so one bad function does not cost the items that do not use it.
"""
from __future__ import annotations

import shutil
import time

from rlcourse.notebook import Submission
from rlcourse.worker.client import WorkerError


class StudentCode:
    MAX_STARTS = 12
    """Fresh workers one submission may have. Each restart reruns the cells (a few seconds), so
    the submission's total time (`submission_seconds`) is the real bound; this cap only stops a
    notebook that takes every worker down from looping."""

    def __init__(self, submission: Submission, launcher, *, submission_seconds: float = 900.0):
        self.submission = submission
        self.launcher = launcher
        self.limits = launcher.options.limits
        self.deadline = time.monotonic() + submission_seconds
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
        try:
            reply = self._request("call", arguments, timeout=self.limits.call_seconds)
        except WorkerError as error:
            if error.kind in ("raised", "not_implemented"):
                raise WorkerError(error.kind, f"calling {function} raised {error}",
                                  where=error.where) from None
            if error.kind == "timeout":
                raise WorkerError(error.kind, f"{function} did not return: {error}") from None
            if error.kind == "worker_crashed":
                raise WorkerError(error.kind, f"calling {function}: {error}") from None
            raise
        if not isinstance(reply, dict) or "value" not in reply or (
                "grad_wrt" in arguments and "grad" not in reply):
            raise WorkerError("bad_reply", f"the answer to a call of {function} is incomplete")
        return reply

    def get(self, *names: str) -> dict:
        """Values of top-level notebook variables; a missing name raises WorkerError."""
        reply = self._request("get", dict(names=list(names)), timeout=self.limits.call_seconds)
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

    def output_tail(self) -> str:
        self._wait_for_start()
        return self._worker.output_tail("stdout.txt") if self._worker else ""

    def _request(self, op, arguments, *, timeout):
        self._wait_for_start()
        worker = self._ready_worker()
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise WorkerError("timeout", "the submission used up its total time")
        return worker.request(op, arguments, timeout=min(timeout, remaining))

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
        """A fresh worker; a launcher that cannot start one (its template was killed by an
        earlier submission, say) is restarted once before the failure counts against this one."""
        try:
            return self.launcher.launch()
        except Exception:  # noqa: BLE001 - any launch failure, whatever killed the launcher
            try:
                self.launcher.restart()
                return self.launcher.launch()
            except Exception as error:  # noqa: BLE001
                raise WorkerError("worker_crashed", f"no worker could be started ({error})") from None

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
            try:
                self._worker.request("run_cell", dict(index=cell.index, source=cell.source),
                                     timeout=min(self.limits.cell_seconds,
                                                 max(0.1, self.deadline - time.monotonic())))
            except WorkerError as error:
                label = f"cell {cell.index}" + (f" ({cell.grade_id})" if cell.grade_id else "")
                self._cell_errors.setdefault(cell.index, f"{label}: {error}")
                if not self._worker.alive:
                    self._bad_cells.add(cell.index)
                    return False
        return True

    @property
    def cell_errors(self) -> list[str]:
        return [self._cell_errors[index] for index in sorted(self._cell_errors)]
