"""exact_return never returns for horizon 5 (an endless `while True: pass`, reached while jit
traces the function, since horizon is static) and is the reference for every other horizon.

The notebook itself only uses horizons 8 and 2, so it runs to the end; only the grader asks for
horizon 5, in the random-horizon item, which must end in a timeout (the worker is killed after
the per-call limit, 20 s for ps1) while the other items, run in a fresh worker, keep their points.
This entry is slow by design: it waits out one full call timeout.
"""
EDITS = {
    "exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                      "    if horizon == 5:\n"
                      "        while True:\n"
                      "            pass\n"
                      "    p_right = jax.nn.sigmoid(theta)\n")],
}
LOSES = {
    "exact_return.random_theta_horizons": "timeout",
}
