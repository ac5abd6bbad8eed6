"""Reads the hidden graders and solutions at the top level of a cell, prints them (stdout and
stderr), and raises them in an exception message (which becomes a notebook error in the report).

Where it looks: the engine's own location (`rlcourse.__file__`, whose parent is usually the
course) and the working directory of its ancestor processes up to the grader (/proc).

Must happen: under bubblewrap the files are not there at all; under the rlimits fallback
Landlock denies reading them (and /proc of the grader). Where neither holds they are readable
(same user as the grader), but no line of them may reach the feedback page or any report (the
grader redacts them). The answer `short` is set before the
attack, so nothing is lost: LOSES is empty in both modes.
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND, READ

CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND + READ + r'''
_stolen = _hostile_read_hidden()
print(_stolen)
import sys as _sys
print(_stolen, file=_sys.stderr)
raise RuntimeError("here are the hidden files:\n" + _stolen)
'''}
LOSES = {}
