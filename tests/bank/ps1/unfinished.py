"""An unfinished submission: exact_return, exercises 4 and 5 and the function of exercise 6 still
hold the release's stubs (`raise NotImplementedError()`); everything else is answered correctly,
the prediction and the concept checks included.

Calling exact_return raises NotImplementedError, and so does `train`, which evaluates every update
with exact_return: the exact_return items and both training items say not_implemented. The
notebook's own cells that need exact_return (the example training run, exercises 1 and 3) and the
two stub exercise cells stop with that error before assigning their variables, so those exercise
items find their names missing (missing_name). policy_loss, returns_to_go and the frozen-reference
exercise do not depend on exact_return and keep their points. finite_horizon_values raises
NotImplementedError (its two items say not_implemented); the prediction and the concept answers are
read from what the cells say and keep theirs.
"""
CELLS = {
    "exact_return": '''@partial(jax.jit, static_argnames=('horizon',))
def exact_return(theta, horizon=8):
    """Exact expected (undiscounted) episode return of the policy with logits `theta`.

    theta: float array of shape [3]; the policy moves right in cell c with probability
        sigmoid(theta[c]).
    horizon: number of steps before truncation (a Python int, static under jit).
    Returns a scalar: the average over the start cells 0 and 1 of the expected return, computed
    by `horizon` dynamic-programming backups (no sampling). Must be differentiable in theta.
    """
    # YOUR CODE HERE
    raise NotImplementedError()''',
    "exercise_clipping_signs": '''ratio = jnp.array([0.6, 1.0, 1.4])
eps = PARAMS['clip']
# YOUR CODE HERE
raise NotImplementedError()''',
    "exercise_sampled_vs_exact": '''z = jnp.array([-0.2, 0.3, 0.7])
_, batch = rollout(z, jax.random.key(902), 32768, 8)
# YOUR CODE HERE
raise NotImplementedError()''',
    "finite_horizon_values": '''CLIMB_COST = 0.5325  # what a right move costs in this exercise (not the move into the goal)
UPHILL_STEP_COST = -0.01  # a left move (or a bump into the wall of cell 0), for everyone: not yours
UPHILL_GOAL_REWARD = 1.0  # the move into the goal, for everyone: not yours


def finite_horizon_values(climb_cost, max_horizon=12):
    """Optimal values and first moves by backward induction, when a right move costs climb_cost.

    Returns (values, actions): values[k, c] is the largest expected reward still to come from cell c
    with k steps left (shape [max_horizon + 1, 4]; row 0 and the goal column are 0); actions[k, c]
    is the best first move from cell c with k steps left (shape [max_horizon + 1, 3]; row 0 is 0).
    """
    # YOUR CODE HERE
    raise NotImplementedError()''',
}
LOSES = {
    "horizon.values": "not_implemented",
    "horizon.first_moves": "not_implemented",
    "exact_return.known_policies": "not_implemented",
    "exact_return.random_theta_horizons": "not_implemented",
    "exact_return.gradient": "not_implemented",
    "training.reinforce": "not_implemented",
    "training.ppo": "not_implemented",
    "exercises.changed_seed": "missing_name",
    "exercises.horizon_change": "missing_name",
    "exercises.clipping_signs": "missing_name",
    "exercises.sampled_vs_exact": "missing_name",
}
