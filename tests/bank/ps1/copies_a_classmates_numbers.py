"""Exercises 1 and 4 answered with a classmate's parameters typed in as numbers (seed 11 and
eps 0.2, the defaults, which are also what a notebook run without a student id shows) instead
of PARAMS. Graded as the student `copies_a_classmates_numbers`, whose own values are seed 46 and
eps 0.25: other_theta is not the run from seed 46, and the clipped values are those of the wrong
band, so both items are lost; everything else is the reference's and keeps its points (its
rewards, -0.03 and 0.9, come from the given environment cell, which grading restores). Both are
the defaults' answers, so both items name default_values_not_params (they said wrong_value
before issue 30); a classmate's values that are not the defaults would still be a wrong value.
"""
CELLS = {
    "exercise_changed_seed": '''other_theta, other_history = train(seed=11, method='reinforce', epochs=1)
''',
    "exercise_clipping_signs": '''ratio = jnp.array([0.6, 1.0, 1.4])
eps = 0.2
positive = jnp.minimum(ratio * 1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * 1.0)
negative = jnp.minimum(ratio * -1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * -1.0)
''',
}
LOSES = {
    "exercises.changed_seed": "default_values_not_params",
    "exercises.clipping_signs": "default_values_not_params",
}
