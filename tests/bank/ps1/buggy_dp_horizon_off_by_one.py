"""Backs up horizon + 1 times in exact_return (a loop bound off by one).

exact_return is wrong for every horizon (and so is its gradient); training is graded with the
grader's own DP, so it passes, but the exercises that read exact_return's values (the training
history, the horizon-2 value, the exact gradient) inherit the error.

Every item that reads exact_return's values or gradient (the gradient item, the training
history of the changed-seed exercise, the horizon-2 value and the exact gradient of the last
exercise) matches the bug's model and names it.
"""
EDITS = {
    "exact_return": [("jax.lax.fori_loop(0, horizon, one_more_step, jnp.zeros(4))",
                      "jax.lax.fori_loop(0, horizon + 1, one_more_step, jnp.zeros(4))")],
}
LOSES = {
    "exact_return.known_policies": "dp_horizon_off_by_one",
    "exact_return.random_theta_horizons": "dp_horizon_off_by_one",
    "exact_return.gradient": "dp_horizon_off_by_one",
    "exercises.changed_seed": "dp_horizon_off_by_one",
    "exercises.horizon_change": "dp_horizon_off_by_one",
    "exercises.sampled_vs_exact": "dp_horizon_off_by_one",
}
