"""ps1's hidden inputs have the power to tell each misconception from the right answer.

A grader that never feeds an input on which a bug changes the result cannot catch it; these
tests check, without any submission, that every modelled bug changes what the items compare.
"""
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution

ROOT = Path(__file__).resolve().parents[2]
exact = load_solution(ROOT, "ps1", "exact")
graders = load_course_module(ROOT / "graders" / "ps1" / "test_policy_loss.py", "ps1_policy_loss_items")
models = load_course_module(ROOT / "graders" / "ps1" / "misconceptions.py", "ps1_misconceptions").Models(exact)


@pytest.fixture
def cases():
    return [(clip, theta, graders.as_received(records))
            for clip, theta, records in graders.off_policy_cases(exact, np.random.default_rng(0))]


@pytest.mark.parametrize("bug", models.LOSS_BUGS["ppo"])
def test_every_clipped_objective_bug_changes_the_value(cases, bug):
    differs = [not np.isclose(models.loss(theta, records, "ppo", clip, bug),
                              exact.surrogate_loss(theta, records, "ppo", clip), rtol=1e-3, atol=1e-4)
               for clip, theta, records in cases]
    assert all(differs)


@pytest.mark.parametrize("bug", models.LOSS_BUGS["ppo"])
def test_every_clipped_objective_bug_changes_the_gradient(cases, bug):
    for clip, theta, records in cases:
        model = models.loss_gradients(theta, records, "ppo", clip)[bug]
        truth = exact.surrogate_gradient(theta, records, "ppo", clip)
        assert not np.allclose(model, truth, rtol=1e-2, atol=1e-3), (clip, bug)


def test_off_policy_ratios_leave_the_band_on_both_sides_for_both_signs(cases):
    for clip, theta, records in cases:
        ratio, target = exact.ratio_and_target(theta, records)
        live = records["active"].astype(bool)
        for sign in (1, -1):
            signed = live & (np.sign(target) == sign)
            assert np.any(signed & (ratio > 1 + clip)) and np.any(signed & (ratio < 1 - clip))
