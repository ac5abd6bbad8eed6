"""`rlcourse new NAME --framework F`: a new assignment that passes `rlcourse check NAME` at once.

It writes the smallest complete assignment (docs/adding-an-assignment.md walks through it): a
source notebook with one exercise (`add_one`), its visible test cell, the release nbgrader makes
from it, the exact oracle, `assignment.toml`, `diagnoses.toml` with one misconception, a bug
model, one hidden grader item, and three bank entries (the reference, the exercise written
another way, and the bug: the least `rlcourse check` accepts for one exercise). The author
then replaces the exercise with their own, keeping every check passing.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from rlcourse.course.config import CourseError
from rlcourse.course.directory import Course
from rlcourse.worker.frameworks import FRAMEWORKS

ARRAY = {"numpy": ("import numpy as np", "np.asarray(x, dtype=np.float64)"),
         "jax": ("import jax.numpy as jnp", "jnp.asarray(x, dtype=jnp.float32)"),
         "torch": ("import torch", "torch.as_tensor(x, dtype=torch.float64)")}
"""How each framework's notebook imports its array library and makes an array of `x`."""


def _cell(kind: str, source: str, **nbgrader):
    """A notebook cell; with `nbgrader`, its metadata as nbgrader's create_assignment writes it."""
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = {"grade": False, "locked": False, "solution": False,
                                     "schema_version": 3, **nbgrader}
    return cell


def source_notebook(name: str, framework: str):
    imports, array = ARRAY[framework]
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python",
                                        "name": "python3"}, "language_info": {"name": "python"}}
    notebook.cells = [
        _cell("markdown", f"# {name}\n\nReplace this exercise with your own (see "
                          "docs/adding-an-assignment.md)."),
        _cell("code", imports, grade_id="given_imports", locked=True),
        _cell("markdown", "## Part 1: add one\n\nReturn `x + 1`, elementwise."),
        _cell("code", "def add_one(x):\n    \"\"\"x + 1, elementwise, as an array.\"\"\"\n"
                      f"    ### BEGIN SOLUTION\n    return {array} + 1\n    ### END SOLUTION\n",
              grade_id="add_one", solution=True),
        _cell("code", "# Visible check for add_one (the hidden tests are stricter).\n"
                      "assert float(add_one([1.0])[0]) == 2.0",
              grade_id="test_add_one", grade=True, locked=True, points=1),
    ]
    return notebook


ORACLE = '''"""The exact oracle for {name}: what each exercise must return, in float64."""
import numpy as np


def add_one(x):
    return np.asarray(x, dtype=np.float64) + 1
'''

ASSIGNMENT = '''# How the engine grades {name}. Read by rlcourse.course.config.AssignmentConfig.
title = "{name}"
notebook = "{name}.ipynb"
framework = "{framework}"
'''

DIAGNOSES = '''# The misconceptions {name}'s items can name. summary: what went wrong, for a TA;
# fix: what the student should change.

[returned_input]
summary = "add_one returned its input unchanged."
fix = "Add one to every element: return x + 1."
'''

MISCONCEPTIONS = '''"""The bugs {name}'s items can diagnose, each modelled exactly (see rlcourse.grading.rubric)."""


class Models:
    def __init__(self, exact):
        self.exact = exact

    def add_one(self, x) -> dict:
        """What each known bug returns for x."""
        return {{"returned_input": self.exact.add_one(x) - 1}}


EXPLAIN = {{"returned_input": "it returned x itself"}}
'''

GRADER = '''"""add_one: x + 1, elementwise, on inputs the notebook does not show."""
from rlcourse.grading.rubric import Evidence, as_array, item


@item(1, cell="test_add_one", title="add_one on random arrays")
def test_random_arrays(student, exact, models, explain, rng):
    evidence = Evidence()
    for size in (1, 5, 17):
        x = rng.normal(size=size)
        what = f"add_one on {{size}} values"
        actual = as_array(student.call("add_one", x), what=what, shape=x.shape)
        evidence.compare(actual, exact.add_one(x), what=what, models=models.add_one(x),
                         explain=explain, see="print add_one([1.0, 2.0]): it should be [2, 3].")
    evidence.conclude()
'''

BANK_REFERENCE = '''"""The reference solution, as a student would submit it: every item passes."""
LOSES = {}
'''

BANK_OTHER_FORM = '''"""add_one written another way than the reference: a correct form must get full marks."""
CELLS = {{"add_one": "def add_one(x):\\n    return 1 + {array}\\n"}}
LOSES = {{}}
'''

BANK_BUG = '''"""Returns x unchanged: the item names the returned_input misconception."""
EDITS = {{"add_one": [("{array} + 1", "{array}")]}}
LOSES = {{"add_one.random_arrays": "returned_input"}}
'''


def generate_release(course: Course, name: str) -> Path:
    """nbgrader generate_assignment, run in a scratch copy (as `rlcourse check` compares it) so
    the course's own gradebook is not touched; the result is copied into release/<name>/."""
    nbgrader = Path(sys.executable).with_name("nbgrader")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        shutil.copy(course.root / "nbgrader_config.py", scratch)
        shutil.copytree(course.root / "source" / name, scratch / "source" / name)
        subprocess.run([str(nbgrader), "generate_assignment", name, "--force"], cwd=scratch,
                       check=True, capture_output=True,
                       env={"PATH": f"{nbgrader.parent}:/usr/bin:/bin", "HOME": str(scratch)})
        target = course.root / "release" / name
        shutil.copytree(scratch / "release" / name, target, dirs_exist_ok=True)
    return target


def new_assignment(course: Course, name: str, *, framework: str) -> list[Path]:
    """Write assignment `name` into `course`; refuse to overwrite anything. Returns the files."""
    if not name.isidentifier():
        raise CourseError(f"{name!r} is not an assignment name (letters, digits and _)")
    if framework not in FRAMEWORKS:
        raise CourseError(f"--framework {framework!r}; use one of {', '.join(sorted(FRAMEWORKS))}")
    root = course.root
    folders = [root / part / name for part in ("source", "release", "graders", "solutions")]
    folders.append(root / "tests" / "bank" / name)
    taken = [folder for folder in folders if folder.exists()]
    if taken:
        raise CourseError(f"{taken[0]} already exists: pick another name or remove it")
    array = ARRAY[framework][1]
    files = {
        root / "solutions" / name / "exact.py": ORACLE.format(name=name),
        root / "graders" / name / "assignment.toml": ASSIGNMENT.format(name=name, framework=framework),
        root / "graders" / name / "diagnoses.toml": DIAGNOSES.format(name=name),
        root / "graders" / name / "misconceptions.py": MISCONCEPTIONS.format(name=name),
        root / "graders" / name / "test_add_one.py": GRADER.format(),
        root / "tests" / "bank" / name / "reference.py": BANK_REFERENCE,
        root / "tests" / "bank" / name / "correct_one_plus_x.py": BANK_OTHER_FORM.format(array=array),
        root / "tests" / "bank" / name / "buggy_returned_input.py": BANK_BUG.format(array=array),
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    source = root / "source" / name / f"{name}.ipynb"
    source.parent.mkdir(parents=True)
    nbformat.write(source_notebook(name, framework), source)
    release = generate_release(course, name) / f"{name}.ipynb"
    return [source, release, *files]
