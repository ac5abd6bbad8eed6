"""ppo_objective: the total minibatch loss, its value and its gradients into the critic's values
and the entropies (closed forms)."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_ppo_objective"
SETTINGS = dict(eps=0.25, c1=0.7, c2=0.05)  # none of them the default


def minibatch(rng, size=11):
    logp_old = rng.normal(-1.0, 0.6, size)
    return dict(logp_new=logp_old + rng.normal(0.0, 0.4, size), logp_old=logp_old,
                advantages=rng.normal(0.0, 1.0, size), values=rng.normal(0.0, 1.0, size),
                returns=rng.normal(0.3, 1.0, size), entropy=rng.uniform(0.5, 2.5, size))


def call(student, batch, **kwargs):
    order = ("logp_new", "logp_old", "advantages", "values", "returns", "entropy")
    return [batch[key] for key in order], dict(SETTINGS, **kwargs)


@item(2, cell=CELL, title="total loss value with non-default coefficients")
def test_value(student, exact, models, explain, rng):
    evidence = Evidence()
    for size in (11, 32):
        batch = minibatch(rng, size)
        args, kwargs = call(student, batch)
        what = f"ppo_objective on a minibatch of {size} with eps 0.25, c1 0.7, c2 0.05"
        actual = as_array(student.call("ppo_objective", *args, **kwargs), what=what, shape=())
        evidence.compare(actual, exact.total_loss(*args, **kwargs), what=what,
                         models=models.objective_values(*args, **kwargs), explain=explain,
                         rtol=1e-7, atol=1e-10,
                         see="print the three terms of one minibatch (your ppo_loss, the mean squared "
                             "value error and the mean entropy) and combine them by hand with c1 0.7 and "
                             "c2 0.05, as ppo_objective's docstring says.",
                         fix="add the terms as policy + c1 * value - c2 * entropy.")
    evidence.conclude()


@item(2, cell=CELL, title="gradients into the entropy and the critic's values")
def test_gradients(student, rng):
    """d/d entropy_i = -c2 / B (more entropy, lower loss); d/d values_i = 2 c1 (v_i - R_i) / B."""
    evidence = Evidence()
    batch = minibatch(rng, 13)
    args, kwargs = call(student, batch)
    size = batch["entropy"].size
    _, grad = student.value_and_grad("ppo_objective", *args, wrt="entropy", **kwargs)
    evidence.compare(as_array(grad, what="the gradient with respect to entropy", shape=(size,)),
                     np.full(size, -SETTINGS["c2"] / size),
                     what="the gradient of ppo_objective with respect to entropy",
                     models={"entropy_sign": np.full(size, SETTINGS["c2"] / size)},
                     explain={"entropy_sign": "adding the entropy bonus instead of subtracting it"},
                     rtol=1e-7, atol=1e-12,
                     see="a higher entropy must lower the loss: the gradient should be negative.")
    _, grad = student.value_and_grad("ppo_objective", *args, wrt="values", **kwargs)
    expected = 2 * SETTINGS["c1"] * (batch["values"] - batch["returns"]) / size
    evidence.compare(as_array(grad, what="the gradient with respect to values", shape=(size,)), expected,
                     what="the gradient of ppo_objective with respect to values", rtol=1e-7, atol=1e-12,
                     see="differentiate ppo_objective with respect to values on a single sample whose "
                         "value is 1 and whose return is 0: the gradient should be 2 * c1.",
                     fix="the value term is c1 * mean((values - returns)^2), with no extra factor 1/2.")
    evidence.conclude()
