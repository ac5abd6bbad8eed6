"""Multiplies the [n] weights into the [n, A] gradient without a trailing axis.

With n == A the weights scale columns instead of rows; otherwise NumPy refuses to broadcast. The
square cases name the bug, and every call that fails (the enumeration batches, REINFORCE's and
A2C's updates) is diagnosed by a square probe.
"""
EDITS = {"reinforce_logit_grad": [("    return grad * weights[:, None] / n", "    return grad * weights / n")]}
LOSES = {
    "reinforce_logit_grad.finite_differences": "broadcast_shape",
    "reinforce_logit_grad.bandit_exact": "broadcast_shape",
    "reinforce_logit_grad.mdp_enumeration": "broadcast_shape",
    "training.reinforce": "broadcast_shape",
    "training.a2c": "broadcast_shape",
}
