"""Clips the ratio but drops the min: flat outside the band on both sides, so it loses the
pessimistic slope (A > 0 below the band, A < 0 above it)."""
EDITS = {"policy_loss": [("jnp.minimum(ratio * target, clipped * target)", "clipped * target")]}
LOSES = {
    "policy_loss.ppo_value": "clip_without_min",
    "policy_loss.ppo_gradient": "clip_without_min",
    "policy_loss.ppo_clip_both_signs": "clip_without_min",
}
