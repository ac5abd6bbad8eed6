"""Exercise 3 evaluated with one step instead of two: `horizon=1`, read as "one move after the
first". With one step the always-right policy earns one step cost from either start cell, which
the old visible check (`short >= 2 * STEP_COST`) let through; its check now asks for more than one
step cost. The hidden item names the evaluation with a horizon off by one.
"""
CELLS = {
    "exercise_horizon": '''short = exact_return(jnp.full(3, 100.0), horizon=1)
''',
}
LOSES = {
    "exercises.horizon_change": "dp_horizon_off_by_one",
}
