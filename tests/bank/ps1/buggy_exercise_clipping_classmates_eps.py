"""Exercise 4 with a classmate's epsilon typed in, 0.1, where this student's own (PARAMS['clip'],
graded as `buggy_exercise_clipping_classmates_eps`) is 0.2. The min is taken right, so each value is
at most both terms of the student's own band too, and the old visible check, which only bounded the
values from above with the cell's own `eps`, passed it. The check now reads PARAMS['clip'] and asks
that each value be one of the two terms: at r = 1.4 with A = +1 this answer's 1.1 is neither 1.4
nor 1.2. A typed number matches no bug model: a wrong value.
"""
CELLS = {
    "exercise_clipping_signs": '''ratio = jnp.array([0.6, 1.0, 1.4])
eps = 0.1  # copied from a classmate's notebook
positive = jnp.minimum(ratio * 1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * 1.0)
negative = jnp.minimum(ratio * -1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * -1.0)
''',
}
LOSES = {
    "exercises.clipping_signs": "wrong_value",
}
