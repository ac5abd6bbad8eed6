"""`os.kill(os.getppid(), 9)` from a graded function, then, if it can read who that parent's
parent is and it is the grader (`rlcourse ... autograde`), that too; the function then returns
the right value, so the attack costs its author nothing if it works.

exact_return(horizon=5) (asked only by exact_return.random_theta_horizons) does it. Its parent
is the fork launcher's template (under bubblewrap, inside the sandbox: killing it ends the
sandbox and the worker with it).

Must happen: Landlock's signal scope (ABI 6) denies any signal from the worker to a process
outside its own domain, so the template, the grader and every later submission are untouched
and this submission loses nothing. (Without it, a killed template is restarted by the grader and
costs only this submission: docs/threat-model.md.)
"""
NEEDS = {"scoped_signals"}

EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import os as _os, signal as _signal\n"
                           "        _parent = _os.getppid()\n"
                           "        try:\n"
                           "            with open(f'/proc/{_parent}/stat') as _handle:\n"
                           "                _grand = int(_handle.read().rsplit(')', 1)[1].split()[1])\n"
                           "            with open(f'/proc/{_grand}/cmdline', 'rb') as _handle:\n"
                           "                _argv = _handle.read().split(b'\\0')\n"
                           "        except (OSError, ValueError, IndexError):\n"
                           "            _grand, _argv = 0, []\n"
                           "        for _target in (_parent, _grand if b'autograde' in _argv else 0):\n"
                           "            if _target > 1:\n"
                           "                try:\n"
                           "                    _os.kill(_target, _signal.SIGKILL)\n"
                           "                except OSError:\n"
                           "                    pass\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {}
