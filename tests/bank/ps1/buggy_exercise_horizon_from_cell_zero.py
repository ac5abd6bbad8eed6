"""Exercise 3 worked out by hand from cell 0 alone: two right moves from cell 0 cost two step
costs, and the student forgets that half the episodes start in cell 1, two moves from the goal.
The old visible check accepted exactly this value (`short >= 2 * STEP_COST`); the hidden item
names the wrong start distribution.
"""
CELLS = {
    "exercise_horizon": '''short = 2 * STEP_COST  # two right moves from cell 0, each a step cost
''',
}
LOSES = {
    "exercises.horizon_change": "dp_wrong_start_distribution",
}
