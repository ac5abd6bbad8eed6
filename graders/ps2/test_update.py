"""ppo_update: the structure of its epochs, what it feeds the objective, every optimizer step's
gradient and its statistics, from the given `check_ppo_update`.

`check_ppo_update` runs the student's ppo_update inside the student's process on a Gaussian actor
whose mean is linear in the observation and a linear critic, with a stand-in objective (the lab's
unclipped one, whose gradient the oracle writes in closed form) and plain SGD, and sends back
plain data: the arguments of every objective call, the parameters and (clipped) gradients at every
optimizer step, the final parameters and the statistics. Which samples a minibatch held is read
from the `logp_old` it passed (every sample's is distinct), so any shuffling order, any way of
indexing and either place to normalise the advantages (the batch, as the course teaches, or each
minibatch, as CleanRL does) is judged by what it computes, never by the random numbers it drew.
"""
from __future__ import annotations

import numpy as np
import pytest

from rlcourse.grading.rubric import BadOutput, Evidence, Failure, fmt, item
from rlcourse.worker.errors import WorkerError

CELL = "test_ppo_update"
STATISTICS = ("clip_fraction", "approx_kl", "entropy")
PROBES = (
    # B, settings (none of eps, c1, c2, max_norm the default), the SGD learning rate
    dict(size=48, settings=dict(epochs=3, minibatch=16, eps=0.15, c1=0.7, c2=0.05, max_norm=0.3), lr=0.05),
    dict(size=40, settings=dict(epochs=2, minibatch=8, eps=0.25, c1=0.3, c2=0.0, max_norm=2.0), lr=0.1),
)
NAMES = ("actor_weight", "actor_bias", "log_std", "critic_weight", "critic_bias")
SHAPES = {"actor_weight": (2, 2), "actor_bias": (2,), "log_std": (2,), "critic_weight": (1, 2),
          "critic_bias": (1,)}
TOL = dict(rtol=1e-6, atol=1e-9)
SEE_LOOP = ("run check_ppo_update as the visible test does and print, for each step, which samples "
            "the objective call used (from logp_old) and the gradient norm.")
NOT_CALLED = ("ppo_update made {steps} optimizer steps on probe {probe} without ever calling the "
              "objective it was given")


def probe_inputs(number):
    """The probe's batch and initial parameters, as a rollout of the initial policy makes them:
    actions drawn from it and logp their exact log-probabilities under it (the contract's "policy
    that collected them", so recomputing them at the start of the update changes nothing);
    advantages far from mean 0 and std 1."""
    rng = np.random.default_rng(4200 + number)
    size = PROBES[number]["size"]
    params = {"actor_weight": rng.normal(0, 0.5, (2, 2)), "actor_bias": rng.normal(0, 0.2, 2),
              "log_std": rng.uniform(-0.8, -0.2, 2), "critic_weight": rng.normal(0, 0.5, (1, 2)),
              "critic_bias": rng.normal(0, 0.2, 1)}
    observations = rng.normal(0, 1, (size, 2))
    mean = observations @ params["actor_weight"].T + params["actor_bias"]
    actions = mean + np.exp(params["log_std"]) * rng.normal(0, 1, (size, 2))
    z = (actions - mean) / np.exp(params["log_std"])
    logp = np.sum(-0.5 * z ** 2 - params["log_std"] - 0.5 * np.log(2 * np.pi), axis=-1)
    batch = {"observations": observations, "actions": actions, "logp": logp,
             "advantages": rng.normal(0.8, 2.5, size), "returns": rng.normal(0.5, 1.5, size)}
    return batch, params


def rollout_violations(exact, batch, params, settings) -> list[str]:
    """What ppo_update's contract says its batch is; the reasons a probe breaks it (none for a
    batch a rollout of the initial policy produces).

    * float64 "observations" [B, 2], "actions" [B, 2], "logp", "advantages", "returns" [B];
    * "logp" is the log-probability of each action under the policy that collected it, which is
      the initial policy (params): the actor's Normal, summed over the action's two dimensions;
    * B is a multiple of the minibatch size M.

    tests/graders/test_rollout_inputs.py checks every probe with it."""
    problems = []
    shapes = {"observations": (2,), "actions": (2,), "logp": (), "advantages": (), "returns": ()}
    size = np.shape(batch["logp"])[0]
    for key, tail in shapes.items():
        value = np.asarray(batch[key])
        if value.dtype != np.float64 or value.shape != (size, *tail):
            problems.append(f"batch['{key}'] is float64 [B{', 2' if tail else ''}]")
    if problems:
        return problems
    logp = exact.linear_policy(params, batch["observations"], batch["actions"])["logp"]
    if not np.allclose(batch["logp"], logp, rtol=0, atol=1e-12):
        problems.append("batch['logp'] is the collecting (initial) policy's log-probability of each action")
    if size % settings["minibatch"]:
        problems.append("B is a multiple of the minibatch size")
    return problems


class Run:
    """One probe's report, checked for form and turned into float64 arrays."""

    def __init__(self, number, report):
        self.number = number + 1
        self.batch, self.initial = probe_inputs(number)
        self.settings = PROBES[number]["settings"]
        self.lr = PROBES[number]["lr"]
        self.size = PROBES[number]["size"]
        if not isinstance(report, dict) or not {"steps", "calls", "final", "statistics"} <= set(report):
            raise BadOutput("check_ppo_update returned something else than its report",
                            "it is given code: restore the cell that defines it")
        self.steps = [(self._params(step.get("params")), self._params(step.get("grads")))
                      for step in self._list(report["steps"])]
        self.final = self._params(report["final"])
        self.calls = [self._call(call) for call in self._list(report["calls"])]
        self.statistics = report["statistics"]

    @staticmethod
    def _list(value):
        if not isinstance(value, list) or not all(isinstance(entry, dict) for entry in value):
            raise BadOutput("check_ppo_update's report is malformed", "restore the given cell that defines it")
        return value

    @staticmethod
    def _params(value):
        if not isinstance(value, dict) or set(value) != set(NAMES):
            raise BadOutput("check_ppo_update's report is malformed", "restore the given cell that defines it")
        arrays = {}
        for name in NAMES:
            array = value[name]
            if isinstance(array, np.ndarray) and array.dtype.kind in "biuf":
                array = array.astype(np.float64)
            else:
                array = None
            if array is None or array.shape != SHAPES[name]:
                raise BadOutput(f"a {name} in check_ppo_update's report has the wrong shape",
                                "restore the given cell that defines it")
            if not np.all(np.isfinite(array)):
                raise BadOutput(f"ppo_update produced a non-finite {name} (or its gradient) on probe data",
                                "every parameter and gradient should stay finite")
            arrays[name] = array
        return arrays

    @staticmethod
    def _call(call):
        arrays = {}
        for name in ("logp_new", "logp_old", "advantages", "values", "returns", "entropy"):
            value = call.get(name)
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
                raise BadOutput(f"the objective received a {name} that is not a tensor of numbers",
                                "pass tensors to objective(logp_new, logp_old, advantages, values, returns, entropy, ...)")
            arrays[name] = value.astype(np.float64)
        for name in ("step", "eps", "c1", "c2"):
            number = call.get(name)
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not np.isfinite(number):
                raise BadOutput("check_ppo_update's report is malformed", "restore the given cell that defines it")
            arrays[name] = number
        return arrays

    # --- what the steps were made of ------------------------------------------------------------
    def step_calls(self):
        """For each optimizer step, the last objective call before it (None if there was none)."""
        last = {}
        for call in self.calls:
            last[int(call["step"])] = call
        return [last.get(k) for k in range(len(self.steps))]

    def require_calls(self):
        calls = self.step_calls()
        if not self.steps:
            raise Failure("wrong_value", did=f"ppo_update never stepped the optimizer on {describe(self)}",
                          should=f"it should make epochs * B / M = "
                                 f"{self.settings['epochs'] * self.size // self.settings['minibatch']} steps",
                          see=SEE_LOOP)
        if not self.calls:
            raise Failure("objective_not_called",
                          did=NOT_CALLED.format(steps=len(self.steps), probe=self.number),
                          should="compute every minibatch's loss with objective(logp_new, logp_old, advantages, "
                                 "values, returns, entropy, eps, c1, c2), config's eps, c1 and c2 last: train "
                                 "passes your ppo_objective that way, and the lab passes broken ones",
                          see="print a line inside the objective you pass to ppo_update.")
        missing = [k + 1 for k, call in enumerate(calls) if call is None]
        if missing:
            raise Failure("wrong_value",
                          did=f"on probe {self.number}, optimizer step {missing[0]} came without a call of the "
                              "objective since the step before it",
                          should="each minibatch computes its loss with objective(...), then zeroes the "
                                 "gradients, backpropagates, clips and steps once",
                          see=SEE_LOOP)
        return calls

    def minibatches(self):
        """The sample indices of every step's minibatch, read from the logp_old it passed."""
        logp = self.batch["logp"]
        sets = []
        for k, call in enumerate(self.require_calls()):
            passed = call["logp_old"].ravel()
            distance = np.abs(passed[:, None] - logp[None, :])
            index = distance.argmin(axis=1)
            if passed.size == 0 or np.any(distance[np.arange(passed.size), index] > 1e-9):
                raise Failure("wrong_value",
                              did=f"on probe {self.number}, step {k + 1} passed logp_old values "
                                  f"{fmt(passed)} to the objective, which are not batch['logp'] of any samples",
                              should="pass batch['logp'] of the minibatch's samples, unchanged, as logp_old",
                              see=SEE_LOOP)
            sets.append(index)
        return sets


@pytest.fixture(scope="module")
def runs(student):
    """Both probes' reports, each fetched once and shared by the items (or the error it raised)."""
    cache = {}

    def get(number):
        if number not in cache:
            batch, params = probe_inputs(number)
            try:
                report = student.call("check_ppo_update", batch, params, PROBES[number]["settings"],
                                      seed=17 + number, lr=PROBES[number]["lr"])
                cache[number] = Run(number, report)
            except (WorkerError, Failure) as error:
                cache[number] = error
        if isinstance(cache[number], Exception):
            raise cache[number]
        return cache[number]

    return lambda: [get(number) for number in range(len(PROBES))]


def describe(run):
    s = run.settings
    return (f"probe {run.number} (B = {run.size}, epochs {s['epochs']}, minibatch {s['minibatch']})")


def epoch_failure(run, sets):
    """None if the steps are K epochs, each a partition of the batch into minibatches of M, and
    the minibatches differ between epochs; otherwise the Failure that says what is wrong."""
    size, minibatch, epochs = run.size, run.settings["minibatch"], run.settings["epochs"]
    per_epoch = size // minibatch
    where = describe(run)
    sizes = sorted({len(index) for index in sets})
    if sizes != [minibatch]:
        return Failure("wrong_value", did=f"on {where} the minibatches held {sizes} samples",
                       should=f"each should hold config.minibatch = {minibatch} samples", see=SEE_LOOP)
    if len(sets) == epochs * per_epoch:
        chunks = [sets[e * per_epoch:(e + 1) * per_epoch] for e in range(epochs)]
    elif epochs > 1 and len(sets) == per_epoch:
        return Failure("single_epoch",
                       did=f"on {where} ppo_update made {len(sets)} optimizer steps: one pass over the batch",
                       should=f"it should make config.epochs = {epochs} passes, {epochs * per_epoch} steps",
                       see=SEE_LOOP)
    elif len(sets) % epochs == 0 and len(sets) // epochs < per_epoch:
        used = len(sets) // epochs * minibatch
        return Failure("samples_skipped",
                       did=f"on {where} ppo_update made {len(sets) // epochs} steps of {minibatch} per epoch, "
                           f"so only {used} of the {size} samples were used in each epoch",
                       should=f"every epoch uses every sample once: {per_epoch} minibatches of {minibatch}",
                       see=f"print where each minibatch of one epoch starts: with B = {size} and M = "
                           f"{minibatch} the starts should be {', '.join(map(str, range(0, size, minibatch)))}.",
                       fix="walk the minibatch starts with range(0, B, M), which visits every one.")
    else:
        return Failure("wrong_value",
                       did=f"on {where} ppo_update made {len(sets)} optimizer steps",
                       should=f"{epochs} epochs of {per_epoch} minibatches make {epochs * per_epoch} steps",
                       see=SEE_LOOP)
    for epoch, chunk in enumerate(chunks, start=1):
        counts = np.bincount(np.concatenate(chunk), minlength=size)
        if np.any(counts != 1):
            return Failure("samples_skipped",
                           did=f"in epoch {epoch} of {where}, {int(np.sum(counts == 0))} samples were never "
                               f"used and {int(np.sum(counts > 1))} were used more than once",
                           should="each epoch cuts one permutation of all B indices into minibatches, so "
                                  "every sample is used exactly once",
                           see="count how often each index appears in one epoch's minibatches (torch.bincount "
                               "of their indices together): every count should be 1.",
                           fix="draw each epoch's order with torch.randperm(B, generator=generator) and cut it "
                               "into minibatches, instead of drawing indices at random.")
    partitions = [frozenset(frozenset(index.tolist()) for index in chunk) for chunk in chunks]
    if epochs > 1 and len(set(partitions)) == 1:
        return Failure("minibatches_not_shuffled",
                       did=f"on {where} every epoch used exactly the same minibatches",
                       should="reshuffle at the start of every epoch, so each epoch groups the samples "
                              "differently",
                       see="print the first minibatch's indices in each epoch.")
    return None


@item(2, cell=CELL, title="epochs and minibatches: every sample once per epoch, reshuffled, K epochs")
def test_epochs_and_minibatches(runs):
    for run in runs():
        failure = epoch_failure(run, run.minibatches())
        if failure is not None:
            raise failure


def expected_inputs(exact, run, params, index):
    """What the objective should receive from the networks at `params` for the samples `index`."""
    out = exact.linear_policy(params, run.batch["observations"][index], run.batch["actions"][index])
    return {"logp_new": out["logp"], "values": out["values"], "entropy": out["entropy"]}


@item(2, cell=CELL, title="what each minibatch feeds the objective: normalised advantages, targets, settings")
def test_objective_inputs(runs, exact, models, explain):
    evidence = Evidence()
    for run in runs():
        for k, (call, index) in enumerate(zip(run.step_calls(), run.minibatches())):
            where = f"at step {k + 1} of {describe(run)}"
            for name in ("eps", "c1", "c2"):
                if not np.isclose(call[name], run.settings[name], rtol=0, atol=1e-12):
                    raise Failure("wrong_value",
                                  did=f"{where} the objective was called with {name} = {fmt(call[name])}",
                                  should=f"it should receive config.{name} (here {run.settings[name]})",
                                  see="print the eps, c1 and c2 your objective receives inside ppo_update "
                                      "beside config's.",
                                  fix="pass config.eps, config.c1 and config.c2 as the objective's last three "
                                      "arguments.")
            accepted = exact.normalisations(run.batch["advantages"], index)
            actual = call["advantages"]
            match = next((candidate for candidate in accepted
                          if actual.shape == candidate.shape and np.allclose(actual, candidate, **TOL)),
                         accepted[0])
            evidence.compare(actual, match, what=f"the advantages passed to the objective {where}",
                             models=models.update_advantages(run.batch["advantages"], index),
                             explain=explain, **TOL,
                             see="print advantages.mean() and advantages.std() of what you pass: over an "
                                 "epoch they should be 0 and 1.")
            evidence.compare(call["returns"], run.batch["returns"][index],
                             what=f"the returns passed to the objective {where}", **TOL,
                             see="print the returns the objective receives beside batch['returns'] of the "
                                 "same samples: they should be equal.",
                             fix="pass batch['returns'] of the minibatch's samples, unchanged.")
            for name, value in expected_inputs(exact, run, run.steps[k][0], index).items():
                evidence.compare(call[name], value,
                                 what=f"the {name} passed to the objective {where}", **TOL,
                                 see=f"{name} should have shape [M]: one value per sample of the minibatch, "
                                     "from the current networks.")
    evidence.conclude()


@item(3, cell=CELL, title="every optimizer step: the minibatch loss's gradient, clipped to max_norm")
def test_gradient_steps(runs, exact, models, explain):
    """At each step, the gradient the optimizer sees must be that of the objective on that
    minibatch (with the arguments the student passed) at the current parameters, with the global
    norm clipped to config.max_norm; and the parameters change only through optimizer.step()."""
    evidence = Evidence()
    for run in runs():
        calls, sets = run.step_calls(), run.minibatches()
        previous = None
        for k, ((params, grads), call, index) in enumerate(zip(run.steps, calls, sets)):
            where = f"step {k + 1} of {describe(run)}"
            _, raw = exact.unclipped_objective_and_grads(
                params, run.batch["observations"][index], run.batch["actions"][index],
                call["logp_old"].ravel(), call["advantages"].ravel(), call["returns"].ravel(),
                call["c1"], call["c2"])
            clipped, _ = exact.clip_by_global_norm(raw, run.settings["max_norm"])
            evidence.compare(exact.flatten(grads), exact.flatten(clipped),
                             what=f"the gradient at the optimizer's step ({where}, max_norm {run.settings['max_norm']})",
                             models=models.update_gradients(raw, previous, run.settings["max_norm"]),
                             explain=explain, **TOL,
                             see="print the global norm of the gradients just before each optimizer step: it "
                                 "should never exceed max_norm, and each step's gradient should come from "
                                 "its own minibatch only.")
            previous = grads
        after = [params for params, _ in run.steps[1:]] + [run.final]
        for k, ((params, grads), reached) in enumerate(zip(run.steps, after)):
            moved = {name: params[name] - run.lr * grads[name] for name in NAMES}
            if not np.allclose(exact.flatten(reached), exact.flatten(moved), rtol=1e-9, atol=1e-12):
                raise Failure("wrong_value",
                              did=f"after step {k + 1} of {describe(run)} the parameters were not what "
                                  "the optimizer's step made of them",
                              should="the parameters change only through the optimizer's step, once per minibatch",
                              see=SEE_LOOP)
    evidence.conclude()


@item(1, cell=CELL, title="statistics of the whole batch under the updated policy")
def test_statistics(runs, student, exact, models, explain):
    evidence = Evidence()
    for run in runs():
        stats = run.statistics
        if not isinstance(stats, dict) or not set(STATISTICS) <= set(stats):
            raise BadOutput("ppo_update returned " + type(stats).__name__
                            + (f" with keys {sorted(stats)}" if isinstance(stats, dict) else ""),
                            "it should return a dict with 'clip_fraction', 'approx_kl' and 'entropy'")
        eps = run.settings["eps"]
        batch = run.batch
        expected = exact.probe_statistics(run.final, batch["observations"], batch["actions"], batch["logp"], eps)
        before = models.update_statistics(run.initial, batch, eps)
        own = own_statistics(student, exact, run, eps)
        for key in STATISTICS:
            try:
                value = float(np.asarray(stats[key], dtype=np.float64))
            except (TypeError, ValueError):
                raise BadOutput(f"ppo_update()['{key}'] is not a number", "it should be a float") from None
            target = expected[key]
            if own is not None and key in own and np.isclose(value, own[key], rtol=1e-7, atol=1e-12):
                target = own[key]  # the student's own update_statistics, graded on its own
            evidence.compare(value, target, what=f"ppo_update()['{key}'] on {describe(run)}",
                             models={"statistics_not_after_update": before[key]}, explain=explain,
                             rtol=1e-7, atol=1e-12,
                             see="print the statistics ppo_update returns beside update_statistics of the "
                                 "updated policy's log-probabilities on the whole batch: they should be "
                                 "equal (measured before the epochs, approx_kl and clip_fraction would be 0, "
                                 "the policy then being the one that collected the batch).",
                             fix="after the epochs, evaluate the policy on the whole batch under "
                                 "torch.no_grad() and compute the statistics from that.")
    evidence.conclude()


def own_statistics(student, exact, run, eps):
    """The student's update_statistics on the final policy's log-probabilities, or None."""
    logp = exact.linear_policy(run.final, run.batch["observations"], run.batch["actions"])["logp"]
    try:
        stats = student.call("update_statistics", logp, run.batch["logp"], eps=eps)
        return {key: float(np.asarray(stats[key], dtype=np.float64)) for key in ("clip_fraction", "approx_kl")}
    except Exception:  # noqa: BLE001 - whatever it does, the exact value still counts
        return None

