"""gae: one environment's buffer with several episode ends of both kinds, against the definition
(a sum of discounted TD errors that stops at each episode's end), and its limiting cases."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_gae"


def rollout_violations(rewards, values, next_values, terminated, truncated, gamma, lam) -> list[str]:
    """What the notebook's contract says every gae input is, as a rollout of one environment
    makes it; the reasons these break it (none for an input a rollout can produce).

    * rewards, values, next_values: float64 [T]; terminated, truncated: bool [T], never both on
      one step; gamma and lam floats in [0, 1];
    * next_values[t] is V of the observation step t reached, which for a step whose episode went
      on is the next step's state: next_values[t] == values[t + 1] wherever step t < T - 1 did not
      end (after an end, and at the last step, it is the final observation's own value).

    tests/graders/test_rollout_inputs.py checks every gae call of every item with it."""
    arrays = [np.asarray(a) for a in (rewards, values, next_values)]
    flags = [np.asarray(f) for f in (terminated, truncated)]
    problems = []
    if any(a.dtype != np.float64 for a in arrays) or any(f.dtype != bool for f in flags):
        problems.append("rewards, values and next_values are float64, the flags bool")
    if len({a.shape for a in arrays + flags}) != 1 or flags[0].ndim != 1:
        return problems + ["every input has the same shape [T]"]
    if not (0.0 <= gamma <= 1.0 and 0.0 <= lam <= 1.0):
        problems.append("gamma and lam are in [0, 1]")
    if np.any(flags[0] & flags[1]):
        problems.append("a step is both terminated and truncated")
    went_on = ~(flags[0] | flags[1])[:-1]
    if np.any(went_on & (arrays[2][:-1] != arrays[1][1:])):
        problems.append("next_values[t] != values[t + 1] at a step that did not end")
    return problems


def buffer(rng, length, ends):
    """Random rewards and values; `ends` maps a step to 'terminated' or 'truncated'."""
    rewards, values = rng.normal(1.0, 1.0, length), rng.normal(4.0, 2.0, length)
    next_values = np.append(values[1:], rng.normal(4.0, 2.0))
    terminated, truncated = np.zeros(length, dtype=bool), np.zeros(length, dtype=bool)
    for step, kind in ends.items():
        (terminated if kind == "terminated" else truncated)[step] = True
        # The value of the observation that ended the episode, not of the next episode's start.
        # It is passed for terminated steps too, so a bootstrap through a termination shows.
        next_values[step] = rng.normal(4.0, 2.0)
    return rewards, values, next_values, terminated, truncated


def compare(evidence, student, exact, models, explain, args, what):
    actual = as_array(student.call("gae", *args), what=what, shape=np.shape(args[0]))
    evidence.compare(actual, exact.gae_by_definition(*args), what=what, models=models.gae(*args), explain=explain,
                     rtol=1e-9, atol=1e-10,
                     see="work out a buffer of five steps with a terminated and a truncated step in the "
                         "middle by hand from its TD errors (each advantage sums the discounted errors up "
                         "to its own episode's end) and print gae's output beside it.",
                     fix="write A_t = delta_t + gamma lam A_{t+1} backwards, with the bootstrap in delta_t "
                         "dropped only at terminated steps and the A_{t+1} term dropped at every episode end.")


@item(3, cell=CELL, title="several episodes of both kinds of ending in one buffer")
def test_values(student, exact, models, explain, rng):
    evidence = Evidence()
    for length, ends, gamma, lam in ((15, {3: "terminated", 8: "truncated", 14: "truncated"}, 0.9, 0.7),
                                     (12, {4: "truncated", 9: "terminated"}, 0.99, 0.95),
                                     (10, {2: "terminated", 6: "terminated", 7: "truncated"}, 0.8, 1.0)):
        args = (*buffer(rng, length, ends), gamma, lam)
        what = f"gae on {length} steps with episode ends {ends}, gamma={gamma}, lam={lam}"
        compare(evidence, student, exact, models, explain, args, what)
    evidence.conclude()


@item(1, cell=CELL, title="lambda = 0 gives TD advantages; lambda = 1 gives return minus value")
def test_limits(student, exact, models, explain, rng):
    evidence = Evidence()
    rewards, values, next_values, terminated, truncated = buffer(rng, 9, {3: "truncated", 8: "terminated"})
    args = (rewards, values, next_values, terminated, truncated, 0.9, 0.0)
    compare(evidence, student, exact, models, explain, args,
            "gae with lam=0 on 9 steps (a truncation at step 3, a termination at step 8)")
    rewards, values, next_values, terminated, truncated = buffer(rng, 6, {5: "terminated"})
    args = (rewards, values, next_values, terminated, truncated, 0.85, 1.0)
    actual = as_array(student.call("gae", *args), what="gae", shape=(6,))
    what = "gae with lam=1 on one terminated episode of 6 steps, plus the values (the returns)"
    evidence.compare(actual + values, exact.reward_to_go(rewards, 0.85), what=what,
                     models=[(tag, value + values) for tag, value in models.gae(*args)], explain=explain,
                     rtol=1e-9, atol=1e-10,
                     see="with lam = 1 on a terminated episode, A_t + V(s_t) is the discounted return G_t.")
    evidence.conclude()
