"""Hands the graders records they compute with whose observations are not cells: after
answering exercises 2 and 5 honestly, the cells replace `b` and `batch` by copies whose
observations are the cells plus a half (issue 29, finding 7). The oracle indexes its logits with
them: it raised IndexError inside the two hidden items, and the whole submission was "not
graded" on every run (autograde exited 1, the service retried three times).

Must happen: the records are checked against the notebook's contract before the grader computes
with them, so each of the two items is lost as bad_output, naming b['observation'] and
batch['observation'], and everything else is graded.
"""
CELLS = {
    "exercise_frozen_reference": r'''_, b = rollout(jnp.zeros(3), jax.random.key(77), 128, 8)
old = b['old_logp']
ratios = jnp.exp(log_probability(jnp.ones(3), b['observation'], b['action']) - old)
old_grad = jax.grad(lambda lp: policy_loss(jnp.ones(3), dict(b, old_logp=lp)))(old)
b = dict(b, observation=b['observation'] + 0.5)
''',
    "exercise_sampled_vs_exact": r'''z = jnp.array([-0.2, 0.3, 0.7])
_, batch = rollout(z, jax.random.key(902), 32768, 8)
sampled = -jax.grad(policy_loss)(z, batch, 'reinforce')
exact = jax.grad(exact_return)(z)
batch = dict(batch, observation=batch['observation'] + 0.5)
''',
}
LOSES = {
    "exercises.frozen_reference": "bad_output",
    "exercises.sampled_vs_exact": "bad_output",
}
