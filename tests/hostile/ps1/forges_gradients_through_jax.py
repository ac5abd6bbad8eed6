"""The same forged frozen reference as forges_old_logp_gradient, through JAX instead of the
worker: a cell rebinds `jax.grad` to a version whose gradients with respect to anything but the
first argument of a function of one argument come back zero, the shape the worker's own
differentiation takes (`jax.grad(with_leaf)(leaf)` for records['old_logp']); the student's own
`old_grad` then uses it too. The loss lets gradients flow into old_logp.

Must happen: the worker differentiates (and compiles) with JAX's functions as they were before
any cell ran, so the rebinding changes only the student's own calls: both frozen items are lost
as old_logp_not_frozen.
"""
EDITS = {
    "policy_loss": [('behaviour_logp = jax.lax.stop_gradient(records["old_logp"])',
                     'behaviour_logp = records["old_logp"]')],
}
CELLS = {
    "exercise_frozen_reference": r'''_, b = rollout(jnp.zeros(3), jax.random.key(77), 128, 8)
old = b['old_logp']
ratios = jnp.exp(log_probability(jnp.ones(3), b['observation'], b['action']) - old)
_real_grad = jax.grad


def _forged_grad(function, *args, **kwargs):
    real = _real_grad(function, *args, **kwargs)

    def forged(leaf, *rest, **more):
        grad = real(leaf, *rest, **more)
        if rest or more or jnp.shape(leaf) == (3,):
            return grad
        return jnp.zeros_like(grad)

    return forged


jax.grad = _forged_grad
old_grad = jax.grad(lambda lp: policy_loss(jnp.ones(3), dict(b, old_logp=lp)))(old)
''',
}
LOSES = {
    "policy_loss.ppo_old_logp_frozen": "old_logp_not_frozen",
    "exercises.frozen_reference": "old_logp_not_frozen",
}
