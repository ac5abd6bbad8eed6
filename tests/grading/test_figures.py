"""rlcourse.grading.figures: what the feedback modules collect survives the JSON ledger, a damaged
part costs only its own figure, and only a hang or a crash stops the asking."""
import json
import math

import numpy as np
import pytest

from rlcourse.grading.figures import (clipped_objective_figure, draw_present, finite_array, plain,
                                      sign_key, stored_series, unless_the_worker_is_lost)
from rlcourse.worker.errors import WorkerError


class TestPlainAndBack:
    def test_nan_and_infinities_become_none_and_come_back_as_nan(self):
        stored = json.loads(json.dumps(plain(np.array([1.5, np.nan, np.inf, -2.0]))))
        assert stored == [1.5, None, None, -2.0]
        back = stored_series(stored)
        assert back[0] == 1.5 and back[3] == -2.0 and np.isnan(back[1:3]).all()

    def test_a_matrix_keeps_its_shape_through_the_ledger(self):
        matrix = np.arange(6, dtype=np.float32).reshape(3, 2) / 3
        back = stored_series(json.loads(json.dumps(plain(matrix))))
        assert back.shape == (3, 2)
        np.testing.assert_array_equal(back, matrix.astype(np.float64))

    def test_a_scalar_and_booleans(self):
        assert plain(np.float32(0.25)) == 0.25
        assert plain(np.float64(np.nan)) is None
        assert plain(np.array([True, False])) == [True, False]

    def test_finite_array_refuses_what_is_not_numbers(self):
        assert finite_array("ten") is None
        assert finite_array([[1, 2], [3]]) is None
        assert math.isnan(finite_array([np.inf])[0])


def test_sign_keys_are_strings_for_json():
    assert (sign_key(1.0), sign_key(-1.0)) == ("positive", "negative")


class TestUnlessTheWorkerIsLost:
    @pytest.mark.parametrize("kind", ["timeout", "worker_crashed"])
    def test_a_hang_or_a_crash_stops_the_asking(self, kind):
        with pytest.raises(WorkerError):
            unless_the_worker_is_lost(WorkerError(kind, "gone"))

    @pytest.mark.parametrize("error", [WorkerError("raised", "ValueError in the student's code"),
                                       ValueError("a bad shape")])
    def test_any_other_failure_leaves_only_that_panel_out(self, error):
        assert unless_the_worker_is_lost(error) is None


class TestDrawPresent:
    def test_absent_damaged_or_malformed_parts_leave_only_their_figure_out(self):
        def fine(data, **options):
            return ("fine", options)

        def damaged(data, **options):
            return data["missing key"]

        drawn = draw_present({"a": {"x": 1}, "b": {"x": 1}, "c": [1, 2]},
                             (("a", fine), ("b", damaged), ("c", fine), ("d", fine)), sealed={"x"})
        assert drawn == [("fine", {"sealed": {"x"}})]
        assert draw_present(None, (("a", fine),)) == []


class TestClippedObjectiveFigure:
    RATIOS = np.linspace(0.5, 1.5, 11)

    def data(self, eps, *, positive=True):
        curves = {sign_key(a): plain(np.minimum(self.RATIOS * a, np.clip(self.RATIOS, 1 - eps, 1 + eps) * a))
                  for a in (1.0, -1.0) if positive or a < 0}
        return {"ratios": plain(self.RATIOS), "student": curves}

    def labels(self, figure):
        return [{line.get_label() for line in ax.get_lines()} | {patch.get_label() for patch in ax.patches}
                for ax in figure.axes]

    def test_the_band_is_drawn_at_the_eps_given_and_the_right_curve_only_when_shown(self):
        shown = clipped_objective_figure(self.data(0.1), eps=0.1, show_right=True, band_label="band 0.1",
                                         student_label="yours", missing="none", ylabel="objective")
        held = clipped_objective_figure(self.data(0.1), eps=0.1, show_right=False, band_label="band 0.1",
                                        student_label="yours", missing="none", ylabel="objective")
        assert all({"band 0.1", "yours", "correct: min(rA, clip(r)A)"} <= labels for labels in self.labels(shown))
        assert all("correct: min(rA, clip(r)A)" not in labels for labels in self.labels(held))
        band = shown.axes[0].patches[0].get_extents()
        assert band.width > 0

    def test_a_sign_without_values_says_so_and_a_short_curve_is_refused(self):
        figure = clipped_objective_figure(self.data(0.2, positive=False), eps=0.2, show_right=True,
                                          band_label="b", student_label="yours", missing="no values",
                                          ylabel="objective")
        assert [text.get_text() for text in figure.axes[0].texts] == ["no values"]
        short = self.data(0.2)
        short["student"]["positive"] = short["student"]["positive"][:-1]
        with pytest.raises(ValueError):
            clipped_objective_figure(short, eps=0.2, show_right=True, band_label="b", student_label="yours",
                                     missing="none", ylabel="objective")
