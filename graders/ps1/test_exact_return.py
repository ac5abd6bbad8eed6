"""exact_return: expected return by dynamic programming, for any theta and horizon, with the
student's own rewards (the `exact` fixture is the oracle bound to them)."""
from functools import partial

import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_exact_return"
TYPED_DEFAULTS = "default_values_not_params"
FIX_TYPED_DEFAULTS = ("use STEP_COST and GOAL_REWARD (your own, from PARAMS) for every reward the DP "
                      "adds up, never the default numbers typed in")
TOL = dict(rtol=1e-5, atol=2e-6)


@item(1, cell=CELL, title="returns of the always-left, uniform and always-right policies")
def test_known_policies(student, exact, models, explain):
    evidence = Evidence()
    for logits, horizon, name in ((-100.0, 8, "always-left"), (0.0, 8, "uniform"),
                                  (100.0, 8, "always-right"), (100.0, 2, "always-right")):
        theta = np.full(3, logits, dtype=np.float32)
        what = f"exact_return for the {name} policy with horizon {horizon}"
        actual = as_array(student.call("exact_return", theta, horizon=horizon), what=what, shape=())
        evidence.compare(actual, exact.dp_return(theta, horizon), what=what,
                         models=models.exact_return(theta, horizon), explain=explain, **TOL,
                         see={"*": f"the always-left policy never reaches the goal and pays the step "
                                   f"cost ({exact.STEP_COST:g}) at every step.",
                              TYPED_DEFAULTS: models.typed_defaults_see()},
                         fix={TYPED_DEFAULTS: FIX_TYPED_DEFAULTS})
    evidence.conclude()


@item(3, cell=CELL, title="exact return for random policies and horizons 1 to 12")
def test_random_theta_horizons(student, exact, models, explain, rng):
    evidence = Evidence()
    for horizon in range(1, 13):
        theta = rng.normal(0.0, 1.5, size=3).astype(np.float32)
        what = f"exact_return(theta, horizon={horizon}) for theta = {np.round(theta, 3).tolist()}"
        actual = as_array(student.call("exact_return", theta, horizon=horizon), what=what, shape=())
        evidence.compare(actual, exact.dp_return(theta, horizon), what=what,
                         models=models.exact_return(theta, horizon), explain=explain, **TOL,
                         see={"*": "with horizon 1 no episode can reach the goal from cell 0 or 1, "
                                   f"so exact_return(theta, horizon=1) is STEP_COST "
                                   f"({exact.STEP_COST:g}) for every theta; then work out horizon 2 "
                                   "by hand.",
                              TYPED_DEFAULTS: models.typed_defaults_see()},
                         fix={TYPED_DEFAULTS: FIX_TYPED_DEFAULTS})
    evidence.conclude()


@item(1, cell=CELL, title="exact return is differentiable and its gradient is exact")
def test_gradient(student, exact, models, explain, rng):
    theta = rng.normal(0.0, 1.0, size=3)
    evidence = Evidence()
    for horizon in (3, 8):
        what = f"jax.grad(exact_return)(theta) with horizon {horizon}"
        _, grad = student.value_and_grad("exact_return", theta.astype(np.float32), horizon=horizon,
                                         wrt="theta")
        evidence.compare(as_array(grad, what=what, shape=(3,)), exact.exact_gradient(theta, horizon),
                         what=what, rtol=1e-3, atol=2e-5, explain=explain,
                         models=partial(models.exact_return_gradients, theta, horizon),
                         see={"*": "compare the gradient with central differences of exact_return "
                                   "itself, (exact_return(theta + h e_i) - exact_return(theta - h e_i)) "
                                   "/ (2h) for each logit i with h = 1e-3: the two should agree to "
                                   "about three digits.",
                              # the gradient is right for the rewards the DP used: the rewards are wrong
                              TYPED_DEFAULTS: models.typed_defaults_see()},
                         fix={"*": "write the DP with jax.numpy operations only (no Python floats "
                                   "from float(...) or numpy), so jax.grad can follow it.",
                              TYPED_DEFAULTS: FIX_TYPED_DEFAULTS})
    evidence.conclude()
