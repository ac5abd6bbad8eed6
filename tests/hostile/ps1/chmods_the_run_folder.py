"""Locks everyone after it out: sets mode 0 on its scratch folder's parent (the run's folder, from
which every later worker of that grading process gets its scratch folder) and grandparent. Under
bubblewrap the run's folder was bind-mounted writable and owned by the worker's uid, and Landlock
does not govern chmod: every later student of that process then lost every item
(`worker_crashed`), written to the gradebook as 0.

Must happen: the chmods are refused (the worker's mounts are read-only outside its own tmpfs
scratch, and the run's folder belongs to another user); this student keeps full marks, and `zoe`,
graded after it, keeps 42/42. The answer is set first, so nothing is lost.
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
import os as _os
for _folder in (_os.path.dirname(_os.getcwd()), _os.path.dirname(_os.path.dirname(_os.getcwd()))):
    try:
        _os.chmod(_folder, 0)
    except OSError as _error:
        print(_folder, _error)
'''}
LOSES = {}
