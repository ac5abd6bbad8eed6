"""discounted_returns: reward-to-go of one episode, each call on its own."""
import numpy as np

from rlcourse.grading.rubric import Evidence, Failure, as_array, fmt, item

CELL = "test_discounted_returns"
CASES = ((6, 0.9), (25, 0.97), (1, 0.5), (9, 1.0), (4, 0.0))


def episode_violations(rewards, gamma) -> list[str]:
    """What the notebook's contract says discounted_returns receives: the rewards of one episode,
    float64 [T] with T >= 1, and a float gamma in [0, 1]; the reasons these break it.

    tests/graders/test_rollout_inputs.py checks every call of every item with it."""
    rewards = np.asarray(rewards)
    problems = []
    if rewards.dtype != np.float64 or rewards.ndim != 1 or rewards.size == 0:
        problems.append("rewards are float64 [T], T >= 1")
    if not isinstance(gamma, float) or not 0.0 <= gamma <= 1.0:
        problems.append("gamma is a float in [0, 1]")
    return problems


@item(2, cell=CELL, title="reward-to-go of episodes of several lengths and discounts")
def test_values(student, exact, models, explain, rng):
    evidence = Evidence()
    for length, gamma in CASES:
        rewards = rng.normal(0.0, 1.0, size=length)
        what = f"discounted_returns on {length} rewards with gamma={gamma}"
        actual = as_array(student.call("discounted_returns", rewards, gamma), what=what, shape=(length,))
        evidence.compare(actual, exact.reward_to_go(rewards, gamma), what=what,
                         models=models.returns(rewards, gamma, actual), explain=explain,
                         rtol=1e-8, atol=1e-9,
                         see="discounted_returns(np.array([0., 0., 1.]), 0.5) should be [0.25, 0.5, 1].")
    evidence.conclude()


@item(1, cell=CELL, title="each episode's returns are independent of earlier calls")
def test_calls_are_independent(student, exact, rng):
    first = rng.normal(0.0, 1.0, size=7)
    other = rng.normal(3.0, 1.0, size=11)
    before = as_array(student.call("discounted_returns", first, 0.9), what="discounted_returns", shape=(7,))
    as_array(student.call("discounted_returns", other, 0.9), what="discounted_returns", shape=(11,))
    after = as_array(student.call("discounted_returns", first, 0.9), what="discounted_returns", shape=(7,))
    if not np.allclose(before, after, rtol=1e-10, atol=1e-12):
        raise Failure("returns_leak_across_episodes",
                      did=f"the same episode gave {fmt(before)} and then, after another episode was "
                          f"processed, {fmt(after)}",
                      should="the returns of one episode depend on its rewards alone; every call "
                             "starts its backward sum from zero",
                      see="call discounted_returns twice on the same rewards with another call in "
                          "between, and compare.")
