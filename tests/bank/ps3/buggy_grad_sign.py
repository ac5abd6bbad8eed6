"""REINFORCE's logit gradient with the opposite sign: (onehot(a) - pi) w / n.

Every reinforce_logit_grad item sees it; REINFORCE and A2C (which use it) ascend their loss.
PPO has its own gradient function and still learns.
"""
EDITS = {"reinforce_logit_grad": [("    return grad * weights[:, None] / n", "    return -grad * weights[:, None] / n")]}
LOSES = {
    "reinforce_logit_grad.finite_differences": "grad_sign",
    "reinforce_logit_grad.bandit_exact": "grad_sign",
    "reinforce_logit_grad.mdp_enumeration": "grad_sign",
    "training.reinforce": "training_not_improving",
    "training.a2c": "training_not_improving",
}
