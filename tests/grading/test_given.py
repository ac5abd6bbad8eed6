"""Given code stays given: a later cell that redefines, shadows or patches what a locked given cell
defines is found, the released definitions are run again right after it, and the report says so
(issue 13, item 3)."""
import json

import pytest

from rlcourse.grading.given import definitions, shadowing
from rlcourse.grading.pipeline import Grader
from rlcourse.course.submission import NotebookProblem, load_submission


@pytest.fixture
def ps1(course):
    return course.assignment("ps1")


def with_cell_source(assignment, tmp_path, grade_id, source):
    notebook = json.loads(assignment.source_notebook.read_text())
    cell = next(cell for cell in notebook["cells"]
                if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)
    cell["source"] = "".join(cell["source"]) + "\n" + source
    path = tmp_path / "ps1.ipynb"
    path.write_text(json.dumps(notebook))
    return path


@pytest.mark.parametrize("source", [
    "def train(*args, **kwargs):\n    return FAKE\n",
    "train = lambda *args, **kwargs: FAKE\n",
    "train.__wrapped__ = None\n",
    "globals()['tr' + 'ain'] = None\n",
    "for rollout in [None]:\n    pass\n",
    "import math as jnp\n",
])
def test_a_later_cell_that_shadows_given_code_is_followed_by_the_released_definitions(ps1, tmp_path, source):
    path = with_cell_source(ps1, tmp_path, "exercise_horizon", source)
    with Grader(ps1, warm_cache=False) as grader:
        graded = grader._as_graded(load_submission(path))
    position = next(n for n, cell in enumerate(graded.cells) if cell.grade_id == "exercise_horizon")
    after = graded.cells[position + 1:]
    restored = [cell.grade_id for cell in after if cell.grade_id in ("given_environment", "given_training")]
    assert restored, [cell.grade_id for cell in after]
    assert any("exercise_horizon" in note and "released definitions were used" in note
               for note in graded.warnings)


@pytest.mark.parametrize("source, name, restored", [
    ("STEP_COST = 0.0\n", "STEP_COST", "given_environment"),
    ("GOAL_REWARD *= 10\n", "GOAL_REWARD", "given_environment"),
    ("PARAMS['clip'] = 0.3\n", "PARAMS", "given_parameters"),
    ("PARAMS = dict(PARAMS, step_cost=-0.01)\n", "PARAMS", "given_parameters"),
])
def test_rebinding_the_students_own_values_is_noted_and_undone(ps1, tmp_path, source, name, restored):
    """Issue 29: the corridor's rewards (STEP_COST = PARAMS["step_cost"], computed, not a literal)
    and PARAMS (bound in the parameter cell's if/else) were given names nobody protected: a
    later cell rebinding them left no note and changed what later cells and the graders' calls
    ran on. Now the report says so, and the given cell runs again right after (the parameter
    cell as graded: pinned to the student)."""
    path = with_cell_source(ps1, tmp_path, "exercise_horizon", source)
    with Grader(ps1, warm_cache=False) as grader:
        graded = grader._as_graded(load_submission(path), student="ada")
    position = next(n for n, cell in enumerate(graded.cells) if cell.grade_id == "exercise_horizon")
    after = {cell.grade_id: cell.source for cell in graded.cells[position + 1:position + 3]}
    assert restored in after
    if restored == "given_parameters":
        assert "STUDENT = 'ada'" in after[restored] and "PARAMS = " in after[restored]
    else:
        assert 'STEP_COST = PARAMS[\'step_cost\']' in after[restored]
    assert any(f"exercise_horizon) redefines or patches {name}" in note for note in graded.warnings)


def test_the_restored_definitions_hold_no_demonstration_run(ps1, tmp_path):
    path = with_cell_source(ps1, tmp_path, "exercise_horizon", "def train():\n    pass\n")
    with Grader(ps1, warm_cache=False) as grader:
        graded = grader._as_graded(load_submission(path))
    position = next(n for n, cell in enumerate(graded.cells) if cell.grade_id == "exercise_horizon")
    restored = next(cell for cell in graded.cells[position + 1:] if cell.grade_id == "given_training")
    assert "def train(" in restored.source and "def _update(" in restored.source


@pytest.mark.parametrize("name", ["ps1", "ps2", "ps3"])
def test_reference_and_honest_demo_notebooks_shadow_nothing(course, name):
    from rlcourse.demo import STUDENTS

    assignment = course.assignment(name)
    honest = [student for student, entry in STUDENTS.items() if not entry.startswith("cheat")]
    notebooks = [assignment.source_notebook, assignment.release_notebook,
                 *sorted(path for path in (course.root / "demo" / "submitted").glob(f"*/{name}/{name}.ipynb")
                         if path.parts[-3] in honest)]
    with Grader(assignment, warm_cache=False) as grader:
        for path in notebooks:
            try:
                submission = load_submission(path)
            except NotebookProblem:  # the demo class's deliberately broken notebooks
                continue
            graded = grader._as_graded(submission)
            assert not any("released definitions were used" in note for note in graded.warnings), path


def test_a_derived_constant_is_given_only_when_it_calls_nothing_and_reads_given_names():
    names, source = definitions("A = PARAMS['x']\nB = A * 2 + GOAL\nC = len(A)\nD = unknown + 1\n"
                                "E = [x for x in A]\n", known={"PARAMS", "GOAL"})
    assert names == {"A", "B"} and "len" not in source and "unknown" not in source


def test_reimporting_a_given_module_under_its_own_name_is_not_shadowing():
    given, imports = {"np", "train"}, {"np": "numpy"}
    assert shadowing("import numpy as np\nx = np.ones(3)", given, imports) == set()
    assert shadowing("import torch as np", given, imports) == {"np"}
    assert shadowing("def f():\n    train = 1\n    return train", given, imports) == set()
    assert shadowing("def f():\n    global train\n    train = 1", given, imports) == {"train"}


def test_the_demo_cheat_that_patches_jnp_allclose_is_named(course):
    """ken patches jnp.allclose (the grader's verdicts are its own anyway): the report says so."""
    ps1 = course.assignment("ps1")
    with Grader(ps1, warm_cache=False) as grader:
        graded = grader._as_graded(load_submission(course.root / "demo" / "submitted" / "ken" / "ps1" / "ps1.ipynb"))
    assert any("patches jnp" in note for note in graded.warnings)
