"""Divides the summed live terms by the number of live transitions instead of the number of
episodes (a per-step mean over the active mask).

Every loss value and gradient is scaled by B / (number of live steps), a factor that changes from
batch to batch as episodes get shorter. One-step single-episode batches are unaffected (1 live
step, 1 episode).

With learning rate 0.5 the shrunken REINFORCE steps (one per batch) stall around 0.75 in 40
updates, so REINFORCE training and the changed-seed exercise fail; PPO takes 3 steps per batch
and still gets above 0.9. The ratio-one item and the sampled-gradient exercise (checked on the
notebook's own batch) name the bug as well.
"""
EDITS = {
    "policy_loss": [('episodes = records["reward"].shape[1]',
                     'episodes = jnp.sum(records["active"])')],
}
LOSES = {
    "policy_loss.reinforce_value": "normalized_by_transitions",
    "policy_loss.reinforce_gradient_exact": "normalized_by_transitions",
    "policy_loss.ppo_value": "normalized_by_transitions",
    "policy_loss.ppo_gradient": "normalized_by_transitions",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "normalized_by_transitions",
    "training.reinforce": "training_not_improving",
    "exercises.changed_seed": "training_not_improving",
    "exercises.sampled_vs_exact": "normalized_by_transitions",
}
