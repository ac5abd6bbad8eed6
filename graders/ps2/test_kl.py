"""gaussian_kl: the closed form of KL(N_p || N_q), at the course's numbers and on broadcast batches."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_gaussian_kl"
SEE = "compare gaussian_kl(0, 1, 0.5, 2) with gaussian_kl(0.5, 2, 0, 1): they must differ."


def f64(*values):
    return np.array(values, dtype=np.float64)


@item(1, cell=CELL, title="the KL values worked out in the notebook")
def test_course_values(student, exact, models, explain):
    evidence = Evidence()
    for args in [(0.0, 1.0, 0.5, 1.0), (0.0, 1.0, 0.5, 2.0), (0.0, 1.0, 0.0, 1.109)]:
        arrays = [f64(x) for x in args]
        what = f"gaussian_kl{args}"
        actual = as_array(student.call("gaussian_kl", *arrays), what=what, shape=(1,))
        evidence.compare(actual, exact.gaussian_kl(*arrays), what=what, models=models.kl(*arrays),
                         explain=explain, rtol=1e-6, atol=1e-9, see=SEE)
    evidence.conclude()


@item(2, cell=CELL, title="KL on broadcast batches of Gaussians")
def test_broadcast(student, exact, models, explain, rng):
    evidence = Evidence()
    shapes = [((5, 1), (1, 4)), ((3,), (3,)), ((2, 3), (3,))]
    for shape_p, shape_q in shapes:
        mu_p, mu_q = rng.normal(0, 1, shape_p), rng.normal(0, 1, shape_q)
        std_p, std_q = rng.uniform(0.3, 2.5, shape_p), rng.uniform(0.3, 2.5, shape_q)
        expected = exact.gaussian_kl(mu_p, std_p, mu_q, std_q)
        what = f"gaussian_kl with p of shape {shape_p} and q of shape {shape_q}"
        actual = as_array(student.call("gaussian_kl", mu_p, std_p, mu_q, std_q), what=what,
                          shape=expected.shape)
        evidence.compare(actual, expected, what=what, models=models.kl(mu_p, std_p, mu_q, std_q),
                         explain=explain, rtol=1e-6, atol=1e-9, see=SEE)
    evidence.conclude()
