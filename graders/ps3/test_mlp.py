"""mlp_forward / mlp_backward: the forward pass, and every parameter's gradient against central
finite differences of the oracle's forward pass, in random shapes with batches of 2 or more.

The graders call the given `mlp_gradients(params, x, grad_out)`, which runs the student's
forward and backward passes in the student's process, so the cache never leaves it."""

from rlcourse.grading.rubric import BadOutput, Evidence, as_array, item

CELL = "test_mlp"
# (batch, inputs, hidden, outputs): no two equal where a transpose could hide, and a 1-output critic.
SHAPES = ((5, 3, 7, 2), (2, 4, 6, 1), (6, 2, 3, 4))
NAMES = ("W1", "b1", "W2", "b2")


def random_problem(rng, batch, n_in, hidden, n_out):
    params = {"W1": rng.normal(0, 0.7, (n_in, hidden)), "b1": rng.normal(0, 0.5, hidden),
              "W2": rng.normal(0, 0.7, (hidden, n_out)), "b2": rng.normal(0, 0.5, n_out)}
    return params, rng.normal(0, 1.0, (batch, n_in)), rng.normal(0, 1.0, (batch, n_out))


def call(student, params, x, grad_out):
    reply = student.call("mlp_gradients", params, x, grad_out)
    if not isinstance(reply, (list, tuple)) or len(reply) != 2 or not isinstance(reply[1], dict):
        raise BadOutput("mlp_gradients (your mlp_forward then mlp_backward) did not return "
                        "(out, dict of gradients)",
                        "mlp_forward should return (out, cache) and mlp_backward a dict of gradients")
    out, grads = reply
    missing = [name for name in NAMES if name not in grads]
    if missing:
        raise BadOutput(f"mlp_backward returned a dict without {missing}",
                        "it should have one gradient per parameter: W1, b1, W2, b2")
    return out, grads


@item(1, cell=CELL, title="forward pass")
def test_forward(student, exact, rng):
    evidence = Evidence()
    for shape in SHAPES:
        params, x, grad_out = random_problem(rng, *shape)
        out, _ = call(student, params, x, grad_out)
        what = (f"mlp_forward on a batch of {shape[0]} inputs of size {shape[1]} "
                f"(hidden {shape[2]}, outputs {shape[3]})")
        evidence.compare(as_array(out, what=what, shape=(shape[0], shape[3])), exact.mlp_forward(params, x),
                         what=what, rtol=1e-8, atol=1e-10,
                         see="call mlp_forward on one input, one hidden unit and one output you can work "
                             "out by hand (W1 [[2.]], b1 [0.5], W2 [[3.]], b2 [1.], x [[1.]]): the output "
                             "should be 3 tanh(2.5) + 1 = 3.96; for a batch of 5 inputs its shape should "
                             "be [5, n_out].",
                         fix="compute the output as tanh(x @ W1 + b1) @ W2 + b2, of shape [batch, n_out].")
    evidence.conclude()


@item(3, cell=CELL, title="every parameter's gradient equals central finite differences")
def test_backward_finite_differences(student, exact, rng):
    evidence = Evidence()
    for shape in SHAPES:
        params, x, grad_out = random_problem(rng, *shape)
        _, grads = call(student, params, x, grad_out)
        numeric = exact.mlp_gradients_fd(params, x, grad_out)
        for name in NAMES:
            what = (f"the gradient for {name} (batch {shape[0]}, inputs {shape[1]}, hidden {shape[2]}, "
                    f"outputs {shape[3]})")
            actual = as_array(grads[name], what=what, shape=params[name].shape)
            evidence.compare(actual, numeric[name], what=what, rtol=1e-5, atol=1e-7,
                             models={"grad_sign": -numeric[name]},
                             see="perturb one entry of that parameter by +-1e-6 and compare "
                                 "(sum(g * out(+)) - sum(g * out(-))) / 2e-6 with your entry, "
                                 "as central_difference does.")
    evidence.conclude()
