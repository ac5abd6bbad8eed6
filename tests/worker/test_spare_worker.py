"""The fork launcher's spare worker (issue 35, item 2): prepared before its submission arrives,
handed out once, to one submission of the launcher's own assignment, and only while healthy."""
import os
import select
import signal

import time

import nbformat
import numpy as np
import pytest

from rlcourse.course.submission import load_submission
from rlcourse.grading.student import StudentCode
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.launchers import SPARE_SWITCH, WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.processes import wait_for_exit
from rlcourse.worker.sandbox import bwrap_status

pytestmark = pytest.mark.slow

LIMITS = Limits(call_seconds=10, cell_seconds=10, memory_bytes=2 << 30, file_bytes=1 << 20)
ISOLATIONS = ["rlimits"] + (["bwrap"] if bwrap_status()[0] else [])


@pytest.fixture(params=ISOLATIONS)
def launcher(request):
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, isolation=request.param, spare=True))
    yield launcher
    launcher.close()


def run(worker, source):
    return worker.request("run_cell", {"index": 0, "source": source}, timeout=30)


def the_spare(launcher):
    """The spare the launcher prepared after its last launch (waiting for its fork)."""
    launcher._wait_for_spare()
    assert launcher._spare is not None, "the launcher prepared no spare"
    return launcher._spare[0]


def gone(worker, isolation: str) -> bool:
    """Whether a worker's process has exited: by its PID where the grader shares its PID
    namespace, else by its pids cgroup emptying."""
    if isolation == "rlimits":
        return wait_for_exit(worker.pid, timeout=5)
    deadline = time.monotonic() + 5
    while worker._cgroup.members() and time.monotonic() < deadline:
        time.sleep(0.05)
    return not worker._cgroup.members()


def test_two_submissions_in_a_row_get_different_workers_and_folders(launcher):
    first = launcher.launch()
    spare = the_spare(launcher)
    run(first, "open('answers.txt', 'w').write('the first student')\nimport os\npid = os.getpid()")
    second = launcher.launch()
    assert second is spare  # the prepared worker was the one handed out
    assert second is not first and second.pid != first.pid and second.scratch != first.scratch
    run(second, "import os\nseen = sorted(os.listdir('.'))\npid = os.getpid()")
    assert "answers.txt" not in second.request("get", {"names": ["seen"]}, timeout=10)["values"]["seen"]
    pids = [worker.request("get", {"names": ["pid"]}, timeout=10)["values"]["pid"] for worker in (first, second)]
    assert pids[0] != pids[1]
    first.kill(), second.kill()
    third = launcher.launch()
    assert third not in (first, second) and third.pid not in (first.pid, second.pid)
    third.kill()


def student_for(folder, launcher, *sources):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    folder.mkdir()
    path = folder / "submission.ipynb"
    nbformat.write(notebook, path)
    return StudentCode(load_submission(path), launcher)


def test_a_launcher_made_ready_prepares_the_first_submission_s_spare(launcher):
    """A service warms an assignment with `wait_ready`: its first submission then gets a spare."""
    launcher.wait_ready()
    spare = the_spare(launcher)
    worker = launcher.launch()
    assert worker is spare
    run(worker, "x = 1")
    worker.kill()


def test_a_spare_is_never_shared_between_students(tmp_path, launcher):
    ada = student_for(tmp_path / "ada", launcher, "secret = 'ada'\nimport numpy\nnumpy.planted = 'ada'")
    try:
        assert ada.get("secret") == {"secret": "ada"}
        ada_worker = ada._worker
        spare = the_spare(launcher)
        bob = student_for(tmp_path / "bob", launcher,
                          "import numpy\nplanted = getattr(numpy, 'planted', None)")
        try:
            assert bob.get("planted") == {"planted": None}
            with pytest.raises(WorkerError):
                bob.get("secret")
            assert bob._worker is spare and bob._worker is not ada_worker
            assert ada.get("secret") == {"secret": "ada"}  # ada's own worker is still ada's alone
        finally:
            bob.close()
    finally:
        ada.close()


def test_a_spare_is_never_handed_to_another_assignment():
    # rlimits: both launchers' workers share the grader's PID namespace, so PIDs tell them apart.
    ps1 = make_launcher(WorkerOptions("numpy", LIMITS, isolation="rlimits", spare=True))
    ps2 = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=3), isolation="rlimits", spare=True))
    try:
        ps1.launch().kill()
        ps1_spare = the_spare(ps1)
        for _ in range(2):
            worker = ps2.launch()
            assert worker is not ps1_spare and worker.pid != ps1_spare.pid
            assert worker.limits == Limits(cell_seconds=3)
            worker.kill()
        assert the_spare(ps1) is ps1_spare and ps1_spare.alive
    finally:
        ps1.close(), ps2.close()


def test_a_spare_made_with_other_options_is_not_used():
    """A launcher whose options changed after its spare was forked (other limits) forks anew."""
    launcher = make_launcher(WorkerOptions("numpy", LIMITS, spare=True))
    try:
        launcher.launch().kill()
        spare = the_spare(launcher)
        launcher.options.limits = Limits(cell_seconds=3)
        worker = launcher.launch()
        assert worker is not spare and worker.limits == Limits(cell_seconds=3)
        assert not spare.alive and not spare.scratch.exists()
        worker.kill()
    finally:
        launcher.close()


def test_close_leaves_no_process_and_no_scratch_folder(launcher):
    worker = launcher.launch()
    spare = the_spare(launcher)
    assert spare.wait_ready(timeout=30)  # it has started and is waiting
    spare_cgroup = spare._cgroup
    worker.kill()
    launcher.close()
    assert not spare.alive and not spare.scratch.exists()
    assert not launcher._run_root.exists()
    if launcher.isolation == "rlimits":
        assert gone(spare, "rlimits")
    if spare_cgroup is not None:
        assert not spare_cgroup.path.exists()
    assert launcher._template.poll() is not None


def test_a_spare_killed_while_it_waits_is_replaced_not_used(launcher):
    """As a hostile previous submission might try where Landlock cannot scope its signals (by
    its PID under rlimits; inside bubblewrap's PID namespace, as the template kills): the next
    launch notices and forks anew."""
    launcher.launch().kill()
    spare = the_spare(launcher)
    select.select([spare._sock], [], [], 30)  # it has said READY, and waits
    if launcher.isolation == "rlimits":
        os.kill(spare.pid, signal.SIGKILL)
    else:
        launcher._ask({"op": "kill", "pid": spare.pid})
    assert gone(spare, launcher.isolation)
    worker = launcher.launch()
    assert worker is not spare and not spare.alive and not spare.scratch.exists()
    run(worker, "def f():\n    return 3")
    assert worker.request("call", {"function": "f", "args": [], "kwargs": {}}, timeout=10)["value"] == 3
    worker.kill()


def test_a_spare_whose_folder_was_changed_is_not_used(launcher):
    """Its scratch folder is checked as the run folder is: changed from outside, it is not used."""
    launcher.launch().kill()
    spare = the_spare(launcher)
    os.chmod(spare.scratch, 0o777)
    worker = launcher.launch()
    assert worker is not spare and not spare.alive
    run(worker, "x = 1")
    worker.kill()


def test_no_spare_for_the_warm_up_that_writes_the_cache_nor_when_switched_off(tmp_path, monkeypatch):
    writer = make_launcher(WorkerOptions("numpy", LIMITS, compile_cache=str(tmp_path),
                                         cache_writable=True, spare=True))
    monkeypatch.setenv(SPARE_SWITCH, "0")
    switched_off = make_launcher(WorkerOptions("numpy", LIMITS))
    try:
        for launcher in (writer, switched_off):
            launcher.launch().kill()
            launcher._wait_for_spare()
            assert launcher._spare is None
    finally:
        writer.close(), switched_off.close()


def test_a_spare_with_a_file_planted_in_its_folder_is_not_used(launcher):
    """As a neighbour without Landlock might try: a file waiting for the next student is found."""
    launcher.launch().kill()
    spare = the_spare(launcher)
    (spare.scratch / "helpers.py").write_text("answer = 'planted'\n")
    worker = launcher.launch()
    assert worker is not spare and not spare.alive
    run(worker, "import os\nseen = os.listdir('.')")
    assert "helpers.py" not in worker.request("get", {"names": ["seen"]}, timeout=10)["values"]["seen"]
    worker.kill()


def test_a_jax_spare_has_started_its_backend_and_grades_as_any_worker():
    launcher = make_launcher(WorkerOptions("jax", Limits(), spare=True))
    try:
        launcher.launch().kill()
        spare = the_spare(launcher)
        worker = launcher.launch()
        assert worker is spare
        run(worker, "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sum(x ** 2))\n"
                    "import jax._src.xla_bridge as bridge\nstarted = bool(bridge._backends)")
        assert worker.request("get", {"names": ["started"]}, timeout=30)["values"]["started"]
        assert float(worker.request("call", {"function": "f", "args": [np.array([1.0, 2.0])], "kwargs": {}},
                                    timeout=60)["value"]) == 5.0
        worker.kill()
    finally:
        launcher.close()
