"""Takes the max of the two surrogate terms instead of the min, in policy_loss and in the clipping
exercise (a student who believes PPO keeps the larger term writes it in both places).

The max is an optimistic objective: for A > 0 above the band it keeps the unclipped, growing term
(rewarding leaving the band), and for A > 0 below the band it uses the flat clipped term, losing
the slope that pulls the ratio back; for A < 0 it is the other way round.
"""
EDITS = {
    "policy_loss": [("jnp.minimum(ratio * target, clipped * target)",
                     "jnp.maximum(ratio * target, clipped * target)")],
    "exercise_clipping_signs": [
        ("positive = jnp.minimum(", "positive = jnp.maximum("),
        ("negative = jnp.minimum(", "negative = jnp.maximum("),
    ],
}
LOSES = {
    "policy_loss.ppo_value": "max_instead_of_min",
    "policy_loss.ppo_gradient": "max_instead_of_min",
    "policy_loss.ppo_clip_both_signs": "max_instead_of_min",
    "exercises.clipping_signs": "max_instead_of_min",
}
