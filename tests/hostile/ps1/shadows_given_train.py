"""Replaces given code from a later cell: the exercise_horizon cell (a solution cell, after the
locked given_training cell) defines its own `train`, which the training items' graders call by
name. Restoring the locked cell's source did nothing once a later cell shadowed the name: a
wrong-sign loss once gained 5 points through a `train` that returned made-up history. Here the
shadow raises, so an undefended grader would cost the training items.

Must happen: the shadow is found (rlcourse.grading.given), the released definitions are run
again right after that cell, every training item keeps its points, and the report says what
was ignored.
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)


def train(*args, **kwargs):
    raise RuntimeError("a student's own train, shadowing the given one")
'''}
LOSES = {}
