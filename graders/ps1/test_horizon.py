"""Exercise 6: optimal values by backward induction when a right move costs more, and the
prediction of the horizon at which cell 0's best first move turns right.

The values and moves are compared with the exact DP (solutions/ps1/exact.py) at the notebook's
climb cost and at two others: a cheap climb, where the move turns right as soon as the goal is
reachable, and a dear one, where it never does within twelve steps, so that a function that
hard-codes the notebook's case, or a bug that only shows at one cost, is seen. The climb cost is
not a per-student variant: the prediction is a literal the student writes, and the reference and
the bank's correct entries, graded under their own ids, share one literal answer.
"""
from functools import partial

from rlcourse.grading.predictions import prediction_from_cell_text
from rlcourse.grading.rubric import BadOutput, Evidence, Failure, as_array, item

CLIMB_COST = 0.5325  # the notebook's CLIMB_COST
CASES = ((CLIMB_COST, 12), (0.3, 5), (0.62, 12))
PREDICTION = "PREDICTED_FLIP_HORIZON"
RUN_CELL = "horizon_run"


def _answers(student, climb_cost, max_horizon):
    result = student.call("finite_horizon_values", climb_cost, max_horizon)
    call = f"finite_horizon_values({climb_cost}, {max_horizon})"
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise BadOutput(f"{call} returned {type(result).__name__}", "it should return (values, actions)")
    values = as_array(result[0], what=f"{call}'s values", shape=(max_horizon + 1, 4))
    actions = as_array(result[1], what=f"{call}'s actions", shape=(max_horizon + 1, 3))
    return values, actions


def _part(models, index):
    return [(tag, parts[index]) for tag, parts in models]


@item(3, cell="test_finite_horizon_values", title="optimal values by backward induction")
def test_values(student, exact, models, explain):
    evidence = Evidence()
    for climb_cost, max_horizon in CASES:
        values, _ = _answers(student, climb_cost, max_horizon)
        truth, _ = exact.finite_horizon(climb_cost, max_horizon)
        evidence.compare(values, truth, what=f"finite_horizon_values({climb_cost}, {max_horizon})'s values",
                         rtol=1e-5, atol=1e-5, explain=explain,
                         models=partial(lambda c, h: _part(models.finite_horizon(c, h), 0), climb_cost, max_horizon),
                         see="print the values row by row: row k is a problem with k steps left, row 0 "
                             "is all 0, the goal column is 0, and each row backs up the one before.")
    evidence.conclude()


@item(1, cell="test_finite_horizon_values", title="the best first move for each time left")
def test_first_moves(student, exact, models, explain):
    evidence = Evidence()
    for climb_cost, max_horizon in CASES:
        _, actions = _answers(student, climb_cost, max_horizon)
        _, truth = exact.finite_horizon(climb_cost, max_horizon)
        evidence.compare(actions, truth, what=f"finite_horizon_values({climb_cost}, {max_horizon})'s actions",
                         rtol=0, atol=0, explain=explain,
                         models=partial(lambda c, h: _part(models.finite_horizon(c, h), 1), climb_cost, max_horizon),
                         see="actions[k, c] is 1 only where moving right is strictly better with k steps "
                             "left; row 0 is all 0.")
    evidence.conclude()


@item(1, cell="test_predict_flip_horizon", title="the flip horizon, predicted before the run",
      kind="prediction")
def test_prediction(student, exact):
    predicted = prediction_from_cell_text(student, RUN_CELL, PREDICTION)
    if predicted is not None and (isinstance(predicted, bool) or not isinstance(predicted, int)):
        raise Failure("bad_output", did=f"{PREDICTION} is {predicted!r}",
                      should="write an integer from 1 to 12, or None")
    flip = exact.flip_horizon(CLIMB_COST, 12)
    if predicted == flip:
        return
    did = f"you predicted {predicted!r}"
    see = ("compare the two plans from cell 0 with k steps left: climbing at once "
           f"(2 x {CLIMB_COST} for the climbs, then +1) against moving left every step (0.01 each).")
    if predicted == 3:
        raise Failure("prediction_reachable_is_enough", did=did, see=see,
                      should="reaching the goal is possible from 3 steps left, but with a climb this "
                             "dear the climb costs more than it earns; only a long wait costs more")
    if predicted is None or predicted > 12:
        raise Failure("prediction_never_worth_it", did=did, see=see,
                      should="the climb loses a little, but waiting loses 0.01 per step left, so "
                             "with enough time left climbing is the cheaper of the two")
    if abs(predicted - flip) == 1:
        raise Failure("prediction_boundary_off_by_one", did=did, see=see,
                      should="you found the right comparison but not the right step: count the "
                             "steps left at which waiting first costs strictly more than climbing")
    raise Failure("wrong_value", did=did, should="the best first move turns right at one particular "
                  "number of steps left, which the comparison of the two plans gives", see=see)

