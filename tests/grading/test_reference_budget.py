"""The reference run: the source notebook's measured times set the limits, and a moved course
is measured (and its compilation cache warmed) again."""
import shutil

import nbformat
import pytest

from rlcourse.course.directory import Course
from rlcourse.grading.pipeline import FLOOR_SECONDS, REFERENCE_FACTOR, Grader, budget, call_limits
from rlcourse.worker.limits import Limits


def test_limits_are_ten_times_the_reference_with_a_floor():
    limits = budget(Limits(), {"cell": 3.0, "call": 0.01, "total": 20.0})
    assert limits.cell_seconds == REFERENCE_FACTOR * 3.0
    assert limits.call_seconds == FLOOR_SECONDS["call_seconds"]
    assert limits.submission_seconds == REFERENCE_FACTOR * 20.0
    assert limits.memory_bytes == Limits().memory_bytes


def test_a_limit_set_in_assignment_toml_is_kept():
    limits = budget(Limits(call_seconds=33.0), {"cell": 3.0, "call": 9.0, "total": 20.0},
                    fixed={"call_seconds"})
    assert limits.call_seconds == 33.0 and limits.cell_seconds == 30.0


def test_each_function_gets_ten_times_its_own_slowest_call_within_the_call_limit():
    measured = {"cell": 1.0, "call": 9.6, "total": 60.0, "calls": {"train": 9.6, "loss": 0.01}}
    limits = budget(Limits(), measured)
    per_function = call_limits(limits, measured)
    assert per_function == {"train": limits.call_seconds, "loss": FLOOR_SECONDS["call_seconds"]}
    assert call_limits(limits, measured, fixed={"call_seconds"}) == {}


def test_without_a_reference_run_the_limits_are_unchanged():
    assert budget(Limits(), None) == Limits()


TOY_SOURCE = "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
TOY_GRADER = '''
from rlcourse.grading.rubric import item


@item(1, cell="test_double", title="doubles")
def test_doubles(student):
    assert student.call("double", 21) == 42
'''


def toy_course(folder, framework="numpy", source=TOY_SOURCE):
    """A course with one assignment: one function, one item."""
    (folder / "graders" / "toy").mkdir(parents=True)
    (folder / "nbgrader_config.py").write_text("")
    (folder / "graders" / "toy" / "assignment.toml").write_text(
        f'notebook = "toy.ipynb"\nframework = "{framework}"\n\n[limits]\nsubmission_seconds = 500.0\n')
    (folder / "graders" / "toy" / "test_toy.py").write_text(TOY_GRADER)
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source), nbformat.v4.new_code_cell("double(1)")]
    notebook.cells[0].metadata["nbgrader"] = dict(grade_id="double", solution=True, grade=False,
                                                  locked=False, schema_version=3)
    notebook.cells[1].metadata["nbgrader"] = dict(grade_id="test_double", solution=False, grade=True,
                                                  points=1, locked=True, schema_version=3)
    for where in ("source", "release"):
        (folder / where / "toy").mkdir(parents=True)
        nbformat.write(notebook, folder / where / "toy" / "toy.ipynb")
    return Course(folder)


@pytest.mark.slow
def test_the_reference_runs_once_per_place_and_sets_the_limits(tmp_path):
    runs = []
    log = runs.append
    course = toy_course(tmp_path / "course")
    with Grader(course.assignment("toy"), log=log) as grader:
        first = grader.reference
    assert [line for line in runs if "the reference" in line], runs
    assert set(first) == {"cell", "call", "total", "calls"} and set(first["calls"]) == {"double"}
    assert grader.limits.call_seconds == max(FLOOR_SECONDS["call_seconds"], REFERENCE_FACTOR * first["call"])
    assert grader.limits.submission_seconds == 500.0  # assignment.toml says so
    runs.clear()
    with Grader(course.assignment("toy"), log=log) as grader:
        assert grader.reference == first  # recorded: not run again in the same place
    assert not [line for line in runs if "the reference" in line], runs
    # cp -r takes .rlcourse-cache along; the copy must not trust it.
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "course", moved)
    assert list((moved / ".rlcourse-cache").rglob("warmed-*"))
    with Grader(Course(moved).assignment("toy"), log=log) as grader:
        assert grader.reference is not None
    assert [line for line in runs if "the reference" in line], "the moved course was not measured again"


JAX_SOURCE = ("import jax.numpy as jnp\n\nOFFSETS = jnp.zeros(3) + 1.0\n\n\ndef double(x):\n"
              "    ### BEGIN SOLUTION\n    return jnp.asarray(2 * x)\n    ### END SOLUTION\n")
"""A given line that compiles programs (OFFSETS), then the answer: the cache keeps the given
line's programs only (rlcourse.worker.compile_cache.GivenCodeOnly)."""


@pytest.mark.slow
def test_a_moved_course_finds_its_compiled_programs(tmp_path):
    """JAX's cache keys must not depend on where the cache lies: a copied course's reference run
    (which may write the cache) finds every program and compiles, so writes, none again."""
    course = toy_course(tmp_path / "course", framework="jax", source=JAX_SOURCE)
    with Grader(course.assignment("toy")) as grader:
        assert grader.reference is not None

    def programs(root):
        return {path.name for path in (root / ".rlcourse-cache").rglob("*-cache")}

    written = programs(tmp_path / "course")
    assert any(name.startswith("jit_") for name in written), written
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "course", moved)
    with Grader(Course(moved).assignment("toy")) as grader:
        assert grader.reference is not None  # measured again in its new place
    assert programs(moved) == written, "the moved course compiled its programs again"


@pytest.mark.slow
def test_a_batch_s_warm_up_starts_no_workers_of_its_own(tmp_path, monkeypatch):
    """`warm_once` runs before a batch's grading processes start: on a course whose reference is
    recorded it must not start a fork template (importing JAX or PyTorch only to close it cost
    each `rlcourse autograde` 3 to 4 core-seconds and as many seconds before the first grade)."""
    from rlcourse.batch import backends
    from rlcourse.grading import pipeline

    course = toy_course(tmp_path / "course")
    settings = backends.GraderSettings()
    backends.warm_once(course.assignment("toy"), settings)  # measures the reference
    started = []
    real = pipeline.make_launcher
    monkeypatch.setattr(pipeline, "make_launcher", lambda *a, **k: started.append(a) or real(*a, **k))
    backends.warm_once(course.assignment("toy"), settings)
    assert started == []
    with Grader(course.assignment("toy"), workers=False) as grader:
        assert grader.reference is not None and grader.isolation in ("bwrap", "rlimits")
    assert started == []
    with Grader(course.assignment("toy")) as grader:  # one that grades does start its workers
        assert grader.grade(course.assignment("toy").source_notebook).score == 1
    assert len(started) == 1
