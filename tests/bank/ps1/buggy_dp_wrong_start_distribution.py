"""exact_return returns the value of cell 0 only, forgetting that episodes also start in cell 1.

Wrong for every policy except those whose cells 0 and 1 are worth the same (always-left); the
exercises that read exact_return inherit the error. Training is graded with the grader's DP.

Every item that reads exact_return's values or gradient (the gradient item, the training
history of the changed-seed exercise, the horizon-2 value and the exact gradient of the last
exercise) matches the bug's model and names it.
"""
EDITS = {
    "exact_return": [("return 0.5 * (values[0] + values[1])", "return values[0]")],
}
LOSES = {
    "exact_return.known_policies": "dp_wrong_start_distribution",
    "exact_return.random_theta_horizons": "dp_wrong_start_distribution",
    "exact_return.gradient": "dp_wrong_start_distribution",
    "exercises.changed_seed": "dp_wrong_start_distribution",
    "exercises.horizon_change": "dp_wrong_start_distribution",
    "exercises.sampled_vs_exact": "dp_wrong_start_distribution",
}
