"""Training: the notebook's given loop (`training_run`, which calls `train` with the submission's
compute_gae, value_targets, ppo_update, ppo_objective and update_statistics), from the graders'
seeds, judged by the exact return of the deterministic policy before and after, computed here
from the actor's weights (the notebook's own evaluation is not used).

Sampled training lands on different numbers for every correct implementation (another shuffle,
another order of sums), so only a margin is graded. With the reference and these settings
(LAB's, 12 iterations), the gain over the untrained policy's return from the 64 starts below,
over 160 seeds (0-59 and 100-199), was at least 0.97, above 1.6 on 95% of them, and 2.56 at the
median. Here at least two of the three seeds must gain more than 0.7: the item asks whether
training works at all; a bug that only sometimes collapses a run (no clip, say) is left to the
items that name it.
"""
import numpy as np

from rlcourse.grading.rubric import BadOutput, Failure, fmt, item

CELL = "test_training"
SEEDS = (101, 202, 303)
ITERATIONS = 12
MIN_GAIN = 0.7
STARTS = np.random.default_rng(2024).normal(0.0, 0.1, (64, 2))
WEIGHTS = {"0.weight": (64, 2), "0.bias": (64,), "2.weight": (2, 64), "2.bias": (2,)}


def actor_weights(value, what):
    if not isinstance(value, dict) or set(value) != set(WEIGHTS):
        raise BadOutput(f"{what} is not the actor's state_dict", "restore the given cells")
    weights = {}
    for name, shape in WEIGHTS.items():
        array = value[name]
        if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype.kind != "f":
            raise BadOutput(f"{what}['{name}'] has the wrong shape", "restore the given cells")
        if not np.all(np.isfinite(array)):
            raise BadOutput(f"training made the actor's {name} non-finite",
                            "the weights should stay finite; check the update items above")
        weights[name] = array.astype(np.float64)
    return weights


@item(2, cell=CELL, title="PPO with your functions improves the policy from several seeds")
def test_improves(student, exact):
    before, after = [], []
    for seed in SEEDS:
        run = student.call("training_run", seed, iterations=ITERATIONS)
        if not isinstance(run, dict) or not {"initial", "final"} <= set(run):
            raise BadOutput("training_run returned something else than its report", "restore the given cells")
        before.append(exact.reach_return(actor_weights(run["initial"], "training_run()['initial']"), STARTS))
        after.append(exact.reach_return(actor_weights(run["final"], "training_run()['final']"), STARTS))
    before, after = np.array(before), np.array(after)
    if np.sum(after - before > MIN_GAIN) >= 2:
        return
    raise Failure(
        "training_not_improving",
        did=f"{ITERATIONS} iterations of PPO from seeds {list(SEEDS)} took the deterministic policy's "
            f"return from {fmt(before, 4)} to {fmt(after, 4)}",
        should=f"at least two of them should gain more than {MIN_GAIN}: in these {ITERATIONS} iterations a "
               "correct implementation gained more than 0.9 from every seed we tried, about 2.5 typically "
               "(an untrained policy scores about -5, a good one about -1.1)",
        see="run train(LAB, seed=s) for a few seeds and plot history['return']; if it does not rise, "
            "check the ppo_update items above (a sign, a missing optimizer step or zeroed gradients "
            "show up here first).")
