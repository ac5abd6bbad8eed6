"""Exercise 6 answered with the infinite-horizon values: value iteration with a discount of 0.99
run to convergence, the same values and greedy moves in every row after row 0.

The time left plays no part, so values and first moves lose with fh_infinite_horizon. The
prediction is one step late (8 instead of 7: prediction_boundary_off_by_one).
"""
CELLS = {
    "finite_horizon_values": '''CLIMB_COST = 0.5325
UPHILL_STEP_COST = -0.01
UPHILL_GOAL_REWARD = 1.0


def finite_horizon_values(climb_cost, max_horizon=12, gamma=0.99):
    def backup(_, v):
        left = UPHILL_STEP_COST + gamma * v[jnp.array([0, 0, 1])]
        right = jnp.array([-climb_cost + gamma * v[1], -climb_cost + gamma * v[2], UPHILL_GOAL_REWARD])
        return jnp.append(jnp.maximum(left, right), 0.0)

    v = jax.lax.fori_loop(0, 5000, backup, jnp.zeros(4))
    left = UPHILL_STEP_COST + gamma * v[jnp.array([0, 0, 1])]
    right = jnp.array([-climb_cost + gamma * v[1], -climb_cost + gamma * v[2], UPHILL_GOAL_REWARD])
    greedy = (right > left).astype(jnp.int32)
    values = jnp.stack([jnp.zeros(4)] + [v] * max_horizon)
    actions = jnp.stack([jnp.zeros(3, dtype=jnp.int32)] + [greedy] * max_horizon)
    return values, actions
''',
    "predict_flip_horizon": "PREDICTED_FLIP_HORIZON = 8\n",
}
LOSES = {
    "horizon.values": "fh_infinite_horizon",
    "horizon.first_moves": "fh_infinite_horizon",
    "horizon.prediction": "prediction_boundary_off_by_one",
}
