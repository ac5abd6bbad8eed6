"""The exact oracle for ps2, in float64 NumPy, independent of the PyTorch reference.

Everything the graders call "exact" comes from here:

* `gaussian_kl`: the closed form of KL(N_p || N_q) (checked against quadrature in the tests);
* `surrogate`, `surrogate_slope`: min(r A, clip(r) A) and its derivative in r, region by region;
* `ppo_loss`, `ppo_loss_grad`: minus the mean surrogate with r = exp(logp_new - logp_old), and its
  closed-form gradient with respect to logp_new (no autodiff);
* `gae_by_definition`: GAE as the literal sum over l of (gamma lambda)^l delta_{t+l}, stopped at
  the first episode end, with no recursion (the obviously correct slow path);
* `TinyMDP`: a three-state MDP with one terminal state, whose V^pi and A^pi come from a linear
  solve, and `enumerate_buffer`: every trajectory from a fixed (s0, a0) with its probability,
  laid out as a [T, N] rollout buffer (terminated and truncated episodes, junk after each end);
* `update_statistics`: clip fraction and the approximate KL estimator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


# --- Gaussian KL --------------------------------------------------------------------------------
def gaussian_kl(mu_p, std_p, mu_q, std_q) -> np.ndarray:
    """KL(N(mu_p, std_p^2) || N(mu_q, std_q^2)), elementwise with broadcasting."""
    mu_p, std_p, mu_q, std_q = (np.asarray(x, dtype=np.float64) for x in (mu_p, std_p, mu_q, std_q))
    return np.log(std_q / std_p) + (std_p ** 2 + (mu_p - mu_q) ** 2) / (2 * std_q ** 2) - 0.5


def gaussian_kl_by_quadrature(mu_p, std_p, mu_q, std_q, points=200001, width=14.0):
    """The same KL as a Riemann sum of p(x) log(p(x)/q(x)) on a wide grid (one pair of scalars)."""
    x = np.linspace(mu_p - width * std_p, mu_p + width * std_p, points)
    log_p = -0.5 * ((x - mu_p) / std_p) ** 2 - np.log(std_p) - 0.5 * np.log(2 * np.pi)
    log_q = -0.5 * ((x - mu_q) / std_q) ** 2 - np.log(std_q) - 0.5 * np.log(2 * np.pi)
    return float(np.sum(np.exp(log_p) * (log_p - log_q)) * (x[1] - x[0]))


# --- clipped surrogate --------------------------------------------------------------------------
def surrogate(ratio, advantages, eps=0.2):
    """Per-sample min(r A, clip(r, 1 - eps, 1 + eps) A)."""
    r, a = np.asarray(ratio, dtype=np.float64), np.asarray(advantages, dtype=np.float64)
    return np.minimum(r * a, np.clip(r, 1 - eps, 1 + eps) * a)


def surrogate_slope(ratio, advantages, eps=0.2):
    """d surrogate / d r, written region by region (undefined exactly on the band's edges).

    The objective is flat (slope 0) where the min selects the clipped term and the clip is active:
    A > 0 with r > 1 + eps, and A < 0 with r < 1 - eps. Everywhere else the slope is A.
    """
    r, a = np.asarray(ratio, dtype=np.float64), np.asarray(advantages, dtype=np.float64)
    flat = ((a > 0) & (r > 1 + eps)) | ((a < 0) & (r < 1 - eps))
    return np.where(flat, 0.0, a)


def ppo_loss(logp_new, logp_old, advantages, eps=0.2) -> float:
    ratio = np.exp(np.asarray(logp_new, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64))
    return float(-np.mean(surrogate(ratio, advantages, eps)))


def ppo_loss_grad(logp_new, logp_old, advantages, eps=0.2):
    """Gradient with respect to logp_new: -(1/n) * slope(r) * r, by the chain rule dr/dlogp = r."""
    ratio = np.exp(np.asarray(logp_new, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64))
    return -surrogate_slope(ratio, advantages, eps) * ratio / ratio.size


# --- total minibatch objective and statistics ---------------------------------------------------
def total_loss(logp_new, logp_old, advantages, values, returns, entropy, eps=0.2,
               c1=0.5, c2=0.01) -> float:
    """What ppo_objective must return: policy loss + c1 * MSE - c2 * mean entropy."""
    values, returns = np.asarray(values, dtype=np.float64), np.asarray(returns, dtype=np.float64)
    return (ppo_loss(logp_new, logp_old, advantages, eps)
            + c1 * float(np.mean((values - returns) ** 2)) - c2 * float(np.mean(entropy)))


def update_statistics(logp_new, logp_old, eps=0.2) -> dict:
    log_ratio = np.asarray(logp_new, dtype=np.float64) - np.asarray(logp_old, dtype=np.float64)
    ratio = np.exp(log_ratio)
    return {"clip_fraction": float(np.mean(np.abs(ratio - 1) > eps)),
            "approx_kl": float(np.mean((ratio - 1) - log_ratio))}


# --- GAE by definition --------------------------------------------------------------------------
def td_residuals(rewards, values, next_values, terminated, gamma):
    """delta_t = r_t + gamma * V(s_{t+1}) * (not terminated_t) - V(s_t)."""
    keep = 1.0 - np.asarray(terminated, dtype=np.float64)
    return (np.asarray(rewards, dtype=np.float64) + gamma * keep * np.asarray(next_values, dtype=np.float64)
            - np.asarray(values, dtype=np.float64))


def gae_by_definition(rewards, values, next_values, terminated, truncated, gamma=0.99, lam=0.95):
    """A_t = sum_{l=0}^{L} (gamma lambda)^l delta_{t+l}, where t + L is the first step at or after t
    whose episode ended (terminated or truncated) or the last row of the buffer. No recursion."""
    delta = td_residuals(rewards, values, next_values, terminated, gamma)
    ended = np.asarray(terminated, dtype=bool) | np.asarray(truncated, dtype=bool)
    steps, envs = delta.shape
    advantages = np.zeros_like(delta)
    for n in range(envs):
        for t in range(steps):
            total = 0.0
            for l in range(steps - t):
                total += (gamma * lam) ** l * delta[t + l, n]
                if ended[t + l, n]:
                    break
            advantages[t, n] = total
    return advantages


# --- a tiny MDP with exact V^pi and A^pi --------------------------------------------------------
@dataclass(frozen=True)
class TinyMDP:
    """States 0 and 1 are live; state 2 is terminal. Two actions. Transitions are stochastic."""

    transition: np.ndarray   # [2 live states, 2 actions, 3 next states]
    reward: np.ndarray       # [2, 2, 3]: reward of (s, a, s')
    policy: np.ndarray       # [2, 2]: pi(a | s)
    gamma: float

    @classmethod
    def standard(cls, gamma=0.9):
        transition = np.array([[[0.5, 0.3, 0.2], [0.1, 0.6, 0.3]],
                               [[0.4, 0.4, 0.2], [0.2, 0.3, 0.5]]])
        reward = np.array([[[1.0, -0.5, 2.0], [0.3, 1.2, -1.0]],
                           [[-0.7, 0.4, 1.5], [0.9, -0.2, 3.0]]])
        policy = np.array([[0.3, 0.7], [0.6, 0.4]])
        return cls(transition, reward, policy, gamma)

    def values(self) -> np.ndarray:
        """V^pi of the live states, solving V = r_pi + gamma P_pi V exactly (the terminal is 0)."""
        expected_reward = np.einsum("sa,sat,sat->s", self.policy, self.transition, self.reward)
        live_transition = np.einsum("sa,sat->st", self.policy, self.transition[:, :, :2])
        return np.linalg.solve(np.eye(2) - self.gamma * live_transition, expected_reward)

    def action_values(self) -> np.ndarray:
        v = np.append(self.values(), 0.0)
        return np.einsum("sat,sat->sa", self.transition, self.reward + self.gamma * v[None, None, :])

    def advantages(self) -> np.ndarray:
        return self.action_values() - self.values()[:, None]


def enumerate_buffer(mdp: TinyMDP, s0: int, a0: int, horizon: int, rng, terminal_value=0.7):
    """Every trajectory that starts with (s0, a0), as the columns of a [horizon, N] buffer.

    Step `horizon - 1` is truncated unless it terminated. `next_values` holds V^pi of the state
    reached, except at a terminal state, where it holds `terminal_value`: what an untrained critic
    would say about the final observation, which a terminated step must ignore. After an episode
    terminates, the rest of its column is a new episode's data (arbitrary numbers), which the
    advantage of step 0 must never see. Returns (buffer dict, probabilities [N]).
    """
    v = mdp.values()
    columns, probabilities = [], []

    def extend(rows, probability, state, action):
        t = len(rows)
        for reached in range(3):
            p = probability * mdp.transition[state, action, reached]
            if p == 0.0:
                continue
            terminated = reached == 2
            row = (mdp.reward[state, action, reached], v[state],
                   terminal_value if terminated else v[reached], terminated,
                   (t == horizon - 1) and not terminated)
            if terminated or t == horizon - 1:
                columns.append(rows + [row])
                probabilities.append(p)
                continue
            for next_action in range(2):
                extend(rows + [row], p * mdp.policy[reached, next_action], reached, next_action)

    extend([], 1.0, s0, a0)
    n = len(columns)
    buffer = dict(rewards=rng.normal(0.0, 1.0, (horizon, n)), values=rng.normal(0.0, 1.0, (horizon, n)),
                  next_values=rng.normal(0.0, 1.0, (horizon, n)),
                  terminated=np.zeros((horizon, n), dtype=bool), truncated=np.zeros((horizon, n), dtype=bool))
    for j, rows in enumerate(columns):
        for t, (r, value, next_value, terminated, truncated) in enumerate(rows):
            buffer["rewards"][t, j], buffer["values"][t, j] = r, value
            buffer["next_values"][t, j] = next_value
            buffer["terminated"][t, j], buffer["truncated"][t, j] = terminated, truncated
        if len(rows) < horizon:  # the junk episode that follows ends at the buffer's edge
            buffer["truncated"][horizon - 1, j] = True
    return buffer, np.array(probabilities)


def expected_first_advantage(advantages, probabilities) -> float:
    """The probability-weighted mean of the advantage of step 0 over every trajectory."""
    return float(np.sum(np.asarray(advantages, dtype=np.float64)[0] * probabilities))


def expected_second_advantage(advantages, probabilities, buffer) -> float:
    """The probability-weighted advantage of step 1 over the trajectories still alive there.

    With an exact critic it is 0: step 1's action is drawn from pi, and E_{a ~ pi}[A(s, a)] = 0.
    Columns whose episode ended at step 0 hold another episode's data at step 1 and are left out.
    """
    alive = ~(np.asarray(buffer["terminated"][0], bool) | np.asarray(buffer["truncated"][0], bool))
    return float(np.sum(np.asarray(advantages, dtype=np.float64)[1] * probabilities * alive))
