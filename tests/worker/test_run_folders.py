"""A fork launcher's run folder (`rlcourse-run-*` in the temporary folder) outlives no grader:
removed by `close()`, and, when the process that made it is killed outright (`kill -9` of
`rlcourse serve` or `rlcourse web`, the OOM killer), by the next launcher that starts on the
machine, because the dead process's lock on it is gone (rlcourse.worker.scratch.run_folder).
Empty folders of killed services once piled up in /tmp."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rlcourse.worker.launchers import ForkLauncher, WorkerOptions
from rlcourse.worker.scratch import RUN_PREFIX, remove_abandoned_run_folders

HOLDER = """
import sys, time
from rlcourse.worker.launchers import ForkLauncher, WorkerOptions
launcher = ForkLauncher(WorkerOptions("numpy"), isolation="rlimits")
print(launcher._run_root, launcher._template.pid, flush=True)
time.sleep(600)
"""
"""A grading process holding a fork launcher (numpy's template: the cheapest), as a service does."""


def start_holder():
    """(process, its run folder, its template's pid)."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, RLCOURSE_ALLOW_UNCONFINED="1"))
    line = process.stdout.readline().split()
    assert line, "the launcher did not start"
    return process, Path(line[0]), int(line[1])


def gone(pid: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def holders():
    started = []
    yield lambda: started.append(start_holder()) or started[-1]
    for process, _, _ in started:
        process.kill()
        process.wait()


def test_a_killed_process_folder_is_removed_by_the_next_launcher_and_a_live_ones_kept(holders):
    killed, killed_folder, template = holders()
    alive, alive_folder, _ = holders()
    assert killed_folder.name.startswith(RUN_PREFIX) and killed_folder.is_dir()
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert gone(template), "the template outlived its grader"  # EOF on its control socket
    # What a kill -9 used to leave behind for good (unless another launcher on this machine,
    # a test running beside this one, already took it away).
    assert killed_folder.is_dir() or not killed_folder.with_name(killed_folder.name + ".lock").exists()

    launcher = ForkLauncher(WorkerOptions("numpy"), isolation="rlimits")  # the next start
    try:
        assert not killed_folder.exists()
        assert not killed_folder.with_name(killed_folder.name + ".lock").exists()
        assert alive_folder.is_dir() and alive.poll() is None  # still in use: never touched
        assert launcher._run_root.is_dir()
    finally:
        launcher.close()
    assert not launcher._run_root.exists()
    assert not launcher._run_root.with_name(launcher._run_root.name + ".lock").exists()


def test_a_lock_file_of_another_user_or_a_link_names_nothing_to_remove(tmp_path):
    """Only this user's own lock files count, and a link in a folder's place is never followed."""
    target = tmp_path / "precious"
    target.mkdir()
    (target / "kept.txt").write_text("kept\n")
    folder = tmp_path / f"{RUN_PREFIX}planted"
    folder.symlink_to(target)
    (tmp_path / f"{RUN_PREFIX}planted.lock").write_text("")
    other = tmp_path / f"{RUN_PREFIX}others"
    other.mkdir()
    lock = tmp_path / f"{RUN_PREFIX}others.lock"
    lock.write_text("")
    if os.geteuid() == 0:
        os.chown(lock, 65534, 65534)
    remove_abandoned_run_folders(tmp_path)
    assert (target / "kept.txt").read_text() == "kept\n"
    if os.geteuid() == 0:
        assert other.is_dir()


def test_folders_without_a_lock_are_left_alone(tmp_path):
    """Folders made before run folders had locks (or by an older rlcourse still running) may be
    in use: never removed."""
    old = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=tmp_path))
    remove_abandoned_run_folders(tmp_path)
    assert old.is_dir()
