"""Exercise 4 alone with the max of the two surrogate terms instead of the min (policy_loss is
right): a student who knows the loss from the code they were given but believes the objective keeps
the larger term when working it out by hand. The visible check stops it (the result is above one of
the terms); the hidden item names it.
"""
EDITS = {
    "exercise_clipping_signs": [
        ("positive = jnp.minimum(", "positive = jnp.maximum("),
        ("negative = jnp.minimum(", "negative = jnp.maximum("),
    ],
}
LOSES = {
    "exercises.clipping_signs": "max_instead_of_min",
}
