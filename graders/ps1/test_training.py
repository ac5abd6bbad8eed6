"""Training with the student's loss: the exact return of the final policy, across seeds.

The given loop is run by the grader (the `given_loop` fixture, graders/ps1/conftest.py): the same
batches and steps as `train`, with the student's policy_loss asked for each gradient as every
policy_loss item asks, so a loss cannot tell training from an item and train well only there.

Sampled training lands on different digits for every correct implementation (another order of
key splits, another summation order), so it is graded only with a margin: from each of several
seeds the policy's exact return (by our DP, not the student's) must exceed 0.9 with the default
rewards. The student's own rewards move every return, so the margin is asked as a share of the
way from the uniform policy's return to the best one (`exact.progress`): 0.9 is 0.836 of the way
with the defaults, and the same share is asked at every allowed reward. The reference gets at
least 0.902 of the way (REINFORCE, 0.945 with the defaults) and 0.958 (PPO, 0.970) from every
seed 0-99 at every allowed pair of rewards (graders/ps1/assignment.toml).
"""
import numpy as np

from rlcourse.grading.rubric import Failure, fmt, item, on_student_data

CELL = "test_training"
SEEDS = (101, 202, 303)
GOOD = 0.9
"""The final exact return to exceed with the default rewards."""


def good_return(exact) -> float:
    """GOOD carried to the student's rewards: the same share of the way from the uniform policy's
    return to the best one (GOOD itself with the defaults)."""
    return exact.at_progress(exact.progress(GOOD, corridor=exact.DEFAULT))


def final_returns(given_loop, exact, **settings):
    returns = []
    for seed in SEEDS:
        theta = given_loop.train(seed, **settings)
        with on_student_data(f"the logits training from seed {seed} ended on"):
            returns.append(exact.dp_return(theta, 8))
    return np.array(returns)


def check(returns, label, exact):
    threshold = good_return(exact)
    if np.all(returns > threshold):
        return
    raise Failure(
        "training_not_improving",
        did=f"{label} from seeds {list(SEEDS)} reached exact returns {fmt(returns, 4)}",
        should=f"each should exceed {fmt(threshold, 4)} (the uniform policy has "
               f"{fmt(exact.uniform_return(), 4)}, the best {fmt(exact.best_return(), 4)}, with your "
               f"step cost {exact.STEP_COST:g} and goal reward {exact.GOAL_REWARD:g})",
        see="plot history from train(...) for a few seeds; if it falls, check the sign of the loss "
            "and the policy_loss items above.")


@item(2, cell=CELL, title="REINFORCE training reaches a good policy from several seeds")
def test_reinforce(given_loop, exact):
    check(final_returns(given_loop, exact, method="reinforce", epochs=1), "REINFORCE training", exact)


@item(2, cell=CELL, title="PPO training (3 epochs) reaches a good policy from several seeds")
def test_ppo(given_loop, exact):
    check(final_returns(given_loop, exact, method="ppo", epochs=3), "PPO training", exact)
