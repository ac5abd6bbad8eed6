"""compute_gae: the truth from a tiny MDP with exact V^pi, the defining properties, the course's
worked examples, and rollout buffers with several episode boundaries, against GAE by definition."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_compute_gae"
TOL = dict(rtol=1e-7, atol=1e-9)
SEE_BOUNDARY = ("build a buffer of one column with a terminated step and a truncated step in the "
                "middle, and work out each advantage by hand from the TD residuals.")


def call_gae(student, buffer, gamma, lam, what):
    actual = student.call("compute_gae", buffer["rewards"], buffer["values"], buffer["next_values"],
                          buffer["terminated"], buffer["truncated"], gamma=gamma, lam=lam)
    return as_array(actual, what=what, shape=np.shape(buffer["rewards"]))


def rollout_violations(buffer) -> list[str]:
    """What the notebook's contract says every compute_gae input is, as a rollout makes it; the
    reasons `buffer` breaks it (none for an input a real rollout can produce).

    * rewards, values, next_values: float64 [T, N]; terminated, truncated: bool [T, N];
    * a step never both terminates and is truncated (ReachEnv truncates only what did not
      terminate);
    * next_values[t] is V of the observation step t reached, which for a step whose episode went
      on is the state the next row starts from: next_values[t] == values[t + 1] wherever step t
      < T - 1 did not end. (After an end, and on the last row, it is the final observation's
      value, which the next row never shows.)

    tests/graders/test_rollout_inputs.py checks every compute_gae call of every item with it."""
    problems = []
    floats = [np.asarray(buffer[key]) for key in ("rewards", "values", "next_values")]
    flags = [np.asarray(buffer[key]) for key in ("terminated", "truncated")]
    if any(a.dtype != np.float64 for a in floats) or any(f.dtype != bool for f in flags):
        problems.append("rewards, values and next_values are float64, the flags bool")
    if len({a.shape for a in floats + flags}) != 1 or floats[0].ndim != 2:
        return problems + ["every input has the same shape [T, N]"]
    terminated, truncated = flags
    if np.any(terminated & truncated):
        problems.append("a step is both terminated and truncated")
    values, next_values = floats[1], floats[2]
    went_on = ~(terminated | truncated)[:-1]
    if np.any(went_on & (next_values[:-1] != values[1:])):
        problems.append("next_values[t] != values[t + 1] at a step that did not end")
    return problems


def random_buffer(rng, steps, envs, ends=0.25):
    """A rollout buffer with episode ends scattered through it, terminated and truncated mixed
    (including in the same row), never both at once on one step. Where an episode goes on, the
    observation reached is the next row's state, so next_values[t] = values[t + 1]; after an end
    (and on the last row) it is the final observation, whose value is drawn on its own."""
    ended = rng.random((steps, envs)) < ends
    terminated = ended & (rng.random((steps, envs)) < 0.5)
    rewards = rng.normal(0.0, 1.0, (steps, envs))
    values = rng.normal(0.0, 1.0, (steps, envs))
    next_values = rng.normal(0.5, 1.0, (steps, envs))
    next_values[:-1] = np.where(ended[:-1], next_values[:-1], values[1:])
    return dict(rewards=rewards, values=values, next_values=next_values, terminated=terminated,
                truncated=ended & ~terminated)


@item(1, cell=CELL, title="small cases like the notebook's worked examples")
def test_course_examples(student, exact, models, explain):
    """Cases of the worked examples' kind, small enough to work by hand, but not the notebook's own
    numbers: its worked example and visible check show those, and a visible answer is not graded."""
    column = lambda *v: np.array(v, dtype=np.float64)[:, None]
    flags = lambda *v: np.array(v, dtype=bool)[:, None]
    three = dict(rewards=column(0.5, -1, 2), values=column(0.2, 0.4, -0.1), next_values=column(0.4, -0.1, 1.5))
    cases = [("truncated at the last step, gamma 0.8, lambda 0.6",
              dict(three, terminated=flags(0, 0, 0), truncated=flags(0, 0, 1)), 0.8, 0.6),
             ("truncated at the last step, gamma 0.8, lambda 1",
              dict(three, terminated=flags(0, 0, 0), truncated=flags(0, 0, 1)), 0.8, 1.0),
             ("two steps terminated at the end, gamma 0.8, lambda 0.9",
              dict(rewards=column(2, -1), values=column(0.3, 0.6), next_values=column(0.6, 5),
                   terminated=flags(0, 1), truncated=flags(0, 0)), 0.8, 0.9)]
    evidence = Evidence()
    for label, buffer, gamma, lam in cases:
        what = f"compute_gae on a small example ({label})"
        evidence.compare(call_gae(student, buffer, gamma, lam, what),
                         exact.gae_by_definition(**buffer, gamma=gamma, lam=lam), what=what,
                         models=models.gae_models(buffer, gamma, lam), explain=explain, **TOL,
                         see="work the example through by hand from the TD residuals.")
    evidence.conclude()


@item(3, cell=CELL, title="expected GAE equals the exact advantage A^pi(s, a) of a tiny MDP")
def test_exact_advantage(student, exact, models, explain, rng):
    """Every trajectory of at most 3 steps from each (s0, a0), terminated or truncated, with the
    exact V^pi as the critic: for any lambda, the probability-weighted advantage of step 0 is
    A^pi(s0, a0) exactly, and that of step 1 (over trajectories still alive) is 0, because step
    1's action is drawn from pi. The critic's value of a terminal observation is deliberately non-zero,
    and each column continues with another episode's data after a termination."""
    mdp = exact.TinyMDP.standard(gamma=0.9)
    truth = mdp.advantages()
    evidence = Evidence()
    buffers = {(s, a): exact.enumerate_buffer(mdp, s, a, 3, rng) for s in range(2) for a in range(2)}
    for lam in (0.0, 0.6, 1.0):
        # Each form of each model on its own (gae_models lists a tag once per form, in one
        # order for every buffer): two forms of one tag pooled into one list made a value of
        # twice the length, which matched nothing, and the forward GAE went unnamed.
        actual, forms = [], {}
        for (s, a), (buffer, probability) in buffers.items():
            what = f"compute_gae on the trajectories from state {s}, action {a}"
            gae = call_gae(student, buffer, mdp.gamma, lam, what)
            actual += [exact.expected_first_advantage(gae, probability),
                       exact.expected_second_advantage(gae, probability, buffer)]
            for form, (tag, value) in enumerate(models.gae_models(buffer, mdp.gamma, lam)):
                forms.setdefault((form, tag), []).extend(
                    [exact.expected_first_advantage(value, probability),
                     exact.expected_second_advantage(value, probability, buffer)])
        expected = np.array([x for s, a in buffers for x in (truth[s, a], 0.0)])
        pairs = [(tag, np.array(v)) for (_, tag), v in forms.items()]
        evidence.compare(np.array(actual), expected,
                         what=(f"the probability-weighted advantages of steps 0 and 1 over every "
                               f"trajectory (gamma 0.9, lambda {lam}), for (s0, a0) = (0,0), (0,1), "
                               f"(1,0), (1,1) in turn"),
                         models=pairs, explain=explain, rtol=1e-7, atol=1e-9,
                         see="with an exact critic every TD residual after step 0 has mean zero, so "
                             "any lambda must give A(s0, a0) at step 0 and 0 at step 1 on average; check what your code does "
                             "after a terminated step and at a truncated one.")
    evidence.conclude()


@item(2, cell=CELL, title="lambda 0 gives the TD residuals; lambda 1 gives return minus value")
def test_properties(student, exact, models, explain, rng):
    evidence = Evidence()
    gamma = 0.93
    buffer = random_buffer(rng, 9, 4)
    what = "compute_gae with lambda = 0 on a buffer with episode ends"
    evidence.compare(call_gae(student, buffer, gamma, 0.0, what),
                     exact.td_residuals(buffer["rewards"], buffer["values"], buffer["next_values"],
                                        buffer["terminated"], gamma),
                     what=what, models=models.gae_models(buffer, gamma, 0.0), explain=explain, **TOL,
                     see="work out the TD residuals of a buffer with a terminated and a truncated step "
                         "by hand (only the terminated step loses its bootstrap) and print "
                         "compute_gae(..., lam=0.0) beside them: with lambda = 0 each advantage is its "
                         "own step's residual, nothing more.",
                     fix="with lambda = 0 each advantage is r_t + gamma * V(next) * (1 - terminated_t) - V(s_t).")
    # One episode per column, terminated at the last row: lambda = 1 is the discounted return - V.
    steps, envs = 7, 3
    episode = dict(rewards=rng.normal(0, 1, (steps, envs)), values=rng.normal(0, 1, (steps, envs)),
                   next_values=rng.normal(0, 1, (steps, envs)),
                   terminated=np.zeros((steps, envs), bool), truncated=np.zeros((steps, envs), bool))
    episode["terminated"][-1] = True
    episode["next_values"][:-1] = episode["values"][1:]  # a consistent critic: V(s_{t+1}) is next row's V
    discounted = np.zeros((steps, envs))
    running = np.zeros(envs)
    for t in reversed(range(steps)):
        running = episode["rewards"][t] + gamma * running
        discounted[t] = running
    what = "compute_gae with lambda = 1 on episodes that terminate at the last step"
    evidence.compare(call_gae(student, episode, gamma, 1.0, what), discounted - episode["values"],
                     what=what, models=models.gae_models(episode, gamma, 1.0), explain=explain, **TOL,
                     see="with lambda = 1 the residuals telescope to the discounted return minus V(s_t).")
    zero = dict(buffer, rewards=np.zeros((9, 4)), values=np.zeros((9, 4)), next_values=np.zeros((9, 4)))
    what = "compute_gae with zero rewards and the exact (zero) values"
    evidence.compare(call_gae(student, zero, gamma, 0.9, what), np.zeros((9, 4)), what=what, **TOL)
    evidence.conclude()


@item(3, cell=CELL, title="rollout buffers with several episode boundaries, N > 1, other gamma and lambda")
def test_buffers(student, exact, models, explain, rng):
    evidence = Evidence()
    for steps, envs, gamma, lam in ((12, 5, 0.97, 0.8), (7, 3, 0.9, 0.6), (20, 2, 0.99, 0.95)):
        buffer = random_buffer(rng, steps, envs)
        what = f"compute_gae on a [{steps}, {envs}] buffer with gamma {gamma}, lambda {lam}"
        evidence.compare(call_gae(student, buffer, gamma, lam, what),
                         exact.gae_by_definition(**buffer, gamma=gamma, lam=lam), what=what,
                         models=models.gae_models(buffer, gamma, lam), explain=explain, **TOL,
                         see=SEE_BOUNDARY)
    evidence.conclude()
