"""Huge integers where numbers are expected: the top level sets `huge = 10 ** 5000` (more digits
than Python converts to text by default) and `big = 2 ** 80`; returns_to_go returns `2 ** 80`
(fits JSON, not int64) for the grader's own [1, 1] batch (a concrete array, not one traced inside policy_loss); exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons) returns 10 ** 5000.

Must happen: returns_to_go.random_batches is lost with a clear "returned int, not a numeric
array" style message (`bad_output`), never a grader error; the 5000-digit integer cannot even be
encoded by the worker, which reports an error (`raised`); no other item changes (the notebook's
own uses of returns_to_go go through policy_loss with real batches).
"""
EDITS = {
    "returns_to_go": [("    \"\"\"\n", "    \"\"\"\n    if rewards.shape == (1, 1):\n"
                                      "        try:\n            float(rewards[0, 0])  # a concrete array: a grader's call\n"
                                      "        except Exception:\n            pass  # traced inside policy_loss: behave\n"
                                      "        else:\n            return 2 ** 80\n")],
    "exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                      "    if horizon == 5:\n"
                      "        return 10 ** 5000\n"
                      "    p_right = jax.nn.sigmoid(theta)\n")],
}
CELLS = {"exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\nhuge = 10 ** 5000\nbig = 2 ** 80\n"}
LOSES = {"returns_to_go.random_batches": "bad_output", "exact_return.random_theta_horizons": "raised"}
