"""Writes a 10 GB file into its scratch directory from a graded function (exact_return with
horizon=5, asked only by exact_return.random_theta_horizons), 8 MB at a time.

Must happen: the worker's file-size limit (RLIMIT_FSIZE, 64 MB) makes the write past it fail
(SIGXFSZ is ignored, so it is an OSError, not a dead worker): that item is lost (`raised`), the
disk never holds more than 64 MB of it, and the scratch directory is removed afterwards. The
limit is per file; the sum of a worker's files is bounded by its scratch quota (256 MB).
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        _block = b'x' * (8 << 20)\n"
                           "        with open('huge.bin', 'wb') as _handle:\n"
                           "            for _ in range(1280):\n"
                           "                _handle.write(_block)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "raised"}
