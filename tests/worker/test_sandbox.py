"""Inside bubblewrap a worker sees its scratch directory and the Python environment, nothing of the
course, no network, no other process and no grader environment; where bwrap cannot run the
engine says so and falls back to resource limits."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.sandbox import bwrap_status, choose_isolation

ROOT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(not bwrap_status()[0], reason=f"bubblewrap unavailable: {bwrap_status()[1]}")

PROBE = f"""
import os, socket
def look():
    seen = {{}}
    seen["graders"] = os.path.exists({str(ROOT / 'graders')!r})
    seen["solutions"] = os.path.exists({str(ROOT / 'solutions')!r})
    try:
        seen["course"] = sorted(os.listdir({str(ROOT)!r}))
    except OSError:  # not there, or not listable (Landlock)
        seen["course"] = []
    seen["home"] = os.path.exists("/root/.bashrc") or os.path.exists("/root/.cache")
    seen["secret"] = os.environ.get("RLCOURSE_TEST_SECRET")
    try:
        seen["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    except OSError:  # /proc is not listable under Landlock
        seen["processes"] = []
    try:
        socket.create_connection(("127.0.0.1", 22), timeout=1)
        seen["network"] = "connected"
    except OSError as error:
        seen["network"] = type(error).__name__
    try:
        open({str(ROOT / 'graders' / 'planted.py')!r}, "w").write("x")
        seen["wrote_course"] = True
    except OSError:
        seen["wrote_course"] = False
    with open("mine.txt", "w") as handle:
        handle.write("scratch is writable")
    return seen
"""


@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["spawn", "fork"])
def test_a_sandboxed_worker_sees_nothing_of_the_course(strategy, monkeypatch):
    monkeypatch.setenv("RLCOURSE_TEST_SECRET", "grader-only")
    launcher = make_launcher(WorkerOptions("numpy", Limits(), isolation="bwrap"), strategy=strategy)
    try:
        worker = launcher.launch()
        worker.request("run_cell", {"index": 0, "source": PROBE}, timeout=60)
        seen = worker.request("call", {"function": "look", "args": [], "kwargs": {}}, timeout=60)["value"]
        assert seen["graders"] is False and seen["solutions"] is False
        assert set(seen["course"]) <= {"rlcourse", ".venv"}  # the engine and environment only
        assert seen["home"] is False and seen["secret"] is None
        assert seen["network"] != "connected"
        assert seen["wrote_course"] is False and not (ROOT / "graders" / "planted.py").exists()
        assert len(seen["processes"]) <= 3  # bwrap's init, (the template,) the worker itself
        worker.request("run_cell", {"index": 1, "source": "def mine():\n    return open('mine.txt').read()"},
                       timeout=60)
        assert worker.request("call", {"function": "mine", "args": [], "kwargs": {}}, timeout=60)["value"] \
            == "scratch is writable"
        # in a tmpfs of its own (as root: bwrap's for spawn, the worker's own mount for fork), not on the host
        assert not (worker.scratch / "mine.txt").exists() or os.geteuid() != 0
        worker.kill()
    finally:
        launcher.close()


def test_the_fallback_can_be_forced_and_is_named():
    assert choose_isolation("rlimits") == ("rlimits", "resource limits only (requested)")
    launcher = make_launcher(WorkerOptions("numpy", isolation="rlimits"), strategy="spawn")
    assert launcher.isolation == "rlimits"


def test_doctor_reports_the_level_in_force():
    rlcourse = str(Path(sys.executable).with_name("rlcourse"))
    forced = subprocess.run([rlcourse, "doctor", "--isolation", "rlimits"], capture_output=True, text=True, check=True)
    assert "isolation in force: rlimits" in forced.stdout
    auto = subprocess.run([rlcourse, "doctor"], capture_output=True, text=True, check=True,
                          env=dict(os.environ, RLCOURSE_ISOLATION="auto"))
    expected = "bwrap" if bwrap_status()[0] else "rlimits"
    assert f"isolation in force: {expected}" in auto.stdout


@needs_bwrap
@pytest.mark.slow
def test_matplotlib_in_a_sandboxed_worker_writes_nothing_to_the_terminal(capfd):
    """The home is read-only, so fontconfig had nowhere to keep its cache: it printed "Fontconfig
    error: No writable cache directories" five times into the terminal of every `rlcourse grade`."""
    launcher = make_launcher(WorkerOptions("numpy", Limits(), isolation="bwrap"), strategy="fork")
    try:
        worker = launcher.launch()
        worker.request("run_cell", {"index": 0, "source": (
            "import matplotlib.font_manager as fm, subprocess\n"
            "fonts = subprocess.run(['fc-list'], capture_output=True, text=True)\n"
            "found = fm.findfont('DejaVu Sans')\n")}, timeout=60)
        worker.kill()
    finally:
        launcher.close()
    assert "Fontconfig" not in capfd.readouterr().err
