"""Replaces its output files with FIFOs, then dies: from exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons) it makes `stderr.txt` and `stdout.txt` in its scratch folder
named pipes nobody writes to, and calls os._exit(1). The grader's open() of stderr.txt once
blocked for ever, holding the class lock: no later student was graded.

Must happen: that one item is lost (`worker_crashed`); the batch finishes (the grader reads the
worker's prints from its own pipes and never opens a file the worker made).
"""
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import os as _os\n"
                           "        for _name in ('stderr.txt', 'stdout.txt'):\n"
                           "            try:\n"
                           "                _os.unlink(_name)\n"
                           "            except OSError:\n"
                           "                pass\n"
                           "            _os.mkfifo(_name)\n"
                           "        _os._exit(1)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "worker_crashed"}
