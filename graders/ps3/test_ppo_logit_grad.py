"""ppo_logit_grad: against central finite differences of the clipped surrogate away from the
behaviour policy (ratios on both sides of the band, both advantage signs, several clip values),
exact zeros where the min picks the clipped term, and the exact policy gradient at ratio 1."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_ppo_logit_grad"
# (rows, actions, eps): the square batch first (see test_reinforce_logit_grad). Ratios are chosen,
# at least 0.05 away from the band's edges, where the surrogate has a kink.
CASES = ((4, 4, 0.2), (7, 3, 0.1), (12, 2, 0.25), (6, 5, 0.2))
RATIOS = (0.5, 0.7, 0.95, 1.05, 1.4, 1.7)
TOL = dict(rtol=1e-6, atol=1e-9)


def off_policy_batch(rng, n, k, ratios):
    """Current logits, and behaviour probabilities that give each row's chosen action the ratio
    asked for (the other actions keep their relative weights)."""
    logits = rng.normal(0.0, 1.0, (n, k))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    while np.any(probs.min(axis=1) >= 0.45):  # every row needs an action with pi(a) < 0.45
        logits = rng.normal(0.0, 1.0, (n, k))
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
    actions = np.array([rng.choice(np.flatnonzero(row < 0.45)) for row in probs])
    old = np.empty_like(probs)
    for i, (a, r) in enumerate(zip(actions, ratios)):
        old[i] = probs[i] * (1 - probs[i, a] / r) / (1 - probs[i, a])
        old[i, a] = probs[i, a] / r
    return logits, probs, old, actions


@item(3, cell=CELL, title="equals central finite differences of the clipped surrogate")
def test_finite_differences(guarded, exact, models, explain, rng):
    evidence = Evidence()
    for n, k, eps in CASES:
        ratios = rng.choice(RATIOS, n)
        logits, probs, old, actions = off_policy_batch(rng, n, k, ratios)
        advantages = rng.choice([-1.0, 1.0], n) * rng.uniform(0.3, 2.0, n)
        what = f"ppo_logit_grad on {n} rows of {k} actions with eps={eps}"
        actual = as_array(guarded.call("ppo_logit_grad", probs, old, actions, advantages, eps),
                          what=what, shape=(n, k))
        numeric = exact.finite_difference(lambda z: exact.ppo_loss(z, old, actions, advantages, eps), logits)
        evidence.compare(actual, numeric, what=what, models=models.ppo(probs, old, actions, advantages, eps),
                         explain=explain, **TOL,
                         see="compare with central_difference of -mean(min(r A, clip(r) A)) at logits "
                             "whose ratios lie below, inside and above the band.")
    evidence.conclude()


@item(2, cell=CELL, title="zero exactly where the min picks the clipped term, on both advantage signs")
def test_clip_regions(guarded, exact, models, explain, rng):
    eps = 0.2
    rows = [(advantage, ratio) for advantage in (1.5, -0.8) for ratio in (0.6, 1.0, 1.45)]
    ratios = np.array([ratio for _, ratio in rows])
    advantages = np.array([advantage for advantage, _ in rows])
    logits, probs, old, actions = off_policy_batch(rng, len(rows), 3, ratios)
    actual = as_array(guarded.call("ppo_logit_grad", probs, old, actions, advantages, eps),
                      what="ppo_logit_grad", shape=(len(rows), 3))
    expected = exact.ppo_logit_grad(logits, old, actions, advantages, eps)
    forms = models.ppo(probs, old, actions, advantages, eps)
    evidence = Evidence()
    for i, (advantage, ratio) in enumerate(rows):
        flat = (advantage > 0 and ratio > 1 + eps) or (advantage < 0 and ratio < 1 - eps)
        what = (f"the row of ppo_logit_grad with advantage {advantage} and ratio {ratio} (eps {eps}; "
                f"the objective is {'flat' if flat else 'sloped'} there)")
        evidence.compare(actual[i], expected[i], what=what,
                         models=[(tag, value[i]) for tag, value in forms], explain=explain,
                         rtol=1e-6, atol=1e-12,
                         see="call ppo_logit_grad on six rows, A = +1.5 and A = -0.8 each at ratios 0.6, 1 "
                             "and 1.45, with eps 0.2, and print the rows: exactly two should be zero, "
                             "the one with A > 0 above the band and the one with A < 0 below it.",
                         fix="zero the rows where the min picks the clipped term (A > 0 with r > 1 + eps, "
                             "A < 0 with r < 1 - eps); every other row is A r (pi - onehot(a)) / n.")
    evidence.conclude()


@item(1, cell=CELL, title="at ratio 1, gives the exact policy gradient (as REINFORCE does)")
def test_ratio_one_is_reinforce(guarded, exact, models, explain, rng):
    mdp = exact.example_mdp(3, 0.95)
    theta = rng.normal(0.0, 1.0, (2, 2))
    logits, actions, states, weights = exact.enumeration_batch(mdp, theta)
    probs = exact.softmax(logits)
    n = len(actions)
    actual = as_array(guarded.call("ppo_logit_grad", probs, probs.copy(), actions, weights, 0.2),
                      what="ppo_logit_grad", shape=(n, 2))
    by_state = lambda g: -exact.sum_by_state(g, states)  # noqa: E731
    evidence = Evidence()
    evidence.compare(by_state(actual), mdp.exact_gradient(theta),
                     what=(f"minus ppo_logit_grad with old_probs == probs, summed by state over all "
                           f"{n} steps of a two-state MDP's trajectories weighted by their probability"),
                     models=[(tag, by_state(value)) for tag, value in
                             models.ppo(probs, probs, actions, weights, 0.2)],
                     explain=explain, rtol=1e-6, atol=1e-9,
                     see="with old_probs equal to probs every ratio is 1, and ppo_logit_grad must "
                         "return exactly what reinforce_logit_grad returns.")
    evidence.conclude()
