"""An endless loop at the top level of a cell (the exercise_horizon cell, before it sets
`short`), with SIGTERM and SIGINT ignored first.

Must happen: the cell is stopped at the per-cell wall clock (120 s for ps1, 15 s in the test's
copy of the course; the worker is SIGKILLed, which no handler can ignore), the cell is dropped and the other cells rerun in a fresh worker, so only
exercises.horizon is lost (`missing_name`); the batch goes on. Costs one cell timeout.
"""
CELLS = {"exercise_horizon": r'''import signal as _signal
_signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
_signal.signal(_signal.SIGINT, _signal.SIG_IGN)
while True:
    pass
short = exact_return(jnp.full(3, 100.0), horizon=2)
'''}
LOSES = {"exercises.horizon_change": "missing_name"}
