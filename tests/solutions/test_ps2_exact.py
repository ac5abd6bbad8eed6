"""The ps2 oracle: each fast path agrees with an obviously correct slow one, and with the
PyTorch reference solution (the second check)."""
from pathlib import Path

import numpy as np
import pytest
import torch

from rlcourse.solutions import load_solution

ROOT = Path(__file__).resolve().parents[2]
exact = load_solution(ROOT, "ps2", "exact")
reference = load_solution(ROOT, "ps2", "reference")


def random_buffer(seed, steps=11, envs=4):
    rng = np.random.default_rng(seed)
    ended = rng.random((steps, envs)) < 0.3
    terminated = ended & (rng.random((steps, envs)) < 0.5)
    return dict(rewards=rng.normal(size=(steps, envs)), values=rng.normal(size=(steps, envs)),
                next_values=rng.normal(size=(steps, envs)), terminated=terminated,
                truncated=ended & ~terminated)


def torch_args(buffer):
    return {key: torch.from_numpy(np.array(value)) for key, value in buffer.items()}


class TestKL:
    @pytest.mark.parametrize("args, value", [((0, 1, 0.5, 1), 0.125),
                                             ((0, 1, 0.5, 2), np.log(2) + 1.25 / 8 - 0.5)])
    def test_course_figures(self, args, value):
        assert exact.gaussian_kl(*args) == pytest.approx(value, abs=1e-15)

    @pytest.mark.parametrize("args", [(0, 1, 0.5, 2), (0.3, 0.6, -0.4, 1.3), (1.0, 2.0, 0.0, 0.8)])
    def test_closed_form_equals_quadrature(self, args):
        assert exact.gaussian_kl(*args) == pytest.approx(exact.gaussian_kl_by_quadrature(*args), abs=1e-9)

    def test_errata_delta_radius(self):
        """KL(N(0,1) || N(0,k^2)) reaches 0.01 near k = 1.109, and is about 1e-4 at k = 1.01."""
        assert exact.gaussian_kl(0, 1, 0, 1.109) == pytest.approx(0.01, abs=2e-4)
        assert exact.gaussian_kl(0, 1, 0, 1.01) == pytest.approx(1e-4, rel=0.02)


class TestSurrogate:
    def test_course_figures(self):
        values = exact.surrogate([1.5, 1.5, 0.5, 1.5], [1, -1, 0.5, 0.5])
        np.testing.assert_allclose(values, [1.2, -1.5, 0.25, 0.6], atol=1e-15)

    def test_slope_equals_finite_differences(self):
        rng = np.random.default_rng(0)
        ratio = rng.uniform(0.3, 2.0, 400)
        advantages = rng.normal(size=400)
        ratio = ratio[np.minimum(np.abs(ratio - 0.8), np.abs(ratio - 1.2)) > 1e-3]
        advantages = advantages[:ratio.size]
        h = 1e-7
        numeric = (exact.surrogate(ratio + h, advantages) - exact.surrogate(ratio - h, advantages)) / (2 * h)
        np.testing.assert_allclose(exact.surrogate_slope(ratio, advantages), numeric, atol=1e-6)

    def test_loss_gradient_equals_finite_differences(self):
        rng = np.random.default_rng(1)
        old = rng.normal(size=12)
        new = old + np.log(np.array([0.6, 0.8, 0.95, 1.1, 1.3, 1.7] * 2))
        advantages = np.concatenate([np.ones(6), -np.ones(6)]) * rng.uniform(0.5, 2, 12)
        numeric = np.array([(exact.ppo_loss(new + 1e-7 * e, old, advantages, 0.15)
                             - exact.ppo_loss(new - 1e-7 * e, old, advantages, 0.15)) / 2e-7
                            for e in np.eye(12)])
        np.testing.assert_allclose(exact.ppo_loss_grad(new, old, advantages, 0.15), numeric, atol=1e-7)

    def test_reference_autograd_matches_closed_form(self):
        rng = np.random.default_rng(2)
        old = rng.normal(size=12)
        new = old + rng.normal(0, 0.4, 12)
        advantages = rng.normal(size=12)
        logp_new = torch.tensor(new, requires_grad=True)
        loss = reference.ppo_loss(logp_new, torch.tensor(old), torch.tensor(advantages), 0.2)
        loss.backward()
        assert loss.item() == pytest.approx(exact.ppo_loss(new, old, advantages, 0.2), abs=1e-12)
        np.testing.assert_allclose(logp_new.grad.numpy(), exact.ppo_loss_grad(new, old, advantages, 0.2), atol=1e-12)


class TestGAE:
    def test_course_figures(self):
        column = lambda *v: np.array(v, dtype=float)[:, None]
        flags = lambda *v: np.array(v, dtype=bool)[:, None]
        three = dict(rewards=column(1, 2, 3), values=column(0.5, 1, 1.5), next_values=column(1, 1.5, 2),
                     terminated=flags(0, 0, 0), truncated=flags(0, 0, 1))
        np.testing.assert_allclose(exact.gae_by_definition(**three, gamma=0.9, lam=0.5)[:, 0], [3.12575, 3.835, 3.3])
        np.testing.assert_allclose(exact.gae_by_definition(**three, gamma=0.9, lam=1.0)[:, 0], [6.188, 5.32, 3.3])
        ended = dict(three, terminated=flags(0, 0, 1), truncated=flags(0, 0, 0))
        assert exact.gae_by_definition(**ended, gamma=0.9, lam=1.0)[0, 0] == pytest.approx(4.73)
        two = dict(rewards=column(1, 2), values=column(0.5, 1), next_values=column(1, 7),
                   terminated=flags(0, 1), truncated=flags(0, 0))
        np.testing.assert_allclose(exact.gae_by_definition(**two, gamma=0.9, lam=0.95)[:, 0], [2.255, 1.0])

    @pytest.mark.parametrize("seed, gamma, lam", [(0, 0.99, 0.95), (1, 0.9, 0.5), (2, 0.97, 1.0), (3, 0.8, 0.0)])
    def test_reference_recursion_equals_definition(self, seed, gamma, lam):
        buffer = random_buffer(seed)
        fast = reference.compute_gae(**torch_args(buffer), gamma=gamma, lam=lam).numpy()
        np.testing.assert_allclose(fast, exact.gae_by_definition(**buffer, gamma=gamma, lam=lam), atol=1e-12)

    def test_mdp_values_solve_the_bellman_equation(self):
        mdp = exact.TinyMDP.standard()
        v = np.append(mdp.values(), 0.0)
        backup = np.einsum("sa,sat,sat->s", mdp.policy, mdp.transition, mdp.reward + mdp.gamma * v)
        np.testing.assert_allclose(backup, v[:2], atol=1e-13)
        np.testing.assert_allclose(np.sum(mdp.policy * mdp.advantages(), axis=1), 0.0, atol=1e-13)

    @pytest.mark.parametrize("lam", [0.0, 0.3, 0.95, 1.0])
    @pytest.mark.parametrize("horizon", [1, 2, 3, 4])
    def test_expected_gae_is_the_exact_advantage(self, lam, horizon):
        """The identity the exact-advantage grader relies on, for the oracle and the reference."""
        mdp = exact.TinyMDP.standard()
        rng = np.random.default_rng(horizon)
        for s in range(2):
            for a in range(2):
                buffer, probability = exact.enumerate_buffer(mdp, s, a, horizon, rng)
                assert probability.sum() == pytest.approx(1.0, abs=1e-12)
                for gae in (exact.gae_by_definition(**buffer, gamma=mdp.gamma, lam=lam),
                            reference.compute_gae(**torch_args(buffer), gamma=mdp.gamma, lam=lam).numpy()):
                    assert exact.expected_first_advantage(gae, probability) == pytest.approx(
                        mdp.advantages()[s, a], abs=1e-12)
                    if horizon > 1:
                        assert exact.expected_second_advantage(gae, probability, buffer) == pytest.approx(0.0, abs=1e-12)


class TestObjectiveAndStatistics:
    def test_reference_objective_and_statistics(self):
        rng = np.random.default_rng(5)
        arrays = [rng.normal(size=9) for _ in range(5)] + [rng.uniform(0.5, 2, 9)]
        arrays[0] = arrays[1] + rng.normal(0, 0.3, 9)
        tensors = [torch.tensor(x) for x in arrays]
        value = reference.ppo_objective(*tensors, eps=0.25, c1=0.7, c2=0.05).item()
        assert value == pytest.approx(exact.total_loss(*arrays, eps=0.25, c1=0.7, c2=0.05), abs=1e-12)
        stats = reference.update_statistics(tensors[0], tensors[1], 0.2)
        expected = exact.update_statistics(arrays[0], arrays[1], 0.2)
        assert stats == pytest.approx(expected, abs=1e-12)

    def test_approx_kl_estimates_the_kl_of_gaussians(self):
        """mean((r - 1) - log r) over samples from p is an unbiased estimate of KL(p || q)."""
        rng = np.random.default_rng(6)
        x = rng.normal(0.0, 1.0, 400000)
        log_p = -0.5 * x ** 2
        log_q = -0.5 * ((x - 0.3) / 1.2) ** 2 - np.log(1.2)
        estimate = exact.update_statistics(log_q, log_p)["approx_kl"]
        assert estimate == pytest.approx(exact.gaussian_kl(0, 1, 0.3, 1.2), abs=3e-3)
