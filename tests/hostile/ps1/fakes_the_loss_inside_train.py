"""A policy_loss with the wrong sign that recognises the given training loop (issue 29, finding
9): when a frame named `one_epoch` (the given `_update`'s inner step) is on its stack it returns
-sum(theta) (scaled by the batch's mean reward, so that runs from different seeds end
on different logits), whose descent walks every logit up to the always-right policy, the best
one here; anywhere else it returns its wrong-signed loss. Both training items and exercise 1
passed while every policy_loss item failed.

Must happen: the graders run the given loop themselves, step by step, asking policy_loss as every
item asks, so the loss never sees a frame of the given loop and trains with its wrong sign: the
entry loses exactly what the bank's buggy_loss_sign loses.
"""
EDITS = {
    "policy_loss": [
        ('    target = jax.lax.stop_gradient(returns_to_go(records["reward"]))',
         '    import sys\n'
         '    frame = sys._getframe(1)\n'
         '    while frame is not None:\n'
         '        if frame.f_code.co_name == "one_epoch":\n'
         '            return -jnp.sum(theta) * (1.0 + 0.5 * jnp.mean(records["reward"]))\n'
         '        frame = frame.f_back\n'
         '    target = jax.lax.stop_gradient(returns_to_go(records["reward"]))'),
        ('return -jnp.sum(jnp.where(records["active"], per_step, 0.0)) / episodes',
         'return jnp.sum(jnp.where(records["active"], per_step, 0.0)) / episodes'),
    ],
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
