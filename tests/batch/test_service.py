"""`rlcourse serve`: a warm service that `rlcourse grade` asks first. It must give exactly the
report grading in the command's own process gives, never grade with graders older than the
files on disk, answer only its own user, and cost nothing when it dies mid-request."""
import dataclasses
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rlcourse.course.directory import Course
from rlcourse.worker.sandbox import bwrap_status
from course_copy import copy_course
from test_autograde import BIN, DEMO, PS2_BANK, ROOT, env
from test_autograde import ps2_notebook as ps2_notebook_bytes

pytestmark = pytest.mark.slow

ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"
SERVED = "graded by the running service"


def ps2_notebook(folder: Path, entry_name: str) -> Path:
    """A ps2 submission built from the bank: the tests about the service's mechanics grade ps2
    (PyTorch, about 3 core-seconds a grading) rather than ps1 (13: its JAX programs compile
    afresh for every student), since serving, staleness and a killed service do not depend on
    the assignment. Two tests in this file still grade ps1 end to end."""
    notebook = folder / entry_name / "ps2.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_bytes(ps2_notebook_bytes(entry_name))
    return notebook


@pytest.fixture
def socket_path():
    """In a folder anyone may enter, so that only the service's own folder (0700) and socket
    (0600) keep other users out."""
    base = Path(tempfile.mkdtemp(prefix="rlcourse-service-test-"))
    os.chmod(base, 0o755)
    yield base / "service" / "grade.sock"
    shutil.rmtree(base, ignore_errors=True)


def start_service(socket_path: Path, *, assignment="ps1", cwd=ROOT, **extra_env) -> subprocess.Popen:
    process = subprocess.Popen([str(BIN / "rlcourse"), "serve", assignment], cwd=cwd,
                               env=env(RLCOURSE_SERVICE=str(socket_path), **extra_env),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_for_socket(socket_path, process)
    return process


def wait_for_socket(path: Path, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the service exited: {process.stderr.read()}")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
                return
            except OSError:
                time.sleep(0.2)
    raise AssertionError("the service never listened")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def grade(socket_path: Path, notebook: Path, *extra, assignment="ps1", cwd=ROOT, **extra_env):
    run = subprocess.run([str(BIN / "rlcourse"), "grade", assignment, str(notebook), "--json", *extra],
                         cwd=cwd, env=env(RLCOURSE_SERVICE=str(socket_path), **extra_env),
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout), run.stderr


def comparable(report: dict) -> dict:
    """A report without what differs from run to run (how long things took)."""
    report = dict(report, timings=None)
    report["items"] = [dict(entry, seconds=None) for entry in report["items"]]
    return report


def lost_points(report: dict) -> float:
    return sum(item["max_score"] for item in report["items"] if item["passed"] is False)


def test_a_served_grade_is_the_report_grading_here_gives(socket_path, tmp_path):
    entry = PS2_BANK["buggy_clip_without_min"]
    notebook = ps2_notebook(tmp_path, entry.name)
    service = start_service(socket_path, assignment="ps2")
    try:
        served, said = grade(socket_path, notebook, "--student", "ada", assignment="ps2")
        assert SERVED in said
        here, said_here = grade(socket_path, notebook, "--no-service", "--student", "ada",
                                assignment="ps2")
        assert SERVED not in said_here
        assert comparable(served) == comparable(here)
        lost = {item["id"]: item["diagnosis"] for item in served["items"] if item["passed"] is False}
        assert lost == entry.loses
        assert served["score"] == served["max_score"] - served["pending"] - lost_points(served) > 0
        assert served["parameters"] == Course(ROOT).assignment("ps2").parameters("ada")
        assert stat.S_IMODE(socket_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(socket_path.parent.stat().st_mode) == 0o700
    finally:
        stop(service)
    assert not socket_path.exists(), "a stopped service leaves no socket behind"


def test_without_a_service_grade_works_alone(socket_path):
    report, said = grade(socket_path, ADA)
    assert SERVED not in said and "service" not in said
    assert report["score"] == 42.0


def test_changed_graders_are_never_served_stale(tmp_path, socket_path):
    course = copy_course(tmp_path / "course", "ps2")
    notebook = ps2_notebook(tmp_path, "reference")
    service = start_service(socket_path, assignment="ps2", cwd=course)
    try:
        before, said = grade(socket_path, notebook, assignment="ps2", cwd=course)
        assert SERVED in said
        titles = {entry["id"]: entry["title"] for entry in before["items"]}
        assert titles["gae.course_examples"] == "small cases like the notebook's worked examples"

        graders = course / "graders" / "ps2" / "test_gae.py"
        edit = ('title="small cases like the notebook\'s worked examples"',
                'title="small cases, worked by hand"')
        assert graders.read_text().count(edit[0]) == 1
        graders.write_text(graders.read_text().replace(*edit))
        after, said = grade(socket_path, notebook, assignment="ps2", cwd=course)
        assert SERVED not in said and "changed since the service started" in said
        titles = {entry["id"]: entry["title"] for entry in after["items"]}
        assert titles["gae.course_examples"] == "small cases, worked by hand"

        wait_for_socket(socket_path, service)  # it restarted itself with the new graders
        again, said = grade(socket_path, notebook, assignment="ps2", cwd=course)
        assert SERVED in said
        assert comparable(again) == comparable(after)
    finally:
        stop(service)


def test_a_service_killed_mid_request_costs_nothing(socket_path, tmp_path):
    notebook = ps2_notebook(tmp_path, "buggy_gae_forward_loop")
    service = start_service(socket_path, assignment="ps2", RLCOURSE_KILL_AT="serving:ps2.ipynb")
    try:
        report, said = grade(socket_path, notebook, assignment="ps2")
        assert "grading here instead" in said
        lost = {item["id"]: item["diagnosis"] for item in report["items"] if item["passed"] is False}
        assert lost == PS2_BANK["buggy_gae_forward_loop"].loses
        assert report["score"] == report["max_score"] - report["pending"] - lost_points(report) > 0
        assert service.wait(timeout=30) == -signal.SIGKILL
    finally:
        stop(service)


SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin") or ""
"""An interpreter another user may run (the environment's may sit under /root)."""


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON, reason="needs root and a system python3")
def test_another_user_cannot_reach_the_service(socket_path):
    service = start_service(socket_path)
    try:
        probe = subprocess.run(
            [SYSTEM_PYTHON, "-c",
             "import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
             "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    print('refused')\n",
             str(socket_path)],
            capture_output=True, text=True, timeout=60,
            preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        assert probe.stdout.strip() == "refused", probe.stderr
    finally:
        stop(service)


def test_a_grading_worker_is_refused(socket_path):
    """Student code runs in a worker's own `rlcourse-worker-*` pids cgroup; under the rlimits
    fallback a root worker could reach the socket by its path, so the service checks the
    caller's cgroup and answers nothing but a refusal."""
    from rlcourse.worker.cgroup import PidsCgroup

    group = PidsCgroup.create(16)
    if group is None:
        pytest.skip("no writable pids cgroup here")
    service = start_service(socket_path)
    try:
        procs = group.open_procs()
        probe = subprocess.run(
            [str(BIN / "python"), "-c",
             "import json, os, socket, sys\nos.write(int(sys.argv[2]), b'0')\n"
             "s = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
             "print(s.makefile().readline())",  # refused before any request is read
             str(socket_path), str(procs)],
            pass_fds=(procs,), capture_output=True, text=True, timeout=60)
        os.close(procs)
        assert probe.stdout.strip(), probe.stderr
        assert json.loads(probe.stdout) == {"error": "a grading worker may not ask for grades"}
    finally:
        stop(service)
        group.kill_all()
        group.remove()


def test_a_request_without_the_service_s_key_is_refused(socket_path):
    """A process the service cannot tell from a worker by its user or cgroup (a worker of the
    grader's own uid, without private mounts, where there is no pids cgroup) may still connect:
    without the key beside the socket, which only the staff's own commands read, it gets
    nothing but a refusal."""
    from rlcourse.batch.service import NO_KEY, key_path

    service = start_service(socket_path)
    try:
        key = key_path(socket_path)
        assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_text().strip()) == 64
        for extra in ({}, {"key": "0" * 64}, {"key": None}):
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
                connection.connect(str(socket_path))
                request = dict(extra, assignment="ps1", paths=[str(ADA)], students=["ada"])
                connection.sendall(json.dumps(request).encode() + b"\n")
                assert [json.loads(line) for line in connection.makefile("rb")] == [{"error": NO_KEY}]
    finally:
        stop(service)
    assert not key_path(socket_path).exists(), "a stopped service leaves no key behind"


def test_a_socket_where_workers_read_is_refused(tmp_path):
    """The socket and its key may not lie where every worker may read (the environment here)."""
    inside = Path(sys.prefix) / "rlcourse-test.sock"
    run = subprocess.run([str(BIN / "rlcourse"), "serve", "ps1"], cwd=ROOT,
                         env=env(RLCOURSE_SERVICE=str(inside)), capture_output=True, text=True, timeout=300)
    assert run.returncode == 2 and "where grading workers can read" in run.stderr, run.stderr
    assert not inside.exists() and not Path(str(inside) + ".key").exists()


def test_a_path_that_is_not_a_socket_is_never_replaced(tmp_path):
    precious = tmp_path / "notes.txt"
    precious.write_text("not a socket")
    run = subprocess.run([str(BIN / "rlcourse"), "serve", "ps1"], cwd=ROOT,
                         env=env(RLCOURSE_SERVICE=str(precious)), capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 2 and "is not a socket" in run.stderr and "Traceback" not in run.stderr
    assert precious.read_text() == "not a socket"


HOSTILE_ENTRY = ROOT / "tests" / "hostile" / "ps1" / "asks_the_grading_service_for_reports.py"
ISOLATIONS = [pytest.param("bwrap", marks=pytest.mark.skipif(
    not bwrap_status()[0], reason="bubblewrap cannot start here")), "rlimits"]


def without_cgroups(command: list[str]) -> list[str]:
    """`command` in a mount namespace of its own whose /sys/fs/cgroup is an empty tmpfs: its
    workers get no pids cgroup, so the service cannot tell them by theirs (the red team's
    machine, issue 29 finding 2)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs rlcourse-no-cgroups /sys/fs/cgroup && exec "$@"', "sh", *command]


@pytest.mark.hostile("worker-asks-the-grading-service")
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"),
                    reason="hiding the cgroup file system needs root and unshare")
@pytest.mark.parametrize("isolation", ISOLATIONS)
def test_a_worker_told_the_socket_cannot_reach_the_service(socket_path, tmp_path, isolation):
    """A worker graded where the grader has no pids cgroup, told the service's socket and
    another student's notebook, asks the service for that student's report: it must not reach
    the service (under bwrap the socket is not in the sandbox; under rlimits the worker's
    private mounts hide the course's cache folder and a request without the service's key is
    refused). Before issue 29 the rlimits worker got ada's report."""
    from rlcourse.course.bank import build_submission, load_entry, reference_student
    from rlcourse.course.solutions import load_course_module

    attack = load_course_module(HOSTILE_ENTRY, "rlcourse_hostile.ps1.service_test")
    entry = dataclasses.replace(load_entry(HOSTILE_ENTRY),
                                cells=attack.cells(sockets=[str(socket_path)], victims=[str(ADA)]))
    notebook = tmp_path / "attacker" / "ps1.ipynb"
    notebook.parent.mkdir()
    notebook.write_bytes(build_submission(entry, reference_student(
        ROOT / "source" / "ps1" / "ps1.ipynb", ROOT / "release" / "ps1" / "ps1.ipynb")))
    service = start_service(socket_path)
    try:
        run = subprocess.run(without_cgroups([str(BIN / "rlcourse"), "grade", "ps1", str(notebook),
                                              "--json", "--no-service", "--isolation", isolation]),
                             cwd=ROOT, env=env(RLCOURSE_SERVICE=str(socket_path)), capture_output=True,
                             text=True, timeout=900)
    finally:
        stop(service)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout)
    assert report["confinement"]["pids_cgroup"] is False, report["confinement"]
    assert not [text for text in report["errors"] if "another student's report" in text], report["errors"]
    lost = {item["id"]: item["diagnosis"] for item in report["items"] if item["passed"] is False}
    assert lost == {}, (lost, report["errors"])
