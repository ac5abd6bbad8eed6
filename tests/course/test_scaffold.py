"""`rlcourse new`, followed as docs/adding-an-assignment.md says: a scaffolded assignment passes
`rlcourse check` at once and grades, its bank's bug losing the item with its diagnosis."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course

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


@pytest.mark.slow
@pytest.mark.nbgrader
def test_a_new_numpy_assignment_passes_check_and_grades(tmp_path):
    course = empty_course(tmp_path / "course")
    made = rlcourse(course, "new", "ps9", "--framework", "numpy")
    assert made.returncode == 0, made.stderr
    checked = rlcourse(course, "check", "ps9")
    assert checked.returncode == 0 and checked.stdout == "ps9: ok\n", checked.stderr
    ps9 = Course(course).assignment("ps9")
    base = reference_student(ps9.source_notebook, ps9.release_notebook)
    for entry in load_entries(course / "tests" / "bank" / "ps9"):
        path = tmp_path / entry.name / "ps9.ipynb"
        path.parent.mkdir()
        path.write_bytes(build_submission(entry, base))
        graded = rlcourse(course, "grade", "ps9", path, "--json", "--no-service")
        assert graded.returncode == 0, graded.stderr
        report = json.loads(graded.stdout)
        lost = {item["id"]: item["diagnosis"] for item in report["items"] if not item["passed"]}
        assert lost == entry.loses, entry.name


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
