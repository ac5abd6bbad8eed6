"""Shared fixtures: the course directory, the ps1 assignment, and a headless browser."""
import shutil
import subprocess
from pathlib import Path

import pytest

from rlcourse.course.directory import Course

ROOT = Path(__file__).resolve().parents[1]

LONGEST_FIRST = ("tests/graders/test_bank.py", "tests/graders/test_ps1_variants.py",
                 "tests/web/test_jupyterhub_real.py")
"""The files that take longest (test_bank.py grades every bank in one batch each: 11 min of the
suite's 39 parallel minutes on the 2-core machine), collected first. `make test` hands whole files
to its two processes in collection order (pytest-xdist's --dist loadfile); one of these started
last would leave the other process idle until it ends."""


def pytest_collection_modifyitems(session, config, items):
    """Longest files first (LONGEST_FIRST), every other test in its usual order: a stable sort,
    the same in every xdist process, as xdist requires."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


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


CLIPPING_RUBRIC = """

**Rubric** (2 points):
* 1: names the min as what removes the incentive to push the ratio past the band;
* 1: says clipping is not a hard trust region: ratios can
  still leave the band.
"""
"""A rubric for ps1's explain_clipping, as its author writes one (2 criteria of 1 point)."""


def add_clipping_rubric(source: Path, rubric: str = CLIPPING_RUBRIC) -> None:
    """Write `rubric` into explain_clipping's solution region of the source notebook `source`."""
    import nbformat

    notebook = nbformat.read(source, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_clipping")
    if "**Rubric**" not in cell.source:
        cell.source = cell.source.replace("\n### END SOLUTION", rubric.rstrip("\n") + "\n### END SOLUTION")
    nbformat.write(notebook, source)


@pytest.fixture
def ps1_with_rubric(tmp_path):
    """A copy of the course's ps1 (graders, release, source, solutions) whose source notebook has
    a rubric for explain_clipping: the source notebooks belong to their authors, tests edit a copy."""
    target = tmp_path / "course"
    target.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", target)
    for folder in ("graders", "release", "source", "solutions"):
        shutil.copytree(ROOT / folder / "ps1", target / folder / "ps1",
                        ignore=shutil.ignore_patterns("__pycache__"))
    add_clipping_rubric(target / "source" / "ps1" / "ps1.ipynb")
    return Course(target).assignment("ps1")
