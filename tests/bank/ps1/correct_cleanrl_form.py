"""policy_loss written the way CleanRL writes its PPO loss: must get full marks.

* the clipped loss is `max(-A * ratio, -A * clip(ratio))` per sample, which is exactly minus
  `min(ratio * A, clip(ratio) * A)` (negating swaps min and max), so the loss needs no final sign;
* the ratio is `exp(newlogprob - oldlogprob)`, with both the targets and the stored behaviour
  log-probabilities behind stop_gradient;
* inactive steps are removed by multiplying with a float mask instead of `jnp.where` (safe here:
  every term is finite, also at the padded steps of finished episodes), and the sum is divided by
  the number of episodes;
* `returns_to_go` is `jnp.cumsum(rewards[::-1], 0)[::-1]`, slicing instead of `jnp.flip`.

Where the ratio lies inside the band the two arguments of the max are equal, and JAX splits the
gradient of a tie evenly between them; both have the same gradient there, so the result is the
reference gradient. Every item must pass.
"""
CELLS = {
    "returns_to_go": '''def returns_to_go(rewards):
    """Undiscounted reward-to-go: reverse in time, cumulative sum, reverse back."""
    return jnp.cumsum(rewards[::-1], 0)[::-1]
''',
    "policy_loss": '''def policy_loss(theta, records, method='ppo', clip=0.2):
    """Negative objective per episode, CleanRL style."""
    advantages = jax.lax.stop_gradient(returns_to_go(records['reward']))
    oldlogprob = jax.lax.stop_gradient(records['old_logp'])
    newlogprob = log_probability(theta, records['observation'], records['action'])
    mask = records['active'].astype(newlogprob.dtype)
    if method == 'reinforce':
        pg_loss = -advantages * newlogprob
    elif method == 'ppo':
        logratio = newlogprob - oldlogprob
        ratio = jnp.exp(logratio)
        pg_loss1 = -advantages * ratio
        pg_loss2 = -advantages * jnp.clip(ratio, 1 - clip, 1 + clip)
        pg_loss = jnp.maximum(pg_loss1, pg_loss2)
    else:
        raise ValueError(f"unknown method {method!r}: use 'reinforce' or 'ppo'")
    num_episodes = records['reward'].shape[1]
    return (pg_loss * mask).sum() / num_episodes
''',
}
LOSES = {}
