"""Shared fixtures: the course directory, the ps1 assignment, and a headless browser."""
import shutil
import subprocess
from pathlib import Path

import pytest

from rlcourse.course.directory import Course

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def course():
    return Course(ROOT)


@pytest.fixture(scope="session")
def ps1(course):
    return course.assignment("ps1")


@pytest.fixture
def chromium(tmp_path):
    """Runs Debian's headless Chromium with a fresh profile, as the pages' readers would see
    them; skips where it is not installed (.ci/run installs it)."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")

    def run(*args):
        command = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                   "--no-first-run", "--disable-background-networking",
                   "--disable-component-update", "--disable-sync",
                   f"--user-data-dir={tmp_path / 'chromium-profile'}", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)

    return run
