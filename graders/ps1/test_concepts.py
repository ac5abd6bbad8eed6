"""ps1's concept checks (seed 000's ideas): one letter each, read from the text of the answer
cell (rlcourse.grading.concepts), so the answer is what the student wrote, not what code computed.
Every wrong option names the misconception it reveals (documented in diagnoses.toml)."""
from rlcourse.grading.concepts import Choice, grade_concept
from rlcourse.grading.rubric import item

CELL = "concept_checks"

QUESTIONS = {question.name: question for question in (
    Choice("Q1_ANSWER", "b", {
        "a": ("concept_reward_to_go_biased",
              "rewards before step t do not depend on a_t, so their term has expectation zero: "
              "dropping it changes no expectation, it only removes noise"),
        "c": ("concept_loss_is_the_return",
              "the loss is a device whose gradient estimates grad J; its value is not the "
              "expected return, with or without reward-to-go"),
    }, "E[grad log pi(a_t|s_t)] = 0 for any quantity fixed before a_t is drawn."),
    Choice("Q2_ANSWER", "a", {
        "b": ("concept_ratio_one_no_gradient",
              "the ratio's value is 1 but its gradient is not zero: grad rho = rho grad log pi"),
        "c": ("concept_ratio_needs_new_samples",
              "the stored behaviour log-probabilities make the ratio computable on the old batch; "
              "no new samples are needed"),
    }, "at theta_old every ratio is 1, inside the band, and grad(rho A) = A grad log pi."),
    Choice("Q3_ANSWER", "c", {
        "a": ("concept_clip_flat_both_sides",
              "the clipped term alone is flat outside the band, but the min keeps the unclipped "
              "term r A where it is the smaller one, which for A > 0 is below the band"),
        "b": ("concept_min_pushes_away",
              "the min takes the smaller value, it does not reverse a slope: below the band r A is "
              "the smaller term and its slope in r is A"),
    }, "for A > 0 and r < 1 - eps, min(rA, (1 - eps)A) = rA."),
    Choice("Q4_ANSWER", "b", {
        "a": ("concept_scale_does_not_matter",
              "the gradient's size sets the step; a factor that changes from batch to batch with the "
              "policy makes the update no longer follow grad J"),
        "c": ("concept_normalisation_tied_to_discount",
              "discounting has nothing to do with it: J is a return per episode, so the sample "
              "average is over episodes, discounted or not"),
    }, "J is a per-episode expectation; the number of live steps depends on the policy."),
)}


def _grade(student, name):
    grade_concept(student, CELL, QUESTIONS[name])


@item(1, cell="test_concept_checks", title="Q1: why reward-to-go", kind="concept")
def test_q1(student):
    _grade(student, "Q1_ANSWER")


@item(1, cell="test_concept_checks", title="Q2: the first epoch's gradient", kind="concept")
def test_q2(student):
    _grade(student, "Q2_ANSWER")


@item(1, cell="test_concept_checks", title="Q3: the slope below the band", kind="concept")
def test_q3(student):
    _grade(student, "Q3_ANSWER")


@item(1, cell="test_concept_checks", title="Q4: dividing by the number of episodes", kind="concept")
def test_q4(student):
    _grade(student, "Q4_ANSWER")
