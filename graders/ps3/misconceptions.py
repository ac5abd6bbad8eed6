"""What each known ps3 bug computes, so a wrong answer can be matched to its misconception.

Every model takes the inputs the student's function got and returns, in float64, what a student
with that misconception returns. Most are closed forms of the buggy code; the reward-to-go that
leaks across episodes carries an unknown running total from earlier calls, so its model is fitted:
the correct returns plus gamma**(T-1-t) times whatever the last step carries, which matches only if
the whole error has that geometric shape.
"""
from __future__ import annotations

import numpy as np

from rlcourse.grading.rubric import Failure, as_array, fmt
from rlcourse.worker.errors import WorkerError


class Models:
    def __init__(self, exact):
        self.exact = exact

    # --- softmax ------------------------------------------------------------------------------
    def softmax_naive(self, logits):
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            e = np.exp(np.asarray(logits, dtype=np.float64))
            return e / e.sum(axis=-1, keepdims=True)

    def softmax(self, logits) -> list:
        logits = np.asarray(logits, dtype=np.float64)
        forms = []
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for axis in (0, None):
                if axis == 0 and logits.ndim < 2:
                    continue
                shifted = np.exp(logits - np.max(logits, axis=axis, keepdims=True))
                forms.append(("softmax_wrong_axis", shifted / shifted.sum(axis=axis, keepdims=True)))
        return forms

    # --- discounted_returns -------------------------------------------------------------------
    def returns(self, rewards, gamma, actual=None) -> list:
        rewards = np.asarray(rewards, dtype=np.float64)
        T = len(rewards)
        correct = self.exact.reward_to_go(rewards, gamma)
        from_start = np.array([sum(gamma ** k * rewards[k] for k in range(t, T)) for t in range(T)])
        forms = [("returns_discount_from_start", from_start)]
        if actual is not None and np.shape(actual) == (T,) and T > 0 and np.all(np.isfinite(actual)):
            carried = float(actual[-1] - correct[-1])
            if carried != 0.0:
                forms.append(("returns_leak_across_episodes",
                              correct + gamma ** np.arange(T - 1, -1, -1) * carried))
        return forms

    # --- gradients with respect to the logits ---------------------------------------------------
    def logit_grad_forms(self, truth, probs, actions, row_weights) -> list:
        """Sign, scale and broadcast variants of any gradient of the form
        (pi - onehot(a)) * row_weights[:, None] / n (truth is that array)."""
        n, k = np.shape(probs)
        forms = [("grad_sign", -truth), ("grad_sum_not_mean", truth * n)]
        if n == k:
            onehot = np.eye(k)[actions]
            forms.append(("broadcast_shape", (probs - onehot) * np.asarray(row_weights)[None, :] / n))
        return forms

    def reinforce(self, probs, actions, weights) -> list:
        truth = self.exact.reinforce_logit_grad(np.log(probs), actions, weights)
        return self.logit_grad_forms(truth, probs, actions, weights)

    def ppo(self, probs, old_probs, actions, advantages, eps) -> list:
        exact = self.exact
        logits = np.log(probs)
        n = len(actions)
        rows = np.arange(n)
        ratio = probs[rows, actions] / old_probs[rows, actions]
        flat = ((advantages > 0) & (ratio > 1 + eps)) | ((advantages < 0) & (ratio < 1 - eps))
        weights = np.where(flat, 0.0, advantages * ratio)
        truth = exact.reinforce_logit_grad(logits, actions, weights)
        forms = self.logit_grad_forms(truth, probs, actions, weights)
        # The mask on the wrong side of the band, or on both sides (the clip without the min).
        swapped = ((advantages > 0) & (ratio < 1 - eps)) | ((advantages < 0) & (ratio > 1 + eps))
        outside = (ratio < 1 - eps) | (ratio > 1 + eps)
        for mask in (swapped, outside):
            forms.append(("ppo_mask_wrong_side",
                          exact.reinforce_logit_grad(logits, actions, np.where(mask, 0.0, advantages * ratio))))
        # The log-ratio used as the ratio: in the mask and in the weight, or in the mask with the
        # derivative of the log-ratio (weight A).
        log_ratio = np.log(probs[rows, actions]) - np.log(old_probs[rows, actions])
        log_flat = ((advantages > 0) & (log_ratio > 1 + eps)) | ((advantages < 0) & (log_ratio < 1 - eps))
        for weight in (advantages * log_ratio, advantages):
            forms.append(("ratio_from_log_without_exp",
                          exact.reinforce_logit_grad(logits, actions, np.where(log_flat, 0.0, weight))))
        return forms

    # --- advantages ---------------------------------------------------------------------------
    def td(self, rewards, values, next_values, terminated, gamma) -> list:
        never = np.zeros_like(terminated)
        return [("td_bootstraps_terminal",
                 self.exact.td_errors(rewards, values, next_values, never, gamma))]

    def gae(self, rewards, values, next_values, terminated, truncated, gamma, lam) -> list:
        g = self.exact.gae_by_definition
        never = np.zeros_like(terminated)
        ended = terminated | truncated
        return [
            ("td_bootstraps_terminal", g(rewards, values, next_values, never, ended, gamma, lam)),
            ("truncation_as_termination", g(rewards, values, next_values, ended, never, gamma, lam)),
            ("returns_leak_across_episodes", self._gae_uncut(rewards, values, next_values, terminated,
                                                             never, gamma, lam)),
            ("returns_leak_across_episodes", self._gae_uncut(rewards, values, next_values, terminated,
                                                             terminated, gamma, lam)),
            ("gae_forward_loop", self._gae_forward(rewards, values, next_values, terminated, ended,
                                                   gamma, lam)),
            ("gae_forward_loop", self._gae_forward(rewards, values, next_values, terminated, never,
                                                   gamma, lam)),
        ]

    def _gae_forward(self, rewards, values, next_values, terminated, cut, gamma, lam):
        """The recursion run forward in time from the first step: each advantage sums the TD
        errors before it (discounted by gamma * lam per step back), restarted after each step in
        `cut` (the episode ends, or never)."""
        delta = self.exact.td_errors(rewards, values, next_values, terminated, gamma)
        out, running = np.zeros(len(delta)), 0.0
        for t in range(len(delta)):
            keep = 0.0 if t == 0 or cut[t - 1] else 1.0
            running = delta[t] + gamma * lam * keep * running
            out[t] = running
        return out

    def _gae_uncut(self, rewards, values, next_values, terminated, cut, gamma, lam):
        """GAE whose trace stops only where `cut` (so it runs on into the next episode elsewhere)."""
        delta = self.exact.td_errors(rewards, values, next_values, terminated, gamma)
        out, running = np.zeros(len(delta)), 0.0
        for t in reversed(range(len(delta))):
            running = delta[t] + gamma * lam * (0.0 if cut[t] else 1.0) * running
            out[t] = running
        return out


class Guarded:
    """Calls into the submission; when a call raises, a square probe (n == A) tells whether the
    reason is the [n] * [n, A] broadcast, which only fails when n != A."""

    def __init__(self, student, models):
        self.student, self.models = student, models
        self._diagnosis = None

    def call(self, function, *args, **kwargs):
        try:
            return self.student.call(function, *args, **kwargs)
        except WorkerError as error:
            if error.kind == "raised":
                failure = self.broadcast_failure(function)
                if failure is not None:
                    raise failure from None
            raise

    def broadcast_failure(self, function):
        if self._diagnosis is None:
            self._diagnosis = self._probe()
        if not self._diagnosis:
            return None
        name, actual = self._diagnosis
        return Failure(
            "broadcast_shape",
            did=f"calling {function} raised an error, and {name} on a batch with as many rows as "
                f"actions (3 rows, 3 actions) gave {fmt(actual)}, which is the per-row weights "
                "scaling columns instead of rows",
            should="each row's weight must scale that row",
            see="call your function with 3 rows and 3 actions and weights [1, 0, 0]: only the "
                "first row may be non-zero.",
            fix="give the [n] weights a trailing axis (weights[:, None]) before multiplying them "
                "into an [n, A] array.")

    def _probe(self):
        probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3], [0.25, 0.25, 0.5]])
        actions = np.array([2, 0, 1])
        weights = np.array([1.5, -0.5, 0.25])
        for name, args in (("reinforce_logit_grad", (probs, actions, weights)),
                           ("ppo_logit_grad", (probs, probs.copy(), actions, weights, 0.2))):
            try:
                actual = as_array(self.student.call(name, *args), what=name, shape=(3, 3))
            except (WorkerError, Failure):
                continue
            onehot = np.eye(3)[actions]
            model = (probs - onehot) * weights[None, :] / 3
            if np.allclose(actual, model, rtol=1e-6, atol=1e-9):
                return (name, actual)
        return ()


# How each bug reads in a sentence: "... gave 0.41, which is what <phrase> gives".
EXPLAIN = {
    "softmax_wrong_axis": "normalising along another axis than the last one",
    "returns_discount_from_start":
        "discounting each reward by gamma**k from the episode's start instead of gamma**(k - t)",
    "returns_leak_across_episodes": "carrying a running total in from outside the episode",
    "gae_forward_loop": "accumulating the TD errors forward in time, from the first step on",
    "grad_sign": "the gradient with the opposite sign",
    "grad_sum_not_mean": "the gradient of the sum over the batch instead of the mean",
    "broadcast_shape": "per-row weights multiplied into columns (no trailing axis)",
    "td_bootstraps_terminal": "bootstrapping from V(s') after a termination",
    "truncation_as_termination": "dropping the bootstrap at time-limit ends as if they were terminations",
    "ppo_mask_wrong_side": "zeroing the gradient on the wrong side of the clip band",
    "ratio_from_log_without_exp": "using log pi - log pi_old as the ratio",
}
