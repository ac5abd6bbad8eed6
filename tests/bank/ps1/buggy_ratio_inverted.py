"""Inverts the probability ratio: exp(old_logp - logp), old over new, in policy_loss and in the
frozen-reference exercise (the same misconception written twice).

The value and gradient of the clipped loss are wrong wherever theta differs from the behaviour
policy. At the behaviour policy every ratio is still 1, but the gradient of old/new is minus the
gradient of new/old, so PPO's first epoch climbs the wrong way and training does not improve.
REINFORCE does not use the ratio and is unaffected. The ratio-one item sees minus the right
PPO gradient; loss_sign would predict that too, but the correct REINFORCE case rules it out, so
the item names ratio_inverted.
"""
EDITS = {
    "policy_loss": [("ratio = jnp.exp(logp - behaviour_logp)",
                     "ratio = jnp.exp(behaviour_logp - logp)")],
    "exercise_frozen_reference": [
        ("ratios = jnp.exp(log_probability(jnp.ones(3), b['observation'], b['action']) - old)",
         "ratios = jnp.exp(old - log_probability(jnp.ones(3), b['observation'], b['action']))")],
}
LOSES = {
    "policy_loss.ppo_value": "ratio_inverted",
    "policy_loss.ppo_gradient": "ratio_inverted",
    "policy_loss.ppo_clip_both_signs": "ratio_inverted",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "ratio_inverted",
    "training.ppo": "training_not_improving",
    "exercises.frozen_reference": "ratio_inverted",
}
