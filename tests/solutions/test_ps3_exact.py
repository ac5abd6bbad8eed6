"""The ps3 oracle: each fast path agrees with an obviously correct slow one, the oracle agrees
with the NumPy reference solution (the second check), and the graders' inputs tell every modelled
bug from the right answer."""
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution

ROOT = Path(__file__).resolve().parents[2]
exact = load_solution(ROOT, "ps3", "exact")
reference = load_solution(ROOT, "ps3", "reference")
models = load_course_module(ROOT / "graders" / "ps3" / "misconceptions.py",
                            "ps3_misconceptions_for_tests").Models(exact)


def random_episode_buffer(rng, length):
    rewards, values, next_values = rng.normal(size=length), rng.normal(size=length), rng.normal(size=length)
    terminated = rng.random(length) < 0.15
    truncated = ~terminated & (rng.random(length) < 0.15)
    return rewards, values, next_values, terminated, truncated


class TestSoftmax:
    def test_rows_sum_to_one_and_match_the_definition(self):
        logits = np.random.default_rng(0).normal(size=(4, 5))
        naive = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(exact.softmax(logits), naive, rtol=1e-13)
        np.testing.assert_allclose(reference.softmax(logits), naive, rtol=1e-13)

    def test_extreme_logits_stay_finite(self):
        logits = np.array([[1000.0, 999.0], [-1000.0, -1000.0]])
        for p in (exact.softmax(logits), reference.softmax(logits)):
            np.testing.assert_allclose(p, [[1 / (1 + np.exp(-1)), 1 / (1 + np.e)], [0.5, 0.5]])


class TestReturnsAndAdvantages:
    @pytest.mark.parametrize("length, gamma", [(1, 0.9), (7, 0.5), (30, 0.99), (5, 1.0), (4, 0.0)])
    def test_double_sum_equals_backward_recursion(self, length, gamma):
        rewards = np.random.default_rng(length).normal(size=length)
        np.testing.assert_allclose(exact.reward_to_go(rewards, gamma),
                                   reference.discounted_returns(rewards, gamma), atol=1e-12)

    @pytest.mark.parametrize("seed", range(5))
    def test_gae_definition_equals_recursion(self, seed):
        rng = np.random.default_rng(seed)
        args = (*random_episode_buffer(rng, 25), 0.95, 0.8)
        np.testing.assert_allclose(exact.gae_by_definition(*args), reference.gae(*args), atol=1e-12)
        np.testing.assert_allclose(exact.td_errors(*args[:4], 0.95),
                                   reference.td_advantage(*args[:4], 0.95), atol=1e-12)

    def test_gae_limits(self):
        rng = np.random.default_rng(9)
        rewards, values, next_values, terminated, truncated = random_episode_buffer(rng, 12)
        np.testing.assert_allclose(exact.gae_by_definition(rewards, values, next_values, terminated,
                                                           truncated, 0.9, 0.0),
                                   exact.td_errors(rewards, values, next_values, terminated, 0.9))
        end = np.zeros(6, dtype=bool)
        end[-1] = True
        rewards, values = rng.normal(size=6), rng.normal(size=6)
        np.testing.assert_allclose(
            exact.gae_by_definition(rewards, values, np.append(values[1:], 7.0), end,
                                    np.zeros(6, dtype=bool), 0.9, 1.0) + values,
            exact.reward_to_go(rewards, 0.9), atol=1e-12)

    def test_course_figures(self):
        """The figures the notebook's visible checks and ps2 use."""
        r, v, nv = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 1.5]), np.array([1.0, 1.5, 2.0])
        no, yes = np.zeros(3, dtype=bool), np.array([False, False, True])
        np.testing.assert_allclose(exact.gae_by_definition(r, v, nv, no, yes, 0.9, 0.5), [3.12575, 3.835, 3.3])
        np.testing.assert_allclose(exact.gae_by_definition(r, v, nv, no, yes, 0.9, 1.0), [6.188, 5.32, 3.3])


class TestGradients:
    @pytest.mark.parametrize("n, k", [(2, 2), (5, 3), (3, 6)])
    def test_reinforce_closed_form_equals_finite_differences(self, n, k):
        rng = np.random.default_rng(n * 10 + k)
        logits, actions, weights = rng.normal(size=(n, k)), rng.integers(0, k, n), rng.normal(size=n)
        numeric = exact.finite_difference(lambda z: exact.reinforce_loss(z, actions, weights), logits)
        np.testing.assert_allclose(exact.reinforce_logit_grad(logits, actions, weights), numeric, atol=1e-9)
        np.testing.assert_allclose(reference.reinforce_logit_grad(exact.softmax(logits), actions, weights),
                                   numeric, atol=1e-9)

    @pytest.mark.parametrize("eps", [0.1, 0.2, 0.25])
    def test_ppo_closed_form_equals_finite_differences_away_from_kinks(self, eps):
        rng = np.random.default_rng(int(eps * 100))
        logits = rng.normal(size=(30, 3))
        old = exact.softmax(logits + rng.normal(0, 0.6, size=(30, 3)))
        actions, advantages = rng.integers(0, 3, 30), rng.normal(size=30)
        ratio = exact.softmax(logits)[np.arange(30), actions] / old[np.arange(30), actions]
        keep = (np.abs(ratio - (1 - eps)) > 1e-3) & (np.abs(ratio - (1 + eps)) > 1e-3)
        logits, old, actions, advantages = logits[keep], old[keep], actions[keep], advantages[keep]
        assert np.any(ratio[keep] > 1 + eps) and np.any(ratio[keep] < 1 - eps)
        numeric = exact.finite_difference(lambda z: exact.ppo_loss(z, old, actions, advantages, eps), logits)
        np.testing.assert_allclose(exact.ppo_logit_grad(logits, old, actions, advantages, eps), numeric, atol=1e-9)
        np.testing.assert_allclose(reference.ppo_logit_grad(exact.softmax(logits), old, actions, advantages, eps),
                                   numeric, atol=1e-9)

    def test_mlp_backward_equals_finite_differences(self):
        rng = np.random.default_rng(4)
        params = reference.init_mlp(rng, 3, 5, 2)
        x, grad_out = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
        out, grads = reference.mlp_gradients(params, x, grad_out)
        np.testing.assert_allclose(out, exact.mlp_forward(params, x), atol=1e-12)
        numeric = exact.mlp_gradients_fd(params, x, grad_out)
        for name in params:
            np.testing.assert_allclose(grads[name], numeric[name], atol=1e-8)


class TestExactPolicyGradients:
    def test_bandit_closed_form_equals_finite_differences(self):
        theta, q = np.array([0.3, -1.2, 0.8, 0.0]), np.array([1.0, -2.0, 0.5, 3.0])
        numeric = exact.finite_difference(lambda t: exact.bandit_return(t, q), theta)
        np.testing.assert_allclose(exact.bandit_gradient(theta, q), numeric, atol=1e-9)

    @pytest.mark.parametrize("horizon, gamma", [(1, 0.9), (3, 0.9), (4, 1.0)])
    def test_dp_value_equals_enumeration(self, horizon, gamma):
        mdp = exact.example_mdp(horizon, gamma)
        theta = np.random.default_rng(horizon).normal(size=(2, 2))
        assert mdp.value(theta) == pytest.approx(mdp.enumerated_value(theta), abs=1e-12)
        assert sum(p for *_, p in mdp.trajectories(theta)) == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(mdp.visitation(theta).sum(axis=1), 1.0)

    @pytest.mark.parametrize("horizon, gamma", [(2, 0.8), (3, 0.9), (4, 1.0)])
    def test_policy_gradient_theorem_equals_finite_differences(self, horizon, gamma):
        mdp = exact.example_mdp(horizon, gamma)
        theta = np.random.default_rng(10 + horizon).normal(size=(2, 2))
        np.testing.assert_allclose(mdp.exact_gradient(theta), exact.finite_difference(mdp.value, theta), atol=1e-8)

    @pytest.mark.parametrize("horizon, gamma", [(3, 0.9), (4, 1.0), (3, 0.95)])
    def test_enumerated_reinforce_estimate_is_the_exact_gradient(self, horizon, gamma):
        """The identity the enumeration items rely on, for the oracle and the reference, and for
        PPO's gradient at ratio 1."""
        mdp = exact.example_mdp(horizon, gamma)
        theta = np.random.default_rng(20 + horizon).normal(size=(2, 2))
        logits, actions, states, weights = exact.enumeration_batch(mdp, theta)
        probs = exact.softmax(logits)
        for grad in (exact.reinforce_logit_grad(logits, actions, weights),
                     reference.reinforce_logit_grad(probs, actions, weights),
                     reference.ppo_logit_grad(probs, probs.copy(), actions, weights, 0.2)):
            np.testing.assert_allclose(-exact.sum_by_state(grad, states), mdp.exact_gradient(theta), atol=1e-12)


class TestGraderInputsSeparateTheBugs:
    """A grader whose inputs never change a bug's result cannot catch it."""

    def test_every_ppo_bug_changes_the_finite_difference_cases(self):
        graders = load_course_module(ROOT / "graders" / "ps3" / "test_ppo_logit_grad.py", "ps3_ppo_items")
        rng = np.random.default_rng(0)
        for n, k, eps in graders.CASES:
            ratios = rng.choice(graders.RATIOS, n)
            logits, probs, old, actions = graders.off_policy_batch(rng, n, k, ratios)
            np.testing.assert_allclose(probs[np.arange(n), actions] / old[np.arange(n), actions], ratios)
            advantages = rng.choice([-1.0, 1.0], n) * rng.uniform(0.3, 2.0, n)
            truth = exact.ppo_logit_grad(logits, old, actions, advantages, eps)
            for tag, value in models.ppo(probs, old, actions, advantages, eps):
                if tag != "ppo_mask_wrong_side":  # one of its two forms may agree on a small batch
                    assert not np.allclose(value, truth, atol=1e-9), (tag, n, k)
            wrong_side = [value for tag, value in models.ppo(probs, old, actions, advantages, eps)
                          if tag == "ppo_mask_wrong_side"]
            assert any(not np.allclose(value, truth, atol=1e-9) for value in wrong_side)

    def test_truncation_and_terminal_bugs_change_gae(self):
        graders = load_course_module(ROOT / "graders" / "ps3" / "test_gae.py", "ps3_gae_items")
        rng = np.random.default_rng(1)
        args = (*graders.buffer(rng, 15, {3: "terminated", 8: "truncated", 14: "truncated"}), 0.9, 0.7)
        truth = exact.gae_by_definition(*args)
        for tag, value in models.gae(*args):
            assert not np.allclose(value, truth, atol=1e-6), tag

    def test_returns_bug_models_differ(self):
        rewards = np.random.default_rng(2).normal(size=6)
        truth = exact.reward_to_go(rewards, 0.9)
        (tag, from_start), = models.returns(rewards, 0.9)
        assert tag == "returns_discount_from_start" and not np.allclose(from_start, truth)
        shifted = truth + 0.9 ** np.arange(5, -1, -1) * 2.5
        forms = dict(models.returns(rewards, 0.9, shifted))
        np.testing.assert_allclose(forms["returns_leak_across_episodes"], shifted)
