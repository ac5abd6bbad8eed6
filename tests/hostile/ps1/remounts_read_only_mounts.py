"""Tries to make the read-only engine writable, then plants a file in it (next to
`rlcourse.worker.server`, `rlcourse/worker/_planted_by_hostile_student.txt`): remounts the
engine's folder read-write (`mount(MS_REMOUNT | MS_BIND)`, which succeeds for a root worker
inside bubblewrap if the sandbox keeps its capabilities), then tries again from a new user and
mount namespace of its own (`unshare(CLONE_NEWUSER | CLONE_NEWNS)`).

Must happen: every mount fails (bubblewrap drops every capability and its read-only binds are
locked in a nested namespace; under rlimits the worker has no capability and Landlock forbids
mounting), no file appears in the engine, the answer is set first, so nothing is lost.
"""
NEEDS = {"private_files"}

CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + r'''
import ctypes as _ctypes, os as _os
import rlcourse.worker.server as _server
_libc = _ctypes.CDLL(None, use_errno=True)
_engine = _os.path.dirname(_server.__file__)
_MS_RDONLY, _MS_REMOUNT, _MS_BIND = 1, 32, 4096
_CLONE_NEWUSER, _CLONE_NEWNS = 0x10000000, 0x00020000


def _remount_and_plant():
    done = _libc.mount(None, _engine.encode(), None, _MS_REMOUNT | _MS_BIND, None) == 0
    try:
        with open(_os.path.join(_engine, "_planted_by_hostile_student.txt"), "w") as _handle:
            _handle.write("planted")
        return "planted"
    except OSError as _error:
        return f"remount {'worked' if done else 'failed'}, write failed: {_error}"


_outcomes = [_remount_and_plant()]
if _libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS) == 0:
    _outcomes.append(_remount_and_plant())
print(_outcomes)
'''}
LOSES = {}
