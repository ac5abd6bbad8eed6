"""Zeroes the PPO gradient on the wrong side of the band (A > 0 below 1 - eps, A < 0 above 1 + eps).

The off-policy items see it; at ratio 1 nothing is masked, so the ratio-one item passes.
PPO loses the pull back toward the band and does not learn from the graders' seeds.
"""
EDITS = {"ppo_logit_grad": [
    ("    clipped_is_chosen = ((advantages > 0) & (ratio > 1 + eps)) | ((advantages < 0) & (ratio < 1 - eps))",
     "    clipped_is_chosen = ((advantages > 0) & (ratio < 1 - eps)) | ((advantages < 0) & (ratio > 1 + eps))")]}
LOSES = {
    "ppo_logit_grad.finite_differences": "ppo_mask_wrong_side",
    "ppo_logit_grad.clip_regions": "ppo_mask_wrong_side",
    "training.ppo": "training_not_improving",
}
