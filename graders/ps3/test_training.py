"""Training: the notebook's given agents, run with the submission's functions from the graders'
seeds (none the notebook uses), judged by mean episode lengths with wide margins.

Sampled training lands on different numbers for every correct implementation (another order of
floating-point sums changes every later sample), so only margins are graded. Over 30 seeds the
reference's last-20% mean episode length was at least 147 (REINFORCE), 50 (A2C) and 119 (PPO),
with first-20% means of at most 48, 44 and 51; the thresholds apply to the mean of three seeds.
"""
import numpy as np

from rlcourse.grading.rubric import Failure, as_array, fmt, item

CELL = "test_training"
SEEDS = (101, 202, 303)
STEPS = 20_000


def first_and_last(lengths):
    fifth = max(1, int(0.2 * len(lengths)))
    return lengths[:fifth].mean(), lengths[len(lengths) - fifth:].mean()


def check(guarded, agent, label, min_last, min_gain):
    firsts, lasts = [], []
    for seed in SEEDS:
        lengths = as_array(guarded.call("train", agent, seed=seed, total_steps=STEPS),
                           what=f"train('{agent}', seed={seed})")
        if lengths.ndim != 1 or lengths.size < 5:
            raise Failure("training_not_improving",
                          did=f"train('{agent}', seed={seed}) finished {lengths.size} episodes in {STEPS} steps",
                          should="a learning agent finishes many episodes; check the given train "
                                 "function is unchanged")
        first, last = first_and_last(lengths)
        firsts.append(first)
        lasts.append(last)
    first, last = float(np.mean(firsts)), float(np.mean(lasts))
    if last > min_last and last > first + min_gain:
        return
    raise Failure(
        "training_not_improving",
        did=f"{label} from seeds {list(SEEDS)} went from a mean episode length of {fmt(first, 4)} "
            f"(first 20% of episodes) to {fmt(last, 4)} (last 20%), per seed {fmt(lasts, 4)}",
        should=f"averaged over the seeds the last 20% should exceed {min_last} steps and improve "
               f"on the first 20% by more than {min_gain}",
        see=f"run train('{agent}', seed=s) for a few seeds and plot the lengths; then check the "
            "gradient items above (a sign or scale error shows up here first).")


@item(2, cell=CELL, title="REINFORCE with standardised returns learns from several seeds")
def test_reinforce(guarded):
    check(guarded, "reinforce", "REINFORCE", min_last=100, min_gain=50)


@item(2, cell=CELL, title="A2C with a learned critic improves from several seeds")
def test_a2c(guarded):
    check(guarded, "a2c", "A2C", min_last=35, min_gain=12)


@item(2, cell=CELL, title="PPO with shuffled minibatches learns from several seeds")
def test_ppo(guarded):
    check(guarded, "ppo", "PPO", min_last=90, min_gain=40)
