"""The concept checks before Part 6: seed 002's exit test and self-explanation prompts as graded questions.

Each answer is read from the text of the `concept_checks` cell (rlcourse.grading.concepts), so it
is what the student wrote. Numbers come from the exact oracle (solutions/ps2/exact.py: the KL,
the surrogate and its slope, GAE by its definition), never from the reference solution; the
notebook states the tolerance, 0.001. Every wrong option names the misconception it reveals
(diagnoses.toml); several are the very misconceptions the code items diagnose in code.
"""
import numpy as np

from rlcourse.grading.concepts import Choice, Number, concept_items, grade_concept

CELL = "test_concept_checks"
ANSWERS = "concept_checks"
TOLERANCE = 1e-3
POINTS = 0.5

# A three-step episode like seed 002's WE-L.3.a (not Part 3's worked example), ended both ways.
REWARDS, VALUES, NEXT_VALUES = [1.0, 0.0, 2.0], [1.0, 0.5, 1.0], [0.5, 1.0, 3.0]
GAMMA, LAM = 0.9, 0.5


def _first_advantage(exact, terminated, truncated):
    column = lambda values: np.asarray(values, dtype=np.float64)[:, None]
    return float(exact.gae_by_definition(column(REWARDS), column(VALUES), column(NEXT_VALUES),
                                         column(terminated), column(truncated), GAMMA, LAM)[0, 0])


def _shift_for(kl, target):
    """The mean shift at standard deviation 1 whose KL is `target`, by bisection on the closed form
    (the KL grows monotonically with the shift)."""
    low, high = 0.0, 10.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if kl(0.0, 1.0, middle, 1.0) < target else (low, middle)
    return (low + high) / 2


def _ratio_for(kl, target):
    """The ratio k > 1 of standard deviations at equal means whose KL is `target`, by bisection."""
    low, high = 1.0, 10.0
    for _ in range(200):
        middle = (low + high) / 2
        low, high = (middle, high) if kl(0.0, 1.0, 0.0, middle) < target else (low, middle)
    return (low + high) / 2


def _slope(exact, ratio, advantage):
    return float(exact.surrogate_slope(np.array(ratio), np.array(advantage), 0.2))


def questions(exact) -> dict:
    kl = lambda *args: float(exact.gaussian_kl(*map(np.float64, args)))
    truncated = _first_advantage(exact, [0, 0, 0], [0, 0, 1])
    terminated = _first_advantage(exact, [0, 0, 1], [0, 0, 0])
    lambda_only = sum(LAM ** l * d for l, d in enumerate(
        r + GAMMA * nv - v for r, v, nv in zip(REWARDS, VALUES, NEXT_VALUES)))  # trace decays by lam only
    steps = 8 * 128 // 32 * 10
    # The options of CONCEPT_KL_STD_RATIO, (a) 1.20, (b) 1.02, (c) 1.16, are checked against the
    # closed form here, so a change of delta in the notebook cannot leave a wrong letter right.
    assert abs(_ratio_for(kl, 0.02) - 1.16) < 0.005 and abs(np.exp(0.02) - 1.02) < 0.005
    return {q.name: q for q in [
        Choice("CONCEPT_TRUST_REGION", "b", {
            "a": ("trust_region_as_numerics",
                  "nothing overflows in a ratio near 1; the limit is statistical, not numerical"),
            "c": ("parameter_step_is_policy_step",
                  "a small step in the parameters can still be a large change of the policy (a "
                  "steep region of the network, a tiny standard deviation), so the learning rate "
                  "alone does not keep policies close")},
               why="the rollout was sampled by the old policy; r * A estimates the new policy's gain "
                   "only where the two are close."),
        Number("CONCEPT_KL_MEAN_SHIFT", _shift_for(kl, 0.5), TOLERANCE, (
            (0.5 * 0.5 / kl(0.0, 1.0, 0.5, 1.0), "kl_linear_in_mean_shift",
             "2 scales the shift with the KL, as if the KL grew in proportion to the shift; it "
             "grows with its square, so four times the KL needs only twice the shift"),),
               why="with equal standard deviations the KL is (mu_p - mu_q)^2 / (2 std^2)."),
        Choice("CONCEPT_KL_STD_RATIO", "c", {
            "a": ("clip_eps_is_kl_bound",
                  "1.20 is 1 + sqrt(2 delta), the rule of thumb that relates the clip's epsilon to a "
                  "KL radius, read as a bound on the ratio of standard deviations; it is neither"),
            "b": ("kl_bound_as_log_ratio",
                  "1.02 is e^delta, which treats delta as a bound on log(k); the variance term "
                  "nearly cancels the log term near k = 1, so k may move much further")},
               why="solve log k + 1 / (2 k^2) - 1/2 = 0.02 for k > 1."),
        Number("CONCEPT_CLIPPED_VALUE", float(exact.surrogate(np.array(1.4), np.array(-2.0), 0.2)),
               TOLERANCE, ((-2.4, "clip_without_min",
                            "-2.4 is clip(r) * A alone; the min of r * A = -2.8 and clip(r) * A = "
                            "-2.4 is the more pessimistic, -2.8"),),
               why="compute r * A and clip(r, 0.8, 1.2) * A, then take the smaller."),
        Number("CONCEPT_SLOPE_FAVOURED", _slope(exact, 1.3, 2.0), TOLERANCE, (
            (2.0, "no_clip", "the slope A belongs to r * A with no clip; above 1 + epsilon with "
                             "A > 0 the min picks the clipped term, which is flat"),),
               why="A > 0 and r > 1 + epsilon: which of the two terms does the min pick?"),
        Number("CONCEPT_SLOPE_WRONG_WAY", _slope(exact, 0.7, 2.0), TOLERANCE, (
            (0.0, "clip_without_min", "0 is the slope of clip(r) * A alone; with A > 0 and r < 1 - "
                                      "epsilon the min picks the unclipped r * A, whose slope is A"),),
               why="A > 0 and r < 1 - epsilon: the unclipped term is the smaller one here."),
        Number("CONCEPT_GAE_TRUNCATED", truncated, TOLERANCE, (
            (terminated, "truncation_as_termination",
             "that is the advantage of a terminated last step: a truncated step still bootstraps "
             "from V = 3.0 of the observation it reached"),
            (lambda_only, "trace_decay_lambda_only",
             "that sum weights each further residual by lambda alone; the trace decays by gamma * lambda")),
               why="delta_t = r_t + gamma V(s_t+1) - V(s_t) for every step, then sum (gamma lambda)^l delta."),
        Number("CONCEPT_GAE_TERMINATED", terminated, TOLERANCE, (
            (truncated, "termination_bootstraps",
             "that bootstraps from V = 3.0 after a real ending; after termination nothing follows, "
             "so the last residual is r - V(s) = 1.0"),),
               why="a terminated last step has delta = r - V(s), with no bootstrap."),
        Choice("CONCEPT_LAMBDA_ZERO", "a", {
            "b": ("lambda_ends_swapped",
                  "that describes lambda = 1: the Monte Carlo return minus V, unbiased and noisy. "
                  "lambda = 0 keeps only delta_t")},
               why="set lambda = 0 in sum (gamma lambda)^l delta_t+l: only l = 0 is left."),
        Number("CONCEPT_GRADIENT_STEPS", float(steps), TOLERANCE, (
            (10.0, "epochs_are_gradient_steps",
             "10 counts epochs; each epoch takes one gradient step per minibatch"),
            (32.0, "epochs_are_gradient_steps",
             "32 counts the minibatches of one epoch; there are ten epochs")),
               why="1024 transitions make 1024 / 32 minibatches per epoch, one step each, for K epochs."),
        Choice("CONCEPT_EPOCHS_EFFICIENCY", "b", {
            "a": ("epochs_multiply_efficiency",
                  "ten epochs give ten times the gradient steps per rollout; whether that buys more "
                  "return per sample is an empirical question, and the lab does not measure a factor ten")},
               why="count what K multiplies, and what it does not."),
        Choice("CONCEPT_ENTROPY_SIGN", "b", {
            "a": ("entropy_sign",
                  "the loss subtracts c2 * H, so lowering the loss raises the entropy")},
               why="minimising -c2 * H is maximising H."),
        Choice("CONCEPT_VALUE_COEF", "a", {
            "b": ("value_loss_cannot_reach_actor",
                  "with a shared body the value loss's gradient flows into the parameters the "
                  "policy uses; a hundred times its weight makes it most of their gradient")},
               why="follow the value loss's gradient back: which parameters does it reach?"),
        Choice("CONCEPT_GRAD_CLIP", "c", {
            "a": ("grad_clip_per_component",
                  "clipping each component changes the gradient's direction; clip_grad_norm_ "
                  "rescales the whole vector and keeps its direction"),
            "b": ("grad_clip_is_trust_region",
                  "the gradient's norm bounds one optimizer step's input, not the ratios: several "
                  "clipped steps can still move a ratio far from 1")},
               why="clip_grad_norm_ looks at the norm of all the gradients together."),
    ]}


def _item(name):
    def test(student, exact):
        grade_concept(student, ANSWERS, questions(exact)[name])
    return test


_TITLES = {
    "CONCEPT_TRUST_REGION": "why PPO keeps policies close",
    "CONCEPT_KL_MEAN_SHIFT": "the mean shift for a given KL",
    "CONCEPT_KL_STD_RATIO": "the spread a KL of 0.01 allows",
    "CONCEPT_CLIPPED_VALUE": "the clipped objective by hand, A < 0",
    "CONCEPT_SLOPE_FAVOURED": "the slope past the band in the advantage's direction",
    "CONCEPT_SLOPE_WRONG_WAY": "the slope past the band in the wrong direction",
    "CONCEPT_GAE_TRUNCATED": "GAE by hand, truncated last step",
    "CONCEPT_GAE_TERMINATED": "GAE by hand, terminated last step",
    "CONCEPT_LAMBDA_ZERO": "what lambda = 0 gives",
    "CONCEPT_GRADIENT_STEPS": "gradient steps per rollout",
    "CONCEPT_EPOCHS_EFFICIENCY": "what ten epochs buy",
    "CONCEPT_ENTROPY_SIGN": "the entropy bonus's sign",
    "CONCEPT_VALUE_COEF": "a value loss that dominates",
    "CONCEPT_GRAD_CLIP": "what gradient clipping does",
}
globals().update(concept_items(_TITLES, _item, points=POINTS, cell=CELL))
