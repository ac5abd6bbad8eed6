"""Replaces its output files with links to secrets, then dies: from exact_return(horizon=5)
(asked only by exact_return.random_theta_horizons) it makes `stderr.txt` and `stdout.txt` in its
scratch folder symlinks to a root-only file outside the sandbox (the course copy's
`secret-outside-sandbox.txt`, which the test makes, mode 0600) or /etc/shadow, prints a line and
calls os._exit(1). The grader once followed the link, as root, and quoted the secret's tail in
the crash notice, which reached the report and the feedback page.

Must happen: that one item is lost (`worker_crashed`) and its notice quotes the worker's own
line, read from the grader's pipe; no secret appears in any report, feedback page or export.
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import os as _os, sys as _sys\n"
                           "        _targets = [_os.path.join(c, 'secret-outside-sandbox.txt')\n"
                           "                    for c in _hostile_course_dirs()[0]] + ['/etc/shadow']\n"
                           "        for _name, _target in zip(('stderr.txt', 'stdout.txt'), _targets * 2):\n"
                           "            try:\n"
                           "                _os.unlink(_name)\n"
                           "            except OSError:\n"
                           "                pass\n"
                           "            _os.symlink(_target, _name)\n"
                           "        print('links in place', file=_sys.stderr, flush=True)\n"
                           "        _os._exit(1)\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND}
LOSES = {"exact_return.random_theta_horizons": "worker_crashed"}
