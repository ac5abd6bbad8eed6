"""The exact oracle for ps1, in float64 NumPy, independent of the JAX reference.

Everything the graders call "exact" comes from here:

* one model of the corridor (`move`), shared by dynamic programming and by enumeration;
* `dp_return`: expected return by backing up values over (cell, steps left);
* `enumerate_episodes`: every episode the policy can produce within the horizon, with its
  probability, laid out exactly like the notebook's rollout records;
* `exact_gradient`: the policy gradient as a probability-weighted sum over every episode;
* `surrogate_loss` and `surrogate_gradient`: the REINFORCE and clipped objectives, with
  closed-form gradients (no autodiff), for any records.

Fast paths are checked against slow ones in tests/solutions/test_ps1_exact.py (DP against
enumeration, gradients against central finite differences).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

GOAL = 3
STEP_COST = -0.01
GOAL_REWARD = 1.0
START_CELLS = (0, 1)


def move(cell: int, action: int) -> tuple[int, float, bool]:
    """The corridor's one model: next cell, reward, and whether the goal was reached."""
    next_cell = min(max(cell + (1 if action == 1 else -1), 0), GOAL)
    reached = next_cell == GOAL
    return next_cell, (GOAL_REWARD if reached else STEP_COST), reached


def p_right(theta) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(theta, dtype=np.float64)))


def dp_return(theta, horizon: int, *, start_cells=START_CELLS) -> float:
    """Expected episode return; values[k][c] is the return still to come with k steps left."""
    p = p_right(theta)
    values = np.zeros(GOAL + 1)
    for _ in range(horizon):
        updated = np.zeros(GOAL + 1)
        for cell in range(GOAL):
            for action, prob in ((0, 1.0 - p[cell]), (1, p[cell])):
                next_cell, reward, reached = move(cell, action)
                updated[cell] += prob * (reward + (0.0 if reached else values[next_cell]))
        values = updated
    return float(np.mean([values[cell] for cell in start_cells]))


def log_pi(theta, observations, actions) -> np.ndarray:
    logits = np.asarray(theta, dtype=np.float64)[np.minimum(observations, 2)]
    signed = np.where(np.asarray(actions) == 1, logits, -logits)
    return -np.logaddexp(0.0, -signed)


def grad_log_pi(theta, observations, actions) -> np.ndarray:
    """d log pi(a|s) / d theta, shape [..., 3]: (1 - p) for right, -p for left, in cell s's slot."""
    observations = np.minimum(np.asarray(observations), 2)
    p = p_right(theta)[observations]
    slope = np.where(np.asarray(actions) == 1, 1.0 - p, -p)
    return slope[..., None] * (observations[..., None] == np.arange(3))


@lru_cache(maxsize=64)
def _episode_tree(horizon: int):
    """All (start, actions) paths that a live episode can take, before any probabilities."""
    paths = []

    def extend(start, cell, actions, cells, rewards, ended):
        if ended or len(actions) == horizon:
            paths.append((start, tuple(cells), tuple(actions), tuple(rewards), ended))
            return
        for action in (0, 1):
            next_cell, reward, reached = move(cell, action)
            extend(start, next_cell, actions + [action], cells + [cell], rewards + [reward], reached)

    for start in START_CELLS:
        extend(start, start, [], [], [], False)
    return tuple(paths)


def enumerate_episodes(theta, horizon: int, *, behaviour_theta=None) -> tuple[dict, np.ndarray]:
    """Every distinct episode as rollout records [horizon, n] and its probability under theta.

    After an episode ends its later steps repeat the final cell with action 0, reward 0 and
    `active` false, as the notebook's absorbing rollout produces. `old_logp` is computed under
    `behaviour_theta` (default: theta).
    """
    behaviour_theta = theta if behaviour_theta is None else behaviour_theta
    paths = _episode_tree(horizon)
    n = len(paths)
    records = {key: np.zeros((horizon, n), dtype=dtype) for key, dtype in (
        ("observation", np.int32), ("action", np.int32), ("reward", np.float64),
        ("active", bool), ("terminated", bool), ("truncated", bool))}
    for column, (_start, cells, actions, rewards, reached) in enumerate(paths):
        steps = len(actions)
        final_cell = move(cells[-1], actions[-1])[0]
        records["observation"][:, column] = final_cell
        records["observation"][:steps, column] = cells
        records["action"][:steps, column] = actions
        records["reward"][:steps, column] = rewards
        records["active"][:steps, column] = True
        records["terminated"][steps - 1, column] = reached
        records["truncated"][steps - 1, column] = not reached
    logp = log_pi(theta, records["observation"], records["action"])
    probability = 0.5 * np.exp(np.sum(np.where(records["active"], logp, 0.0), axis=0))
    records["old_logp"] = log_pi(behaviour_theta, records["observation"], records["action"])
    return records, probability


def sample_episodes(theta, horizon: int, batch: int, rng: np.random.Generator) -> dict:
    """Sampled rollout records [horizon, batch] from the same model, with NumPy randomness."""
    p = p_right(theta)
    cells = rng.choice(START_CELLS, size=batch)
    done = np.zeros(batch, dtype=bool)
    elapsed = np.zeros(batch, dtype=int)
    keys = ("observation", "action", "reward", "active", "terminated", "truncated")
    records = {key: [] for key in keys}
    for _ in range(horizon):
        actions = (rng.random(batch) < p[np.minimum(cells, 2)]).astype(np.int32)
        step = [move(int(c), int(a)) for c, a in zip(cells, actions)]
        next_cells = np.where(done, cells, [s[0] for s in step])
        rewards = np.where(done, 0.0, [s[1] for s in step])
        elapsed = elapsed + ~done
        terminated = ~done & np.array([s[2] for s in step])
        truncated = ~done & ~terminated & (elapsed >= horizon)
        for key, value in zip(keys, (cells, actions, rewards, ~done, terminated, truncated)):
            records[key].append(np.asarray(value))
        cells, done = next_cells, done | terminated | truncated
    records = {key: np.stack(value) for key, value in records.items()}
    records["observation"] = records["observation"].astype(np.int32)
    records["old_logp"] = log_pi(theta, records["observation"], records["action"])
    return records


def reward_to_go(rewards) -> np.ndarray:
    rewards = np.asarray(rewards, dtype=np.float64)
    return np.cumsum(rewards[::-1], axis=0)[::-1]


def enumerated_return(theta, horizon: int) -> float:
    records, probability = enumerate_episodes(theta, horizon)
    return float(np.sum(probability * records["reward"].sum(axis=0)))


def exact_gradient(theta, horizon: int) -> np.ndarray:
    """grad J(theta) = sum over episodes of P(episode) * sum_t grad log pi(a_t|s_t) * G_t."""
    records, probability = enumerate_episodes(theta, horizon)
    scores = grad_log_pi(theta, records["observation"], records["action"])
    weights = np.where(records["active"], reward_to_go(records["reward"]), 0.0)
    per_episode = np.einsum("tn,tnk->nk", weights, scores)
    return probability @ per_episode


def ratio_and_target(theta, records):
    logp = log_pi(theta, records["observation"], records["action"])
    ratio = np.exp(logp - np.asarray(records["old_logp"], dtype=np.float64))
    return ratio, reward_to_go(records["reward"])


def surrogate_loss(theta, records, method: str = "ppo", clip: float = 0.2) -> float:
    """The correct loss: minus the objective per episode, summed over live steps."""
    active = np.asarray(records["active"], dtype=bool)
    ratio, target = ratio_and_target(theta, records)
    if method == "reinforce":
        terms = log_pi(theta, records["observation"], records["action"]) * target
    else:
        terms = np.minimum(ratio * target, np.clip(ratio, 1 - clip, 1 + clip) * target)
    return float(-np.sum(np.where(active, terms, 0.0)) / active.shape[1])


def surrogate_gradient(theta, records, method: str = "ppo", clip: float = 0.2) -> np.ndarray:
    """Closed-form gradient of `surrogate_loss` with respect to theta.

    For the clipped objective the unclipped branch contributes target * ratio * grad log pi and the
    clipped branch contributes only while the ratio is strictly inside the band (it is flat
    outside). Where both branches are equal (inside the band) their gradients agree too.
    """
    active = np.asarray(records["active"], dtype=bool)
    scores = grad_log_pi(theta, records["observation"], records["action"])
    ratio, target = ratio_and_target(theta, records)
    if method == "reinforce":
        slope = target
    else:
        unclipped = ratio * target
        clipped = np.clip(ratio, 1 - clip, 1 + clip) * target
        inside = (ratio > 1 - clip) & (ratio < 1 + clip)
        slope = np.where(unclipped <= clipped, target * ratio, np.where(inside, target * ratio, 0.0))
    weights = np.where(active, slope, 0.0)
    return -np.einsum("tn,tnk->k", weights, scores) / active.shape[1]


def clipped_objective(ratio, advantage, clip: float = 0.2) -> np.ndarray:
    ratio = np.asarray(ratio, dtype=np.float64)
    return np.minimum(ratio * advantage, np.clip(ratio, 1 - clip, 1 + clip) * advantage)


# --- the horizon exercise: optimal values when a right move costs more --------------------------
LEFT_COST = -STEP_COST  # a left move (or a bump into the wall of cell 0) costs 0.01, as before


def finite_horizon(climb_cost: float, max_horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Optimal values and first moves by backward induction over the steps left.

    values[k, c]: the largest expected reward still to come from cell c with k steps left
    (values[0] = 0; the goal, column 3, is absorbing and worth 0). actions[k, c] for c < 3: the
    optimal first move with k steps left (row 0, with no move left, is 0). Moving right costs
    `climb_cost`, except the move into the goal, which pays GOAL_REWARD instead of any cost.
    """
    values = np.zeros((max_horizon + 1, GOAL + 1))
    actions = np.zeros((max_horizon + 1, GOAL), dtype=np.int64)
    for k in range(1, max_horizon + 1):
        for cell in range(GOAL):
            left = -LEFT_COST + values[k - 1, max(cell - 1, 0)]
            right = GOAL_REWARD if cell + 1 == GOAL else -climb_cost + values[k - 1, cell + 1]
            values[k, cell] = max(left, right)
            actions[k, cell] = int(right > left)
    return values, actions


def flip_horizon(climb_cost: float, max_horizon: int, cell: int = 0) -> int | None:
    """The fewest steps left at which the optimal first move from `cell` is right (None if never
    within `max_horizon`); from then on it stays right, which tests/solutions check."""
    _, actions = finite_horizon(climb_cost, max_horizon)
    return next((k for k in range(1, max_horizon + 1) if actions[k, cell] == 1), None)
