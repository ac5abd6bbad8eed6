"""trpo_step: TRPO's step to second order, against the closed form and the quadratic KL.

The step s = sqrt(2 delta / (g' F^-1 g)) F^-1 g is the only one that maximises g's with
(1/2) s' F s = delta; the cases are random symmetric positive-definite Fisher matrices of several
sizes and the Fisher matrix of a Gaussian policy in (mu, log std), whose step's exact KL
(gaussian_kl) is checked to be delta to second order."""
import numpy as np

from rlcourse.grading.rubric import Evidence, Failure, as_array, item

CELL = "test_trpo_step"
SEE = "check (1/2) s' F s = delta and that F s is parallel to g (the natural gradient's direction)."


def _spd(rng, n):
    a = rng.normal(0, 1, (n, n))
    return a @ a.T + n * np.eye(n) * rng.uniform(0.2, 2.0)


@item(2, cell=CELL, title="the TRPO step: natural-gradient direction, sized by the KL radius")
def test_trpo_step(student, exact, models, explain, rng):
    evidence = Evidence()
    cases = [(rng.normal(0, 1, n), _spd(rng, n), delta) for n, delta in ((2, 0.01), (3, 0.05), (5, 0.002))]
    cases.append((np.array([0.8, -0.3]), exact.gaussian_fisher(0.4), 0.001))
    for grad, fisher, delta in cases:
        what = f"trpo_step for a gradient of size {grad.size} with delta = {delta:g}"
        actual = as_array(student.call("trpo_step", grad, fisher, delta), what=what, shape=grad.shape)
        evidence.compare(actual, exact.second_order_step(grad, fisher, delta), what=what,
                         models=models.trpo(grad, fisher, delta), explain=explain,
                         rtol=1e-6, atol=1e-9, see=SEE)
    evidence.conclude()
    # To second order the Gaussian step's KL is delta: the exact KL agrees within a few percent.
    grad, fisher, delta = cases[-1]
    step = as_array(student.call("trpo_step", grad, fisher, delta), what="trpo_step", shape=(2,))
    kl = float(exact.gaussian_kl(np.float64(0.0), np.float64(0.4), step[0], 0.4 * np.exp(step[1])))
    if not 0.9 * delta < kl < 1.1 * delta:
        raise Failure("wrong_value", did=f"the Gaussian policy's step has an exact KL of {kl:.3g}",
                      should=f"be close to delta = {delta:g}, as the second-order model promises")
