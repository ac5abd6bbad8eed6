"""StudentCode: one bad cell or call costs only itself; the rest of the notebook still answers."""
import nbformat
import pytest

from rlcourse.grading.student import StudentCode
from rlcourse.notebook import load_submission
from rlcourse.worker.client import Limits, WorkerError, WorkerOptions, make_launcher

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
        assert len(student.cell_errors) == 1 and student.cell_errors[0].startswith("cell 1:")
    finally:
        student.close()


def test_a_hanging_cell_times_out_and_the_rest_of_the_notebook_runs(tmp_path, launcher):
    student = student_for(tmp_path, launcher, "while True:\n    pass", "answer = 42")
    try:
        assert student.get("answer") == {"answer": 42}
        assert "no answer within 2 s" in student.cell_errors[0]
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
    student = student_for(tmp_path, launcher, "import os\ndef bad():\n    os._exit(3)")
    try:
        kinds = set()
        for _ in range(StudentCode.MAX_STARTS + 2):
            with pytest.raises(WorkerError) as error:
                student.call("bad")
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
