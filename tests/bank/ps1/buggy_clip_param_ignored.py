"""Hard-codes the band [0.8, 1.2] instead of using the clip argument.

Right whenever clip == 0.2 (training and the exercises), wrong for every other clip value where a
ratio falls between the two bands; the notebook's visible checks catch it with clip = 0.8.
"""
EDITS = {
    "policy_loss": [("clipped = jnp.clip(ratio, 1.0 - clip, 1.0 + clip)",
                     "clipped = jnp.clip(ratio, 0.8, 1.2)")],
}
LOSES = {
    "policy_loss.ppo_value": "clip_param_ignored",
    "policy_loss.ppo_gradient": "clip_param_ignored",
    "policy_loss.ppo_clip_both_signs": "clip_param_ignored",
}
