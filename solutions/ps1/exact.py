"""The exact oracle for ps1, in float64 NumPy, independent of the JAX reference.

Everything the graders call "exact" comes from here:

* one model of the corridor (`move`), shared by dynamic programming and by enumeration, for any
  of the corridor's rewards (`Corridor`: a student's own step cost and goal reward, the defaults
  unless told);
* `dp_return`: expected return by backing up values over (cell, steps left);
* `enumerate_episodes`: every episode the policy can produce within the horizon, with its
  probability, laid out exactly like the notebook's rollout records;
* `exact_gradient`: the policy gradient as a probability-weighted sum over every episode;
* `surrogate_loss` and `surrogate_gradient`: the REINFORCE and clipped objectives, with
  closed-form gradients (no autodiff), for any records.

Fast paths are checked against slow ones in tests/solutions/test_ps1_exact.py (DP against
enumeration, gradients against central finite differences), with the default rewards and others.

Every function that depends on the rewards takes `corridor=` (the defaults when left out);
`for_parameters(params)` is this module with one student's rewards bound, under the same names,
which is what the graders' `exact` fixture is (rlcourse.grading.fixtures).
"""
from __future__ import annotations

import types
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

GOAL = 3
START_CELLS = (0, 1)


@dataclass(frozen=True)
class Corridor:
    """The corridor's rewards: every live step pays `step_cost`, except the step into the goal,
    which pays `goal_reward` (and ends the episode)."""

    step_cost: float = -0.01
    """Reward of a live step that does not reach the goal (PARAMS["step_cost"])."""
    goal_reward: float = 1.0
    """Reward of the step into the goal (PARAMS["goal_reward"])."""

    @classmethod
    def of(cls, params: dict) -> "Corridor":
        """A student's corridor from their parameter values; the defaults for those absent."""
        default = cls()
        return cls(float(params.get("step_cost", default.step_cost)),
                   float(params.get("goal_reward", default.goal_reward)))


DEFAULT = Corridor()
"""The course's defaults (graders/ps1/assignment.toml), the values every figure the notebook
states is for."""
STEP_COST, GOAL_REWARD = DEFAULT.step_cost, DEFAULT.goal_reward


def move(cell: int, action: int, *, corridor: Corridor = DEFAULT) -> tuple[int, float, bool]:
    """The corridor's one model: next cell, reward, and whether the goal was reached."""
    next_cell = min(max(cell + (1 if action == 1 else -1), 0), GOAL)
    reached = next_cell == GOAL
    return next_cell, (corridor.goal_reward if reached else corridor.step_cost), reached


def p_right(theta) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.asarray(theta, dtype=np.float64)))


def dp_return(theta, horizon: int, *, start_cells=START_CELLS, corridor: Corridor = DEFAULT) -> float:
    """Expected episode return; values[k][c] is the return still to come with k steps left."""
    p = p_right(theta)
    values = np.zeros(GOAL + 1)
    for _ in range(horizon):
        updated = np.zeros(GOAL + 1)
        for cell in range(GOAL):
            for action, prob in ((0, 1.0 - p[cell]), (1, p[cell])):
                next_cell, reward, reached = move(cell, action, corridor=corridor)
                updated[cell] += prob * (reward + (0.0 if reached else values[next_cell]))
        values = updated
    return float(np.mean([values[cell] for cell in start_cells]))


def best_return(horizon: int = 8, *, corridor: Corridor = DEFAULT) -> float:
    """The most any policy earns: always right (every step toward the goal costs no more than any
    other, and only the goal pays), by the same DP."""
    return dp_return(np.full(3, np.inf), horizon, corridor=corridor)


def uniform_return(horizon: int = 8, *, corridor: Corridor = DEFAULT) -> float:
    """What the untrained policy (zero logits, right or left with probability 1/2) earns."""
    return dp_return(np.zeros(3), horizon, corridor=corridor)


def progress(value: float, horizon: int = 8, *, corridor: Corridor = DEFAULT) -> float:
    """A return as the share of the way from the uniform policy's (0) to the best (1): how far
    training got, on a scale that does not move with the rewards."""
    uniform = uniform_return(horizon, corridor=corridor)
    return (value - uniform) / (best_return(horizon, corridor=corridor) - uniform)


def at_progress(share: float, horizon: int = 8, *, corridor: Corridor = DEFAULT) -> float:
    """The return at that share of the way from the uniform policy's to the best (`progress`'s
    inverse): a margin stated for the default rewards, carried to other rewards."""
    uniform = uniform_return(horizon, corridor=corridor)
    return uniform + share * (best_return(horizon, corridor=corridor) - uniform)


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
def _episode_tree(horizon: int, corridor: Corridor):
    """All (start, actions) paths that a live episode can take, before any probabilities."""
    paths = []

    def extend(start, cell, actions, cells, rewards, ended):
        if ended or len(actions) == horizon:
            paths.append((start, tuple(cells), tuple(actions), tuple(rewards), ended))
            return
        for action in (0, 1):
            next_cell, reward, reached = move(cell, action, corridor=corridor)
            extend(start, next_cell, actions + [action], cells + [cell], rewards + [reward], reached)

    for start in START_CELLS:
        extend(start, start, [], [], [], False)
    return tuple(paths)


def enumerate_episodes(theta, horizon: int, *, behaviour_theta=None,
                       corridor: Corridor = DEFAULT) -> tuple[dict, np.ndarray]:
    """Every distinct episode as rollout records [horizon, n] and its probability under theta.

    After an episode ends its later steps repeat the final cell with action 0, reward 0 and
    `active` false, as the notebook's absorbing rollout produces. `old_logp` is computed under
    `behaviour_theta` (default: theta).
    """
    behaviour_theta = theta if behaviour_theta is None else behaviour_theta
    paths = _episode_tree(horizon, corridor)
    n = len(paths)
    records = {key: np.zeros((horizon, n), dtype=dtype) for key, dtype in (
        ("observation", np.int32), ("action", np.int32), ("reward", np.float64),
        ("active", bool), ("terminated", bool), ("truncated", bool))}
    for column, (_start, cells, actions, rewards, reached) in enumerate(paths):
        steps = len(actions)
        final_cell = move(cells[-1], actions[-1], corridor=corridor)[0]
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


def sample_episodes(theta, horizon: int, batch: int, rng: np.random.Generator, *,
                    corridor: Corridor = DEFAULT) -> dict:
    """Sampled rollout records [horizon, batch] from the same model, with NumPy randomness."""
    p = p_right(theta)
    cells = rng.choice(START_CELLS, size=batch)
    done = np.zeros(batch, dtype=bool)
    elapsed = np.zeros(batch, dtype=int)
    keys = ("observation", "action", "reward", "active", "terminated", "truncated")
    records = {key: [] for key in keys}
    for _ in range(horizon):
        actions = (rng.random(batch) < p[np.minimum(cells, 2)]).astype(np.int32)
        step = [move(int(c), int(a), corridor=corridor) for c, a in zip(cells, actions)]
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


def enumerated_return(theta, horizon: int, *, corridor: Corridor = DEFAULT) -> float:
    records, probability = enumerate_episodes(theta, horizon, corridor=corridor)
    return float(np.sum(probability * records["reward"].sum(axis=0)))


def exact_gradient(theta, horizon: int, *, corridor: Corridor = DEFAULT) -> np.ndarray:
    """grad J(theta) = sum over episodes of P(episode) * sum_t grad log pi(a_t|s_t) * G_t."""
    records, probability = enumerate_episodes(theta, horizon, corridor=corridor)
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
HORIZON_EXERCISE = DEFAULT
"""Exercise 6's corridor keeps the default rewards for every student (a left move, or a bump into
the wall of cell 0, costs 0.01; the goal pays +1): its graded prediction is a number the student
writes, and at other rewards the flip horizon falls on a misconception's answer (graders/ps1/
assignment.toml)."""


def finite_horizon(climb_cost: float, max_horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """Optimal values and first moves by backward induction over the steps left.

    values[k, c]: the largest expected reward still to come from cell c with k steps left
    (values[0] = 0; the goal, column 3, is absorbing and worth 0). actions[k, c] for c < 3: the
    optimal first move with k steps left (row 0, with no move left, is 0). Moving right costs
    `climb_cost`, except the move into the goal, which pays the goal reward instead of any cost.
    """
    step_cost, goal_reward = HORIZON_EXERCISE.step_cost, HORIZON_EXERCISE.goal_reward
    values = np.zeros((max_horizon + 1, GOAL + 1))
    actions = np.zeros((max_horizon + 1, GOAL), dtype=np.int64)
    for k in range(1, max_horizon + 1):
        for cell in range(GOAL):
            left = step_cost + values[k - 1, max(cell - 1, 0)]
            right = goal_reward if cell + 1 == GOAL else -climb_cost + values[k - 1, cell + 1]
            values[k, cell] = max(left, right)
            actions[k, cell] = int(right > left)
    return values, actions


def flip_horizon(climb_cost: float, max_horizon: int, cell: int = 0) -> int | None:
    """The fewest steps left at which the optimal first move from `cell` is right (None if never
    within `max_horizon`); from then on it stays right, which tests/solutions check."""
    _, actions = finite_horizon(climb_cost, max_horizon)
    return next((k for k in range(1, max_horizon + 1) if actions[k, cell] == 1), None)


# --- one student's oracle ------------------------------------------------------------------------
ON_THE_CORRIDOR = ("move", "dp_return", "best_return", "uniform_return", "progress", "at_progress",
                   "enumerate_episodes", "sample_episodes", "enumerated_return", "exact_gradient")
"""The functions whose answers depend on the corridor's rewards."""


def for_parameters(params: dict) -> types.SimpleNamespace:
    """This oracle with one student's rewards (PARAMS["step_cost"], PARAMS["goal_reward"]; the
    defaults for those absent): the same names, each function of ON_THE_CORRIDOR with
    `corridor=` bound to them (a call may still pass another, such as DEFAULT), and STEP_COST and
    GOAL_REWARD the student's. The graders' `exact` fixture is this for the graded student."""
    corridor = Corridor.of(params)
    names = {name: value for name, value in globals().items()
             if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    names.update({name: partial(names[name], corridor=corridor) for name in ON_THE_CORRIDOR})
    names.update(corridor=corridor, STEP_COST=corridor.step_cost, GOAL_REWARD=corridor.goal_reward)
    return types.SimpleNamespace(**names)
