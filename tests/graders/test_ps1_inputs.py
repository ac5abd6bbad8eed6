"""ps1's hidden inputs have the power to tell each misconception from the right answer, with every
pair of rewards a student can have (the records policy_loss is graded on carry the student's own
rewards, and exact_return's answers move with them).

A grader that never feeds an input on which a bug changes the result cannot catch it; these
tests check, without any submission, that every modelled bug changes what the items compare.
"""
import itertools
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.directory import Course
from rlcourse.course.solutions import load_course_module, load_solution

ROOT = Path(__file__).resolve().parents[2]
oracle = load_solution(ROOT, "ps1", "exact")
graders = load_course_module(ROOT / "graders" / "ps1" / "test_policy_loss.py", "ps1_policy_loss_items")
misconceptions = load_course_module(ROOT / "graders" / "ps1" / "misconceptions.py", "ps1_misconceptions")
_choices = {p.name: p.choices for p in Course(ROOT).assignment("ps1").variants.parameters}
REWARDS = [{"step_cost": cost, "goal_reward": reward}
           for cost, reward in itertools.product(_choices["step_cost"], _choices["goal_reward"])]
every_pair = pytest.mark.parametrize("params", REWARDS, ids=lambda p: f"{p['step_cost']},{p['goal_reward']}")


def cases(exact):
    return [(clip, theta, graders.as_received(records))
            for clip, theta, records in graders.off_policy_cases(exact, np.random.default_rng(0))]


@every_pair
@pytest.mark.parametrize("bug", misconceptions.Models.LOSS_BUGS["ppo"])
def test_every_clipped_objective_bug_changes_the_value(params, bug):
    """In every case with the default rewards; with others, in at least one case of the item
    (a loss is a sum of terms of both signs: the inverted ratio's happens to land within the
    item's tolerance of the truth in one of the two cases at -0.05 and 1.1, and 108 times its
    tolerance away in the other)."""
    exact = oracle.for_parameters(params)
    models = misconceptions.Models(exact)
    differs = [not np.isclose(models.loss(theta, records, "ppo", clip, bug),
                              exact.surrogate_loss(theta, records, "ppo", clip), rtol=1e-3, atol=1e-4)
               for clip, theta, records in cases(exact)]
    assert all(differs) if exact.corridor == oracle.DEFAULT else any(differs)


@every_pair
@pytest.mark.parametrize("bug", misconceptions.Models.LOSS_BUGS["ppo"])
def test_every_clipped_objective_bug_changes_the_gradient(params, bug):
    exact = oracle.for_parameters(params)
    models = misconceptions.Models(exact)
    for clip, theta, records in cases(exact):
        model = models.loss_gradients(theta, records, "ppo", clip)[bug]
        truth = exact.surrogate_gradient(theta, records, "ppo", clip)
        assert not np.allclose(model, truth, rtol=1e-2, atol=1e-3), (clip, bug)


@every_pair
def test_off_policy_ratios_leave_the_band_on_both_sides_for_both_signs(params):
    exact = oracle.for_parameters(params)
    for clip, theta, records in cases(exact):
        ratio, target = exact.ratio_and_target(theta, records)
        live = records["active"].astype(bool)
        for sign in (1, -1):
            signed = live & (np.sign(target) == sign)
            assert np.any(signed & (ratio > 1 + clip)) and np.any(signed & (ratio < 1 - clip))


@every_pair
def test_every_exact_return_bug_changes_what_its_items_compare(params):
    """The known policies, exercise 3's horizon-2 value and the random horizons 1-12: each DP
    bug's value differs from the truth, well beyond the items' tolerance, in at least one case of
    each item (and in exercise 3's only case). The default rewards typed in are that bug only
    for a student whose rewards are not the defaults: for one whose are, it is the truth."""
    exact = oracle.for_parameters(params)
    models = misconceptions.Models(exact)
    rng = np.random.default_rng(0)
    known = [(np.full(3, logit), horizon) for logit, horizon in ((-100.0, 8), (0.0, 8), (100.0, 8), (100.0, 2))]
    random = [(rng.normal(0.0, 1.5, size=3), horizon) for horizon in range(1, 13)]
    for cases_of_an_item in (known, random, known[-1:]):
        apart = {}
        for theta, horizon in cases_of_an_item:
            truth = exact.dp_return(theta, horizon)
            for tag, value in models.exact_return(theta, horizon):
                if tag == misconceptions.TYPED_DEFAULTS and exact.corridor == exact.DEFAULT:
                    continue
                apart[tag] = apart.get(tag, False) or abs(value - truth) > 100 * (2e-6 + 1e-5 * abs(truth))
        assert all(apart.values()), apart
