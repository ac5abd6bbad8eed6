"""ppo_loss: its value, its autograd gradient with respect to logp_new in every region of the
clipped objective (checked sample by sample against the closed form), and a zero gradient into
logp_old."""
import numpy as np

from rlcourse.grading.rubric import Evidence, Failure, as_array, fmt, item

CELL = "test_ppo_loss"
EPS = 0.15
# Below, inside and above the band [0.85, 1.15], away from its edges, where the slope is defined.
RATIOS = np.array([0.6, 0.8, 0.95, 1.1, 1.3, 1.7])


def region_batch(rng):
    """Each ratio once with A > 0 and once with A < 0, with random behaviour log-probabilities."""
    ratio = np.concatenate([RATIOS, RATIOS])
    advantages = np.concatenate([rng.uniform(0.3, 2.0, 6), -rng.uniform(0.3, 2.0, 6)])
    logp_old = rng.normal(-1.5, 0.5, ratio.size)
    return logp_old + np.log(ratio), logp_old, advantages


def random_batch(rng, size):
    logp_old = rng.normal(-1.0, 0.7, size)
    return logp_old + rng.normal(0.0, 0.35, size), logp_old, rng.normal(0.2, 1.0, size)


@item(2, cell=CELL, title="loss value away from the behaviour policy")
def test_value(student, exact, models, explain, rng):
    evidence = Evidence()
    for size, eps in ((40, 0.1), (17, 0.25)):
        logp_new, logp_old, advantages = random_batch(rng, size)
        what = f"ppo_loss on a batch of {size} with eps={eps}"
        actual = as_array(student.call("ppo_loss", logp_new, logp_old, advantages, eps=eps),
                          what=what, shape=())
        evidence.compare(actual, exact.ppo_loss(logp_new, logp_old, advantages, eps), what=what,
                         models=models.loss_values(logp_new, logp_old, advantages, eps),
                         explain=explain, rtol=1e-7, atol=1e-10,
                         see="the ratio is exp(logp_new - logp_old); compute the loss of a batch of two by hand.")
    evidence.conclude()


@item(3, cell=CELL, title="per-sample gradient in every region of the clipped objective")
def test_gradient_regions(student, exact, models, explain, rng):
    """d loss / d logp_new_i = -(1/B) * slope_i * r_i: zero exactly where the ratio left the band
    in the direction the advantage favours, -(1/B) A_i r_i everywhere else."""
    evidence = Evidence()
    for _ in range(2):
        logp_new, logp_old, advantages = region_batch(rng)
        what = (f"the gradient of ppo_loss (eps={EPS}) with respect to logp_new at ratios "
                f"{RATIOS.tolist()}, with A > 0 then A < 0")
        _, grad = student.value_and_grad("ppo_loss", logp_new, logp_old, advantages, eps=EPS, wrt="logp_new")
        grad = as_array(grad, what=what, shape=logp_new.shape)
        evidence.compare(grad, exact.ppo_loss_grad(logp_new, logp_old, advantages, EPS), what=what,
                         models=models.loss_grads(logp_new, logp_old, advantages, EPS), explain=explain,
                         rtol=1e-7, atol=1e-12,
                         see="call .backward() on ppo_loss for ratios 0.5, 1, 1.5 with A = +1 and A = -1: "
                             "exactly one sample of each sign should get a zero gradient.")
    evidence.conclude()


def gradient_into_old(student, logp_new, logp_old, advantages, eps):
    """The autograd gradient of ppo_loss with respect to logp_old (zero when the loss detaches it)."""
    _, grad = student.value_and_grad("ppo_loss", logp_new, logp_old, advantages, eps=eps, wrt="logp_old")
    return as_array(grad, what="the gradient of ppo_loss with respect to logp_old", shape=logp_old.shape)


@item(2, cell=CELL, title="no gradient flows into logp_old")
def test_old_logp_frozen(student, exact, models, rng):
    """Judged only for a loss that is a clipped objective at all (a constant loss has no gradient
    anywhere and earns nothing here)."""
    for size, eps in ((25, 0.2), (9, 0.3)):
        logp_new, logp_old, advantages = random_batch(rng, size)
        value = as_array(student.call("ppo_loss", logp_new, logp_old, advantages, eps=eps),
                         what="ppo_loss", shape=())
        known = [exact.ppo_loss(logp_new, logp_old, advantages, eps),
                 *models.loss_values(logp_new, logp_old, advantages, eps).values()]
        if not any(np.isclose(value, candidate, rtol=1e-7, atol=1e-10) for candidate in known):
            raise Failure("wrong_value",
                          did=f"ppo_loss gave {fmt(value)}, which is not a clipped objective of this batch",
                          should="this item checks the gradient into logp_old of a working loss; "
                                 "fix the value items first")
        grad = gradient_into_old(student, logp_new, logp_old, advantages, eps)
        if np.any(grad != 0):
            raise Failure(
                "old_logp_not_frozen",
                did=f"the gradient of ppo_loss with respect to logp_old is non-zero "
                    f"(largest {fmt(np.max(np.abs(grad)))})",
                should="logp_old is data recorded during the rollout: the gradient with respect to "
                       "it should be exactly zero",
                see="make logp_old a tensor with requires_grad=True, call ppo_loss(...).backward(), "
                    "and print logp_old.grad.",
                fix="detach logp_old in ppo_loss (logp_old.detach()) before it enters the ratio.")
