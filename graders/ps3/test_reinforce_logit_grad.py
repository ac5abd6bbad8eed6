"""reinforce_logit_grad: against central finite differences, and against exact policy gradients
(the softmax bandit's closed form; a two-state MDP's policy-gradient theorem with exact Q^pi and
visitation from DP, matched by the probability-weighted mean over every trajectory)."""
import numpy as np

from rlcourse.grading.rubric import Evidence, as_array, item

CELL = "test_reinforce_logit_grad"
# (rows, actions): the square batch first, where a missing trailing axis computes a wrong value
# instead of failing.
SHAPES = ((3, 3), (6, 2), (5, 4), (2, 5))
TOL = dict(rtol=1e-6, atol=1e-9)


def batch_violations(probs, actions, weights, old_probs=None) -> list[str]:
    """What the notebook's contract says the logit-gradient functions receive (reinforce_logit_grad
    and ppo_logit_grad); the reasons these inputs break it (none for a batch a policy produces).

    * probs (and old_probs): float64 [n, A], each row a softmax distribution: positive entries
      that sum to 1;
    * actions: integers [n], each one of the A actions; weights (or advantages): float64 [n],
      any real numbers (returns, advantages or any constant weights: the loss is linear in them).

    tests/graders/test_rollout_inputs.py checks every call of both functions with it."""
    problems = []
    tables = [np.asarray(probs)] + ([] if old_probs is None else [np.asarray(old_probs)])
    actions, weights = np.asarray(actions), np.asarray(weights)
    for table in tables:
        if table.dtype != np.float64 or table.ndim != 2 or table.shape != tables[0].shape:
            return problems + ["probabilities are float64 [n, A]"]
        if np.any(table <= 0) or not np.allclose(table.sum(axis=1), 1.0, rtol=0, atol=1e-12):
            problems.append("each row of probabilities is positive and sums to 1")
    n, k = tables[0].shape
    if actions.dtype.kind not in "iu" or actions.shape != (n,) or np.any((actions < 0) | (actions >= k)):
        problems.append("actions are n integers in [0, A)")
    if weights.dtype != np.float64 or weights.shape != (n,):
        problems.append("weights are float64 [n]")
    return problems


def transformed(forms, transform):
    return [(tag, transform(value)) for tag, value in forms]


@item(2, cell=CELL, title="equals central finite differences of -mean(w log pi(a))")
def test_finite_differences(guarded, exact, models, explain, rng):
    evidence = Evidence()
    for n, k in SHAPES:
        logits = rng.normal(0.0, 1.0, (n, k))
        actions = rng.integers(0, k, n)
        weights = rng.normal(0.0, 2.0, n)
        probs = exact.softmax(logits)
        what = f"reinforce_logit_grad on {n} rows of {k} actions"
        actual = as_array(guarded.call("reinforce_logit_grad", probs, actions, weights), what=what, shape=(n, k))
        numeric = exact.finite_difference(lambda z: exact.reinforce_loss(z, actions, weights), logits)
        evidence.compare(actual, numeric, what=what, models=models.reinforce(probs, actions, weights),
                         explain=explain, **TOL,
                         see="compare with central_difference of the loss -np.mean(w * log softmax(z)[rows, a]).")
    evidence.conclude()


@item(2, cell=CELL, title="gives the exact gradient of a softmax bandit")
def test_bandit_exact(guarded, exact, models, explain, rng):
    """Rows: every arm once, weighted by n pi(a) Q(a); minus the sum over rows is then the
    expected score-function gradient, which must equal pi(a) (Q(a) - J)."""
    evidence = Evidence()
    for k in (4, 2, 5):
        theta, q = rng.normal(0.0, 1.0, k), rng.normal(1.0, 2.0, k)
        pi = exact.softmax(theta)
        probs, actions, weights = np.tile(pi, (k, 1)), np.arange(k), k * pi * q
        what = (f"minus the sum over rows of reinforce_logit_grad on a {k}-armed bandit, every arm "
                "weighted by its probability and value")
        actual = as_array(guarded.call("reinforce_logit_grad", probs, actions, weights),
                          what="reinforce_logit_grad", shape=(k, k))
        evidence.compare(-actual.sum(axis=0), exact.bandit_gradient(theta, q), what=what,
                         models=transformed(models.reinforce(probs, actions, weights), lambda g: -g.sum(axis=0)),
                         explain=explain, **TOL,
                         see="for J = sum_a pi(a) Q(a) the exact gradient is pi(a) (Q(a) - J); "
                             "the visible bandit check does this with three arms.")
    evidence.conclude()


@item(2, cell=CELL, title="averaged over every trajectory of a two-state MDP, gives the exact policy gradient")
def test_mdp_enumeration(guarded, exact, models, explain, rng):
    evidence = Evidence()
    for horizon, gamma in ((3, 0.9), (4, 1.0)):
        mdp = exact.example_mdp(horizon, gamma)
        theta = rng.normal(0.0, 1.0, (2, 2))
        logits, actions, states, weights = exact.enumeration_batch(mdp, theta)
        probs = exact.softmax(logits)
        n = len(actions)
        what = (f"minus reinforce_logit_grad summed by state over all {n} steps of every trajectory "
                f"(horizon {horizon}, gamma {gamma}), each weighted by its probability")
        actual = as_array(guarded.call("reinforce_logit_grad", probs, actions, weights),
                          what="reinforce_logit_grad", shape=(n, 2))
        by_state = lambda g: -exact.sum_by_state(g, states)  # noqa: E731
        evidence.compare(by_state(actual), mdp.exact_gradient(theta), what=what,
                         models=transformed(models.reinforce(probs, actions, weights), by_state),
                         explain=explain, rtol=1e-6, atol=1e-9,
                         see="on a batch where every trajectory appears with weight n P(tau) gamma^t G_t, "
                             "minus your gradient is the exact policy gradient.")
    evidence.conclude()
