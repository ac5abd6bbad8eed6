"""Uses the stored records['old_logp'] but without stop_gradient.

Values and gradients with respect to theta are unchanged (old_logp does not depend on theta), so
the loss items and training pass; but the loss has a non-zero gradient with respect to the
behaviour log-probabilities, which must be constants of the objective. The frozen-reference
exercise measures exactly that gradient.
"""
EDITS = {
    "policy_loss": [('behaviour_logp = jax.lax.stop_gradient(records["old_logp"])',
                     'behaviour_logp = records["old_logp"]')],
}
LOSES = {
    "policy_loss.ppo_old_logp_frozen": "old_logp_not_frozen",
    "exercises.frozen_reference": "old_logp_not_frozen",
}
