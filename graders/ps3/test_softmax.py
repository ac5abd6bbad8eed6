"""softmax: probabilities along the last axis, finite for logits of any size."""
import numpy as np

from rlcourse.grading.rubric import Evidence, Failure, as_array, fmt, item

CELL = "test_softmax"


@item(1, cell=CELL, title="probabilities along the last axis, for any batch shape")
def test_random_shapes(student, exact, models, explain, rng):
    evidence = Evidence()
    for shape in [(3, 4), (2, 3, 5), (6,), (4, 4)]:
        logits = rng.normal(0.0, 2.0, size=shape)
        what = f"softmax on logits of shape {shape}"
        actual = as_array(student.call("softmax", logits), what=what, shape=shape)
        evidence.compare(actual, exact.softmax(logits), what=what, models=models.softmax(logits),
                         explain=explain, rtol=1e-7, atol=1e-10,
                         see="print(softmax(x).sum(axis=-1)) for an x of shape [3, 4]: every entry should be 1.")
    evidence.conclude()


@item(1, cell=CELL, title="stable for logits of +-1000")
def test_extreme_logits(student, exact, models, explain):
    logits = np.array([[1000.0, 999.0, 997.5], [-1000.0, -1001.0, -1000.0],
                       [0.0, 800.0, -800.0], [3.0e4, 3.0e4, 3.0e4]])
    what = "softmax on rows such as [1000, 999, 997.5] and [-1000, -1001, -1000]"
    actual = as_array(student.call("softmax", logits), what=what, shape=logits.shape, allow_nan=True)
    bad = ~np.isfinite(actual)
    if np.any(bad):
        naive_bad = ~np.isfinite(models.softmax_naive(logits))
        row = int(np.argmax(bad.any(axis=-1)))
        tag = "softmax_overflow" if np.array_equal(bad, naive_bad) else "bad_output"
        raise Failure(tag, did=f"softmax gave {fmt(actual[row])} for the logits {fmt(logits[row])}",
                      should=f"it should be {fmt(exact.softmax(logits)[row])}: probabilities do not "
                             "change when a constant is subtracted from every logit of a row",
                      see="print np.exp(1000.0): it is inf, and inf / inf is nan; softmax of the row "
                          "[1000, 999] should be [0.731, 0.269], as for [1, 0].",
                      fix="subtract each row's maximum from its logits before exponentiating.")
    evidence = Evidence()
    evidence.compare(actual, exact.softmax(logits), what=what, models=models.softmax(logits),
                     explain=explain, rtol=1e-7, atol=1e-10,
                     see="each row should sum to 1 whatever the size of its logits.")
    evidence.conclude()
