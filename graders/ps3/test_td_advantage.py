"""td_advantage: one-step TD advantages, no bootstrap past a termination, a bootstrap past a
truncation (a time-limit end has terminated False)."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_td_advantage"


TIME_LIMIT = 200
"""CartPole's time limit (the notebook's `CartPole(max_steps=200)`): a run of fewer steps holds at
most one time-limit end."""


def rollout_violations(rewards, values, next_values, terminated, gamma) -> list[str]:
    """What the notebook's contract says every td_advantage input is, as a rollout of one
    environment makes it; the reasons these break it (none for an input a rollout can produce).

    * rewards, values, next_values: float64 [T]; terminated: bool [T]; gamma a float in [0, 1];
    * next_values[t] is V of the observation step t reached. Where the episode went on, that is
      the state the next step starts from: next_values[t] == values[t + 1]. The chain breaks only
      where an episode ended: at a terminated step, or at a time-limit end, which this function
      is not told about (terminated is False there, so it must bootstrap from next_values[t]);
      within fewer than TIME_LIMIT steps there is at most one time-limit end.

    tests/graders/test_rollout_inputs.py checks every td_advantage call of every item with it."""
    arrays = [np.asarray(a) for a in (rewards, values, next_values)]
    terminated = np.asarray(terminated)
    problems = []
    if any(a.dtype != np.float64 for a in arrays) or terminated.dtype != bool:
        problems.append("rewards, values and next_values are float64, terminated bool")
    if len({a.shape for a in [*arrays, terminated]}) != 1 or terminated.ndim != 1:
        return problems + ["every input has the same shape [T]"]
    if not 0.0 <= gamma <= 1.0:
        problems.append("gamma is in [0, 1]")
    breaks = ~terminated[:-1] & (arrays[2][:-1] != arrays[1][1:])
    if np.sum(breaks) > 1 + (terminated.size - 1) // TIME_LIMIT:
        problems.append("next_values[t] != values[t + 1] at more non-terminated steps than time limits")
    return problems


def run_of_steps(rng, length):
    """A run of one environment: two terminations and one time-limit end (terminated False) at
    random steps; each step that went on reaches the next step's state (next_values[t] =
    values[t + 1]); an ended step's final observation, and the last step's, has its own value."""
    rewards, values = rng.normal(1.0, 1.0, length), rng.normal(5.0, 2.0, length)
    next_values = np.append(values[1:], 0.0)
    ends = rng.choice(length, 3, replace=False)
    terminated = np.zeros(length, dtype=bool)
    terminated[ends[:2]] = True
    finals = np.append(ends, length - 1)
    next_values[finals] = rng.normal(5.0, 2.0, finals.size)
    return rewards, values, next_values, terminated


@item(2, cell=CELL, title="one-step advantages across terminations and time-limit ends")
def test_values(student, exact, models, explain, rng):
    evidence = Evidence()
    for length, gamma in ((12, 0.95), (7, 0.8), (20, 1.0)):
        rewards, values, next_values, terminated = run_of_steps(rng, length)
        ends = np.flatnonzero(terminated).tolist()
        what = f"td_advantage on {length} steps with terminations at steps {ends}, gamma={gamma}"
        actual = as_array(student.call("td_advantage", rewards, values, next_values, terminated, gamma),
                          what=what, shape=(length,))
        evidence.compare(actual, exact.td_errors(rewards, values, next_values, terminated, gamma),
                         what=what, models=models.td(rewards, values, next_values, terminated, gamma),
                         explain=explain, rtol=1e-9, atol=1e-10,
                         see="work out three steps by hand, one terminated, one a time-limit end "
                             "(terminated False) and one that goes on, and print td_advantage's output "
                             "beside them: only the terminated step drops the bootstrap term.",
                         fix="at a terminated step the advantage is r - V(s); everywhere else it is "
                             "r + gamma V(s') - V(s), with V(s') = next_values[t] (a time-limit end is not "
                             "terminated).")
    evidence.conclude()
