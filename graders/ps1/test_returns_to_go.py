"""returns_to_go: reward-to-go along the time axis, for any horizon and batch size."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

SHAPES = [(1, 1), (4, 28), (6, 93)]  # the shapes policy_loss's items use too


@item(2, cell="test_returns_to_go", title="reward-to-go on random batches")
def test_random_batches(student, models, explain, rng):
    evidence = Evidence()
    for horizon, batch in SHAPES:
        rewards = rng.normal(size=(horizon, batch)).astype(np.float32)
        what = f"returns_to_go on rewards of shape [{horizon}, {batch}]"
        actual = as_array(student.call("returns_to_go", rewards), what=what, shape=rewards.shape)
        expected = np.cumsum(rewards[::-1].astype(np.float64), axis=0)[::-1]
        evidence.compare(actual, expected, what=what, models=models.returns_to_go(rewards),
                         explain=explain, rtol=1e-4, atol=1e-4,
                         see="print returns_to_go(jnp.array([[1.], [2.], [3.]])): it should be [[6], [5], [3]].")
    evidence.conclude()
