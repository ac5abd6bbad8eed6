"""The reward-to-go as a parallel prefix sum: `jax.lax.associative_scan(jnp.add, rewards,
reverse=True, axis=0)`, the form `jax.lax.associative_scan`'s documentation gives for a cumulative
sum (and the one parallel RL code uses to compute returns in O(log T) depth). It adds in a tree
order, so its float32 rounding differs from a sequential sum: must still get full marks."""
CELLS = {
    "returns_to_go": '''def returns_to_go(rewards):
    """Suffix sums along time, computed as a reversed associative scan."""
    return jax.lax.associative_scan(jnp.add, rewards, reverse=True, axis=0)
''',
}
LOSES = {}
