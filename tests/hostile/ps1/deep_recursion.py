"""Very deep recursion: exact_return(horizon=5) (asked only by exact_return.random_theta_horizons)
raises the recursion limit to 10**8 and recurses through a C function (map), which overflows the
C stack: the worker dies of SIGSEGV (no core file: RLIMIT_CORE is 0). exact_return(horizon=4) of
the same item, asked first, recurses in plain Python under the default limit and returns the
reference value after catching its RecursionError, so the crash is what decides the item.

Must happen: that item is lost (`worker_crashed`), the next items get a fresh worker; the grader
(which never recurses on the worker's data) is unaffected.
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 4:\n"
                           "        def _down(n):\n"
                           "            return _down(n + 1)\n"
                           "        try:\n"
                           "            _down(0)\n"
                           "        except RecursionError:\n"
                           "            pass\n"
                           "    if horizon == 5:\n"
                           "        import sys as _sys\n"
                           "        _sys.setrecursionlimit(10 ** 8)\n"
                           "        def _deeper(n):\n"
                           "            return list(map(_deeper, [n + 1]))\n"
                           "        _deeper(0)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "worker_crashed"}
