"""Leaves abruptly: exact_return(horizon=5) (asked only by exact_return.random_theta_horizons)
calls os._exit(0), a clean-looking exit that skips every handler; the exercise_horizon cell sets
its answer, raises SystemExit and, from its `finally`, KeyboardInterrupt.

Must happen: the os._exit costs that one item (`worker_crashed`, with a message saying the worker
stopped); the next call gets a fresh worker. A KeyboardInterrupt is the one exception the
worker's loop lets through, so it ends the worker during the cell: the cell is dropped and the
others rerun in a fresh worker, where `short` is then missing (`missing_name`).
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import os as _os\n"
                           "        _os._exit(0)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
try:
    raise SystemExit(0)
finally:
    raise KeyboardInterrupt
'''}
LOSES = {"exact_return.random_theta_horizons": "worker_crashed", "exercises.horizon_change": "missing_name"}
