"""Reads the hidden graders and solutions from the worker and sends them back through the two
channels by which a worker's words reach a report: an exception message (an item's message
quotes the worker's error) and stderr (the "worker stopped" notice quotes its tail).

* exact_return(horizon=4), first asked by exact_return.random_theta_horizons, raises the stolen
  text; every other horizon is the reference.
* the exercise_horizon cell prints the stolen text to stderr and exits the worker with
  os._exit(3), before it sets `short`: the cell is dropped, and the crash notice (with the tail
  of stderr) becomes a notebook error in the report.

Must happen: random_theta_horizons is lost (`raised`) and exercises.horizon (`missing_name`), and
no message, notebook error, feedback page or report contains a line of the hidden files
(bubblewrap: they are not visible; rlimits: Landlock denies reading them; without Landlock the
grader must redact them).
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND, READ

EDITS = {"exact_return": [
    ("@partial(jax.jit, static_argnames=('horizon',))\n",
     FIND + READ + "\n\n@partial(jax.jit, static_argnames=('horizon',))\n"),
    ("    p_right = jax.nn.sigmoid(theta)\n",
     "    if horizon == 4:\n"
     "        raise RuntimeError('hidden files follow: ' + _hostile_read_hidden()[-550:])\n"
     "    p_right = jax.nn.sigmoid(theta)\n")]}
CELLS = {"exercise_horizon": r'''import sys
print(_hostile_read_hidden()[-290:], file=sys.stderr, flush=True)
_os._exit(3)
short = exact_return(jnp.full(3, 100.0), horizon=2)
'''}
LOSES = {"exact_return.random_theta_horizons": "raised", "exercises.horizon_change": "missing_name"}
