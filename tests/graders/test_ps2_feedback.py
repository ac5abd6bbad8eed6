"""ps2's feedback figures (graders/ps2/feedback.py): their data collected from real workers for
the reference and for bank entries with the bug each figure shows, what is drawn from it, and what
the page holds back before the due date."""
import json
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.worker.errors import WorkerError

from figure_data import collected, graded_page, leaked_source_lines

ROOT = Path(__file__).resolve().parents[2]
feedback = load_course_module(ROOT / "graders" / "ps2" / "feedback.py", "rlcourse_graders.ps2.feedback")
graders = load_course_module(ROOT / "graders" / "ps2" / "test_gae.py", "ps2_gae_items_for_figures")
exact = load_solution(ROOT, "ps2", "exact")
ENTRIES = ["reference", "buggy_trace_not_cut_at_boundary", "buggy_clip_without_min"]
OWN_EPS = {"eps": 0.1}
"""A clip other than the notebook's 0.2, as a student given their own would have."""


@pytest.fixture(scope="module")
def artifacts(course, tmp_path_factory):
    """{entry: [artifacts at the defaults, artifacts at OWN_EPS]}."""
    return collected(course.assignment("ps2"), ENTRIES, tmp_path_factory.mktemp("ps2-figures"),
                     params=(None, OWN_EPS))


def exact_gae(data):
    arrays = {key: np.array(data[key], dtype=np.float64 if key not in ("terminated", "truncated") else bool)
              for key in ("rewards", "values", "next_values", "terminated", "truncated")}
    return exact.gae_by_definition(**arrays, gamma=data["gamma"], lam=data["lam"])


def lines_of(figure):
    return [{line.get_label(): line for line in ax.get_lines()} for ax in figure.axes]


def drawn(data, title_start, **sealed):
    (title, figure), = [f for f in feedback.figures(data, **sealed) if f[0].startswith(title_start)]
    return title, figure


class TestTheBuffer:
    def test_it_is_one_a_rollout_makes_with_both_ends_in_each_column(self):
        buffer = feedback.figure_buffer()
        assert graders.rollout_violations(buffer) == []
        for column in range(buffer["rewards"].shape[1]):
            assert buffer["terminated"][:, column].any() and buffer["truncated"][:, column].any()
            assert not (buffer["terminated"] | buffer["truncated"])[-1, column]

    def test_it_is_not_the_concept_checks_episode(self):
        """CONCEPT_GAE_TRUNCATED and _TERMINATED are asked at gamma 0.9, lambda 0.5."""
        buffer = feedback.figure_buffer()
        assert (buffer["gamma"], buffer["lam"]) != (0.9, 0.5)


@pytest.mark.slow
class TestCollectedFromWorkers:
    def test_artifacts_are_plain_json_with_only_the_inputs_and_the_students_outputs(self, artifacts):
        for runs in artifacts.values():
            for data in runs:
                assert json.loads(json.dumps(data, allow_nan=False)) == data
                assert set(data) == {"gae", "surrogate"}
                assert set(data["gae"]) == {"rewards", "values", "next_values", "terminated",
                                            "truncated", "gamma", "lam", "student"}
                assert set(data["surrogate"]) == {"eps", "ratios", "student"}

    def test_the_reference_draws_on_the_exact_advantages(self, artifacts):
        data = artifacts["reference"][0]["gae"]
        np.testing.assert_allclose(data["student"], exact_gae(data), rtol=1e-9, atol=1e-12)

    def test_a_trace_run_past_an_end_shows_before_each_end_and_nowhere_after_the_last(self, artifacts):
        """The bug's advantages leave the exact ones on the steps of each episode that ends
        inside the buffer, and agree with them on each column's last, unended episode."""
        data = artifacts["buggy_trace_not_cut_at_boundary"][0]["gae"]
        right, theirs = exact_gae(data), np.array(data["student"])
        ended = np.array(data["terminated"]) | np.array(data["truncated"])
        for column in range(right.shape[1]):
            last_end = np.flatnonzero(ended[:, column]).max()
            assert not np.isclose(theirs[last_end - 1, column], right[last_end - 1, column])
            np.testing.assert_allclose(theirs[last_end + 1:, column], right[last_end + 1:, column])
        # What the bug gets wrong is not stored: the page's exact curve is drawn from the inputs.
        stored = {value for row in data["student"] for value in row}
        assert not any(np.isclose(list(stored), value).any()
                       for value in right[~np.isclose(theirs, right)])

    def test_the_gae_figure_draws_the_students_values_against_the_same_exact_curve(self, artifacts):
        exact_lines = []
        for name in ("reference", "buggy_trace_not_cut_at_boundary"):
            data = artifacts[name][0]
            _, figure = drawn(data, "Your GAE")
            panels = lines_of(figure)
            assert len(panels) == 2
            for column, lines in enumerate(panels):
                np.testing.assert_allclose(lines["your compute_gae"].get_ydata(),
                                           np.array(data["gae"]["student"])[:, column])
            exact_lines.append(np.concatenate([line.get_ydata() for line in figure.axes[0].get_lines()
                                               if line.get_color() == "#2b6cb0"]))
            boundaries = sorted(round(line.get_xdata()[0] - 0.5) for line in figure.axes[0].get_lines()
                                if line.get_label().endswith("after this step"))
            assert boundaries == sorted(feedback.ENDS[0])
        np.testing.assert_array_equal(*exact_lines)

    def test_the_reference_surrogate_is_the_clipped_objective_at_the_eps_it_was_given(self, artifacts):
        for data, eps in zip(artifacts["reference"], (feedback.DEFAULT_EPS, OWN_EPS["eps"])):
            surrogate = data["surrogate"]
            assert surrogate["eps"] == eps
            ratios = np.array(surrogate["ratios"])
            for key, advantage in (("positive", 1.0), ("negative", -1.0)):
                np.testing.assert_allclose(surrogate["student"][key], np.minimum(
                    ratios * advantage, np.clip(ratios, 1 - eps, 1 + eps) * advantage))

    def test_clip_without_the_min_is_flat_where_the_objective_is_not(self, artifacts):
        """clip(r)A alone: for A > 0 below the band and for A < 0 above it."""
        surrogate = artifacts["buggy_clip_without_min"][0]["surrogate"]
        eps, ratios = surrogate["eps"], np.array(surrogate["ratios"])
        reference = artifacts["reference"][0]["surrogate"]["student"]
        for key, wrong_side in (("positive", ratios < 1 - eps), ("negative", ratios > 1 + eps)):
            theirs = np.array(surrogate["student"][key])
            assert not np.isclose(theirs, reference[key])[wrong_side].any()
            np.testing.assert_allclose(theirs[~wrong_side], np.array(reference[key])[~wrong_side])

    def test_the_band_is_the_students_own_eps(self, artifacts):
        data = artifacts["buggy_clip_without_min"][1]
        _, figure = drawn(data, "Your clipped surrogate")
        for ax in figure.axes:
            band, = ax.patches
            x = ax.transData.inverted().transform(band.get_verts())[:, 0]
            assert (x.min(), x.max()) == pytest.approx((0.9, 1.1))
        labels = [text.get_text() for legend in figure.legends for text in legend.get_texts()]
        assert "clipping band 1 ± 0.1" in labels and not any("0.2" in label for label in labels)


@pytest.mark.slow
def test_a_graded_page_has_both_figures_and_no_grader_or_solution_line(course, tmp_path):
    """The pipeline collects the figures' data after the graders, and the page they are drawn on
    quotes no line of graders/ps2 or solutions/ps2 (the figure module's own included)."""
    ps2 = course.assignment("ps2")
    report, page, path = graded_page(ps2, "buggy_trace_not_cut_at_boundary", tmp_path)
    assert set(report.artifacts) == {"gae", "surrogate"}
    assert {item.id for item in report.failed()} == {"gae.exact_advantage", "gae.buffers"}
    assert page.count('src="data:image/png;base64,') == 2
    assert len(list((ROOT / "graders" / "ps2").glob("*.py"))) >= 10
    assert leaked_source_lines(page, ps2, path) == []


class TestTheCorrectSurrogateWaitsForTheDueDate:
    """The right curve answers three sealed concept checks; the student's own curve does not."""

    def synthetic(self):
        ratios = feedback.RATIOS
        return {"surrogate": {"eps": 0.2, "ratios": ratios.tolist(), "student": {
            "positive": np.clip(ratios, 0.8, 1.2).tolist(), "negative": (-np.clip(ratios, 0.8, 1.2)).tolist()}}}

    def test_after_the_due_date_it_is_drawn(self):
        title, figure = drawn(self.synthetic(), "Your clipped surrogate", sealed=frozenset())
        assert title.endswith("against the correct one")
        for lines in lines_of(figure):
            assert {"correct: min(rA, clip(r)A)", "your clipped_surrogate"} <= set(lines)

    @pytest.mark.parametrize("item", sorted(feedback.SURROGATE_ANSWERS))
    def test_while_an_item_it_answers_is_sealed_only_the_students_curve_is(self, item):
        title, figure = drawn(self.synthetic(), "Your clipped surrogate",
                              sealed=frozenset({item, "predictions.no_clip"}))
        assert "after the due date" in title
        for lines in lines_of(figure):
            assert set(lines) == {"your clipped_surrogate"}

    def test_other_sealed_items_leave_it_drawn(self):
        title, _ = drawn(self.synthetic(), "Your clipped surrogate",
                         sealed=frozenset({"concepts.gradient_steps"}))
        assert title.endswith("against the correct one")

    def test_the_concept_items_it_answers_exist(self, course):
        """SURROGATE_ANSWERS names real items of test_concepts.py (a renamed item would
        otherwise leave the curve on the page before the due date)."""
        concepts = load_course_module(ROOT / "graders" / "ps2" / "test_concepts.py", "ps2_concepts_for_figures")
        names = {name.removeprefix("test_") for name in vars(concepts) if name.startswith("test_")}
        assert {item.removeprefix("concepts.") for item in feedback.SURROGATE_ANSWERS} <= names


class FailingStudent:
    """A compute_gae that raises, and a clipped_surrogate that fails as `failure` says for the
    advantages of sign `failing`, and is correct for the other sign."""

    def __init__(self, failure, failing=-1.0):
        self.failure, self.failing, self.calls = failure, failing, []

    def call(self, function, *args, **kwargs):
        self.calls.append(function)
        if function == "compute_gae":
            raise WorkerError("raised", "calling compute_gae raised NotImplementedError")
        ratio, advantages = args
        if np.sign(advantages[0]) == self.failing:
            raise WorkerError(self.failure, f"calling clipped_surrogate: {self.failure}")
        return exact.surrogate(ratio, advantages, kwargs["eps"])


class TestFailures:
    def test_a_sign_that_raises_leaves_its_panel_empty_and_the_other_drawn(self):
        student = FailingStudent("raised")
        artifacts = feedback.collect(student, {})
        assert set(artifacts) == {"surrogate"} and set(artifacts["surrogate"]["student"]) == {"positive"}
        assert student.calls == ["compute_gae", "clipped_surrogate", "clipped_surrogate"]
        _, figure = drawn(artifacts, "Your clipped surrogate", sealed=frozenset())
        positive, negative = lines_of(figure)
        assert "your clipped_surrogate" in positive and "your clipped_surrogate" not in negative
        assert [text.get_text() for text in figure.axes[1].texts] == ["your clipped_surrogate gave no value here"]

    @pytest.mark.parametrize("kind", ["timeout", "worker_crashed"])
    def test_a_hang_or_a_crash_is_not_asked_again(self, kind):
        student = FailingStudent(kind, failing=1.0)  # the first sign asked
        assert feedback.collect(student, {}) == {}
        assert student.calls == ["compute_gae", "clipped_surrogate"]


def test_figures_tolerate_malformed_artifacts():
    assert feedback.figures({}) == []
    assert feedback.figures({"gae": {"rewards": "x"}, "surrogate": {"eps": 7}}) == []
    assert feedback.figures(None) == []
