"""Exercise 6 with the student's own corridor rewards (STEP_COST and GOAL_REWARD, from PARAMS)
instead of the exercise's, which are the defaults for everyone: what exact_return rightly uses.

Graded as the student `buggy_horizon_own_rewards`, whose rewards are -0.02 and 0.9: every value
that waits or reaches the goal is off, and the climb from cell 0 turns right at 9 steps left
instead of 7, so values and first moves lose with fh_own_rewards (its visible check fails too:
waiting costs more than 0.01 a step). For a student whose rewards are the defaults this is no bug.
"""
EDITS = {
    "finite_horizon_values": [("go_left = UPHILL_STEP_COST + previous[left_of]",
                               "go_left = STEP_COST + previous[left_of]"),
                              ("jnp.where(right_of == GOAL, UPHILL_GOAL_REWARD,",
                               "jnp.where(right_of == GOAL, GOAL_REWARD,")],
}
LOSES = {
    "horizon.values": "fh_own_rewards",
    "horizon.first_moves": "fh_own_rewards",
}
