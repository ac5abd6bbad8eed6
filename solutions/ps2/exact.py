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
* `update_statistics`: clip fraction and the approximate KL estimator;
* the PPO update on the graders' probe (a Gaussian actor whose mean is linear in the observation,
  and a linear critic): `linear_policy`, the closed-form gradient of the lab's unclipped objective
  (`unclipped_objective_and_grads`), torch's global-norm clip (`clip_by_global_norm`), the accepted
  advantage normalisations and the statistics after an update (`probe_statistics`);
* `reach_return`: the exact return of a deterministic ReachEnv policy from given starts (no
  sampling), which judges training.
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
def second_order_step(grad, fisher, delta):
    """TRPO's step to second order: maximise g's s subject to (1/2) s' F s <= delta, which is
    s = sqrt(2 delta / (g' F^-1 g)) F^-1 g (float64, by a linear solve)."""
    grad, fisher = np.asarray(grad, dtype=np.float64), np.asarray(fisher, dtype=np.float64)
    natural = np.linalg.solve(fisher, grad)
    return np.sqrt(2.0 * delta / (grad @ natural)) * natural


def gaussian_fisher(std) -> np.ndarray:
    """The Fisher matrix of one N(mu, std^2) sample in the parameters (mu, log std): diag(1/std^2, 2)."""
    return np.diag([1.0 / float(std) ** 2, 2.0])


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
    terminates, the rest of its column is a new episode's data (arbitrary rewards and values, each
    step's next value the next row's value, as in any rollout), which the advantage of step 0 must
    never see. Returns (buffer dict, probabilities [N]).
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
            # ... and is a rollout too: each of its steps reaches the state of the next row.
            buffer["next_values"][len(rows):horizon - 1, j] = buffer["values"][len(rows) + 1:, j]
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


# --- the PPO update on a linear actor and critic (the graders' probe) ----------------------------
PROBE_PARAMETERS = ("actor_weight", "actor_bias", "log_std", "critic_weight", "critic_bias")
"""The probe's parameters, in the order their gradients are concatenated: the actor's mean is
obs @ actor_weight.T + actor_bias ([A, D], [A]), its standard deviation exp(log_std) ([A]), and the
critic's value obs @ critic_weight.T + critic_bias ([1, D], [1])."""
HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _arrays(params) -> dict:
    return {name: np.asarray(params[name], dtype=np.float64) for name in PROBE_PARAMETERS}


def flatten(grads) -> np.ndarray:
    """One vector of every parameter's entries, in PROBE_PARAMETERS order."""
    return np.concatenate([np.asarray(grads[name], dtype=np.float64).ravel() for name in PROBE_PARAMETERS])


def linear_policy(params, observations, actions) -> dict:
    """The probe's mean [B, A], log-probability [B] and entropy [B] (both summed over the action's
    dimensions) of `actions`, and the critic's values [B]."""
    p = _arrays(params)
    obs, act = np.asarray(observations, dtype=np.float64), np.asarray(actions, dtype=np.float64)
    mean = obs @ p["actor_weight"].T + p["actor_bias"]
    z = (act - mean) / np.exp(p["log_std"])
    logp = np.sum(-0.5 * z ** 2 - p["log_std"] - HALF_LOG_2PI, axis=-1)
    entropy = np.full(len(obs), np.sum(0.5 + HALF_LOG_2PI + p["log_std"]))
    values = obs @ p["critic_weight"][0] + p["critic_bias"][0]
    return {"mean": mean, "logp": logp, "entropy": entropy, "values": values}


def unclipped_objective_and_grads(params, observations, actions, logp_old, advantages, returns,
                                  c1, c2):
    """The lab's unclipped objective on one minibatch of B samples,
        L = -mean(r A) + c1 mean((V - R)^2) - c2 mean(H),  r = exp(logp - logp_old),
    and its gradient with respect to every probe parameter, by the chain rule written out:
    dL/dlogp_i = -r_i A_i / B; dlogp_i/dmean_ij = z_ij / std_j; dlogp_i/dlog_std_j = z_ij^2 - 1;
    dH_i/dlog_std_j = 1; dL/dV_i = 2 c1 (V_i - R_i) / B. Returns (L, {name: gradient})."""
    p = _arrays(params)
    obs, act = np.asarray(observations, dtype=np.float64), np.asarray(actions, dtype=np.float64)
    advantages, returns = np.asarray(advantages, dtype=np.float64), np.asarray(returns, dtype=np.float64)
    out = linear_policy(p, obs, act)
    size = len(obs)
    std = np.exp(p["log_std"])
    z = (act - out["mean"]) / std
    ratio = np.exp(out["logp"] - np.asarray(logp_old, dtype=np.float64))
    loss = (-np.mean(ratio * advantages) + c1 * np.mean((out["values"] - returns) ** 2)
            - c2 * np.mean(out["entropy"]))
    d_logp = -ratio * advantages / size                       # [B]
    d_mean = d_logp[:, None] * z / std                        # [B, A]
    d_values = 2 * c1 * (out["values"] - returns) / size      # [B]
    grads = {"actor_weight": d_mean.T @ obs, "actor_bias": d_mean.sum(axis=0),
             "log_std": (d_logp[:, None] * (z ** 2 - 1)).sum(axis=0) - c2,
             "critic_weight": (d_values @ obs)[None, :], "critic_bias": np.array([d_values.sum()])}
    return float(loss), grads


def clip_by_global_norm(grads, max_norm):
    """torch.nn.utils.clip_grad_norm_'s rule: scale every gradient by min(1, max_norm / (norm + 1e-6)),
    where norm is the 2-norm of all entries together. Returns (clipped grads, norm before)."""
    norm = float(np.linalg.norm(flatten(grads)))
    scale = min(1.0, max_norm / (norm + 1e-6))
    return {name: np.asarray(grads[name], dtype=np.float64) * scale for name in PROBE_PARAMETERS}, norm


def normalisations(advantages, index) -> list:
    """The advantages of the samples `index` after each accepted normalisation: over the whole
    batch (what the course teaches) or over the minibatch alone (as CleanRL does), with the
    standard deviation's ddof 1 (torch's .std()) or 0 (numpy's), plus 1e-8."""
    advantages = np.asarray(advantages, dtype=np.float64)
    index = np.asarray(index)
    accepted = []
    for scope in (advantages, advantages[index]):
        for ddof in (1, 0):
            normalised = (advantages - scope.mean()) / (scope.std(ddof=ddof) + 1e-8)
            accepted.append(normalised[index])
    return accepted


def probe_statistics(params, observations, actions, logp_old, eps) -> dict:
    """What ppo_update returns after the update: the clip fraction and approximate KL of the whole
    batch under `params`, and the mean entropy of the action distribution."""
    out = linear_policy(params, observations, actions)
    return dict(update_statistics(out["logp"], logp_old, eps), entropy=float(np.mean(out["entropy"])))


# --- ReachEnv: the exact return of a deterministic policy ----------------------------------------
REACH_TARGET = np.array([0.5, 0.2])


def mlp_actor_mean(weights, observations):
    """The notebook's actor mean, nn.Sequential(Linear(2, 64), Tanh(), Linear(64, 2)), from its
    state_dict ("0.weight", "0.bias", "2.weight", "2.bias")."""
    w = {key: np.asarray(value, dtype=np.float64) for key, value in weights.items()}
    return np.tanh(observations @ w["0.weight"].T + w["0.bias"]) @ w["2.weight"].T + w["2.bias"]


def reach_return(weights, starts, max_steps=10) -> float:
    """Mean undiscounted return of the deterministic policy (the mean action) on ReachEnv from each
    start: the point moves by 0.1 * clip(action, -1, 1), earns minus its distance to the target,
    and stops within 0.05 of it or after max_steps steps. Deterministic, so exact."""
    returns = []
    for start in np.asarray(starts, dtype=np.float64):  # one start at a time: the obvious loop
        position, total = start.copy(), 0.0
        for _ in range(max_steps):
            action = mlp_actor_mean(weights, position[None, :])[0]
            position = position + 0.1 * np.clip(action, -1.0, 1.0)
            distance = float(np.linalg.norm(position - REACH_TARGET))
            total -= distance
            if distance < 0.05:
                break
        returns.append(total)
    return float(np.mean(returns))


# --- The break-it lab's prediction --------------------------------------------------------------
KL_BANDS = {"much larger": (20.0, np.inf), "larger": (2.0, 20.0), "about the same": (0.7, 1.5),
            "smaller": (0.0, 0.7)}
"""The options a student picks from for each variant: its mean approximate KL per update over the
standard run's, as an open interval. The gaps between the bands leave no mechanism on a border."""

BREAK_IT_KL = {"no clip": "much larger", "clip without min": "larger", "lambda = 1": "about the same",
               "K = 1": "smaller", "no entropy": "about the same", "wrong bootstrap": "about the same",
               "value loss dominates": "about the same", "no gradient clipping": "about the same"}
"""The band each variant of the lab falls in, from its mechanism: only the clip (and the min
beside it) and the number of gradient steps per rollout change how far an update moves the
policy; lambda, the entropy bonus and the bootstrap change what the advantages say, not the size
of the step. A heavier value loss (c1 = 5) and the gradient-norm clip's absence change the
gradient's scale, which Adam divides out parameter by parameter (the actor and the critic are
separate networks): neither changes the step much. `make claims` reruns the lab on several seeds
and fails if a variant leaves its band."""
