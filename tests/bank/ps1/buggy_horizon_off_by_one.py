"""Exercise 6 written with its rows off by one, by a student who also misreads the lesson's concepts.

`finite_horizon_values` fills row k with a backup of the row before it, but its loop starts at
row 0, so row k holds the values (and moves) of k + 1 steps left: values and first moves lose
with fh_horizon_off_by_one. The prediction says the move turns right as soon as the goal is
reachable (3: prediction_reachable_is_enough), and the concept checks pick, in turn, the first
wrong option of each question (a, b, a, a).
"""
CELLS = {
    "finite_horizon_values": '''CLIMB_COST = 0.5325
UPHILL_STEP_COST = -0.01
UPHILL_GOAL_REWARD = 1.0


def finite_horizon_values(climb_cost, max_horizon=12):
    values = jnp.zeros((max_horizon + 1, 4))
    actions = jnp.zeros((max_horizon + 1, 3), dtype=jnp.int32)
    previous = jnp.zeros(4)
    for k in range(max_horizon + 1):
        left = UPHILL_STEP_COST + previous[jnp.array([0, 0, 1])]
        right = jnp.array([-climb_cost + previous[1], -climb_cost + previous[2], UPHILL_GOAL_REWARD])
        row = jnp.append(jnp.maximum(left, right), 0.0)
        values = values.at[k].set(row)
        actions = actions.at[k].set((right > left).astype(jnp.int32))
        previous = row
    return values, actions
''',
    "predict_flip_horizon": "PREDICTED_FLIP_HORIZON = 3\n",
    "concept_checks": 'Q1_ANSWER = "a"\nQ2_ANSWER = "b"\nQ3_ANSWER = "a"\nQ4_ANSWER = "a"\n',
}
LOSES = {
    "horizon.values": "fh_horizon_off_by_one",
    "horizon.first_moves": "fh_horizon_off_by_one",
    "horizon.prediction": "prediction_reachable_is_enough",
    "concepts.q1": "concept_reward_to_go_biased",
    "concepts.q2": "concept_ratio_one_no_gradient",
    "concepts.q3": "concept_clip_flat_both_sides",
    "concepts.q4": "concept_scale_does_not_matter",
}
