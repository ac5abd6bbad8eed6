"""td_advantage: one-step TD advantages, no bootstrap past a termination, a bootstrap past a
truncation (a time-limit end has terminated False)."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_td_advantage"


@item(2, cell=CELL, title="one-step advantages across terminations and time-limit ends")
def test_values(student, exact, models, explain, rng):
    evidence = Evidence()
    for length, gamma in ((12, 0.95), (7, 0.8), (20, 1.0)):
        rewards, values = rng.normal(1.0, 1.0, length), rng.normal(5.0, 2.0, length)
        next_values = rng.normal(5.0, 2.0, length)
        terminated = np.zeros(length, dtype=bool)
        terminated[rng.choice(length, 2, replace=False)] = True
        ends = np.flatnonzero(terminated).tolist()
        what = f"td_advantage on {length} steps with terminations at steps {ends}, gamma={gamma}"
        actual = as_array(student.call("td_advantage", rewards, values, next_values, terminated, gamma),
                          what=what, shape=(length,))
        evidence.compare(actual, exact.td_errors(rewards, values, next_values, terminated, gamma),
                         what=what, models=models.td(rewards, values, next_values, terminated, gamma),
                         explain=explain, rtol=1e-9, atol=1e-10,
                         see="at a terminated step the advantage is r - V(s); elsewhere r + gamma V(s') - V(s).")
    evidence.conclude()
