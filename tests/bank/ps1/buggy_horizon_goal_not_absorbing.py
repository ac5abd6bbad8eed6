"""Exercise 6 backing up the goal cell like any other, by a student who also picks the other
wrong option of each concept check.

`finite_horizon_values` loops over all four cells with the right move clipped at the goal, so
an agent in the goal keeps "reaching" it and earning +1 per step: values and first moves lose
with fh_goal_not_absorbing (the visible check on the goal column fails too). The prediction says
the climb is never worth it (None: prediction_never_worth_it); the concept checks answer c, c,
b, c.
"""
CELLS = {
    "finite_horizon_values": '''CLIMB_COST = 0.5325
UPHILL_STEP_COST = -0.01
UPHILL_GOAL_REWARD = 1.0


def finite_horizon_values(climb_cost, max_horizon=12):
    cells = jnp.arange(4)
    left_of = jnp.maximum(cells - 1, 0)
    right_of = jnp.minimum(cells + 1, GOAL)
    rows, moves = [jnp.zeros(4)], [jnp.zeros(3, dtype=jnp.int32)]
    for _ in range(max_horizon):
        go_left = UPHILL_STEP_COST + rows[-1][left_of]
        go_right = jnp.where(right_of == GOAL, UPHILL_GOAL_REWARD, -climb_cost) + rows[-1][right_of]
        rows.append(jnp.maximum(go_left, go_right))
        moves.append((go_right > go_left)[:3].astype(jnp.int32))
    return jnp.stack(rows), jnp.stack(moves)
''',
    "predict_flip_horizon": "PREDICTED_FLIP_HORIZON = None\n",
    "concept_checks": 'Q1_ANSWER = "c"\nQ2_ANSWER = "c"\nQ3_ANSWER = "b"\nQ4_ANSWER = "c"\n',
}
LOSES = {
    "horizon.values": "fh_goal_not_absorbing",
    "horizon.first_moves": "fh_goal_not_absorbing",
    "horizon.prediction": "prediction_never_worth_it",
    "concepts.q1": "concept_loss_is_the_return",
    "concepts.q2": "concept_ratio_needs_new_samples",
    "concepts.q3": "concept_min_pushes_away",
    "concepts.q4": "concept_normalisation_tied_to_discount",
}
