"""A fork bomb from the top level of a cell: forks as fast as it can for up to 3 seconds (at most
400 processes, so that it cannot hurt a shared machine even if nothing stops it); every child
leaves the worker's session (`setsid`, the classic way to escape a process-group kill) and execs
`sleep 3599.71` (LEFTOVER_MARKER). The bomb then ends all but three sleepers itself, so that the
worker can go on, and, had it got more processes than the worker may have (128 with the
threads of JAX), raises before it sets its answer.

Must happen: the worker's pids cgroup refuses forks beyond its cap (root ignores RLIMIT_NPROC,
also inside bubblewrap), so the answer is set and nothing is lost; the grader carries on; and
no sleeper outlives the submission: the grader kills every process of the worker's cgroup,
whatever its session (the test lists any that remain after the run, kills them, and fails).
"""
LEFTOVER_MARKER = "3599.71"
NEEDS = {"process_cap"}

CELLS = {"exercise_horizon": r'''import os as _os, signal as _signal, time as _time
_sleepers, _started = [], _time.monotonic()
while _time.monotonic() - _started < 3 and len(_sleepers) < 400:
    try:
        _pid = _os.fork()
    except OSError:
        break  # refused: the cap
    if _pid == 0:
        try:
            _os.setsid()
            _os.execv("/bin/sleep", ["sleep", "3599.71"])
        finally:
            _os._exit(0)
    _sleepers.append(_pid)
for _pid in _sleepers[3:]:
    _os.kill(_pid, _signal.SIGKILL)
    _os.waitpid(_pid, 0)
if len(_sleepers) >= 128:
    raise RuntimeError(f"forked {len(_sleepers)} processes: nothing capped them")
short = exact_return(jnp.full(3, 100.0), horizon=2)
'''}
LOSES = {}
