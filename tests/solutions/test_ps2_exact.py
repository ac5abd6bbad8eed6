"""The ps2 oracle: each fast path agrees with an obviously correct slow one, and with the
PyTorch reference solution (the second check)."""
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from rlcourse.course.solutions import load_solution

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


def probe_problem(seed, size=12):
    rng = np.random.default_rng(seed)
    params = {"actor_weight": rng.normal(0, 0.5, (2, 2)), "actor_bias": rng.normal(0, 0.2, 2),
              "log_std": rng.uniform(-0.8, -0.2, 2), "critic_weight": rng.normal(0, 0.5, (1, 2)),
              "critic_bias": rng.normal(0, 0.2, 1)}
    batch = dict(observations=rng.normal(size=(size, 2)), actions=rng.normal(size=(size, 2)),
                 logp=rng.normal(-2.0, 0.5, size), advantages=rng.normal(0.8, 2.5, size),
                 returns=rng.normal(0.5, 1.5, size))
    return params, batch


def torch_unclipped(params, batch, c1, c2):
    """The lab's unclipped objective through torch.distributions and autograd."""
    leaves = {name: torch.tensor(value, requires_grad=True) for name, value in params.items()}
    obs, actions = torch.tensor(batch["observations"]), torch.tensor(batch["actions"])
    distribution = torch.distributions.Normal(obs @ leaves["actor_weight"].T + leaves["actor_bias"],
                                              leaves["log_std"].exp())
    logp = distribution.log_prob(actions).sum(-1)
    values = (obs @ leaves["critic_weight"].T + leaves["critic_bias"]).squeeze(-1)
    ratio = torch.exp(logp - torch.tensor(batch["logp"]))
    loss = (-(ratio * torch.tensor(batch["advantages"])).mean()
            + c1 * ((values - torch.tensor(batch["returns"])) ** 2).mean()
            - c2 * distribution.entropy().sum(-1).mean())
    loss.backward()
    return loss.item(), {name: leaf.grad.numpy() for name, leaf in leaves.items()}, logp.detach().numpy()


class TestUpdateProbe:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_closed_form_gradient_equals_autograd(self, seed):
        params, batch = probe_problem(seed)
        loss, grads = exact.unclipped_objective_and_grads(params, batch["observations"], batch["actions"],
                                                          batch["logp"], batch["advantages"],
                                                          batch["returns"], 0.7, 0.05)
        torch_loss, torch_grads, torch_logp = torch_unclipped(params, batch, 0.7, 0.05)
        assert loss == pytest.approx(torch_loss, abs=1e-12)
        np.testing.assert_allclose(exact.linear_policy(params, batch["observations"], batch["actions"])["logp"],
                                   torch_logp, atol=1e-12)
        for name in exact.PROBE_PARAMETERS:
            np.testing.assert_allclose(grads[name], torch_grads[name], atol=1e-12)

    def test_closed_form_gradient_equals_finite_differences(self):
        params, batch = probe_problem(3)
        args = (batch["observations"], batch["actions"], batch["logp"], batch["advantages"], batch["returns"], 0.3, 0.2)
        _, grads = exact.unclipped_objective_and_grads(params, *args)
        flat = exact.flatten(params)
        sizes = [np.size(params[name]) for name in exact.PROBE_PARAMETERS]

        def loss_at(vector):
            pieces = np.split(vector, np.cumsum(sizes)[:-1])
            moved = {name: piece.reshape(np.shape(params[name]))
                     for name, piece in zip(exact.PROBE_PARAMETERS, pieces)}
            return exact.unclipped_objective_and_grads(moved, *args)[0]

        numeric = np.array([(loss_at(flat + 1e-6 * e) - loss_at(flat - 1e-6 * e)) / 2e-6 for e in np.eye(flat.size)])
        np.testing.assert_allclose(exact.flatten(grads), numeric, atol=1e-7)

    @pytest.mark.parametrize("max_norm", [0.05, 0.5, 100.0])
    def test_clip_matches_torch(self, max_norm):
        params, batch = probe_problem(4)
        _, grads = exact.unclipped_objective_and_grads(params, batch["observations"], batch["actions"],
                                                       batch["logp"], batch["advantages"], batch["returns"], 0.5, 0.01)
        tensors = [torch.tensor(grads[name]) for name in exact.PROBE_PARAMETERS]
        leaves = [torch.zeros_like(t, requires_grad=True) for t in tensors]
        for leaf, grad in zip(leaves, tensors):
            leaf.grad = grad.clone()
        torch.nn.utils.clip_grad_norm_(leaves, max_norm)
        clipped, norm = exact.clip_by_global_norm(grads, max_norm)
        assert norm == pytest.approx(float(torch.linalg.vector_norm(torch.cat([t.ravel() for t in tensors]))))
        np.testing.assert_allclose(exact.flatten(clipped), torch.cat([l.grad.ravel() for l in leaves]).numpy(),
                                   rtol=1e-12, atol=1e-15)

    def test_normalisations(self):
        advantages = np.random.default_rng(5).normal(0.8, 2.5, 16)
        index = np.arange(3, 11)
        batch_torch = torch.tensor(advantages)
        course = ((batch_torch - batch_torch.mean()) / (batch_torch.std() + 1e-8)).numpy()[index]
        accepted = exact.normalisations(advantages, index)
        np.testing.assert_allclose(accepted[0], course, atol=1e-14)
        minibatch = advantages[index]
        np.testing.assert_allclose(accepted[3], (minibatch - minibatch.mean()) / (minibatch.std() + 1e-8), atol=1e-14)

    def test_reference_update_steps_match_the_oracle(self):
        """The reference ppo_update on the probe: K epochs of partitions, each step's gradient the
        clipped closed form on its own minibatch, statistics after the update."""
        params, batch = probe_problem(6, size=24)
        actor = torch.nn.Linear(2, 2, dtype=torch.float64)
        critic = torch.nn.Linear(2, 1, dtype=torch.float64)
        log_std = torch.nn.Parameter(torch.tensor(params["log_std"]))
        named = dict(actor_weight=actor.weight, actor_bias=actor.bias, log_std=log_std,
                     critic_weight=critic.weight, critic_bias=critic.bias)
        with torch.no_grad():
            for name, parameter in named.items():
                parameter.copy_(torch.tensor(params[name]))
        record, calls = [], []

        class Recording(torch.optim.SGD):
            def step(self, closure=None):
                record.append(({n: p.detach().numpy().copy() for n, p in named.items()},
                               {n: p.grad.numpy().copy() for n, p in named.items()}))
                return super().step(closure)

        def objective(logp_new, logp_old, advantages, values, returns, entropy, eps, c1, c2):
            calls.append((logp_old.numpy().copy(), advantages.detach().numpy().copy()))
            ratio = torch.exp(logp_new - logp_old)
            return -(ratio * advantages).mean() + c1 * ((values - returns) ** 2).mean() - c2 * entropy.mean()

        config = types.SimpleNamespace(eps=0.15, epochs=3, minibatch=8, c1=0.7, c2=0.05, max_norm=0.3)
        stats = reference.ppo_update({k: torch.tensor(v) for k, v in batch.items()}, actor, log_std, critic,
                                     Recording(list(named.values()), lr=0.05), config,
                                     torch.Generator().manual_seed(0), objective)
        assert len(record) == len(calls) == 9
        indices = [np.array([int(np.argmin(np.abs(batch["logp"] - v))) for v in logp_old]) for logp_old, _ in calls]
        for epoch in range(3):
            assert sorted(np.concatenate(indices[3 * epoch:3 * epoch + 3]).tolist()) == list(range(24))
        for (before, grads), index, (_, advantages) in zip(record, indices, calls):
            np.testing.assert_allclose(advantages, exact.normalisations(batch["advantages"], index)[0], atol=1e-12)
            _, raw = exact.unclipped_objective_and_grads(before, batch["observations"][index], batch["actions"][index],
                                                         batch["logp"][index], advantages, batch["returns"][index],
                                                         0.7, 0.05)
            np.testing.assert_allclose(exact.flatten(grads), exact.flatten(exact.clip_by_global_norm(raw, 0.3)[0]),
                                       atol=1e-12)
        final = {n: p.detach().numpy() for n, p in named.items()}
        expected = exact.probe_statistics(final, batch["observations"], batch["actions"], batch["logp"], 0.15)
        assert stats == pytest.approx(expected, abs=1e-12)


class TestReachReturn:
    def test_a_policy_that_never_moves(self):
        """Zero weights: the point stays at its start for all 10 steps."""
        weights = {"0.weight": np.zeros((64, 2)), "0.bias": np.zeros(64), "2.weight": np.zeros((2, 64)),
                   "2.bias": np.zeros(2)}
        starts = np.array([[0.0, 0.0], [0.1, -0.1]])
        distances = np.linalg.norm(starts - exact.REACH_TARGET, axis=1)
        assert exact.reach_return(weights, starts) == pytest.approx(-10 * distances.mean(), abs=1e-12)

    def test_loop_equals_a_vectorised_rollout(self):
        rng = np.random.default_rng(7)
        weights = {"0.weight": rng.normal(0, 0.7, (64, 2)), "0.bias": rng.normal(0, 0.1, 64),
                   "2.weight": rng.normal(0, 0.3, (2, 64)), "2.bias": np.array([3.0, 1.0])}
        starts = rng.normal(0, 0.1, (50, 2))
        position, total, live = starts.copy(), np.zeros(50), np.ones(50, dtype=bool)
        for _ in range(10):
            step = 0.1 * np.clip(exact.mlp_actor_mean(weights, position), -1, 1)
            position = np.where(live[:, None], position + step, position)
            distance = np.linalg.norm(position - exact.REACH_TARGET, axis=1)
            total -= np.where(live, distance, 0.0)
            live &= distance >= 0.05
        assert live.sum() < 50, "some starts should reach the target, so termination is exercised"
        assert exact.reach_return(weights, starts) == pytest.approx(total.mean(), abs=1e-12)
