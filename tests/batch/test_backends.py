"""Grading a class in parallel: N local grading processes, and Dask workers (an embedded
LocalCluster, and a real scheduler with two workers started as separate processes, one of them
killed mid-task). Correctness only: the same grades as one process, each submission recorded
exactly once, the gradebook written by the caller alone. Timing is the benchmark's business.

The mechanics (kills, windows, equal grades across process counts) do not depend on the
assignment, so those tests grade ps2 notebooks built from its bank (a PyTorch grading costs a
fraction of a ps1 one, whose JAX programs compile afresh per student); the embedded cluster grades
the ps1 demo notebooks, so that one path here still grades ps1 end to end."""
import contextlib
import socket
import subprocess
import time
from pathlib import Path

import pytest

from course_copy import copy_course
from test_autograde import (BIN, COURSE, ROOT, env, make_class, make_ps2_class, nbgrader_export,
                            ps2_autograded_score, ps2_notebook, rlcourse)

pytestmark = [pytest.mark.slow, pytest.mark.nbgrader]

# Each student submits a ps2 bank entry whose bug loses a different number of points, so grades
# put on the wrong student fail the assertions: reference 51, the others 42, 40 and 47 (derived
# below from the graders' @item points and each entry's LOSES, not typed in).
CLASS = {"ada": "reference", "alan": "buggy_clip_without_min", "ken": "buggy_max_instead_of_min",
         "edsger": "buggy_entropy_sign"}


def expected_totals(students: dict[str, str]) -> dict[str, float]:
    """Each student's total: every item's points less those of the items their entry loses."""
    return {student: ps2_autograded_score(entry) for student, entry in students.items()}


def ledger_score(class_dir, student) -> float:
    """The student's ps2 total as rlcourse's own ledger recorded it."""
    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.record.ledger import read_ledger

    return read_ledger(ClassDirectory(Path(class_dir)), COURSE.assignment("ps2"), student)["report"]["score"]


class TestLocalWorkers:
    def test_two_grading_processes_give_the_grades_of_one(self, tmp_path):
        class_dir = make_ps2_class(tmp_path, CLASS)
        run = rlcourse(class_dir, "autograde", "ps2", "--workers", "2")
        assert "4 graded" in run.stdout
        expected = expected_totals(CLASS)
        assert nbgrader_export(class_dir) == expected
        assert {student: ledger_score(class_dir, student) for student in CLASS} == expected

    def test_a_grading_process_killed_mid_task_costs_no_grade(self, tmp_path):
        class_dir = make_ps2_class(tmp_path, CLASS)
        marker = tmp_path / "killed-once"
        run = rlcourse(class_dir, "autograde", "ps2", "--workers", "2",
                       RLCOURSE_KILL_AT="pool-grading:alan", RLCOURSE_KILL_ONCE=str(marker))
        assert marker.exists(), "the fault was never injected"
        assert "a grading process died while grading alan" in run.stderr
        assert "4 graded" in run.stdout
        assert nbgrader_export(class_dir) == expected_totals(CLASS)

    def test_a_submission_that_keeps_killing_its_grading_process_is_left_for_the_next_run(self, tmp_path):
        students = {"ada": CLASS["ada"], "alan": CLASS["alan"]}
        expected = expected_totals(students)
        class_dir = make_ps2_class(tmp_path, students)
        run = rlcourse(class_dir, "autograde", "ps2", "--workers", "2", check=False,
                       RLCOURSE_KILL_AT="pool-grading:alan")
        assert run.returncode == 1
        assert "1 graded" in run.stdout and "1 not graded" in run.stdout
        assert not (class_dir / "autograded" / "alan").exists()  # nothing written for alan
        assert nbgrader_export(class_dir) == {"ada": expected["ada"]}
        again = rlcourse(class_dir, "autograde", "ps2")
        assert "1 graded" in again.stdout and "1 unchanged" in again.stdout
        assert nbgrader_export(class_dir) == expected

    def test_no_grading_process_outlives_a_killed_run(self, tmp_path):
        class_dir = make_ps2_class(tmp_path, CLASS)
        process = subprocess.Popen([str(BIN / "rlcourse"), "autograde", "ps2", "--workers", "2",
                                    "--course-dir", str(class_dir)], cwd=ROOT, env=env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children = _wait_for_children(process.pid, count=2)
        process.kill()
        process.wait()
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{pid}").exists() for pid in children) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in children if _alive(pid)]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _wait_for_children(pid: int, count: int) -> list[int]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        children = [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                    for child in (task / "children").read_text().split()]
        spawned = [child for child in children
                   if "spawn_main" in Path(f"/proc/{child}/cmdline").read_text(errors="replace")]
        if len(spawned) >= count:
            return spawned
        time.sleep(0.2)
    raise AssertionError("the grading processes never started")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def dask_cluster(tmp_path, workers: int, **worker_env):
    """A real Dask scheduler and workers, each a separate process on loopback."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    processes = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                                   "--port", str(port), "--no-dashboard"], env=env(),
                                  stdout=open(logs / "scheduler.txt", "w"), stderr=subprocess.STDOUT)]
    try:
        for index in range(workers):
            processes.append(subprocess.Popen(
                [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--nworkers", "1",
                 "--host", "127.0.0.1",  # its own ports too (rlcourse refuses a plain one beyond it)
                 "--name", f"grader-{index}", "--no-dashboard"], env=env(**worker_env),
                stdout=open(logs / f"worker-{index}.txt", "w"), stderr=subprocess.STDOUT))
        _wait_for_workers(address, workers)
        yield address, logs
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


def _wait_for_workers(address: str, count: int) -> None:
    from distributed import Client

    with Client(address, timeout="60s") as client:
        client.wait_for_workers(count, timeout=120)


class TestDask:
    def test_an_embedded_local_cluster_grades_the_class(self, tmp_path):
        # ps1, from the demo notebooks: the one path in this file that grades ps1 end to end.
        class_dir = make_class(tmp_path, {"ada": "ada", "alan": "alan"})
        run = rlcourse(class_dir, "autograde", "ps1", "--backend", "dask", "--workers", "2")
        assert "embedded LocalCluster (2 workers)" in run.stderr
        assert nbgrader_export(class_dir) == {"ada": 42.0, "alan": 34.0}

    def test_a_worker_killed_mid_task_loses_nothing_and_counts_nothing_twice(self, tmp_path):
        class_dir = make_ps2_class(tmp_path / "class", CLASS)
        marker = tmp_path / "killed-once"
        with dask_cluster(tmp_path, 2, RLCOURSE_KILL_AT="dask-grading:alan",
                          RLCOURSE_KILL_ONCE=str(marker)) as (address, logs):
            run = rlcourse(class_dir, "autograde", "ps2", "--scheduler", address)
        assert marker.exists(), "no worker was killed"
        assert "(2 workers)" in run.stderr
        assert "4 graded" in run.stdout  # each student once, alan included
        expected = expected_totals(CLASS)
        assert nbgrader_export(class_dir) == expected
        assert {student: ledger_score(class_dir, student) for student in CLASS} == expected

    def test_a_worker_with_other_graders_refuses_to_grade(self):
        from rlcourse.batch.backends import GraderSettings, grade_on_dask_worker

        with pytest.raises(RuntimeError, match="differs from the caller's"):
            grade_on_dask_worker(str(ROOT), "ps1", "0" * 64, GraderSettings(), "ada", "ps1.ipynb",
                                 b"{}", None)

    def test_notebooks_are_sent_a_window_at_a_time(self, tmp_path):
        """Each task carries its notebook's bytes, so the caller keeps only a window of them at
        the scheduler: with a window of one, nothing is sent while a task is unfinished, and
        every submission is still graded."""
        from rlcourse.batch.backends import Dask, GraderSettings, Job

        unfinished_at_send = []

        class Watched(Dask):
            def _connect(self):
                super()._connect()
                submit, sent = self._client.submit, []

                def watched_submit(*args, **kwargs):
                    unfinished_at_send.append(sum(not future.done() for future in sent))
                    sent.append(submit(*args, **kwargs))
                    return sent[-1]

                self._client.submit = watched_submit

        students = {"ada": CLASS["ada"], "ken": CLASS["ken"]}
        jobs = []
        for name, entry in students.items():
            (tmp_path / f"{name}.ipynb").write_bytes(ps2_notebook(entry))
            jobs.append(Job(name, tmp_path / f"{name}.ipynb"))
        jobs.append(Job("unreadable", None, "not a notebook"))
        backend = Watched(COURSE.assignment("ps2"), GraderSettings(), scheduler=None, workers=1, in_flight=1)
        try:
            scores = {job.student: report.score for job, report in backend.grade(jobs)}
        finally:
            backend.close()
        assert scores == {**expected_totals(students), "unreadable": 0.0}
        assert unfinished_at_send == [0, 0, 0]

    def test_a_worker_whose_graders_changed_since_it_loaded_them_refuses(self, tmp_path):
        """pytest keeps a process's grader modules, so a long-lived Dask worker cannot grade
        with edited graders; it must refuse rather than grade with the old ones."""
        from rlcourse.batch import backends
        from rlcourse.batch.backends import GraderSettings, assignment_fingerprint, grade_on_dask_worker
        from rlcourse.course.directory import Course

        course = copy_course(tmp_path / "course")
        assignment = Course(course).assignment("ps1")
        settings = GraderSettings(warm_cache=False)
        try:
            first = grade_on_dask_worker(str(course), "ps1", assignment_fingerprint(assignment),
                                         settings, "ada", "ps1.ipynb", None, "not a notebook")
            assert first["score"] == 0.0
            graders = course / "graders" / "ps1" / "test_exercises.py"
            graders.write_text(graders.read_text() + "\n# edited\n")
            with pytest.raises(RuntimeError, match="restart it"):
                grade_on_dask_worker(str(course), "ps1", assignment_fingerprint(assignment),
                                     settings, "ada", "ps1.ipynb", None, "not a notebook")
        finally:
            for key in [key for key in backends._DASK_GRADERS if key[0] == str(course)]:
                backends._DASK_GRADERS.pop(key)[0].close()


