"""ps3's feedback figures (graders/ps3/feedback.py): their data collected from real workers for
the reference and for bank entries with the bugs the figures show, and what is drawn from it."""
import json
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution
from rlcourse.worker.errors import WorkerError

from figure_data import collected, graded_page, leaked_source_lines

ROOT = Path(__file__).resolve().parents[2]
feedback = load_course_module(ROOT / "graders" / "ps3" / "feedback.py", "rlcourse_graders.ps3.feedback")
gae_items = load_course_module(ROOT / "graders" / "ps3" / "test_gae.py", "ps3_gae_items_for_figures")
grad_items = load_course_module(ROOT / "graders" / "ps3" / "test_reinforce_logit_grad.py",
                                "ps3_grad_items_for_figures")
exact = load_solution(ROOT, "ps3", "exact")
ENTRIES = ["reference", "buggy_returns_discount_from_start", "buggy_gae_trace_runs_past_truncation",
           "buggy_grad_sign", "buggy_ppo_mask_wrong_side"]


@pytest.fixture(scope="module")
def artifacts(course, tmp_path_factory):
    runs = collected(course.assignment("ps3"), ENTRIES, tmp_path_factory.mktemp("ps3-figures"))
    return {name: data for name, (data,) in runs.items()}


def lines_of(ax):
    return {line.get_label(): line for line in ax.get_lines()}


def drawn(data, title_start):
    (_, figure), = [f for f in feedback.figures(data) if f[0].startswith(title_start)]
    return figure


def buffer_of(data):
    return [np.array(data["buffer"][key], dtype=bool if key in ("terminated", "truncated") else np.float64)
            for key in feedback.BUFFER_KEYS]


class TestTheInputs:
    def test_the_buffer_is_one_a_rollout_makes_with_both_ends(self):
        inputs = feedback.figure_inputs()
        buffer = [inputs["buffer"][key] for key in feedback.BUFFER_KEYS]
        assert gae_items.rollout_violations(*buffer, feedback.GAMMA, feedback.LAM) == []
        assert buffer[3].any() and buffer[4].any() and not (buffer[3] | buffer[4])[-1]

    def test_the_batches_are_ones_a_policy_makes_with_ratios_on_both_sides_of_the_band(self):
        inputs = feedback.figure_inputs()
        probs = exact.softmax(inputs["logits"])
        assert grad_items.batch_violations(probs, inputs["actions"], inputs["weights"]) == []
        assert grad_items.batch_violations(probs, inputs["actions"], inputs["advantages"],
                                           old_probs=inputs["old_probs"]) == []
        rows = np.arange(feedback.BATCH_ROWS)
        ratios = probs[rows, inputs["actions"]] / inputs["old_probs"][rows, inputs["actions"]]
        np.testing.assert_allclose(ratios, feedback.PPO_RATIOS)
        flat = exact.ppo_logit_grad(inputs["logits"], inputs["old_probs"], inputs["actions"],
                                    inputs["advantages"], feedback.EPS)
        assert 0 < (np.abs(flat).sum(axis=1) == 0).sum() < feedback.BATCH_ROWS


@pytest.mark.slow
class TestCollectedFromWorkers:
    def test_artifacts_are_plain_json_with_only_the_inputs_and_the_students_outputs(self, artifacts):
        for data in artifacts.values():
            assert json.loads(json.dumps(data, allow_nan=False)) == data
            assert set(data["returns"]) == {"episode", "gamma", "student_returns", "buffer", "lam",
                                            "buffer_gamma", "student_gae"}
            assert set(data["gradients"]) == {"logits", "weights", "old_probs", "advantages", "actions",
                                              "eps", "student_reinforce", "student_ppo"}

    def test_the_reference_draws_on_the_right_values(self, artifacts):
        returns = artifacts["reference"]["returns"]
        np.testing.assert_allclose(returns["student_returns"],
                                   exact.reward_to_go(returns["episode"], returns["gamma"]))
        np.testing.assert_allclose(returns["student_gae"], exact.gae_by_definition(
            *buffer_of(returns), returns["buffer_gamma"], returns["lam"]))
        figure = drawn(artifacts["reference"], "The gradient check")
        for ax in figure.axes:
            line = lines_of(ax)["one entry of your gradient"]
            np.testing.assert_allclose(line.get_ydata(), line.get_xdata(), atol=1e-8)

    def test_returns_discounted_from_the_start_leave_the_curve_after_the_first_step(self, artifacts):
        returns = artifacts["buggy_returns_discount_from_start"]["returns"]
        figure = drawn(artifacts["buggy_returns_discount_from_start"], "Your returns")
        lines = lines_of(figure.axes[0])
        right, theirs = lines["reward-to-go G_t"].get_ydata(), lines["yours"].get_ydata()
        np.testing.assert_allclose(theirs, returns["student_returns"])
        assert np.isclose(theirs[0], right[0]) and not np.isclose(theirs[1:], right[1:]).any()
        np.testing.assert_allclose(right, lines_of(drawn(artifacts["reference"], "Your returns")
                                                   .axes[0])["reward-to-go G_t"].get_ydata())

    def test_a_trace_run_past_a_truncation_shows_just_before_it(self, artifacts):
        returns = artifacts["buggy_gae_trace_runs_past_truncation"]["returns"]
        buffer = buffer_of(returns)
        right = exact.gae_by_definition(*buffer, returns["buffer_gamma"], returns["lam"])
        theirs = np.array(returns["student_gae"])
        cut, = np.flatnonzero(buffer[4])
        assert not np.isclose(theirs[cut], right[cut])
        ended = np.flatnonzero(buffer[3])
        np.testing.assert_allclose(theirs[cut + 1:], right[cut + 1:])  # after it, nothing changes
        assert ended.min() < cut  # the episode before, ended by a termination, is right too
        np.testing.assert_allclose(theirs[:ended.min() + 1], right[:ended.min() + 1])
        figure = drawn(artifacts["buggy_gae_trace_runs_past_truncation"], "Your returns")
        lines = lines_of(figure.axes[1])
        np.testing.assert_allclose(lines["yours"].get_ydata(), theirs)
        marks = {label for label in lines if label.endswith("after this step")}
        assert marks == {"terminated after this step", "truncated after this step"}

    def test_a_gradient_of_the_wrong_sign_lies_on_the_other_diagonal(self, artifacts):
        figure = drawn(artifacts["buggy_grad_sign"], "The gradient check")
        reinforce, ppo = (lines_of(ax)["one entry of your gradient"] for ax in figure.axes)
        np.testing.assert_allclose(reinforce.get_ydata(), -reinforce.get_xdata(), atol=1e-8)
        np.testing.assert_allclose(ppo.get_ydata(), ppo.get_xdata(), atol=1e-8)  # its own function

    def test_the_mask_on_the_wrong_side_shows_on_the_flat_rows(self, artifacts):
        figure = drawn(artifacts["buggy_ppo_mask_wrong_side"], "The gradient check")
        line = lines_of(figure.axes[1])["one entry of your gradient"]
        off = ~np.isclose(line.get_ydata(), line.get_xdata(), atol=1e-8)
        assert off.any() and not off.all()
        # The finite differences are the same whoever's gradient is drawn beside them.
        reference = lines_of(drawn(artifacts["reference"], "The gradient check").axes[1])
        np.testing.assert_allclose(line.get_xdata(), reference["one entry of your gradient"].get_xdata())


@pytest.mark.slow
def test_a_graded_page_has_both_figures_and_no_grader_or_solution_line(course, tmp_path):
    """The pipeline collects the figures' data after the graders, and the page they are drawn on
    quotes no line of graders/ps3 or solutions/ps3 (the figure module's own included)."""
    ps3 = course.assignment("ps3")
    report, page, path = graded_page(ps3, "buggy_gae_trace_runs_past_truncation", tmp_path)
    assert set(report.artifacts) == {"returns", "gradients"}
    assert {item.id for item in report.failed()} == {"gae.values"}
    assert page.count('src="data:image/png;base64,') == 2
    assert len(list((ROOT / "graders" / "ps3").glob("*.py"))) >= 10
    assert leaked_source_lines(page, ps3, path) == []


class PartlyWrittenStudent:
    """discounted_returns and reinforce_logit_grad written (the oracle's), gae and ppo_logit_grad
    still raising NotImplementedError."""

    def __init__(self):
        self.calls = []

    def call(self, function, *args, **kwargs):
        self.calls.append(function)
        if function == "discounted_returns":
            return exact.reward_to_go(*args)
        if function == "reinforce_logit_grad":
            probs, actions, weights = args
            return exact.reinforce_logit_grad(np.log(probs), actions, weights)
        raise WorkerError("raised", f"calling {function} raised NotImplementedError")


def test_a_function_not_written_yet_leaves_only_its_panel_out():
    student = PartlyWrittenStudent()
    artifacts = feedback.collect(student)
    assert "student_gae" not in artifacts["returns"] and "student_ppo" not in artifacts["gradients"]
    assert student.calls == ["discounted_returns", "gae", "reinforce_logit_grad", "ppo_logit_grad"]
    returns, gradients = (figure for _, figure in feedback.figures(artifacts))
    assert len(returns.axes) == 1 and len(gradients.axes) == 1
    line = lines_of(gradients.axes[0])["one entry of your gradient"]
    np.testing.assert_allclose(line.get_ydata(), line.get_xdata(), atol=1e-8)


def test_figures_tolerate_malformed_artifacts():
    assert feedback.figures({}) == []
    assert feedback.figures({"returns": {"episode": "x"}, "gradients": {"logits": 3}}) == []
    assert feedback.figures(None) == []
