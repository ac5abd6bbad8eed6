"""Exercise 6 averaging the two moves in each backup instead of taking the better one: the values
of the uniform random policy, with the moves chosen greedily from those averages.

Values and first moves lose with fh_averages_actions; everything else is the reference's.
"""
EDITS = {
    "finite_horizon_values": [("values.append(jnp.append(jnp.maximum(go_left, go_right), 0.0))",
                               "values.append(jnp.append((go_left + go_right) / 2, 0.0))")],
}
LOSES = {
    "horizon.values": "fh_averages_actions",
    "horizon.first_moves": "fh_averages_actions",
}
