"""ps1 under per-student variants: for twenty students' own values, the reference passes every
item that reads a parameter and each buggy bank entry still loses it, with its own tag.

Only the exercise items read `params` (the other items grade functions on hidden inputs that no
parameter changes), so these tests call those items directly, in this process, with a stand-in
for the worker that answers from the bank entry's own cells run for that student. Grading
twenty whole notebooks per entry would take an hour; the full path (worker, pinned parameter
cell, each entry graded as a student of its own name) is the bank's test, and `make demo`.
"""
from pathlib import Path

import nbformat
import numpy as np
import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.course.variants import parameter_cell
from rlcourse.grading.rubric import Failure

ROOT = Path(__file__).resolve().parents[2]
PS1 = Course(ROOT).assignment("ps1")
STUDENTS = [f"student{n:02d}" for n in range(20)]
VARIANTS = {student: PS1.parameters(student) for student in STUDENTS}
exact = load_solution(ROOT, "ps1", "exact")
misconceptions = load_course_module(ROOT / "graders" / "ps1" / "misconceptions.py", "ps1_misc_variants")
models, explain = misconceptions.Models(exact), misconceptions.EXPLAIN
items = load_course_module(ROOT / "graders" / "ps1" / "test_exercises.py", "ps1_exercise_items")
ENTRIES = {entry.name: entry for entry in load_entries(ROOT / "tests" / "bank" / "ps1")}


def test_twenty_students_cover_every_clip_and_twenty_seeds():
    assert {values["clip"] for values in VARIANTS.values()} == set(PS1.variants.parameters[1].choices)
    assert len({values["seed"] for values in VARIANTS.values()}) >= 15


class Answers:
    """Stands in for the worker: the variables a notebook's cells left, and calls into them."""

    def __init__(self, namespace: dict):
        self.namespace = namespace

    def get(self, *names):
        return {name: self.namespace[name] for name in names}

    def call(self, function, *args, **kwargs):
        result = self.namespace[function](*args, **kwargs)
        return tuple(np.asarray(part) for part in result) if isinstance(result, tuple) else np.asarray(result)


def cells_of(entry_name: str) -> dict:
    assignment = PS1
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    notebook = nbformat.reads(build_submission(ENTRIES[entry_name], base).decode(), as_version=4)
    return {cell.metadata.get("nbgrader", {}).get("grade_id"): cell.source
            for cell in notebook.cells if cell.cell_type == "code"}


def run_as(student: str, cells: dict, names: tuple, namespace: dict | None = None) -> dict:
    """Run the named cells for `student` (their parameter cell pinned, as grading pins it)."""
    namespace = dict(namespace or {})
    exec(parameter_cell("ps1", PS1.variants, student=student), namespace)  # noqa: S102
    for name in names:
        exec(cells[name], namespace)  # noqa: S102 - the course's own bank cells
    return namespace


def outcome(item, student: str, answers) -> str | None:
    try:
        item(answers, exact, **dict(models=models, explain=explain, params=VARIANTS[student]))
    except Failure as failure:
        return failure.tag
    return None


# --- exercise 4: clipping with both signs (pure arithmetic: every student, no JAX training) ----
CLIPPING = {"reference": None, "buggy_max_instead_of_min": "max_instead_of_min",
            "correct_exercises_other_ways": None}


def clipping_item(answers, exact, *, models, explain, params):
    return items.test_clipping_signs(answers, exact, explain, params)


@pytest.mark.parametrize("entry, tag", CLIPPING.items())
def test_clipping_signs_under_twenty_variants(entry, tag):
    cells = cells_of(entry)
    prelude = run_as(STUDENTS[0], cells, ("given_environment",))
    for student in STUDENTS:
        answers = Answers(run_as(student, cells, ("exercise_clipping_signs",), prelude))
        assert outcome(clipping_item, student, answers) == tag, (entry, student, VARIANTS[student])


def test_clipping_signs_copied_from_a_classmate_with_another_clip_is_wrong():
    cells = cells_of("reference")
    prelude = run_as(STUDENTS[0], cells, ("given_environment",))
    lost = 0
    for student, other in zip(STUDENTS, STUDENTS[1:] + STUDENTS[:1]):
        if VARIANTS[student]["clip"] == VARIANTS[other]["clip"]:
            continue
        answers = Answers(run_as(other, cells, ("exercise_clipping_signs",), prelude))
        assert outcome(clipping_item, student, answers) == "wrong_value"
        lost += 1
    assert lost >= 10


# --- exercise 1: REINFORCE from the student's own seed (JAX training in this process) ---------
CHANGED_SEED = {"reference": None, "correct_exercises_other_ways": None,
                "buggy_loss_sign": "training_not_improving",
                "buggy_normalized_by_transitions": "training_not_improving",
                "buggy_dp_horizon_off_by_one": "dp_horizon_off_by_one",
                "buggy_dp_wrong_start_distribution": "dp_wrong_start_distribution"}
"""Every bank entry that loses exercises.changed_seed and runs, with its tag; the entry that
patches jnp.allclose is left out (it would patch this process's JAX: the bank grades it)."""
UP_TO_TRAINING = ("given_environment", "returns_to_go", "policy_loss", "exact_return", "given_training")


def changed_seed_item(answers, exact, *, models, explain, params):
    return items.test_changed_seed(answers, exact, models, explain, params)


@pytest.mark.slow
@pytest.mark.parametrize("entry, tag", CHANGED_SEED.items())
def test_changed_seed_under_twenty_variants(entry, tag):
    pytest.importorskip("jax")
    cells = cells_of(entry)
    prelude = run_as(STUDENTS[0], cells, UP_TO_TRAINING)
    prelude["theta_pg"], _ = prelude["train"](seed=0, method="reinforce", epochs=1)
    for student in STUDENTS:
        answers = Answers(run_as(student, cells, ("exercise_changed_seed",), prelude))
        assert outcome(changed_seed_item, student, answers) == tag, (entry, student, VARIANTS[student])


@pytest.mark.slow
def test_a_run_from_a_classmates_seed_is_wrong():
    pytest.importorskip("jax")
    cells = cells_of("reference")
    prelude = run_as(STUDENTS[0], cells, UP_TO_TRAINING)
    prelude["theta_pg"], _ = prelude["train"](seed=0, method="reinforce", epochs=1)
    for student, other in list(zip(STUDENTS, STUDENTS[1:]))[:3]:
        assert VARIANTS[student]["seed"] != VARIANTS[other]["seed"]
        answers = Answers(run_as(other, cells, ("exercise_changed_seed",), prelude))
        assert outcome(changed_seed_item, student, answers) == "wrong_value"


@pytest.mark.slow
def test_the_reference_passes_from_every_seed_a_student_can_get():
    """Fairness over the whole range, not only twenty students: REINFORCE from each allowed seed
    ends above the exercise's 0.9 and gains more than 0.35, with room to spare."""
    pytest.importorskip("jax")
    cells = cells_of("reference")
    train = run_as(STUDENTS[0], cells, UP_TO_TRAINING)["train"]
    seeds = next(p for p in PS1.variants.parameters if p.name == "seed").choices
    finals, gains = [], []
    for seed in seeds:
        _, history = train(seed=seed, method="reinforce", epochs=1)
        finals.append(float(history[-1]))
        gains.append(float(history[-1] - history[0]))
    assert min(finals) > 0.93 and min(gains) > 0.45, (min(finals), min(gains))
