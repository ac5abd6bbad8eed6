"""value_targets: raw advantages plus values."""
from rlcourse.grading.rubric import Evidence, as_array, item


@item(1, cell="test_compute_gae", title="value targets from the raw advantages")
def test_raw(student, models, explain, rng):
    evidence = Evidence()
    for shape in ((6, 4), (10, 1)):
        advantages, values = rng.normal(2.0, 3.0, shape), rng.normal(0.0, 1.0, shape)
        what = f"value_targets on arrays of shape {shape}"
        actual = as_array(student.call("value_targets", advantages, values), what=what, shape=shape)
        evidence.compare(actual, advantages + values, what=what,
                         models=models.value_targets(advantages, values), explain=explain,
                         rtol=1e-9, atol=1e-12,
                         see="value_targets(torch.full((2, 1), 5.0), torch.zeros(2, 1)) should be all 5.")
    evidence.conclude()
