"""StudentCode: one bad cell or call costs only itself; the rest of the notebook still answers."""
import time

import nbformat
import numpy as np
import pytest

from rlcourse.grading.student import StudentCode
from rlcourse.course.submission import load_submission
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def launcher():
    launcher = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=2, call_seconds=2)), strategy="fork")
    yield launcher
    launcher.close()


def student_for(tmp_path, launcher, *sources):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    path = tmp_path / "nb.ipynb"
    nbformat.write(notebook, path)
    return StudentCode(load_submission(path), launcher)


def test_a_cell_that_kills_the_process_is_dropped_and_later_cells_still_see_earlier_ones(tmp_path, launcher):
    student = student_for(tmp_path, launcher, "base = 10", "import os; os._exit(1)",
                          "def f(x):\n    return base + x")
    try:
        assert student.call("f", 5) == 15
        assert len(student.cell_errors) == 1 and student.cell_errors[0].startswith("cell 2:")
    finally:
        student.close()


def test_a_hanging_cell_times_out_and_the_rest_of_the_notebook_runs(tmp_path, launcher):
    student = student_for(tmp_path, launcher, "while True:\n    pass", "answer = 42")
    try:
        assert student.get("answer") == {"answer": 42}
        assert student.cell_errors[0].startswith("cell 1 did not finish within 2 s")
    finally:
        student.close()


def test_a_call_that_crashes_costs_only_that_call(tmp_path, launcher):
    student = student_for(tmp_path, launcher, "import os\ncalls = []\n"
                          "def bad():\n    os._exit(3)\n"
                          "def good():\n    calls.append(1)\n    return len(calls)")
    try:
        assert student.call("good") == 1
        with pytest.raises(WorkerError) as error:
            student.call("bad")
        assert error.value.kind == "worker_crashed" and "calling bad" in str(error.value)
        assert student.call("good") == 1  # a fresh worker: the cells ran again, state is new
    finally:
        student.close()


def test_a_notebook_that_crashes_every_worker_stops_being_restarted(tmp_path, launcher):
    student = student_for(tmp_path, launcher, "import os\n" + "".join(
        f"def bad{n}():\n    os._exit(3)\n" for n in range(StudentCode.MAX_STARTS + 2)))
    try:
        kinds = set()
        for n in range(StudentCode.MAX_STARTS + 2):
            with pytest.raises(WorkerError) as error:
                student.call(f"bad{n}")
            kinds.add(error.value.kind)
        assert kinds == {"worker_crashed"}
        assert "no further calls are made" in str(error.value)
    finally:
        student.close()


def test_a_submission_that_kills_the_template_costs_only_itself(tmp_path):
    """A forked worker's parent is the shared template; killing it must not zero later students.
    (Landlock's signal scope denies the kill where the kernel has it: here it is left out, so
    that the restart is what is tested.)"""
    launcher = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=2, call_seconds=2), landlock=False),
                             strategy="fork")
    hostile = student_for(tmp_path, launcher, "import os, signal\ndef attack():\n"
                          "    os.kill(os.getppid(), signal.SIGKILL)\n    return 1")
    try:
        hostile.call("attack")  # the worker itself lives on; its template does not
    finally:
        hostile.close()
    (tmp_path / "next").mkdir()
    honest = student_for(tmp_path / "next", launcher, "def ok():\n    return 7")
    try:
        assert honest.call("ok") == 7
    finally:
        honest.close()
        launcher.close()


# --- hangs are paid once --------------------------------------------------------------------------
class CountingLauncher:
    """The module's launcher, counting the workers it starts and each cell they are asked to run."""

    def __init__(self, launcher):
        self.launcher = launcher
        self.options = launcher.options
        self.launches = 0
        self.cells_run = []

    def launch(self):
        self.launches += 1
        worker = self.launcher.launch()
        request = worker.request

        def counting(op, arguments, **kwargs):
            if op == "run_cell":
                self.cells_run.append(arguments["index"])
            return request(op, arguments, **kwargs)

        worker.request = counting
        return worker

    def restart(self):
        self.launcher.restart()


def counted_student(tmp_path, launcher, *sources):
    counting = CountingLauncher(launcher)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(notebook, tmp_path / "nb.ipynb")
    return StudentCode(load_submission(tmp_path / "nb.ipynb"), counting), counting


HANGS = "def spin(x):\n    while True:\n        pass\n"


def test_a_function_that_hung_fails_at_once_on_the_same_arguments_and_after_two_hangs_on_any(
        tmp_path, launcher):
    student, counting = counted_student(tmp_path, launcher, HANGS,
                                        "def calls_spin(x):\n    return spin(x) + 1",
                                        "def fine(x):\n    return 2 * x")
    try:
        with pytest.raises(WorkerError) as first:
            student.call("spin", 1)
        assert first.value.kind == "timeout"
        assert "spin did not finish within 2 s" in str(first.value)
        assert "not run again on the same arguments" in str(first.value)
        assert first.value.where in ("cell 1, line 2", "cell 1, line 3")  # where the watchdog saw it
        started = time.monotonic()
        with pytest.raises(WorkerError) as again:
            student.call("spin", 1)
        assert (again.value.kind, str(again.value), again.value.where) == (
            "timeout", str(first.value), first.value.where)
        with pytest.raises(WorkerError) as through:  # in the worker: spin(1) is refused there too
            student.call("calls_spin", 1)
        assert through.value.kind == "timeout" and "spin did not finish" in str(through.value)
        assert time.monotonic() - started < 1.5, "a call on the same arguments waited for its time"
        with pytest.raises(WorkerError) as second:  # other arguments may finish: they are tried
            student.call("spin", 2)
        assert "having hung 2 times, spin is not run again" in str(second.value)
        started = time.monotonic()
        for call in (("spin", 3), ("calls_spin", 4)):
            with pytest.raises(WorkerError) as later:
                student.call(*call)
            assert later.value.kind == "timeout" and "having hung 2 times" in str(later.value)
        assert time.monotonic() - started < 1.5, "a function that hung twice was run again"
        assert student.call("fine", 4) == 8
        assert counting.launches == 3
    finally:
        student.close()


def test_a_hung_cell_is_not_run_again_and_what_it_hung_in_fails_at_once_in_later_cells(tmp_path, launcher):
    student, counting = counted_student(
        tmp_path, launcher, HANGS, "base = 10", "stuck = spin(1)", "also = spin(1)",
        "import os\ndef crash():\n    os._exit(3)", "def after(x):\n    return base + x")
    try:
        started = time.monotonic()
        assert student.call("after", 5) == 15
        assert time.monotonic() - started < 2 + 2 + 1.5, "a second cell waited out its time"
        with pytest.raises(WorkerError):
            student.call("crash")  # takes a worker down: the cells run again, but not cell 3
        assert student.call("after", 1) == 11
        assert counting.cells_run.count(3) == 1, counting.cells_run
        assert counting.cells_run.count(1) == 3 and counting.cells_run.count(6) == 2
        errors = student.cell_errors
        assert errors[0].startswith("cell 3 did not finish within 2 s")
        assert "still running spin" in errors[0] and "(at cell 1, line " in errors[0]
        assert errors[1].startswith("cell 4: spin did not finish within 2 s when cell 3 called it")
        assert "not run again on the same arguments" in errors[1]
        with pytest.raises(WorkerError) as call:
            student.call("spin", 1)
        assert call.value.kind == "timeout" and "when cell 3 called it" in str(call.value)
    finally:
        student.close()


def test_a_top_level_loop_blames_no_function(tmp_path, launcher):
    student, counting = counted_student(tmp_path, launcher, "def f(x):\n    return x",
                                        "while True:\n    pass", "g = f(3)")
    try:
        assert student.get("g") == {"g": 3}
        assert student.call("f", 4) == 4
        assert student.cell_errors[0].startswith("cell 2 did not finish within 2 s")
        assert "still running" not in student.cell_errors[0]
    finally:
        student.close()


def test_a_call_that_runs_out_of_memory_fails_at_once_on_the_same_arguments(tmp_path):
    launcher = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=5, call_seconds=5,
                                                           memory_bytes=1 << 30)), strategy="fork")
    student, counting = counted_student(tmp_path, launcher, "import numpy as np\n"
                                        "def hog(n):\n    return np.ones((n, 1 << 28)).sum()\n"
                                        "def fine():\n    return 1")
    try:
        with pytest.raises(WorkerError) as first:
            student.call("hog", 8)
        assert "ran out of memory" in str(first.value)
        with pytest.raises(WorkerError) as later:
            student.call("hog", 8)  # the same arguments: refused at once
        assert str(later.value) == str(first.value)
        assert student.call("hog", 0) == 0.0  # other arguments that fit still run
        assert student.call("fine") == 1
    finally:
        student.close()
        launcher.close()


@pytest.mark.serial
def test_a_function_that_hung_is_retried_in_a_cell_for_a_calls_time_only(tmp_path):
    launcher = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=10, call_seconds=1)), strategy="fork")
    student, counting = counted_student(tmp_path, launcher, HANGS, "stuck = spin(1)", "other = spin(2)",
                                        "answer = 42")
    try:
        started = time.monotonic()
        assert student.get("answer") == {"answer": 42}
        elapsed = time.monotonic() - started
        first, second = student.cell_errors
        assert first.startswith("cell 2 did not finish within 10 s (the limit for one cell")
        assert second.startswith("cell 3 did not finish within 1 s (the limit for one call")
        assert "still running spin" in second
        assert elapsed < 10 + 10, "the second cell waited out a cell's time"
        with pytest.raises(WorkerError) as call:
            student.call("spin", 3)
        assert "having hung 2 times" in str(call.value)
    finally:
        student.close()
        launcher.close()


def test_a_cell_that_patches_the_workers_own_modules_changes_nothing_the_grader_asks(tmp_path, launcher):
    """Issue 29, finding 8: a cell imported rlcourse.worker.server and patched the gradient path;
    now the worker forgets its modules before any cell runs, and the import gets copies that
    nothing answering the grader uses."""
    student = student_for(tmp_path, launcher,
                          "import rlcourse.worker.server as server\n"
                          "import rlcourse.worker.protocol as protocol\n"
                          "server.Session.call = lambda self, **request: {'value': 42}\n"
                          "server.Session._gradient = lambda *args: 42\n"
                          "protocol.encode = lambda value, _depth=0: {'value': 42}\n",
                          "def f(x):\n    return x + 1")
    try:
        assert student.cell_errors == []
        assert student.call("f", 1) == 2
    finally:
        student.close()


def test_a_cell_that_rebinds_jax_grad_changes_only_its_own_gradients(tmp_path):
    """The worker differentiates with jax.grad as it was before any cell ran."""
    launcher = make_launcher(WorkerOptions("jax", Limits(cell_seconds=30, call_seconds=30)), strategy="fork")
    try:
        student = student_for(tmp_path, launcher,
                              "import jax\nimport jax.numpy as jnp\n"
                              "jax.grad = lambda f, *args, **kwargs: (lambda x: jnp.zeros_like(x))\n"
                              "jax.jit = lambda f, *args, **kwargs: (lambda *a, **k: jnp.zeros(3))\n"
                              "own = jax.grad(lambda x: jnp.sum(x ** 2))(jnp.ones(3))\n"
                              "def f(x):\n    return jnp.sum(x ** 2)")
        try:
            assert list(student.get("own")["own"]) == [0, 0, 0]  # the student's own call: theirs
            for compiled in (False, True):
                value, grad = student.value_and_grad("f", np.ones(3, dtype=np.float32), wrt="x",
                                                     compiled=compiled)
                assert value == 3 and list(grad) == [2, 2, 2], compiled
        finally:
            student.close()
    finally:
        launcher.close()
