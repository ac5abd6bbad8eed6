"""What each known ps1 bug computes, so a wrong answer can be matched to its misconception.

Every model takes the same inputs as the student's function and returns what a student with that
misconception would get, in float64. Gradients of the loss models come from central finite
differences of the model (every model is smooth where the graders evaluate it), except where the
bug lives in autodiff itself (gradients flowing into recomputed log-probabilities).
"""
from __future__ import annotations

import numpy as np


class Models:
    def __init__(self, exact):
        self.exact = exact

    # --- returns_to_go ------------------------------------------------------------------------
    def returns_to_go(self, rewards) -> list:
        rewards = np.asarray(rewards, dtype=np.float64)
        whole_episode = np.broadcast_to(rewards.sum(axis=0, keepdims=True), rewards.shape)
        return [("returns_not_reward_to_go", whole_episode),
                ("returns_not_reward_to_go", np.cumsum(rewards, axis=0))]

    # --- policy_loss value ----------------------------------------------------------------------
    def loss(self, theta, records, method, clip, bug=None) -> float:
        exact = self.exact
        active = np.asarray(records["active"], dtype=bool)
        logp = exact.log_pi(theta, records["observation"], records["action"])
        old = np.asarray(records["old_logp"], dtype=np.float64)
        target = exact.reward_to_go(records["reward"])
        if bug == "returns_not_reward_to_go":
            target = np.broadcast_to(np.asarray(records["reward"], float).sum(axis=0), target.shape)
        if bug == "clip_param_ignored":
            clip = 0.2
        ratio = np.exp(old - logp) if bug == "ratio_inverted" else np.exp(logp - old)
        if bug == "old_logp_not_frozen":
            ratio = np.ones_like(ratio)
        if method == "reinforce":
            terms = logp * target
        else:
            clipped = np.clip(ratio, 1 - clip, 1 + clip) * target
            if bug == "clip_without_min":
                terms = clipped
            elif bug == "max_instead_of_min":
                terms = np.maximum(ratio * target, clipped)
            else:
                terms = np.minimum(ratio * target, clipped)
        total = np.sum(np.where(active, terms, 0.0))
        if bug == "normalized_by_transitions":
            return float(-total / max(active.sum(), 1))
        value = float(-total / active.shape[1])
        return -value if bug == "loss_sign" else value

    LOSS_BUGS = {
        "reinforce": ("loss_sign", "normalized_by_transitions", "returns_not_reward_to_go"),
        "ppo": ("loss_sign", "normalized_by_transitions", "returns_not_reward_to_go",
                "clip_without_min", "max_instead_of_min", "ratio_inverted", "old_logp_not_frozen",
                "clip_param_ignored"),
    }

    def loss_values(self, theta, records, method, clip) -> dict:
        return {bug: self.loss(theta, records, method, clip, bug) for bug in self.LOSS_BUGS[method]}

    def loss_gradients(self, theta, records, method, clip) -> dict:
        models = {bug: self.loss_gradient(theta, records, method, clip, bug)
                  for bug in self.LOSS_BUGS[method] if bug != "old_logp_not_frozen"}
        if method == "ppo":
            # Recomputing old_logp from theta behind stop_gradient makes every ratio 1 with the
            # REINFORCE slope; recomputing it without stop_gradient makes the ratio constant.
            models["old_logp_not_frozen"] = self.exact.surrogate_gradient(theta, records, "reinforce")
        return models

    def loss_gradient(self, theta, records, method, clip, bug):
        """The gradient of one buggy loss (central finite differences of its model)."""
        return self._finite_difference_of(
            lambda t: self.loss(t, records, method, clip, bug), theta)

    def _finite_difference_of(self, function, theta, step=1e-6):
        theta = np.asarray(theta, dtype=np.float64)
        return np.array([(function(theta + step * e) - function(theta - step * e)) / (2 * step)
                         for e in np.eye(theta.size)])

    # --- exact_return -------------------------------------------------------------------------
    def exact_return(self, theta, horizon) -> list:
        dp = self.exact.dp_return
        models = [("dp_horizon_off_by_one", dp(theta, wrong)) for wrong in (horizon - 1, horizon + 1)
                  if wrong >= 0]
        models += [("dp_wrong_start_distribution", dp(theta, horizon, start_cells=cells))
                   for cells in ((0,), (1,), (0, 1, 2), (0, 1, 2, 3))]
        models.append((TYPED_DEFAULTS, dp(theta, horizon, corridor=self.exact.DEFAULT)))
        return models

    def exact_return_gradients(self, theta, horizon) -> list:
        """The gradients of the buggy evaluators (what jax.grad of a buggy exact_return gives)."""
        dp = self.exact.dp_return
        models = [("dp_horizon_off_by_one",
                   self._finite_difference_of(lambda t, h=wrong: dp(t, h), theta))
                  for wrong in (horizon - 1, horizon + 1) if wrong >= 0]
        models += [("dp_wrong_start_distribution",
                    self._finite_difference_of(lambda t, c=cells: dp(t, horizon, start_cells=c), theta))
                   for cells in ((0,), (1,), (0, 1, 2), (0, 1, 2, 3))]
        models.append((TYPED_DEFAULTS, self.exact.exact_gradient(theta, horizon,
                                                                 corridor=self.exact.DEFAULT)))
        return models

    # --- typed-in defaults --------------------------------------------------------------------
    def typed_defaults_see(self) -> str:
        """How a student whose rewards are not the defaults sees that the DP used the defaults."""
        exact = self.exact
        return (f"print STEP_COST and GOAL_REWARD beside the numbers your exact_return adds up: "
                f"your corridor pays {exact.STEP_COST:g} a step and {exact.GOAL_REWARD:g} at the "
                f"goal, so the always-left policy's return over 8 steps is {8 * exact.STEP_COST:g}")

    # --- finite_horizon_values (exercise 6) -----------------------------------------------------
    def finite_horizon(self, climb_cost, max_horizon) -> list:
        """(tag, values) and (tag, actions) pairs: what each backward-induction bug returns."""
        exact = self.exact
        truth = exact.finite_horizon(climb_cost, max_horizon)
        longer = exact.finite_horizon(climb_cost, max_horizon + 1)
        shorter = tuple(np.concatenate((np.zeros_like(part[:1]), part[:-1])) for part in truth)
        forms = [("fh_horizon_off_by_one", (longer[0][1:], longer[1][1:])),  # one backup too many
                 ("fh_horizon_off_by_one", shorter),                         # row k holds V_{k-1}
                 ("fh_goal_not_absorbing", _backward(climb_cost, max_horizon, absorbing=False)),
                 ("fh_goal_step_charged", _backward(climb_cost, max_horizon, goal_charged=True)),
                 ("fh_averages_actions", _backward(climb_cost, max_horizon, average=True)),
                 # the student's own corridor rewards where the exercise keeps the defaults (the
                 # same as the truth for a student whose rewards are the defaults)
                 ("fh_own_rewards", _backward(climb_cost, max_horizon, left_cost=-exact.STEP_COST,
                                              goal_reward=exact.GOAL_REWARD))]
        for discount in (0.99, 1.0):
            values, actions = _stationary(climb_cost, discount)
            for first in (np.zeros(GOAL + 1), values):
                forms.append(("fh_infinite_horizon",
                              (np.vstack([first] + [values] * max_horizon),
                               np.vstack([np.zeros(GOAL, dtype=np.int64) if first is not values
                                          else actions] + [actions] * max_horizon))))
        return forms


TYPED_DEFAULTS = "default_values_not_params"
"""The tag of an answer computed with the notebook's default values (-0.01, +1, seed 11, clip
0.2) typed in where the student's own PARAMS belong: each item that reads the rewards, the seed
or the clip compares with its answer at the defaults, which for a student whose values are the
defaults is the truth itself and so names nothing."""

GOAL, LEFT_COST, GOAL_REWARD = 3, 0.01, 1.0
"""The horizon exercise's corridor: the default rewards, for every student."""


def _backup(previous, climb_cost, *, absorbing=True, goal_charged=False, average=False, discount=1.0,
            left_cost=LEFT_COST, goal_reward=GOAL_REWARD):
    """One backup of the horizon exercise's values, right or with one bug."""
    values = np.zeros(GOAL + 1)
    actions = np.zeros(GOAL, dtype=np.int64)
    for cell in range(GOAL if absorbing else GOAL + 1):
        left = -left_cost + discount * previous[max(cell - 1, 0)]
        if cell + 1 >= GOAL:  # the move into (or, without absorption, within) the goal
            right = goal_reward - (climb_cost if goal_charged else 0.0)
            right += 0.0 if absorbing else discount * previous[GOAL]
        else:
            right = -climb_cost + discount * previous[cell + 1]
        values[cell] = (left + right) / 2 if average else max(left, right)
        if cell < GOAL:
            actions[cell] = int(right > left)
    return values, actions


def _backward(climb_cost, max_horizon, **bug):
    values, actions = [np.zeros(GOAL + 1)], [np.zeros(GOAL, dtype=np.int64)]
    for _ in range(max_horizon):
        row, moves = _backup(values[-1], climb_cost, **bug)
        values.append(row)
        actions.append(moves)
    return np.stack(values), np.stack(actions)


def _stationary(climb_cost, discount, sweeps=5000):
    """Value iteration run to its fixed point: the infinite-horizon values (discounted or not)
    and their greedy moves, the same for every row."""
    values = np.zeros(GOAL + 1)
    for _ in range(sweeps):
        values, actions = _backup(values, climb_cost, discount=discount)
    return values, actions

# How each bug reads in a sentence: "... gave 0.41, which is what <phrase> gives".
EXPLAIN = {
    "returns_not_reward_to_go": "crediting each action with the whole episode's return (or the reward so far)",
    "loss_sign": "the objective with the opposite sign",
    "normalized_by_transitions": "dividing by the number of live transitions instead of episodes",
    "clip_without_min": "the clipped term without the min",
    "max_instead_of_min": "the max of the two terms instead of the min",
    "ratio_inverted": "the ratio old/new instead of new/old",
    "old_logp_not_frozen": "recomputing the behaviour log-probabilities from the current theta",
    "clip_param_ignored": "a clip of 0.2 instead of the one passed in",
    "dp_horizon_off_by_one": "backing up one step too many or too few",
    "dp_wrong_start_distribution": "averaging over the wrong start cells",
    "fh_horizon_off_by_one": "backward induction whose row k holds the values of k + 1 or k - 1 steps left",
    "fh_goal_not_absorbing": "backing up the goal cell like any other, so it keeps earning",
    "fh_goal_step_charged": "charging the climb cost on the move into the goal as well",
    "fh_averages_actions": "averaging the two moves (the uniform policy's values) instead of taking the max",
    "fh_infinite_horizon": "the infinite-horizon values (value iteration to convergence) in every row",
    TYPED_DEFAULTS: "adding up the default rewards (-0.01 a step, +1 at the goal) in place of "
                    "your STEP_COST and GOAL_REWARD",
    "fh_own_rewards": "your own STEP_COST and GOAL_REWARD instead of the exercise's (-0.01 and +1 for everyone)",
}
