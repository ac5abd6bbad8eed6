"""The concept checks before Part 7: seed 004's case for policy gradients, and the points where
its text is wrong (a standardised return is no baseline, a time limit is no termination, the clip
is no hard trust region), as graded questions.

Each answer is read from the text of the `concept_checks` cell (rlcourse.grading.concepts). The
numbers are closed forms computed here; the notebook states the tolerance, 0.001.
"""
from rlcourse.grading.concepts import Choice, Number, concept_items, grade_concept

CELL = "test_concept_checks"
ANSWERS = "concept_checks"
TOLERANCE = 1e-3
POINTS = 0.5


def questions() -> dict:
    # Greedy: left's probability goes from 0 (1.00 < 1.01) to 1 (1.02 > 1.01).
    greedy_before = float(1.00 > 1.01)
    greedy_after = float(1.00 + 0.02 > 1.01)
    reward, gamma, value = 1.0, 0.99, 50.0
    return {q.name: q for q in [
        Number("CONCEPT_GREEDY_FLIP", greedy_after - greedy_before, TOLERANCE, (
            (0.02, "greedy_policy_changes_smoothly",
             "a greedy policy puts all its probability on the argmax: once Q(s, left) passes "
             "Q(s, right) the choice flips entirely, from never to always"),),
               why="write down the greedy policy's probability of 'left' before and after the update."),
        Choice("CONCEPT_CONTINUOUS_ACTIONS", "a", {
            "b": ("argmax_free_for_continuous",
                  "a network can output one Q per action only when the actions can be listed; for a "
                  "real-valued torque the argmax is an optimisation problem to solve at every step")},
               why="how many actions would a network have to score to take the max?"),
        Choice("CONCEPT_STOCHASTIC_POLICY", "b", {
            "a": ("deterministic_policy_suffices",
                  "any deterministic choice is a pattern the opponent learns to beat; the best policy "
                  "is random, and a greedy argmax over Q can never represent it")},
               why="what does the opponent do against a player who always picks the same move?"),
        Choice("CONCEPT_STANDARDISED_RETURNS", "b", {
            "a": ("standardised_returns_are_baseline",
                  "a baseline b(s) depends on the state and is learned across episodes; standardising "
                  "subtracts one number per episode from every step and divides by another")},
               why="does the subtracted mean depend on the state?"),
        Number("CONCEPT_TIME_LIMIT_TARGET", reward + gamma * value, TOLERANCE, (
            (reward, "truncation_as_termination",
             "1 is the target of a real ending; at a time limit the pole is still up and the "
             "episode's future has value, so the target keeps gamma * V(s')"),),
               why="a truncated step bootstraps: r + gamma * V(s')."),
        Choice("CONCEPT_CLIP_HARD_BOUND", "b", {
            "a": ("clip_is_hard_trust_region",
                  "the clip only stops rewarding a ratio that has left the band in its advantage's "
                  "direction; other samples' gradients (and Adam's momentum) still move it, epoch "
                  "after epoch")},
               why="what, in a minibatch step, moves the probability of a sample whose own gradient is 0?"),
    ]}


def _item(name):
    def test(student):
        grade_concept(student, ANSWERS, questions()[name])
    return test


_TITLES = {
    "CONCEPT_GREEDY_FLIP": "how far a greedy policy jumps",
    "CONCEPT_CONTINUOUS_ACTIONS": "greedy action with a continuous action",
    "CONCEPT_STOCHASTIC_POLICY": "when the best policy is random",
    "CONCEPT_STANDARDISED_RETURNS": "standardised returns are not a baseline",
    "CONCEPT_TIME_LIMIT_TARGET": "the TD target at a time limit",
    "CONCEPT_CLIP_HARD_BOUND": "the clip is not a hard trust region",
}
globals().update(concept_items(_TITLES, _item, points=POINTS, cell=CELL))
