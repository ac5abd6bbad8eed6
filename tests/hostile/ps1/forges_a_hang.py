"""Raises an exception dressed as the worker watchdog's own report of a hang: its type is named
`rlcourse.Hung`, and its message names a function and arguments as the watchdog's does
(exact_return, for horizon 7 only, which only the random-horizon item asks for).

Accepted (issue 29, "also seen"): the grader believes it, since in its own process nothing tells
the watchdog's reply from a reply built to look like it; but all the forgery can do is what a
real hang does: it costs the student's own item (timeout), one restart of their own worker, and
puts the student's words in their own report. No other student and no other item is touched.
"""
EDITS = {
    "exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                      "    if horizon == 7:\n"
                      "        raise type('rlcourse.Hung', (Exception,), {})('exact_return {}')\n"
                      "    p_right = jax.nn.sigmoid(theta)\n")],
}
LOSES = {"exact_return.random_theta_horizons": "timeout"}
