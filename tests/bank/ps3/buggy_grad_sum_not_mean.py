"""REINFORCE's logit gradient of the sum over the batch, not the mean (no division by n).

Every reinforce_logit_grad item sees it. Training does not: Adam divides each step by a running
estimate of the gradient's scale, so a gradient n times larger takes nearly the same steps.
"""
EDITS = {"reinforce_logit_grad": [("    return grad * weights[:, None] / n", "    return grad * weights[:, None]")]}
LOSES = {
    "reinforce_logit_grad.finite_differences": "grad_sum_not_mean",
    "reinforce_logit_grad.bandit_exact": "grad_sum_not_mean",
    "reinforce_logit_grad.mdp_enumeration": "grad_sum_not_mean",
}
