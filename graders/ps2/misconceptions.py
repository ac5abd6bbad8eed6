"""What each known ps2 bug computes, so a wrong answer can be matched to its misconception.

Every model takes the same inputs as the student's function and returns, in float64, what a
student with that misconception would get. Gradients are closed forms (no autodiff), written
region by region like the oracle's.
"""
from __future__ import annotations

import numpy as np


def _f(x):
    return np.asarray(x, dtype=np.float64)


class Models:
    def __init__(self, exact):
        self.exact = exact

    # --- gaussian_kl ----------------------------------------------------------------------------
    def kl(self, mu_p, std_p, mu_q, std_q) -> dict:
        kl = self.exact.gaussian_kl
        return {"kl_direction_swapped": kl(mu_q, std_q, mu_p, std_p),
                "kl_missing_log_term": kl(mu_p, std_p, mu_q, std_q) - np.log(_f(std_q) / _f(std_p))}

    # --- trpo_step -----------------------------------------------------------------------------
    TRPO_BUGS = ("trpo_step_no_sqrt", "trpo_step_fisher_not_inverted", "trpo_step_plain_gradient")

    def trpo(self, grad, fisher, delta) -> dict:
        g, F = _f(grad), _f(fisher)
        natural = np.linalg.solve(F, g)
        quadratic = g @ natural
        return {"trpo_step_no_sqrt": 2.0 * delta / quadratic * natural,
                "trpo_step_fisher_not_inverted": np.sqrt(2.0 * delta / quadratic) * (F @ g),
                "trpo_step_plain_gradient": np.sqrt(2.0 * delta / quadratic) * g}

    # --- clipped surrogate --------------------------------------------------------------------
    SURROGATE_BUGS = ("clip_without_min", "max_instead_of_min", "no_clip")

    def surrogate(self, ratio, advantages, eps, bug):
        r, a = _f(ratio), _f(advantages)
        clipped = np.clip(r, 1 - eps, 1 + eps) * a
        if bug == "clip_without_min":
            return clipped
        if bug == "max_instead_of_min":
            return np.maximum(r * a, clipped)
        if bug == "no_clip":
            return r * a
        return self.exact.surrogate(r, a, eps)

    def surrogate_slope(self, ratio, advantages, eps, bug):
        r, a = _f(ratio), _f(advantages)
        outside = (r < 1 - eps) | (r > 1 + eps)
        min_flat = ((a > 0) & (r > 1 + eps)) | ((a < 0) & (r < 1 - eps))
        if bug == "clip_without_min":
            return np.where(outside, 0.0, a)
        if bug == "max_instead_of_min":
            return np.where(outside & ~min_flat, 0.0, a)
        if bug == "no_clip":
            return a
        return self.exact.surrogate_slope(r, a, eps)

    def surrogate_values(self, ratio, advantages, eps) -> dict:
        return {bug: self.surrogate(ratio, advantages, eps, bug) for bug in self.SURROGATE_BUGS}

    # --- ppo_loss -----------------------------------------------------------------------------
    LOSS_BUGS = ("ratio_inverted", *SURROGATE_BUGS)

    def _ratio(self, logp_new, logp_old, bug):
        new, old = _f(logp_new), _f(logp_old)
        return np.exp(old - new) if bug == "ratio_inverted" else np.exp(new - old)

    def loss(self, logp_new, logp_old, advantages, eps, bug):
        ratio = self._ratio(logp_new, logp_old, bug)
        return float(-np.mean(self.surrogate(ratio, advantages, eps, bug)))

    def loss_grad(self, logp_new, logp_old, advantages, eps, bug):
        """d loss / d logp_new; for the inverted ratio dr/dlogp_new = -r."""
        ratio = self._ratio(logp_new, logp_old, bug)
        slope = self.surrogate_slope(ratio, advantages, eps, bug)
        sign = -1.0 if bug == "ratio_inverted" else 1.0
        return -sign * slope * ratio / ratio.size

    def loss_values(self, logp_new, logp_old, advantages, eps) -> dict:
        return {bug: self.loss(logp_new, logp_old, advantages, eps, bug) for bug in self.LOSS_BUGS}

    def loss_grads(self, logp_new, logp_old, advantages, eps) -> dict:
        return {bug: self.loss_grad(logp_new, logp_old, advantages, eps, bug) for bug in self.LOSS_BUGS}

    # --- compute_gae --------------------------------------------------------------------------
    GAE_BUGS = ("truncation_as_termination", "termination_bootstraps", "trace_not_cut_at_boundary",
                "gae_forward_loop", "trace_decay_lambda_only")

    def gae(self, rewards, values, next_values, terminated, truncated, gamma, lam, bug):
        terminated, truncated = np.asarray(terminated, bool), np.asarray(truncated, bool)
        finished = np.logical_or(terminated, truncated)
        no_bootstrap = {"truncation_as_termination": finished,
                        "termination_bootstraps": np.zeros_like(finished)}.get(bug, terminated)
        delta = self.exact.td_residuals(rewards, values, next_values, no_bootstrap, gamma)
        cut = np.zeros_like(finished) if bug == "trace_not_cut_at_boundary" else finished
        decay = lam if bug == "trace_decay_lambda_only" else gamma * lam
        advantages = np.zeros_like(delta)
        running = np.zeros(delta.shape[1])
        steps = range(delta.shape[0]) if bug == "gae_forward_loop" else reversed(range(delta.shape[0]))
        for t in steps:
            if bug == "gae_forward_loop":  # carries the previous step's advantage, cut at its end
                keep = 1.0 - cut[t - 1] if t > 0 else 0.0
            else:
                keep = 1.0 - cut[t]
            running = delta[t] + decay * keep * running
            advantages[t] = running
        return advantages

    def gae_models(self, buffer, gamma, lam) -> list:
        models = [(bug, self.gae(**buffer, gamma=gamma, lam=lam, bug=bug)) for bug in self.GAE_BUGS]
        # A forward loop that never cuts the trace is the same misconception.
        delta = self.exact.td_residuals(buffer["rewards"], buffer["values"], buffer["next_values"],
                                        buffer["terminated"], gamma)
        forward = np.zeros_like(delta)
        running = np.zeros(delta.shape[1])
        for t in range(delta.shape[0]):
            running = delta[t] + gamma * lam * running
            forward[t] = running
        models.append(("gae_forward_loop", forward))
        return models

    # --- value_targets ------------------------------------------------------------------------
    def value_targets(self, advantages, values) -> list:
        a, v = _f(advantages), _f(values)
        models = []
        for ddof in (0, 1):
            for axis in (None, 0):
                normalised = (a - a.mean(axis=axis, keepdims=True)) / (a.std(axis=axis, ddof=ddof, keepdims=True) + 1e-8)
                models.append(("value_targets_from_normalized_advantages", normalised + v))
        return models

    # --- ppo_objective ------------------------------------------------------------------------
    def objective_values(self, logp_new, logp_old, advantages, values, returns, entropy, eps, c1, c2) -> dict:
        rest = c1 * float(np.mean((_f(values) - _f(returns)) ** 2))
        bonus = c2 * float(np.mean(entropy))
        correct_policy = self.exact.ppo_loss(logp_new, logp_old, advantages, eps)
        models = {bug: value + rest - bonus
                  for bug, value in self.loss_values(logp_new, logp_old, advantages, eps).items()}
        models["entropy_sign"] = correct_policy + rest + bonus
        return models

    # --- ppo_update (on the graders' probe) ---------------------------------------------------
    def update_advantages(self, advantages, index) -> dict:
        """What the objective receives for the samples `index` when nothing is normalised."""
        return {"advantages_not_normalized": _f(advantages)[np.asarray(index)]}

    def update_gradients(self, raw, previous, max_norm) -> dict:
        """The gradient at optimizer.step() without the clip, and without zero_grad: the step's
        gradient added to what .grad still held (the previous step's clipped gradient), then clipped."""
        exact = self.exact
        models = {"no_grad_clipping": exact.flatten(raw)}
        if previous is not None:
            piled = {name: _f(previous[name]) + _f(raw[name]) for name in exact.PROBE_PARAMETERS}
            models["gradients_not_zeroed"] = exact.flatten(exact.clip_by_global_norm(piled, max_norm)[0])
        return models

    def update_statistics(self, initial, batch, eps) -> dict:
        """The statistics of the policy before the update (key -> value)."""
        return self.exact.probe_statistics(initial, batch["observations"], batch["actions"], batch["logp"], eps)


# How each bug reads in a sentence: "... gave 0.41, which is what <phrase> gives".
EXPLAIN = {
    "trpo_step_no_sqrt": "the step size 2 delta / (g' F^-1 g) without its square root",
    "trpo_step_fisher_not_inverted": "the direction F g instead of F^-1 g",
    "trpo_step_plain_gradient": "the plain gradient's direction g instead of F^-1 g",
    "kl_direction_swapped": "KL(q || p) instead of KL(p || q)",
    "kl_missing_log_term": "the KL without its log(std_q / std_p) term",
    "ratio_inverted": "the ratio old/new instead of new/old",
    "clip_without_min": "the clipped term without the min",
    "max_instead_of_min": "the max of the two terms instead of the min",
    "no_clip": "the unclipped r * A",
    "truncation_as_termination": "treating truncated steps as terminated (no bootstrap)",
    "termination_bootstraps": "bootstrapping terminated steps from next_values",
    "trace_not_cut_at_boundary": "a lambda-trace that runs on into the next episode",
    "gae_forward_loop": "accumulating the trace forward in time",
    "trace_decay_lambda_only": "decaying the trace by lambda instead of gamma * lambda",
    "value_targets_from_normalized_advantages": "normalised advantages plus values",
    "entropy_sign": "adding the entropy bonus instead of subtracting it",
    "advantages_not_normalized": "the raw advantages, not normalised",
    "no_grad_clipping": "the gradient without clipping its norm",
    "gradients_not_zeroed": "adding this minibatch's gradient to the previous step's (no zero_grad)",
    "statistics_not_after_update": "the policy before the update",
}
