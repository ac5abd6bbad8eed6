"""Returns the objective instead of minus the objective: gradient descent on it lowers the return.

Every loss value and gradient has the wrong sign, training with either method (and so the
changed-seed exercise) moves away from the goal, and the sampled-gradient exercise (which negates the loss gradient as instructed) gets
minus the true gradient.
"""
EDITS = {
    "policy_loss": [('return -jnp.sum(jnp.where(records["active"], per_step, 0.0)) / episodes',
                     'return jnp.sum(jnp.where(records["active"], per_step, 0.0)) / episodes')],
}
LOSES = {
    "policy_loss.reinforce_value": "loss_sign",
    "policy_loss.reinforce_gradient_exact": "loss_sign",
    "policy_loss.ppo_value": "loss_sign",
    "policy_loss.ppo_gradient": "loss_sign",
    "policy_loss.ppo_clip_both_signs": "loss_sign",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "loss_sign",
    "training.reinforce": "training_not_improving",
    "training.ppo": "training_not_improving",
    "exercises.changed_seed": "training_not_improving",
    "exercises.sampled_vs_exact": "loss_sign",
}
