"""The grader-side vocabulary: values checked, misconceptions named only on consistent evidence."""
import numpy as np
import pytest

from rlcourse.grading.rubric import (BadOutput, Evidence, Failure, Field, StudentDataError, as_array,
                                     as_records, expect_close, on_student_data)


class TestAsArray:
    def test_a_scalar_of_shape_one_is_accepted_as_a_scalar(self):
        assert as_array(np.array([2.0]), what="loss", shape=()).shape == ()

    @pytest.mark.parametrize("value, reason", [
        (np.array([1.0, np.nan, 2.0]), "NaN or infinite"), (np.ones((2, 3)), "shape (2, 3)"),
        ("text", "numeric array"), ({"a": 1}, "numeric array"), ([np.ones(2), np.ones(2)], "sequence of 2 arrays")])
    def test_unusable_values_are_bad_output_with_a_reason(self, value, reason):
        with pytest.raises(BadOutput, match=reason.replace("(", r"\(").replace(")", r"\)")) as error:
            as_array(value, what="f", shape=(3,))
        assert error.value.tag == "bad_output"


class TestEvidence:
    def test_matching_values_pass(self):
        expect_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9]), what="f")

    def test_a_model_that_matches_every_case_names_the_failure(self):
        evidence = Evidence()
        for x in (1.0, 2.0, 3.0):
            evidence.compare(-x, x, what=f"f({x})", models={"loss_sign": -x, "doubled": 2 * x},
                             explain={"loss_sign": "the opposite sign"})
        with pytest.raises(Failure) as error:
            evidence.conclude()
        assert error.value.tag == "loss_sign"
        assert "f(1.0) gave -1, which is what the opposite sign gives" in error.value.message
        assert "It should be 1" in error.value.message

    def test_a_coincidence_in_one_case_names_nothing(self):
        """An all-zero answer matches a model that happens to be zero on one input only."""
        evidence = Evidence()
        evidence.compare(0.0, 1.0, what="case 1", models={"clip_without_min": 0.0})
        evidence.compare(0.0, 2.0, what="case 2", models={"clip_without_min": 0.5})
        with pytest.raises(Failure) as error:
            evidence.conclude()
        assert error.value.tag == "wrong_value"

    def test_a_model_equal_to_the_truth_is_never_the_diagnosis(self):
        evidence = Evidence()
        evidence.compare(5.0, 1.0, what="f", models={"harmless": 1.0, "real_bug": 5.0})
        with pytest.raises(Failure) as error:
            evidence.conclude()
        assert error.value.tag == "real_bug"

    def test_one_tag_may_have_several_forms(self):
        evidence = Evidence()
        evidence.compare(7.0, 1.0, what="f", models=[("off_by_one", 0.0), ("off_by_one", 7.0)])
        with pytest.raises(Failure) as error:
            evidence.conclude()
        assert error.value.tag == "off_by_one"

    def test_the_message_keeps_identifiers_as_written(self):
        failure = Failure("wrong_value", did="policy_loss(theta) gave 1", should="it should be 2",
                          see="print policy_loss(theta)")
        assert failure.message == "policy_loss(theta) gave 1. It should be 2. To see it: Print policy_loss(theta)."

    def test_the_failing_case_keeps_its_remedy_out_of_the_message(self):
        """The case an item fails on gives the Failure its `see` (in the message) and its `fix`
        (apart, for after the due date); a case that passed gives neither."""
        evidence = Evidence()
        evidence.compare(1.0, 1.0, what="f(0)", see="print f(0)", fix="add one: x + 1")
        evidence.compare(3.0, 2.0, what="f(1)", see="print f(1) beside 1 + 1", fix="add two: x + 2")
        with pytest.raises(Failure) as error:
            evidence.conclude()
        assert error.value.fix == "Add two: x + 2."
        assert "To see it: Print f(1) beside 1 + 1." in error.value.message
        assert "x + 2" not in error.value.message and "x + 1" not in error.value.message

    def test_expect_close_passes_see_and_fix_on(self):
        with pytest.raises(Failure) as error:
            expect_close(0.5, 1.0, what="ratio", see="print the ratio of one step",
                         fix="compute it as exp(new - old)")
        assert error.value.fix == "Compute it as exp(new - old)."
        assert error.value.message == "Ratio gave 0.5. It should be 1. To see it: Print the ratio of one step."


def test_lazy_models_cost_nothing_when_the_item_passes():
    calls = []

    def models():
        calls.append(1)
        return {"loss_sign": -1.0}

    evidence = Evidence()
    evidence.compare(1.0, 1.0, what="x", models=models)
    evidence.conclude()
    assert calls == []


def test_lazy_models_diagnose_a_failure_as_eager_ones_do():
    from functools import partial

    from rlcourse.grading.rubric import negated

    def gradients(scale):
        return {"loss_sign": scale * np.array([1.0, 2.0])}

    for models in (partial(negated, gradients, -1.0), negated(gradients, -1.0)):
        evidence = Evidence()
        evidence.compare(np.array([1.0, 2.0]), np.array([-1.0, -2.0]), what="minus the gradient",
                         models=models)
        with pytest.raises(Failure) as failed:
            evidence.conclude()
        assert failed.value.tag == "loss_sign"


class TestRecords:
    FIELDS = {"observation": Field("integer", 0, 3, "the integer cells 0 to 3"),
              "action": Field("integer", 0, 1), "old_logp": Field("real", high=0.0),
              "active": Field("flag")}

    def valid(self, shape=(8, 4)):
        return {"observation": np.zeros(shape, dtype=np.int32), "action": np.ones(shape, dtype=np.int64),
                "old_logp": np.full(shape, -0.7, dtype=np.float32), "active": np.ones(shape, dtype=bool),
                "extra": "ignored"}

    def test_records_of_one_shape_keep_their_dtypes(self):
        records = as_records(self.valid(), what="b", fields=self.FIELDS)
        assert records["observation"].dtype == np.int32 and set(records) == set(self.FIELDS)

    @pytest.mark.parametrize("shapes", [((6000, 1), (1, 6000)), ((8, 4), (8, 5)), ((32,), (32,)),
                                        ((4096, 4096), (4096, 4096))])
    def test_arrays_that_would_broadcast_or_are_too_big_are_bad_output(self, shapes):
        fields = {"observation": Field("integer"), "action": Field("integer")}
        value = {key: np.zeros(shape, dtype=np.int8) for key, shape in zip(fields, shapes)}
        with pytest.raises(BadOutput, match="same shape"):
            as_records(value, what="b", fields=fields)

    def test_a_missing_key_is_bad_output(self):
        with pytest.raises(BadOutput, match="records dict"):
            as_records({"observation": np.zeros((2, 2))}, what="b", fields=self.FIELDS)

    @pytest.mark.parametrize("key, value, said", [
        ("observation", lambda a: a + 0.5, "float64 values"),   # issue 29: the oracle indexed with it
        ("observation", lambda a: a - 7, "values from -7"),
        ("observation", lambda a: a + 4, "values from 4"),
        ("action", lambda a: a * 2, "values from 2"),
        ("old_logp", lambda a: np.abs(a), "values from 0.7"),
        ("old_logp", lambda a: np.where(a < 0, np.nan, a), "NaN"),
        ("active", lambda a: a.astype(np.int8), "int8 values"),
        ("observation", lambda a: a.astype(str), "<U"),
        ("action", lambda a: [[0, "x"] * 2] * 8, "<U"),
        ("action", lambda a: [[0], [1, 2]], "list"),
    ])
    def test_values_outside_the_contract_are_bad_output_naming_the_field(self, key, value, said):
        records = self.valid()
        records[key] = value(records[key])
        with pytest.raises(BadOutput, match=f"b\\['{key}'\\] (holds|is).*{said}") as failed:
            as_records(records, what="b", fields=self.FIELDS)
        assert failed.value.tag == "bad_output"


class TestOnStudentData:
    def test_an_exception_on_the_students_data_costs_the_item_as_bad_output(self):
        with pytest.raises(StudentDataError) as failed:
            with on_student_data("b"):
                np.zeros(3)[np.array([0.5])]
        assert failed.value.tag == "bad_output" and "could not use b" in failed.value.message
        assert isinstance(failed.value.cause, IndexError)

    def test_failures_and_worker_errors_pass_through_unchanged(self):
        from rlcourse.worker.errors import WorkerError

        for error in (Failure("wrong_value", did="x", should="y"), WorkerError("timeout", "slow")):
            with pytest.raises(type(error)) as raised:
                with on_student_data("b"):
                    raise error
            assert raised.value is error
