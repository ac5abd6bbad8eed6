"""ps1's exercise 6 (finite-horizon values with a dear climb), its prediction and the concept
checks: the oracle against brute force, the figures the notebook's text and reference answers
rest on, and each bank entry's items graded in this process.

The items of graders/ps1/test_horizon.py and test_concepts.py are called directly with a stand-in
for the worker that answers from the entry's own cells run here (no training cell runs), so this
takes seconds; the full path (worker, every item) is the bank's slow test.
"""
import itertools
import re
from pathlib import Path
from types import SimpleNamespace

import nbformat
import numpy as np
import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.course.submission import CodeCell
from rlcourse.course.variants import parameter_cell
from rlcourse.grading.rubric import Failure

ROOT = Path(__file__).resolve().parents[2]
PS1 = Course(ROOT).assignment("ps1")
exact = load_solution(ROOT, "ps1", "exact")
misconceptions = load_course_module(ROOT / "graders" / "ps1" / "misconceptions.py", "ps1_misc_horizon")
horizon = load_course_module(ROOT / "graders" / "ps1" / "test_horizon.py", "ps1_horizon_items")
concepts = load_course_module(ROOT / "graders" / "ps1" / "test_concepts.py", "ps1_concept_items")
ENTRIES = {entry.name: entry for entry in load_entries(ROOT / "tests" / "bank" / "ps1")}
SOURCE = nbformat.read(PS1.source_notebook, as_version=4)


def brute_force(climb_cost, steps, cell):
    """The best total over every sequence of `steps` moves from `cell`, and the first move of the
    best sequences (1 only if starting right is strictly better)."""
    best = {0: -np.inf, 1: -np.inf}
    for moves in itertools.product((0, 1), repeat=steps):
        position, total = cell, 0.0
        for move in moves:
            if move == 1 and position + 1 == 3:
                total += 1.0
                break
            total += -climb_cost if move == 1 else -0.01
            position = position + 1 if move == 1 else max(position - 1, 0)
        best[moves[0]] = max(best[moves[0]], total)
    return max(best.values()), int(best[1] > best[0] + 1e-12)


@pytest.mark.parametrize("climb_cost", [0.3, 0.5325, 0.62])
def test_the_oracle_is_the_best_over_every_move_sequence(climb_cost):
    values, actions = exact.finite_horizon(climb_cost, 9)
    for steps in range(1, 10):
        for cell in range(3):
            assert (values[steps, cell], actions[steps, cell]) == pytest.approx(
                brute_force(climb_cost, steps, cell))
    assert np.all(values[0] == 0) and np.all(values[:, 3] == 0) and np.all(actions[0] == 0)


def test_the_notebook_figures_hold():
    """The model answer: from cell 0 the climb nets 1 - 2c and waiting costs 0.01 per step left,
    so the move turns right at the first k with 0.01 k > 2c - 1; with c = 0.3 the climb pays for
    itself (1 - 2c = 0.4 > 0) and the move turns right as soon as the goal is reachable (3 steps
    left). The reference's prediction is that k for CLIMB_COST."""
    cost = horizon.CLIMB_COST
    assert f"CLIMB_COST = {cost}" in cell_source("finite_horizon_values")
    flip = exact.flip_horizon(cost, 12)
    assert 1 - 2 * cost < 0 and flip == next(k for k in range(1, 13) if 0.01 * k > 2 * cost - 1)
    print(f"CLIMB_COST {cost}: the first move from cell 0 turns right at {flip} steps left")
    assert re.search(rf"PREDICTED_FLIP_HORIZON = {flip}\b", cell_source("predict_flip_horizon"))
    assert 3 < flip < 12  # apart from the tags' "reachable" (3), "never" and each other
    assert "With $c = 0.3$ the climb pays for itself ($1 - 2c = 0.4 > 0$)" in cell_source("explain_flip_horizon")
    assert 1 - 2 * 0.3 == pytest.approx(0.4) and exact.flip_horizon(0.3, 12) == 3
    _, actions = exact.finite_horizon(cost, 12)
    assert np.all(np.diff(actions, axis=0) >= 0)  # once right, right for every longer horizon
    flips = {exact.flip_horizon(c, 12) for c, _ in horizon.CASES}
    assert len(flips) == 3 and None in flips  # the graded cases: cheap, the notebook's, never


def cell_source(grade_id):
    return next(c.source for c in SOURCE.cells if c.get("id") == grade_id)


class Student:
    """Stands in for the worker: the entry's cells up to exercise 6 run here (its parameter cell
    pinned to its own name, as the bank grades it), its text as written."""

    def __init__(self, notebook, name):
        self.submission = SimpleNamespace(cells=tuple(
            CodeCell(index, cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
            for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"))
        self.namespace = {}
        exec(parameter_cell("ps1", PS1.variants, student=name), self.namespace)  # noqa: S102
        by_id = {cell.grade_id: cell.source for cell in self.submission.cells}
        for name in ("given_environment", "finite_horizon_values"):
            exec(by_id[name], self.namespace)  # noqa: S102 - the course's own bank cells

    def call(self, function, *args, **kwargs):
        try:
            result = self.namespace[function](*args, **kwargs)
        except NotImplementedError:
            raise Failure("not_implemented", did="raised NotImplementedError", should="") from None
        return tuple(np.asarray(part) for part in result)


ITEMS = {"horizon.values": horizon.test_values, "horizon.first_moves": horizon.test_first_moves,
         "horizon.prediction": horizon.test_prediction, "concepts.q1": concepts.test_q1,
         "concepts.q2": concepts.test_q2, "concepts.q3": concepts.test_q3, "concepts.q4": concepts.test_q4}
NAMES = sorted(name for name, entry in ENTRIES.items() if entry.raw is None
               and (set(entry.cells) | set(entry.edits)) & {"finite_horizon_values", "predict_flip_horizon",
                                                            "concept_checks"}) + ["reference"]


@pytest.mark.parametrize("name", NAMES)
def test_each_entry_loses_exactly_its_items(name):
    base = reference_student(PS1.source_notebook, PS1.release_notebook)
    notebook = nbformat.reads(build_submission(ENTRIES[name], base).decode(), as_version=4)
    student = Student(notebook, name)
    own = exact.for_parameters(PS1.parameters(name))  # the oracle as the bank grades the entry
    fixtures = dict(exact=own, models=misconceptions.Models(own), explain=misconceptions.EXPLAIN)
    lost = {}
    for item_id, item in ITEMS.items():
        wanted = {key: value for key, value in fixtures.items()
                  if key in item.__code__.co_varnames[:item.__code__.co_argcount]}
        try:
            item(student, **wanted)
        except Failure as failure:
            lost[item_id] = failure.tag
    assert lost == {key: tag for key, tag in ENTRIES[name].loses.items() if key in ITEMS}


@pytest.mark.parametrize("name", NAMES)
def test_the_visible_check_fails_each_finite_horizon_bug(name):
    """Exercise 6's visible check (properties only) stops every buggy form of the function the bank
    holds and passes every correct one: run here on the entry's own cells, without a kernel."""
    base = reference_student(PS1.source_notebook, PS1.release_notebook)
    notebook = nbformat.reads(build_submission(ENTRIES[name], base).decode(), as_version=4)
    student = Student(notebook, name)
    check = next(cell.source for cell in notebook.cells if cell.get("id") == "test_finite_horizon_values")
    buggy = any(item.startswith("horizon.") and item != "horizon.prediction" for item in ENTRIES[name].loses)
    if not buggy:
        exec(check, student.namespace)  # noqa: S102 - the course's own visible check
        return
    with pytest.raises((AssertionError, NotImplementedError)):
        exec(check, student.namespace)  # noqa: S102


def test_a_students_own_rewards_in_exercise_6_are_seen_at_every_pair_but_the_defaults():
    """The exercise keeps the default rewards for everyone: finite_horizon_values written with the
    student's own STEP_COST and GOAL_REWARD (fh_own_rewards) is wrong in the values of some graded
    case and in the first moves of another for every other pair of rewards, and is no bug at the
    defaults."""
    choices = {p.name: p.choices for p in PS1.variants.parameters}
    for cost, reward in itertools.product(choices["step_cost"], choices["goal_reward"]):
        models = misconceptions.Models(exact.for_parameters({"step_cost": cost, "goal_reward": reward}))
        values_apart, moves_apart = False, False
        for climb_cost, max_horizon in horizon.CASES:
            truth = exact.finite_horizon(climb_cost, max_horizon)
            own = dict(models.finite_horizon(climb_cost, max_horizon))["fh_own_rewards"]
            values_apart |= not np.allclose(own[0], truth[0], rtol=1e-4, atol=1e-4)
            moves_apart |= not np.array_equal(own[1], truth[1])
        default = (cost, reward) == (exact.DEFAULT.step_cost, exact.DEFAULT.goal_reward)
        assert (values_apart, moves_apart) == ((False, False) if default else (True, True)), (cost, reward)
