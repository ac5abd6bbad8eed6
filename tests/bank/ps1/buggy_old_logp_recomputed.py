"""Recomputes the "old" log-probabilities from the current theta (behind stop_gradient) instead of
using the stored records['old_logp'].

Every ratio is then exactly 1 in every epoch, so the clipped loss is the REINFORCE-like surrogate
-sum(G)/B with the REINFORCE gradient, clipping never acts, and the reference point of the
behaviour policy is lost. No gradient flows into records['old_logp'] (it is not used at all), and
at the behaviour parameters the result is correct, so those items pass.
"""
EDITS = {
    "policy_loss": [('behaviour_logp = jax.lax.stop_gradient(records["old_logp"])\n'
                     '    logp = log_probability(theta, records["observation"], records["action"])',
                     'logp = log_probability(theta, records["observation"], records["action"])\n'
                     '    behaviour_logp = jax.lax.stop_gradient(logp)')],
}
LOSES = {
    "policy_loss.ppo_value": "old_logp_not_frozen",
    "policy_loss.ppo_gradient": "old_logp_not_frozen",
    "policy_loss.ppo_clip_both_signs": "old_logp_not_frozen",
}
