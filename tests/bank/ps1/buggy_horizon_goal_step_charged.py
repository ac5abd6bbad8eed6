"""Exercise 6 charging the climb cost on the move into the goal as well as paying +1.

From cell 2 a right move is worth 1 - climb_cost instead of 1, so every value that goes through
the goal is low by climb_cost and the climb from cell 0 never pays within twelve steps at the
notebook's cost: values and first moves lose with fh_goal_step_charged.
"""
EDITS = {
    "finite_horizon_values": [("jnp.where(right_of == GOAL, UPHILL_GOAL_REWARD,\n                             -climb_cost + previous",
                               "-climb_cost + jnp.where(right_of == GOAL, UPHILL_GOAL_REWARD,\n                             previous")],
}
LOSES = {
    "horizon.values": "fh_goal_step_charged",
    "horizon.first_moves": "fh_goal_step_charged",
}
