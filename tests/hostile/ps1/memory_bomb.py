"""A memory bomb in a graded function: exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons) allocates and touches 256 MB blocks until allocation fails.

Must happen: the worker's address-space limit (RLIMIT_AS: 6 GB for ps1, 2.5 GB in the test's
copy of the course) stops it with a MemoryError, reported as `raised` for that item only; the worker
never takes the machine's memory (the limit, not the OOM killer, ends it), and the rest is
graded. A root worker cannot lift the limit: it holds no CAP_SYS_RESOURCE.
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import numpy as _np\n"
                           "        _hoard = []\n"
                           "        while True:\n"
                           "            _hoard.append(_np.ones(32 << 20))\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "raised"}
