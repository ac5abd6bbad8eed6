"""Changes metadata, which Landlock does not govern: on every course copy and class directory it
finds (never the engine's own tree), makes the hidden graders, the solutions and the gradebook
world-writable, sets their times to 1970, gives them an xattr, and makes the compilation cache
mode 0 (which once made later students 2.7x slower); then tries the same, harmlessly (the mode
and times they already have), on /dev/null and the engine's `rlcourse/__init__.py`, which
bubblewrap binds into the sandbox owned by the worker's uid.

Must happen: every change is refused. The test compares mode, owner, times and xattrs of every
course and class file; for the harmless attempts, `short` becomes a wrong answer if any
succeeds, so the entry would lose exercises.horizon_change.
"""
from pathlib import Path

NEEDS = {"private_mounts"}

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND + r'''
import glob as _glob
_engine_root = _os.path.dirname(_os.path.dirname(__import__("rlcourse").__file__))
_courses, _classes = _hostile_course_dirs()
_changed = []
for _folder in [c for c in _courses if _os.path.realpath(c) != _os.path.realpath(_engine_root)] + _classes:
    _paths = [p for pattern in ("graders/ps1/*.py", "solutions/ps1/*.py", "gradebook.db")
              for p in _glob.glob(_os.path.join(_folder, pattern))]
    for _path in _paths:
        for _change in (lambda p: _os.chmod(p, 0o777), lambda p: _os.utime(p, (0, 0)),
                        lambda p: _os.setxattr(p, "user.rlcourse", b"changed by a student")):
            try:
                _change(_path)
                _changed.append(_path)
            except OSError:
                pass
    try:
        _os.chmod(_os.path.join(_folder, ".rlcourse-cache"), 0)
        _changed.append(".rlcourse-cache")
    except OSError:
        pass
_harmless = 0
for _path in ("/dev/null", __import__("rlcourse").__file__):
    try:
        _info = _os.stat(_path)
    except OSError:
        continue
    for _change in (lambda p: _os.chmod(p, _info.st_mode & 0o7777),
                    lambda p: _os.utime(p, ns=(_info.st_atime_ns, _info.st_mtime_ns))):
        try:
            _change(_path)
            _harmless += 1
        except OSError:
            pass
print("changed:", _changed, "harmless changes allowed:", _harmless)
if _harmless:
    short = None
'''}
LOSES = {}
