"""The notebook's default values typed in where PARAMS belongs: exact_return adds up -0.01 a step
and +1 at the goal instead of STEP_COST and GOAL_REWARD, exercise 1 trains from seed 11 instead
of PARAMS['seed'], and exercise 4 sets eps = 0.2 instead of keeping PARAMS['clip'] (what a
notebook run without a student id prints, copied into the code).

Graded as the student `buggy_default_values_not_params`, whose values are seed 70, clip 0.1, a
step cost of -0.05 and a goal reward of 0.9, none of them the defaults: every item that reads the
rewards (exact_return's three, exercise 3's horizon-2 value, exercise 5's exact gradient, exercise
1's last return) and exercise 4's clipped values lose, each with default_values_not_params, not a
generic wrong value (and not exact_return's gradient hint about Python floats, which pointed the
wrong way). Run without a student id, this notebook passes every visible check: the defaults are
the right answers for a student whose values they are.
"""
EDITS = {
    "exact_return": [("go_left = STEP_COST + values[left_of]", "go_left = -0.01 + values[left_of]"),
                     ("jnp.where(right_of == GOAL, GOAL_REWARD, STEP_COST + values[right_of])",
                      "jnp.where(right_of == GOAL, 1.0, -0.01 + values[right_of])")],
    "exercise_changed_seed": [("train(seed=PARAMS['seed'],", "train(seed=11,")],
    "exercise_clipping_signs": [("positive = jnp.minimum(", "eps = 0.2\npositive = jnp.minimum(")],
}
LOSES = {
    "exact_return.known_policies": "default_values_not_params",
    "exact_return.random_theta_horizons": "default_values_not_params",
    "exact_return.gradient": "default_values_not_params",
    "exercises.changed_seed": "default_values_not_params",
    "exercises.horizon_change": "default_values_not_params",
    "exercises.clipping_signs": "default_values_not_params",
    "exercises.sampled_vs_exact": "default_values_not_params",
}
