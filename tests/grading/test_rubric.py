"""The grader-side vocabulary: values checked, misconceptions named only on consistent evidence."""
import numpy as np
import pytest

from rlcourse.grading.rubric import (BadOutput, Evidence, Failure, Field, StudentDataError, as_array,
                                     as_records, digits_for, expect_close, fmt, on_student_data)


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


class TestRemediesPerTag:
    """A hint written for the usual mistake can point the wrong way for a named one (issue 30:
    the typed-in defaults were told their gradient had Python floats in it)."""

    def test_a_named_tag_gets_its_own_see_and_fix(self):
        with pytest.raises(Failure) as error:
            expect_close(2.0, 1.0, what="f", models={"typed_defaults": 2.0},
                         see={"*": "look at the floats", "typed_defaults": "print PARAMS"},
                         fix={"*": "use jax.numpy", "typed_defaults": "read PARAMS['clip']"})
        assert error.value.tag == "typed_defaults"
        assert "To see it: Print PARAMS." in error.value.message and "floats" not in error.value.message
        assert error.value.fix == "Read PARAMS['clip']."

    def test_any_other_diagnosis_gets_the_star_or_nothing(self):
        with pytest.raises(Failure) as error:
            expect_close(3.0, 1.0, what="f", models={"typed_defaults": 2.0},
                         see={"*": "look at the floats", "typed_defaults": "print PARAMS"},
                         fix={"typed_defaults": "read PARAMS['clip']"})
        assert error.value.tag == "wrong_value"
        assert "To see it: Look at the floats." in error.value.message and error.value.fix == ""


class TestShortenedVectors:
    def test_two_long_vectors_show_where_they_first_differ(self):
        """Both used to show their first six values, the same six numbers twice, when the two
        differ only later (issue 30)."""
        expected = np.arange(36, dtype=np.float64) / 7
        actual = expected.copy()
        actual[20] += 1.0
        with pytest.raises(Failure) as error:
            expect_close(actual, expected, what="gae")
        message = error.value.message
        gave, should = message.split("It should be")
        for part, value in ((gave, actual), (should, expected)):
            assert f"{value[18]:.6g}, {value[19]:.6g}, {value[20]:.6g}" in part
            assert f"{value[0]:.6g}," not in part
            assert "the first that differs is [20], the third shown" in part
        assert f"{actual[20]:.6g}" in gave and f"{expected[20]:.6g}" in should

    def test_a_difference_at_the_start_or_the_end_stays_in_the_window(self):
        values = np.zeros(10)
        assert fmt(values + np.eye(10)[0], against=values) == (
            "[1, 0, 0, 0, 0, 0, …] (10 values, from [0] on, the first that differs)")
        assert fmt(values + np.eye(10)[9], against=values).startswith("[…, 0, 0, 0, 0, 0, 1] (10 values;")

    def test_a_matrix_names_the_entry_by_row_and_column(self):
        expected = np.zeros((4, 3))
        actual = expected.copy()
        actual[2, 1] = 5.0
        assert "the first that differs is [2, 1]" in fmt(actual, against=expected)

    def test_short_vectors_and_scalars_are_shown_whole(self):
        assert fmt(np.array([1.5, 2.0]), against=np.zeros(2)) == "[1.5, 2]"
        assert fmt(0.123456789) == "0.123457"

    def test_numbers_are_printed_at_the_precision_the_check_uses(self):
        """Six digits show two values a check to rtol 1e-9 tells apart as one number."""
        assert digits_for(1e-4, 1e-5, np.ones(3)) == 6
        assert digits_for(1e-9, 1e-10, np.ones(3)) == 10
        with pytest.raises(Failure) as error:
            expect_close(1.0000001, 1.0, what="x", rtol=1e-9, atol=1e-10)
        assert "gave 1.0000001" in error.value.message and "should be 1." in error.value.message


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
