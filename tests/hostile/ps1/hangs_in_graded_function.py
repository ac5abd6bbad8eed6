"""An endless loop inside a graded function, with every catchable signal that might stop it
ignored or blocked: exact_return(horizon=5) (asked only by exact_return.random_theta_horizons)
ignores SIGTERM, SIGINT, SIGHUP, SIGALRM and SIGXCPU, blocks what it can, then spins.

Must happen: the grader stops waiting at the per-call wall clock (20 s for ps1, 30 s in the
test's copy of the course) and SIGKILLs the worker; that item is lost (`timeout`) and the next items run in a fresh worker.
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import signal as _signal\n"
                           "        for _sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP,\n"
                           "                     _signal.SIGALRM, _signal.SIGXCPU):\n"
                           "            _signal.signal(_sig, _signal.SIG_IGN)\n"
                           "        _signal.pthread_sigmask(_signal.SIG_BLOCK, set(_signal.Signals))\n"
                           "        while True:\n"
                           "            pass\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "timeout"}
