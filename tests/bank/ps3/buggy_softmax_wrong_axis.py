"""Normalises along axis 0 (the batch axis) instead of the last axis.

Every softmax item sees it. In the agents a single observation's logits have shape [1, 2], so
normalising over axis 0 makes every probability 1: the actor's gradients are garbage and no agent
learns.
"""
EDITS = {"softmax": [("    shifted = logits - np.max(logits, axis=-1, keepdims=True)\n    e = np.exp(shifted)\n    return e / np.sum(e, axis=-1, keepdims=True)",
                      "    shifted = logits - np.max(logits, axis=0, keepdims=True)\n    e = np.exp(shifted)\n    return e / np.sum(e, axis=0, keepdims=True)")]}
LOSES = {
    "softmax.random_shapes": "softmax_wrong_axis",
    "softmax.extreme_logits": "softmax_wrong_axis",
    "training.reinforce": "training_not_improving",
    "training.a2c": "training_not_improving",
    "training.ppo": "training_not_improving",
}
