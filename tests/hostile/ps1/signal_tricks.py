"""Signal tricks: the top level of a cell ignores SIGTERM, SIGINT, SIGHUP and SIGCHLD and sets
SIGALRM's handler to raise; exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons) resets SIGALRM to its default action and arms a 50 ms
interval timer, so the worker is killed by its own alarm in the middle of the call.

Must happen: that item is lost (`worker_crashed`, the worker stopped), the next calls get a
fresh worker (where the top-level handlers are set again, harmlessly), nothing else is lost.
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
import signal as _signal
for _sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP, _signal.SIGCHLD):
    _signal.signal(_sig, _signal.SIG_IGN)

def _on_alarm(*_):
    raise RuntimeError("alarm")

_signal.signal(_signal.SIGALRM, _on_alarm)
'''}
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import signal as _signal, time as _time\n"
                           "        _signal.signal(_signal.SIGALRM, _signal.SIG_DFL)\n"
                           "        _signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)\n"
                           "        _time.sleep(5)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "worker_crashed"}
