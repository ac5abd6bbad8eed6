"""policy_loss: REINFORCE and the clipped surrogate, values and gradients, against closed forms.

Values and gradients are compared with `exact.surrogate_loss` / `exact.surrogate_gradient`
(float64, closed-form derivatives) and, for REINFORCE, with the true policy gradient from the
enumeration of every episode. Inputs use clip values, horizons and batch sizes the notebook never
shows, and parameters that differ from the behaviour policy's.
"""
from functools import partial

import numpy as np

from rlcourse.grading.rubric import Evidence, Failure, as_array, fmt, item, negated
from rlcourse.worker.errors import WorkerError

CELL = "test_policy_loss"
# Every batch has one of two shapes, [4, 28] and [6, 93]: the number of distinct episodes of
# horizons 4 and 6, so sampled and enumerated batches share them. Fewer distinct shapes mean
# fewer XLA compilations in the student's process (each new shape compiles every primitive
# again), which is most of the grading time; two non-square shapes still catch a hard-coded
# horizon or batch size and a confusion of the time and batch axes.
SHAPES = ((6, 93), (4, 28))
VALUE_TOL = dict(rtol=2e-4, atol=2e-5)
GRAD_TOL = dict(rtol=1e-3, atol=5e-5)


def as_sent(records):
    """Records in the dtypes the notebook's rollout produces (float32, int32, bool)."""
    sent = {}
    for key, value in records.items():
        value = np.asarray(value)
        if value.dtype.kind == "f":
            value = value.astype(np.float32)
        elif value.dtype.kind in "iu":
            value = value.astype(np.int32)
        sent[key] = value
    return sent


def as_received(records):
    """The float64 view of exactly what was sent, for the oracle."""
    return {key: np.asarray(value, dtype=np.float64) if value.dtype.kind == "f" else value
            for key, value in records.items()}


DTYPES = dict(observation=np.int32, action=np.int32, reward=np.float32, active=bool,
              terminated=bool, truncated=bool, old_logp=np.float32)


def rollout_violations(exact, records, *, rewards_from_the_corridor=True) -> list[str]:
    """What the notebook's contract says policy_loss's records are ("as returned by `rollout`");
    the reasons these break it (none for records a rollout can produce).

    * the fields of DTYPES, each [horizon, batch] with that dtype;
    * each episode is live from step 0 to its end and ends exactly once, on its last live step:
      terminated where the step reached the goal, truncated where the horizon ran out (the last
      row); afterwards it keeps its final cell (the absorbing state) and earns 0;
    * live steps follow the corridor: actions 0 or 1, observation[t + 1] the cell step t moved to;
    * old_logp is the log-probability of the action taken under one behaviour policy: the same
      number wherever the same action was taken in the same cell (cells past 2 share cell 2's
      logit), and the two actions' probabilities in a cell sum to 1;
    * with `rewards_from_the_corridor`, every live reward is the corridor's (the goal reward at
      the goal, the step cost elsewhere). policy_loss's docstring says the graders also use
      rewards chosen by hand, and the two items that do are the only ones checked without it.

    tests/graders/test_rollout_inputs.py checks every policy_loss call of every item with it."""
    if set(records) != set(DTYPES):
        return [f"the records' fields are {sorted(DTYPES)}"]
    r = {key: np.asarray(value) for key, value in records.items()}
    problems = [f"{key} is {DTYPES[key].__name__}" for key in DTYPES if r[key].dtype != DTYPES[key]]
    if len({value.shape for value in r.values()}) != 1 or r["reward"].ndim != 2:
        return problems + ["every field has the same shape [horizon, batch]"]
    horizon = r["reward"].shape[0]
    active, terminated, truncated = r["active"], r["terminated"], r["truncated"]
    ended = terminated | truncated
    cell, action = r["observation"].astype(np.int64), r["action"].astype(np.int64)
    moved = np.clip(cell + 2 * action - 1, 0, exact.GOAL)
    last_row = np.arange(horizon)[:, None] == horizon - 1
    if not np.all(active[0]) or np.any(active[1:] != (active[:-1] & ~ended[:-1])):
        problems.append("an episode is live from step 0 until its end, and only until then")
    if np.any(terminated != (active & (moved == exact.GOAL))):
        problems.append("terminated exactly on the live step that reached the goal")
    if np.any(truncated != (active & ~terminated & last_row)):
        problems.append("truncated exactly where a live episode ran out of horizon")
    if np.any((action != 0) & (action != 1)) or np.any((cell < 0) | (cell > exact.GOAL)):
        problems.append("actions are 0 or 1 and cells 0 to GOAL")
    if np.any(cell[1:] != np.where(active, moved, cell)[:-1]):
        problems.append("observation[t + 1] is the cell step t moved to (kept after the end)")
    logp, slot = r["old_logp"].astype(np.float64), np.minimum(cell, 2)
    probability = {}
    for key in set(zip(slot.ravel().tolist(), action.ravel().tolist())):
        seen = logp[(slot == key[0]) & (action == key[1])]
        if np.ptp(seen) > 1e-6 or seen[0] > 0:
            problems.append("old_logp is one policy's log-probability of the action taken")
        probability[key] = np.exp(seen[0])
    if any(abs(probability[(c, 0)] + probability[(c, 1)] - 1) > 1e-5
           for c in range(3) if (c, 0) in probability and (c, 1) in probability):
        problems.append("old_logp is one policy's log-probability of the action taken")
    if rewards_from_the_corridor:
        corridor = np.where(moved == exact.GOAL, exact.GOAL_REWARD, exact.STEP_COST)
        if not np.allclose(r["reward"], np.where(active, corridor, 0.0), rtol=0, atol=1e-7):
            problems.append("each reward is the corridor's, and 0 after the end")
    return sorted(set(problems))


# (clip, horizon, batch or None for every episode, theta_old, theta). In cell 0 the ratios of
# both actions fall just outside the band of this clip but inside the default 0.2 band
# (2 sigma(0.3) = 1.15 and 0.85 for clip 0.1; 2 sigma(0.5) = 1.24 and 0.76 for clip 0.3), so a
# hard-coded clip changes the gradient too; cells 1 and 2 move far, so ratios leave the band
# on both sides, for episodes with positive and with negative returns.
OFF_POLICY = ((0.1, 6, 93, (0.0, 0.4, -0.3), (0.3, 1.3, -1.1)),
              (0.3, 4, None, (0.0, -0.2, 0.5), (0.5, -1.2, 1.4)))


def off_policy_cases(exact, rng):
    """Batches collected by theta_old, evaluated at a theta far enough away that every
    misconception of the clipped objective changes both its value and its gradient (checked by
    tests/graders/test_ps1_inputs.py)."""
    cases = []
    for clip, horizon, batch, theta_old, theta in OFF_POLICY:
        if batch is None:
            records, _ = exact.enumerate_episodes(np.array(theta_old), horizon)
        else:
            records = exact.sample_episodes(np.array(theta_old), horizon, batch, rng)
        cases.append((clip, np.array(theta, dtype=np.float32), as_sent(records)))
    return cases


def loss_value(student, theta, records, **settings):
    """policy_loss's value, asked through the program its gradient items compile anyway: each
    new signature (method, clip, shapes, value or gradient) is one more XLA compilation of the
    student's loss in their worker, most of a submission's grading time. A loss whose gradient
    cannot be taken (or whose call is refused for it) is asked for its value alone, so the
    value items never depend on the gradient; a hang or a crash is not asked twice."""
    try:
        value, _ = student.value_and_grad("policy_loss", theta, records, wrt="theta",
                                          compiled=True, **settings)
        return value
    except WorkerError as error:
        if error.kind in ("timeout", "worker_crashed"):
            raise
    return student.call("policy_loss", theta, records, compiled=True, **settings)


def describe(records, clip=None):
    horizon, batch = np.shape(records["reward"])
    text = f"a batch of {batch} episodes with horizon {horizon}"
    return text + (f" and clip={clip}" if clip is not None else "")


@item(2, cell=CELL, title="REINFORCE loss value")
def test_reinforce_value(student, exact, models, explain, rng):
    evidence = Evidence()
    for horizon, batch in SHAPES:
        theta = rng.normal(0.0, 0.8, size=3).astype(np.float32)
        records = as_sent(exact.sample_episodes(theta, horizon, batch, rng))
        what = f"policy_loss(theta, records, method='reinforce') on {describe(records)}"
        actual = as_array(loss_value(student, theta, records, method="reinforce"), what=what, shape=())
        received = as_received(records)
        evidence.compare(actual, exact.surrogate_loss(theta, received, "reinforce"), what=what,
                         models=models.loss_values(theta, received, "reinforce", 0.2),
                         explain=explain, **VALUE_TOL,
                         see="evaluate your loss on a batch of two one-step episodes and work it out by hand.")
    evidence.conclude()


@item(3, cell=CELL, title="REINFORCE gradient equals the exact policy gradient")
def test_reinforce_gradient_exact(student, exact, models, explain, rng):
    """Every episode of a short horizon, each weighted by its probability through its rewards
    (the loss is linear in the reward-to-go targets), so minus the student's gradient must be
    exactly grad J from enumeration."""
    evidence = Evidence()
    for horizon in (4, 6):
        theta = rng.normal(0.0, 0.8, size=3)
        records, probability = exact.enumerate_episodes(theta, horizon)
        episodes = probability.size
        records["reward"] = records["reward"] * (episodes * probability)[None, :]
        sent = as_sent(records)
        theta32 = theta.astype(np.float32)
        what = (f"minus the gradient of policy_loss(method='reinforce') over all {episodes} "
                f"episodes of horizon {horizon}, weighted by their probability")
        _, grad = student.value_and_grad("policy_loss", theta32, sent, method="reinforce",
                                         wrt="theta", compiled=True)
        grad = as_array(grad, what="the gradient of policy_loss", shape=(3,))
        received = as_received(sent)
        candidates = partial(negated, models.loss_gradients, theta32, received, "reinforce", 0.2)
        evidence.compare(-grad, exact.exact_gradient(theta, horizon), what=what, models=candidates,
                         explain=explain, rtol=2e-3, atol=2e-4,
                         see="compare minus your loss's gradient on a large batch with the gradient of "
                             "exact_return, as Exercise 5 does: they should agree within the sampling "
                             "noise.")
    evidence.conclude()


@item(3, cell=CELL, title="clipped loss value away from the behaviour policy")
def test_ppo_value(student, exact, models, explain, rng):
    evidence = Evidence()
    for clip, theta, records in off_policy_cases(exact, rng):
        what = f"policy_loss(theta, records, method='ppo', clip={clip}) on {describe(records)}"
        actual = as_array(loss_value(student, theta, records, method="ppo", clip=clip), what=what,
                          shape=())
        received = as_received(records)
        evidence.compare(actual, exact.surrogate_loss(theta, received, "ppo", clip), what=what,
                         models=models.loss_values(theta, received, "ppo", clip), explain=explain,
                         **VALUE_TOL,
                         see="build records whose ratios lie below, inside and above the band, with "
                             "positive and negative returns, and compare your loss term by term.")
    evidence.conclude()


@item(3, cell=CELL, title="clipped loss gradient away from the behaviour policy")
def test_ppo_gradient(student, exact, models, explain, rng):
    evidence = Evidence()
    for clip, theta, records in off_policy_cases(exact, rng):
        what = f"the gradient of policy_loss(method='ppo', clip={clip}) on {describe(records)}"
        _, grad = student.value_and_grad("policy_loss", theta, records, method="ppo", clip=clip,
                                         wrt="theta", compiled=True)
        grad = as_array(grad, what=what, shape=(3,))
        received = as_received(records)
        evidence.compare(grad, exact.surrogate_gradient(theta, received, "ppo", clip), what=what,
                         models=partial(models.loss_gradients, theta, received, "ppo", clip),
                         explain=explain, **GRAD_TOL,
                         see="jax.grad(policy_loss)(theta, records) at a theta other than the one "
                             "that collected the records; the clipped terms should contribute nothing.")
    evidence.conclude()


@item(2, cell=CELL, title="clipping on both advantage signs")
def test_ppo_clip_both_signs(student, exact, models, explain):
    """One-step episodes with chosen ratios: the objective is flat exactly where the min selects
    the clipped term (A > 0 above the band, A < 0 below it) and keeps its slope elsewhere.

    Each episode is a rollout of horizon 1 (cell 1, a step left, truncated) whose reward is set
    by hand to the advantage wanted, as policy_loss's docstring allows. The action is the less
    likely one (pi = 0.40), so every behaviour probability pi / ratio stays below 1."""
    clip, t = 0.25, 0.4
    theta = np.array([0.0, t, 0.0], dtype=np.float32)
    logp = float(exact.log_pi(theta, np.array(1), np.array(0)))
    values, gradients = Evidence(), Evidence()
    for advantage in (1.5, -0.5):
        for ratio in (0.5, 0.7, 1.0, 1.15, 1.6):
            records = as_sent(dict(
                observation=np.array([[1]]), action=np.array([[0]]),
                reward=np.array([[advantage]]), active=np.array([[True]]),
                terminated=np.array([[False]]), truncated=np.array([[True]]),
                old_logp=np.array([[logp - np.log(ratio)]])))
            received = as_received(records)
            what = f"policy_loss(method='ppo', clip={clip}) at ratio {ratio} with advantage {advantage}"
            value, grad = student.value_and_grad("policy_loss", theta, records, method="ppo",
                                                 clip=clip, wrt="theta", compiled=True)
            values.compare(as_array(value, what=what, shape=()),
                           exact.surrogate_loss(theta, received, "ppo", clip), what=what,
                           models=partial(models.loss_values, theta, received, "ppo", clip), explain=explain,
                           **VALUE_TOL, see="tabulate min(r*A, clip(r)*A) for r in [0.5, 1, 1.6] and A = ±1.")
            gradients.compare(as_array(grad, what=f"the gradient of {what}", shape=(3,)),
                              exact.surrogate_gradient(theta, received, "ppo", clip),
                              what=f"the gradient of {what}",
                              models=partial(models.loss_gradients, theta, received, "ppo", clip),
                              explain=explain, **GRAD_TOL,
                              see="the objective is flat only where the min picks the clipped term.")
    values.conclude()
    gradients.conclude()


@item(2, cell=CELL, title="behaviour log-probabilities are frozen")
def test_ppo_old_logp_frozen(student, exact, models, rng):
    """No gradient may flow into old_logp, for a loss that is a clipped objective at all: the
    value must be the right one or one of the known variants (a constant loss has no gradient
    anywhere and earns nothing here)."""
    for clip, theta, records in off_policy_cases(exact, rng):
        value, grad = student.value_and_grad("policy_loss", theta, records, method="ppo", clip=clip,
                                             wrt=("records", "old_logp"), compiled=True)
        received = as_received(records)
        value = as_array(value, what="policy_loss", shape=())
        known = [exact.surrogate_loss(theta, received, "ppo", clip),
                 *models.loss_values(theta, received, "ppo", clip).values()]
        if not any(np.isclose(value, candidate, **VALUE_TOL) for candidate in known):
            raise Failure("wrong_value",
                          did=f"policy_loss(method='ppo', clip={clip}) gave {fmt(value)}, which is "
                              "not a clipped objective of these records",
                          should="this item checks the gradient into old_logp of a working loss; "
                                 "fix the value items first")
        grad = as_array(grad, what="the gradient with respect to records['old_logp']",
                        shape=np.shape(records["old_logp"]))
        if np.any(grad != 0):
            raise Failure(
                "old_logp_not_frozen",
                did=f"the gradient of policy_loss with respect to records['old_logp'] is non-zero "
                    f"(largest {fmt(np.max(np.abs(grad)))})",
                should="the behaviour log-probabilities are data collected earlier: no gradient may "
                       "flow into them",
                see="part 3 of policy_loss's visible checks differentiates the loss with respect to "
                    "old_logp: that gradient should be all zeros.",
                fix="wrap records['old_logp'] in jax.lax.stop_gradient in policy_loss, so no gradient "
                    "flows into it.")


@item(1, cell=CELL, title="at ratio 1 the clipped gradient is the REINFORCE gradient")
def test_ppo_equals_reinforce_at_ratio_one(student, exact, models, explain, rng):
    theta = rng.normal(0.0, 0.8, size=3).astype(np.float32)
    records = as_sent(exact.sample_episodes(theta, *SHAPES[0], rng))
    received = as_received(records)
    expected = exact.surrogate_gradient(theta, received, "reinforce")
    evidence = Evidence()
    # The same signatures (method, clip, shape) as test_ppo_gradient's and
    # test_reinforce_gradient_exact's first calls, so these compile nothing new; at ratio 1 the
    # clip value cannot change a correct gradient.
    for method, settings in (("ppo", dict(clip=OFF_POLICY[0][0])), ("reinforce", {})):
        what = f"the gradient of policy_loss(method='{method}') where theta collected the batch"
        _, grad = student.value_and_grad("policy_loss", theta, records, method=method,
                                         wrt="theta", compiled=True, **settings)
        evidence.compare(as_array(grad, what=what, shape=(3,)), expected, what=what,
                         models=partial(models.loss_gradients, theta, received, method,
                                        settings.get("clip", 0.2)),
                         explain=explain, **GRAD_TOL,
                         see="at theta == theta_old every ratio is 1, so both objectives have the same slope.")
    evidence.conclude()
