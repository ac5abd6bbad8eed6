"""The break-it lab's prediction, read from what the student wrote before the lab ran.

`KL_PREDICTION` is graded from the source of the code cells above the lab cell, statically
(rlcourse.grading.predictions): the value must be a literal written there, so nothing the lab
prints (or any later cell) can change it. Grading never runs the lab (assignment.toml skips it); `make claims` reruns it on several
seeds and fails if a variant leaves the band the answer gives it (solutions/ps2/exact.py).

One dict, three items: the six classic bugs together, and each of the two rows that only change
the gradient's scale (a heavy value loss, no gradient clipping) on its own."""
from rlcourse.grading.predictions import prediction_from_cell_text
from rlcourse.grading.rubric import Failure, item

CELL = "test_predict_break_it"
LAB_CELL = "break_it_lab"
NAME = "KL_PREDICTION"

# Per variant: the tag a wrong band reveals, and what each wrong option says about the mechanism.
WRONG = {
    "no clip": ("prediction_clip_not_the_limit",
                "without the clip nothing stops ten epochs of steps on one rollout; the ratio runs "
                "far from 1 and the KL per update grows by more than an order of magnitude"),
    "clip without min": ("prediction_clip_alone_is_ppo",
                         "clip(r) A alone is flat outside the band on both sides, so it stops some "
                         "runaway ratios but not as PPO does, and it loses the slope that pulls a "
                         "ratio back: the KL per update is several times the standard's, not tens "
                         "of times and not the same"),
    "lambda = 1": ("prediction_lambda_moves_policy",
                   "lambda changes which residuals each advantage sums, not how far the update may "
                   "move: the advantages are normalised and the clip bounds the step as before"),
    "K = 1": ("prediction_epochs_not_step_count",
              "one epoch instead of ten gives each rollout a tenth of the gradient steps, so the "
              "policy moves less per update"),
    "no entropy": ("prediction_entropy_moves_policy",
                   "with c2 = 0.01 the entropy bonus is a small term; removing it hardly changes "
                   "how far one update moves the policy"),
    "wrong bootstrap": ("prediction_bootstrap_moves_policy",
                        "a wrong bootstrap makes the advantages wrong, not larger: after "
                        "normalisation and clipping the update moves the policy as far as before"),
    "value loss dominates": ("prediction_value_loss_moves_policy",
                             "a ten times heavier value term lengthens the summed gradient, and the "
                             "norm clip shrinks the actor's part with it; but the actor and the critic "
                             "are separate networks and Adam divides each parameter's gradient by its "
                             "own running size, so the actor's steps, and the KL per update, stay "
                             "about the same"),
    "no gradient clipping": ("prediction_grad_clip_bounds_update",
                             "the norm clip only rescales a gradient, and Adam divides each parameter's "
                             "gradient by its own running size: each step stays about the learning rate "
                             "with or without the clip, so the KL per update stays about the same (the "
                             "clip guards against a rare huge gradient, not the typical step)"),
}
# The rows graded as items of their own; the first item grades the other six.
VALUE_LOSS, GRAD_CLIP = "value loss dominates", "no gradient clipping"


def grade(student, exact, variants):
    """Fails (naming the first wrong variant's misconception) unless KL_PREDICTION, as written above
    the lab, is a dict of the lab's variants whose entries for `variants` give the bands of BREAK_IT_KL."""
    predicted = prediction_from_cell_text(student, LAB_CELL, NAME)
    if not isinstance(predicted, dict) or set(predicted) != set(exact.BREAK_IT_KL):
        raise Failure("bad_output", did=f"{NAME} is not a dict with exactly the lab's {len(exact.BREAK_IT_KL)} variants",
                      should="keep the keys of the given dict and set each value to one of "
                             + ", ".join(map(repr, exact.KL_BANDS)))
    answers = {key: predicted[key].strip().lower() if isinstance(predicted[key], str) else predicted[key]
               for key in variants}
    unknown = [key for key, value in answers.items() if value not in exact.KL_BANDS]
    if unknown:
        raise Failure("bad_output", did=f"{NAME}[{unknown[0]!r}] is {predicted[unknown[0]]!r}",
                      should="each value should be one of " + ", ".join(map(repr, exact.KL_BANDS)))
    wrong = [key for key in variants if answers[key] != exact.BREAK_IT_KL[key]]
    if wrong:
        tag, why = WRONG[wrong[0]]
        others = f" (also not right: {', '.join(map(repr, wrong[1:]))})" if wrong[1:] else ""
        raise Failure(tag, did=f"you predicted {answers[wrong[0]]!r} for {wrong[0]!r}{others}",
                      should=why, see="compare your prediction with the lab's 'KL / std.' column, and "
                                      "ask what sets how far one update can move the policy.")


@item(2, cell=CELL, title="the break-it lab's KL for its six classic bugs, predicted before running it",
      kind="prediction")
def test_break_it_kl(student, exact):
    grade(student, exact, [key for key in exact.BREAK_IT_KL if key not in (VALUE_LOSS, GRAD_CLIP)])


@item(1, cell=CELL, title="the KL of the row 'value loss dominates', predicted before running it",
      kind="prediction")
def test_value_loss_kl(student, exact):
    grade(student, exact, [VALUE_LOSS])


@item(1, cell=CELL, title="the KL of the row 'no gradient clipping', predicted before running it",
      kind="prediction")
def test_grad_clip_kl(student, exact):
    grade(student, exact, [GRAD_CLIP])
