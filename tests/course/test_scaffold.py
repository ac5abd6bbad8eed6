"""`rlcourse new`, followed as docs/adding-an-assignment.md says: a scaffolded assignment, whatever
its name, passes the project's own tests over every assignment (run on a copy of the course
that holds it) and `rlcourse check` at once, its bank's bug losing the item with its diagnosis."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from course_copy import copy_course

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def rlcourse(course: Path, *args):
    environment = {key: value for key, value in os.environ.items() if key != "RLCOURSE_ROOT"}
    environment["PATH"] = f"{BIN}:{environment.get('PATH', '')}"
    return subprocess.run([str(BIN / "rlcourse"), *map(str, args)], cwd=course, capture_output=True,
                          text=True, timeout=600, env=environment)


def empty_course(folder: Path) -> Path:
    (folder / "graders").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    return folder


SUITE = ("tests/conftest.py", "tests/course_copy.py", "tests/release/test_release.py",
         "tests/release/test_source_runs.py", "tests/graders/test_bank.py", "tests/graders/solution_quotes.py",
         "tests/batch/test_check.py")
"""The suite's files whose tests run over every assignment of the course they lie in
(`Course.assignment_names()`: the release is nbgrader's and leaks nothing, the source runs in a
kernel, every bank entry gets its grade, every check passes), and what they import."""


def course_with_its_suite(folder: Path, name: str) -> Path:
    """A copy of the course (ps1, and the files `make` and pytest read) with the suite's tests
    over every assignment, and `name` added by `rlcourse new` as an author adds one."""
    course = copy_course(folder)
    for path in ("pyproject.toml", "Makefile", *SUITE):
        (course / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, course / path)
    made = rlcourse(course, "new", name, "--framework", "numpy")
    assert made.returncode == 0, made.stderr
    return course


def run_suite(course: Path, name: str, *, marks: str) -> subprocess.CompletedProcess:
    """The copied tests, in the copy (their ROOT is the copy), for `name`'s cases only."""
    files = [path for path in SUITE if Path(path).name.startswith("test_")]
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-q", "-m", marks, "-k", name, *files], cwd=course, capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}"))


@pytest.mark.nbgrader
def test_a_new_assignment_passes_the_suites_fast_tests_over_every_assignment(tmp_path):
    """`rlcourse new hw1` (a name no `ps*` pattern finds) in a copy of the course: the copied
    release tests pass for it, its quick checks pass, and `make release` makes its release."""
    course = course_with_its_suite(tmp_path / "course", "hw1")
    done = run_suite(course, "hw1", marks="not slow")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b5 passed\b", done.stdout), done.stdout  # test_release.py's five, for hw1
    checked = rlcourse(course, "check", "hw1", "--quick")
    assert checked.returncode == 0 and checked.stdout == "hw1: ok\n", checked.stderr
    release = subprocess.run(["make", "--dry-run", "--old-file=install", "release"], cwd=course,
                             capture_output=True, text=True, check=True).stdout
    assert re.search(r"for name in hw1 ps1; do \S+/nbgrader generate_assignment", release), release


@pytest.mark.slow
@pytest.mark.nbgrader
def test_a_new_assignment_passes_the_suites_slow_tests_over_every_assignment(tmp_path):
    """The same copy's grading tests for hw1: its source runs in a kernel, each of its bank
    entries gets the grade the entry states (the bug losing its item with its diagnosis),
    and `rlcourse check hw1` passes every check."""
    course = course_with_its_suite(tmp_path / "course", "hw1")
    done = run_suite(course, "hw1", marks="slow")
    assert done.returncode == 0, done.stdout + done.stderr
    # the kernel run, the bank's size, its three entries graded (and their messages read for
    # lines of the solution), every check
    assert re.search(r"\b9 passed\b", done.stdout), done.stdout


@pytest.mark.slow
@pytest.mark.nbgrader
@pytest.mark.parametrize("framework", ["jax", "torch"])
def test_every_framework_gets_an_assignment_that_passes_the_quick_checks(tmp_path, framework):
    course = empty_course(tmp_path / "course")
    assert rlcourse(course, "new", "ps9", "--framework", framework).returncode == 0
    checked = rlcourse(course, "check", "ps9", "--quick")
    assert checked.returncode == 0 and checked.stdout == "ps9: ok\n", checked.stderr
    again = rlcourse(course, "new", "ps9", "--framework", framework)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_an_unknown_framework_is_refused_by_the_command_line(tmp_path):
    course = empty_course(tmp_path / "course")
    done = rlcourse(course, "new", "ps9", "--framework", "numpi")
    assert done.returncode == 2 and "invalid choice: 'numpi'" in done.stderr
    assert not (course / "graders" / "ps9").exists()
