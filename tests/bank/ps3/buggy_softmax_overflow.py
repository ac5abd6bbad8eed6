"""Exponentiates the raw logits: fine for the small logits of CartPole, NaN for rows of +-1000.

Only the extreme-logits item sees it; the agents' logits stay small, so training is unaffected.
"""
EDITS = {"softmax": [("    shifted = logits - np.max(logits, axis=-1, keepdims=True)\n", "    shifted = logits\n")]}
LOSES = {"softmax.extreme_logits": "softmax_overflow"}
