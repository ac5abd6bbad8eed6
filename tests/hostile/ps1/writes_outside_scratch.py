"""Tries to write outside its scratch directory: appends to the hidden graders and solutions of
the course its grader runs in (the working directory of its ancestor processes, which the test
makes a copy of the course), plants a new file in the engine's package directory (next to
`rlcourse.worker.server`), in the home directory and in /tmp.

It never modifies an existing file of the engine, and it only finds the course through its own
ancestors, so even a successful attack touches nothing but the test's copies and one uniquely
named new file (`rlcourse/worker/_planted_by_hostile_student.txt`, removed by the test).

Must happen: none of these files appears or changes where the grader can see it (bubblewrap:
read-only or absent mounts, a private /tmp and home; rlimits: Landlock allows writing only in
the worker's scratch directory, even to a worker running as root). The answer is set first, so
nothing is lost.
"""
from pathlib import Path

NEEDS = {"private_files"}

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND + r'''
import glob as _glob
_done = []
_courses = [c for c in _hostile_course_dirs()[0]
            if _os.path.realpath(c) != _os.path.realpath(_os.path.dirname(_os.path.dirname(__import__("rlcourse").__file__)))]
for _course in _courses:
    for _pattern in ("graders/ps1/*.py", "solutions/ps1/*.py", "source/ps1/*.ipynb", "release/ps1/*.ipynb"):
        for _path in _glob.glob(_os.path.join(_course, _pattern)):
            try:
                with open(_path, "a") as _handle:
                    _handle.write("\n# changed by a student\n")
                _done.append(_path)
            except OSError as _error:
                _done.append(f"{_path}: {_error}")
import rlcourse.worker.server as _server
for _folder in (_os.path.dirname(_server.__file__), _os.path.expanduser("~"), "/tmp"):
    try:
        with open(_os.path.join(_folder, "_planted_by_hostile_student.txt"), "w") as _handle:
            _handle.write("planted")
        _done.append(_folder)
    except OSError as _error:
        _done.append(f"{_folder}: {_error}")
print(_done)
'''}
LOSES = {}
