"""Tries to change grades from the worker: finds the class directory (`--course-dir` of the
grader, its ancestor) and, if it can, zeroes every automatic score in nbgrader's gradebook,
marks its own as full, overwrites another student's submitted notebook, autograded ledger and
feedback page, and plants a file at the class directory's top.

Must happen: nothing of this reaches the class directory. Under bubblewrap it is not mounted;
under the rlimits fallback Landlock denies every path outside the worker's scratch directory and
the read-only installation (file permissions cannot: the grader may run as root). The test
checks the honest student's
42/42 in `nbgrader export` and that every file of the class directory outside the hostile
students' own outputs is unchanged. The answer is set first, so nothing is lost.
"""
from pathlib import Path

NEEDS = {"private_files"}

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND + r'''
import glob as _glob
import sqlite3 as _sqlite3

_done = []
for _class in _hostile_course_dirs()[1]:
    try:
        with _sqlite3.connect(_os.path.join(_class, "gradebook.db"), timeout=2) as _db:
            _db.execute("UPDATE grade SET auto_score = 0")
            _db.execute("UPDATE grade SET manual_score = 100")
        _done.append("gradebook")
    except Exception as _error:
        _done.append(f"gradebook: {_error}")
    for _pattern in ("submitted/*/ps1/ps1.ipynb", "autograded/*/ps1/*", "feedback/*/ps1/*.html"):
        for _path in _glob.glob(_os.path.join(_class, _pattern)):
            try:
                with open(_path, "a") as _handle:
                    _handle.write("\n<!-- overwritten by another student -->\n")
                _done.append(_path)
            except OSError as _error:
                _done.append(f"{_path}: {_error}")
    try:
        with open(_os.path.join(_class, "planted-by-student.txt"), "w") as _handle:
            _handle.write("planted")
        _done.append("planted")
    except OSError as _error:
        _done.append(f"plant: {_error}")
print(_done)
'''}
LOSES = {}
