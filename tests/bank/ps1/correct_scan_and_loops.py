"""Loops instead of vectorised cumsum and fori_loop: must get full marks.

* `returns_to_go` runs `jax.lax.scan` backwards over time (`reverse=True`), carrying the running
  sum of the rewards still to come; a reversed scan still stacks its outputs in the original time
  order, so row t holds r_t + ... + r_{T-1}.
* `exact_return` unrolls the backups in a plain Python `for` loop over `range(horizon)` on three
  scalar values (one per non-goal cell, the goal is worth 0 and never stored), using jnp ops
  only, and drops the `jax.jit` decorator. It is still differentiable, and `_update` can trace it
  inside its own jit because `horizon` is a Python int there.

Same values as the reference up to float32 rounding, so every item must pass.
"""
CELLS = {
    "returns_to_go": '''def returns_to_go(rewards):
    """Undiscounted reward-to-go of every step of every episode (scan from the last step)."""
    def step_back(still_to_come, reward_now):
        still_to_come = reward_now + still_to_come
        return still_to_come, still_to_come

    _, to_go = jax.lax.scan(step_back, jnp.zeros_like(rewards[0]), rewards, reverse=True)
    return to_go
''',
    "exact_return": '''def exact_return(theta, horizon=8):
    """Exact expected return: `horizon` backups of the three live cells' values."""
    p = jax.nn.sigmoid(theta)
    v0 = v1 = v2 = jnp.zeros(())          # values with 0 steps left; the goal cell is always 0
    for _ in range(horizon):
        new0 = (1 - p[0]) * (STEP_COST + v0) + p[0] * (STEP_COST + v1)   # left of 0 stays in 0
        new1 = (1 - p[1]) * (STEP_COST + v0) + p[1] * (STEP_COST + v2)
        new2 = (1 - p[2]) * (STEP_COST + v1) + p[2] * GOAL_REWARD        # right of 2 is the goal
        v0, v1, v2 = new0, new1, new2
    return (v0 + v1) / 2
''',
}
LOSES = {}
