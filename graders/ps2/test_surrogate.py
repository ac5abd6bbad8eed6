"""clipped_surrogate: min(r A, clip(r) A) in every region of the band, both advantage signs."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_clipped_surrogate"


@item(2, cell=CELL, title="the clipped objective in every region, for both advantage signs")
def test_every_region(student, exact, models, explain, rng):
    evidence = Evidence()
    for eps in (0.1, 0.3):
        ratio = np.array([0.4, 0.75, 0.95, 1.0, 1.05, 1.25, 1.6, 2.5] * 2)
        advantages = np.concatenate([rng.uniform(0.2, 2.0, 8), -rng.uniform(0.2, 2.0, 8)])
        what = f"clipped_surrogate(ratio, advantages, eps={eps}) for ratios {np.unique(ratio).tolist()}"
        actual = as_array(student.call("clipped_surrogate", ratio, advantages, eps=eps), what=what,
                          shape=ratio.shape)
        evidence.compare(actual, exact.surrogate(ratio, advantages, eps), what=what,
                         models=models.surrogate_values(ratio, advantages, eps), explain=explain,
                         rtol=1e-9, atol=1e-12,
                         see="tabulate min(r*A, clip(r)*A) by hand for r = 0.5, 1, 1.5 and A = +1, -1.")
    evidence.conclude()
