"""A loss that lets gradients flow into the behaviour log-probabilities (the bank's
buggy_old_logp_gradient_flows), with its evidence forged (issue 29, finding 8): the frozen-
reference exercise sets `old_grad` to zeros instead of computing it, and a cell imports the
worker's own module and patches `rlcourse.worker.server.Session._gradient` so that every
gradient with respect to `old_logp` comes back zero. Both frozen items passed: 38/42 became 42/42.

Must happen: the worker forgets its own modules before any cell runs, so the import gets a fresh
copy and the patch changes nothing the grader's calls use; and the exercise's item takes the
gradient of the student's loss itself instead of believing `old_grad`. Both items are lost as
old_logp_not_frozen, as the honest buggy loss loses them.
"""
EDITS = {
    "policy_loss": [('behaviour_logp = jax.lax.stop_gradient(records["old_logp"])',
                     'behaviour_logp = records["old_logp"]')],
}
CELLS = {
    "exercise_frozen_reference": r'''_, b = rollout(jnp.zeros(3), jax.random.key(77), 128, 8)
old = b['old_logp']
ratios = jnp.exp(log_probability(jnp.ones(3), b['observation'], b['action']) - old)
old_grad = jnp.zeros_like(old)

import rlcourse.worker.server as _server

_real_gradient = _server.Session._gradient


def _forged_gradient(self, target, args, kwargs, path):
    grad = _real_gradient(self, target, args, kwargs, path)
    return jnp.zeros_like(grad) if path[-1] == "old_logp" else grad


_server.Session._gradient = _forged_gradient
''',
}
LOSES = {
    "policy_loss.ppo_old_logp_frozen": "old_logp_not_frozen",
    "exercises.frozen_reference": "old_logp_not_frozen",
}
