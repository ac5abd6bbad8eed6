"""Feedback pages, ps1's feedback figures and the TA's class report.

Fast tests build reports by hand; one slow test grades a real demo submission to check that no
line of grader or solution source reaches its page; the browser test renders a page in headless
Chromium (Debian's `chromium`) and reads back its DOM and a screenshot.
"""
import csv
import html
import json
from pathlib import Path

import numpy as np
import pytest

from rlcourse.report.class_report import diagnosis_counts, write_class_report
from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.explain.feedback import (PNG_SIGNATURE, assignment_figures, figure_png, render_feedback,
                                       sealed_item_ids, todo_cell_ids, write_feedback)
from rlcourse.grading.grade import Grade
from rlcourse.grading.report import ItemResult, Report
from rlcourse.course.submission import CodeCell, load_submission
from rlcourse.course.solutions import load_course_module
from rlcourse.worker.errors import WorkerError

ROOT = Path(__file__).resolve().parents[2]
ALAN = ROOT / "demo" / "submitted" / "alan" / "ps1" / "ps1.ipynb"
HOSTILE = "</pre><script>alert(1)</script><img src=x onerror=alert(2)>"


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def diagnoses():
    return load_diagnoses(ROOT / "graders" / "ps1")


@pytest.fixture(scope="module")
def ps1_feedback():
    return load_course_module(ROOT / "graders" / "ps1" / "feedback.py",
                              "rlcourse_graders.ps1.feedback")


def make_report(assignment="ps1", *, failed_tag="clip_without_min", errors=(), artifacts=None):
    items = [
        ItemResult("returns_to_go.random_batches", 2.0, 2.0, True, "", None,
                   "reward-to-go on random batches", "test_returns_to_go"),
        ItemResult("policy_loss.ppo_value", 3.0, 0.0, False,
                   "policy_loss gave -1.24, which is what the clipped term without the min gives.",
                   failed_tag, "clipped loss value", "test_policy_loss"),
        ItemResult("policy_loss.reinforce_value", 2.0, 2.0, True, "SHOULD NOT APPEAR", None,
                   "REINFORCE loss value", "test_policy_loss"),
    ]
    return Report(assignment, "ps1.ipynb", items, errors=list(errors), sha256="ab" * 32,
                  artifacts=artifacts or {})


def student_cells(policy_loss_source="def policy_loss(theta, records):\n    return 0.0\n"):
    return (CodeCell(0, "given_environment", "GIVEN_CODE = 1"),
            CodeCell(3, "returns_to_go", "def returns_to_go(r):\n    return r\n"),
            CodeCell(5, "policy_loss", policy_loss_source),
            CodeCell(6, None, "scratch = 'not a TODO'"))


def synthetic_artifacts(ps1_feedback):
    ratios = [float(r) for r in ps1_feedback.RATIOS]
    return {"clip_objective": {"clip": 0.2, "ratios": ratios, "student": {
                "positive": [float(np.clip(r, 0.8, 1.2)) for r in ratios],
                "negative": [-float(np.clip(r, 0.8, 1.2)) for r in ratios]}},
            "training": {"reinforce": list(np.linspace(0.47, 0.95, 41)),
                         "ppo": list(np.linspace(0.47, 0.98, 41))}}


def page_for(report, diagnoses, *, cells=None, figures=(), student="alan"):
    return render_feedback(Grade(report), student=student, submission_cells=cells or student_cells(),
                           todo_ids={"returns_to_go", "policy_loss"}, diagnoses=diagnoses,
                           figures=list(figures))


# --- render_feedback -----------------------------------------------------------------------------
class TestRenderFeedback:
    def test_hostile_student_code_is_escaped(self, diagnoses):
        """Code that closes the <pre> and opens a <script> is shown as text, never as markup."""
        page = page_for(make_report(), diagnoses, cells=student_cells(HOSTILE))
        assert "<script" not in page.lower()
        assert "<img src=x" not in page and "</pre><script" not in page
        assert html.escape(HOSTILE) in page

    def test_hostile_student_id_message_and_errors_are_escaped(self, diagnoses):
        """Every string from the report or the student is escaped, not only code."""
        report = make_report(errors=[HOSTILE])
        report.items[1].message = HOSTILE
        page = page_for(report, diagnoses, student=HOSTILE)
        assert "<script" not in page.lower()
        assert page.count(html.escape(HOSTILE)) >= 3

    def test_scripts_are_forbidden_by_the_content_security_policy(self, diagnoses):
        """Defence in depth: the page declares that no script or remote resource may load."""
        page = page_for(make_report(), diagnoses)
        assert "Content-Security-Policy" in page and "default-src 'none'" in page
        assert "http://" not in page and "https://" not in page

    def test_failed_item_shows_message_tag_summary_and_fix(self, diagnoses):
        page = page_for(make_report(), diagnoses)
        diagnosis = diagnoses["clip_without_min"]
        assert "which is what the clipped term without the min gives" in page
        assert "clip_without_min" in page
        assert html.escape(diagnosis.summary) in page
        assert html.escape(diagnosis.fix) in page

    def test_passed_items_do_not_show_their_message(self, diagnoses):
        page = page_for(make_report(), diagnoses)
        assert "REINFORCE loss value" in page
        assert "SHOULD NOT APPEAR" not in page

    def test_an_undocumented_tag_is_still_named(self, diagnoses):
        page = page_for(make_report(failed_tag="mystery_tag"), diagnoses)
        assert "mystery_tag" in page

    def test_header_shows_assignment_student_and_total(self, diagnoses):
        page = page_for(make_report(), diagnoses)
        assert "<title>ps1 feedback for alan</title>" in page
        assert 'id="score">4 <small>/ 7</small>' in page

    def test_the_students_own_parameters_are_stated(self, diagnoses):
        report = make_report()
        assert 'id="parameters"' not in page_for(report, diagnoses)  # an assignment without variants
        report.parameters = {"seed": 21, "clip": 0.25}
        page = page_for(report, diagnoses)
        assert ('<p class="meta" id="parameters">Graded with your own parameters: '
                '<span class="mono">seed = 21, clip = 0.25</span></p>') in page

    def test_only_todo_cells_are_shown(self, diagnoses):
        page = page_for(make_report(), diagnoses)
        assert "def returns_to_go" in page and "def policy_loss" in page
        assert "GIVEN_CODE" not in page and "not a TODO" not in page

    def test_notebook_errors_are_listed(self, diagnoses):
        page = page_for(make_report(errors=["cell 5 (policy_loss): NameError: jnp"]), diagnoses)
        assert "Problems running your notebook" in page and "NameError: jnp" in page

    def test_errors_and_code_headings_number_a_cell_alike(self, diagnoses):
        """One numbering on the page (issue 30): the error the grading writes about a cell and
        the "Your code" heading of that cell give it the same number, counted from 1."""
        from rlcourse.grading.student import cell_number

        policy_loss = next(cell for cell in student_cells() if cell.grade_id == "policy_loss")
        error = f"cell {cell_number(policy_loss.index)} (policy_loss): NameError: jnp"
        page = page_for(make_report(errors=[error]), diagnoses)
        assert f"(cell {policy_loss.index + 1})" in page and error in page
        assert cell_number(policy_loss.index) == policy_loss.index + 1

    def test_figures_are_embedded_as_png_data_uris_and_other_bytes_dropped(self, diagnoses,
                                                                          ps1_feedback):
        drawn = ps1_feedback.figures(synthetic_artifacts(ps1_feedback))
        assert len(drawn) == 2
        figures = [(title, figure_png(figure)) for title, figure in drawn]
        figures.append(("not a png", b"<svg onload=alert(1)>"))
        page = page_for(make_report(), diagnoses, figures=figures)
        assert page.count('src="data:image/png;base64,') == 2
        assert "not a png" not in page and "<svg" not in page

    def test_lone_surrogates_and_control_characters_still_encode(self, diagnoses, tmp_path):
        page = page_for(make_report(), diagnoses, cells=student_cells("x = '\ud800\x00'"))
        path = write_feedback(tmp_path / "out" / "page.html", page)
        assert path.read_bytes().decode("utf-8")
        assert [p.name for p in path.parent.iterdir()] == ["page.html"]


def test_todo_cell_ids_are_the_release_notebooks_solution_cells():
    ids = todo_cell_ids(ROOT / "release" / "ps1" / "ps1.ipynb")
    assert {"returns_to_go", "policy_loss", "exact_return"} <= ids
    assert not ids & {"given_environment", "example_training", "test_policy_loss"}


# --- graders/ps1/feedback.py ---------------------------------------------------------------------
class FakeStudent:
    """A submission whose policy_loss is the correct clipped loss (or raises, or has no
    gradient), in NumPy."""

    def __init__(self, *, loss_raises=False, histories=True, no_gradient=False):
        self.loss_raises = loss_raises
        self.no_gradient = no_gradient
        self.histories = histories
        self.calls = 0
        self.gradient_calls = 0

    def call(self, function, theta, records, *, method, clip, compiled):
        self.calls += 1
        if self.loss_raises:
            raise WorkerError("raised", "calling policy_loss raised NotImplementedError")
        logits = np.asarray(theta, dtype=np.float64)[records["observation"]]
        logp = -np.logaddexp(0.0, -logits)  # action 1 (right) in every record
        ratio = np.exp(logp - records["old_logp"].astype(np.float64))
        advantage = records["reward"].astype(np.float64)
        return -float(np.minimum(ratio * advantage,
                                 np.clip(ratio, 1 - clip, 1 + clip) * advantage).sum())

    def value_and_grad(self, function, theta, records, *, wrt, method, clip, compiled):
        self.gradient_calls += 1
        if self.loss_raises or self.no_gradient:
            raise WorkerError("raised", "calling policy_loss raised TypeError: no gradient")
        value = self.call(function, theta, records, method=method, clip=clip, compiled=compiled)
        self.calls -= 1
        return value, np.zeros(3)

    def get(self, *names):
        if not self.histories:
            raise KeyError("not defined after running the notebook: history_pg")
        return {"history_pg": np.linspace(0.47, 0.9, 41, dtype=np.float32),
                "history_ppo": np.array([0.47, np.nan, 0.9])}


class TestPs1FeedbackData:
    def test_a_correct_loss_gives_the_correct_curve(self, ps1_feedback):
        data = ps1_feedback.collect(FakeStudent())["clip_objective"]
        ratios = np.array(data["ratios"])
        assert not np.any(np.isclose(np.abs(ratios - 1), data["clip"]))
        for sign, advantage in (("positive", 1.0), ("negative", -1.0)):
            band = (1 - data["clip"], 1 + data["clip"])
            expected = np.minimum(ratios * advantage, np.clip(ratios, *band) * advantage)
            np.testing.assert_allclose(data["student"][sign], expected, rtol=1e-5)

    def test_artifacts_are_plain_json(self, ps1_feedback):
        artifacts = ps1_feedback.collect(FakeStudent())
        assert json.loads(json.dumps(artifacts, allow_nan=False)) == artifacts
        assert artifacts["training"]["ppo"][1] is None  # a NaN in the history

    def test_a_failing_part_is_left_out_and_the_others_kept(self, ps1_feedback):
        student = FakeStudent(loss_raises=True)
        artifacts = ps1_feedback.collect(student)
        assert "clip_objective" not in artifacts and "training" in artifacts
        # The first failure stops that part: one gradient call, then its value alone, once.
        assert (student.gradient_calls, student.calls) == (1, 1)
        assert ps1_feedback.collect(FakeStudent(histories=False)).keys() == {"clip_objective"}

    def test_a_loss_without_gradient_still_gets_its_curve(self, ps1_feedback):
        student = FakeStudent(no_gradient=True)
        data = ps1_feedback.collect(student)["clip_objective"]
        assert student.gradient_calls == 1 and student.calls == 2 * len(data["ratios"])
        assert data["student"] == ps1_feedback.collect(FakeStudent())["clip_objective"]["student"]

    def test_the_training_figure_is_drawn_for_the_students_rewards(self, ps1_feedback):
        """The reference trained with the student's own rewards, and their uniform and best
        returns; without rewards stored (an older ledger), the defaults'."""
        rewards = {"step_cost": -0.05, "goal_reward": 0.9}
        artifacts = ps1_feedback.collect(FakeStudent(), {"seed": 3, "clip": 0.1, **rewards})
        assert artifacts["training"]["rewards"] == rewards
        (_, figure), = [f for f in ps1_feedback.figures(artifacts) if f[0].startswith("Exact return")]
        ax = figure.axes[0]
        lines = {line.get_label(): line for line in ax.get_lines()}
        reference = ps1_feedback.reference_curves(-0.05, 0.9)
        np.testing.assert_allclose(lines["reference REINFORCE"].get_ydata(), reference["reinforce"])
        assert "always right (0.825)" in lines and "uniform policy (0.188281)" in lines
        assert ax.get_title() == "with your rewards: step cost -0.05, goal reward 0.9"
        del artifacts["training"]["rewards"]
        (_, figure), = [f for f in ps1_feedback.figures(artifacts) if f[0].startswith("Exact return")]
        labels = {line.get_label() for line in figure.axes[0].get_lines()}
        assert {"always right (0.985)", "uniform policy (0.466875)"} <= labels and figure.axes[0].get_title() == ""

    def test_the_clipping_figure_is_drawn_at_the_students_own_clip(self, ps1_feedback):
        """Its band is the student's eps (PARAMS['clip']), the one exercise 4 asks them to use:
        a student whose eps is 0.1 read "band 1 ± 0.25" before (issue 30). The student's loss
        is asked with that clip, and the drawn band and correct curve are at it."""
        for clip in (0.1, 0.3):
            data = ps1_feedback.collect(FakeStudent(), {"seed": 3, "clip": clip})["clip_objective"]
            ratios = np.array(data["ratios"])
            assert data["clip"] == clip
            assert np.min(np.abs(np.abs(ratios - 1) - clip)) > 1e-3  # no ratio on a kink
            expected = np.minimum(ratios, np.clip(ratios, 1 - clip, 1 + clip))
            np.testing.assert_allclose(data["student"]["positive"], expected, rtol=1e-5)
            (_, figure), = [f for f in ps1_feedback.figures({"clip_objective": data})]
            labels = {patch.get_label() for patch in figure.axes[0].patches}
            assert labels == {f"band 1 ± {clip:g} (your eps)"}
            patch = figure.axes[0].patches[0]
            edges = patch.get_patch_transform().transform(patch.get_path().vertices)[:, 0]
            assert np.isclose(edges.min(), 1 - clip) and np.isclose(edges.max(), 1 + clip)

    def test_figures_tolerate_malformed_artifacts(self, ps1_feedback):
        assert ps1_feedback.figures({}) == []
        assert ps1_feedback.figures({"clip_objective": {"clip": "x"}, "training": 3}) == []
        assert len(ps1_feedback.figures(synthetic_artifacts(ps1_feedback))) == 2


# --- figures kept once drawn -----------------------------------------------------------------------
@pytest.fixture
def counted_drawing(monkeypatch):
    """How many times figures were drawn (feedback.py's `figures` called)."""
    import rlcourse.explain.feedback as feedback

    calls = []
    drawn = feedback._drawn

    def counting(*args):
        calls.append(args)
        return drawn(*args)

    monkeypatch.setattr(feedback, "_drawn", counting)
    return calls


def test_kept_figures_are_drawn_once_and_drawn_again_for_other_artifacts_or_sealed_items(
        ps1, ps1_feedback, tmp_path, counted_drawing):
    report = make_report(artifacts=synthetic_artifacts(ps1_feedback))
    first = assignment_figures(ps1, report, keep_in=tmp_path / "kept")
    again = assignment_figures(ps1, report, keep_in=tmp_path / "kept")
    assert len(first) == 2 and again == first
    assert len(counted_drawing) == 1, "the kept figures were drawn again"
    other = synthetic_artifacts(ps1_feedback)
    other["clip_objective"]["clip"] = 0.3
    assignment_figures(ps1, make_report(artifacts=other), keep_in=tmp_path / "kept")
    assignment_figures(ps1, report, sealed=frozenset({"policy_loss.ppo_value"}), keep_in=tmp_path / "kept")
    assert len(counted_drawing) == 3
    assert assignment_figures(ps1, report) == first  # without a folder: drawn, the same PNGs
    assert len(counted_drawing) == 4


def test_a_kept_set_that_cannot_be_read_is_drawn_again_and_at_most_four_sets_are_kept(
        ps1, ps1_feedback, tmp_path, counted_drawing):
    kept = tmp_path / "kept"
    report = make_report(artifacts=synthetic_artifacts(ps1_feedback))
    first = assignment_figures(ps1, report, keep_in=kept)
    (only,) = kept.glob("*.json")
    only.write_text(json.dumps([["a title", "bm90IGEgUE5H"]]))  # base64 of text, not a PNG
    assert assignment_figures(ps1, report, keep_in=kept) == first
    assert len(counted_drawing) == 2
    for clip in (0.11, 0.12, 0.13, 0.14, 0.15):
        artifacts = synthetic_artifacts(ps1_feedback)
        artifacts["clip_objective"]["clip"] = clip
        assignment_figures(ps1, make_report(artifacts=artifacts), keep_in=kept)
    assert len(list(kept.glob("*.json"))) == 4


# --- a real graded report ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def graded_alan(ps1):
    from rlcourse.explain.feedback import assignment_figures
    from rlcourse.grading.pipeline import Grader

    path = ALAN
    with Grader(ps1) as grader:
        report = grader.grade(path)
    page = render_feedback(Grade(report), student="alan", submission_cells=load_submission(path).cells,
                           todo_ids=todo_cell_ids(ps1.release_notebook),
                           diagnoses=load_diagnoses(ps1.grader_dir),
                           figures=assignment_figures(ps1, report))
    return report, page


@pytest.mark.slow
class TestRealReport:
    def test_no_grader_or_solution_source_line_is_on_the_page(self, graded_alan):
        """No line of 30 characters or more from graders/ps1 or solutions/ps1 appears, except
        lines the student wrote themselves (a correct answer may equal the reference's line)."""
        _, page = graded_alan
        text = html.unescape(page)
        own = {line.strip() for cell in load_submission(ALAN).cells
               for line in cell.source.splitlines()}
        sources = [*(ROOT / "graders" / "ps1").glob("*.py"), *(ROOT / "solutions" / "ps1").glob("*.py")]
        assert len(sources) >= 5
        lines = {(path.name, line.strip()) for path in sources
                 for line in path.read_text().splitlines() if len(line.strip()) >= 30}
        leaked = sorted((name, line) for name, line in lines if line in text and line not in own)
        assert leaked == []

    def test_the_page_has_both_figures_and_the_failed_items(self, graded_alan):
        report, page = graded_alan
        assert set(report.artifacts) == {"clip_objective", "training"}
        assert page.count('src="data:image/png;base64,') == 2
        assert report.failed() and all(f'id="item-{item.id}"' in page for item in report.failed())


# --- figures that would answer a sealed item -----------------------------------------------------
class TestFiguresBeforeTheDueDate:
    """ps2's right clipped surrogate answers three concept checks (graders/ps2/feedback.py): the
    page leaves it out while they are sealed, and draws it once they are not."""

    def ps2_report(self):
        ratios = np.linspace(0.31, 1.69, 29)
        concept = ItemResult("concepts.clipped_value", 1.0, 0.0, False, "", None,
                             "concept check: the clipped objective by hand, A < 0", "test_concept_checks",
                             kind="concept")
        return Report("ps2", "ps2.ipynb", [concept], sha256="cd" * 32, artifacts={"surrogate": {
            "eps": 0.2, "ratios": ratios.tolist(),
            "student": {"positive": ratios.tolist(), "negative": (-ratios).tolist()}}})

    def test_the_sealed_items_are_those_student_view_holds_back(self, course):
        policy, grade = course.assignment("ps2").feedback, Grade(self.ps2_report())
        assert sealed_item_ids(grade, policy=policy, level="full", due_passed=False) == {"concepts.clipped_value"}
        assert sealed_item_ids(grade, policy=policy, level="full", due_passed=True) == frozenset()

    @pytest.mark.parametrize("due_passed, caption", [
        (False, "Your clipped surrogate (the correct curve is shown after the due date)"),
        (True, "Your clipped surrogate against the correct one")])
    def test_the_page_draws_the_right_curve_only_after_the_due_date(self, course, tmp_path, due_passed,
                                                                    caption):
        from rlcourse.explain.outputs import write_feedback_page

        path = tmp_path / "ps2.html"
        write_feedback_page(path, student="ada", assignment=course.assignment("ps2"),
                            grade=Grade(self.ps2_report()), submitted=None, due_passed=due_passed)
        page = path.read_text()
        assert page.count('src="data:image/png;base64,') == 1
        assert f"<figcaption>{caption}</figcaption>" in page

    def test_a_figures_function_without_sealed_is_called_as_before(self, ps1):
        report = make_report(artifacts=synthetic_artifacts(load_course_module(
            ROOT / "graders" / "ps1" / "feedback.py", "rlcourse_graders.ps1.feedback")))
        assert len(assignment_figures(ps1, report, sealed=frozenset({"policy_loss.ppo_value"}))) == 2


# --- the browser ---------------------------------------------------------------------------------
@pytest.mark.browser
def test_feedback_page_renders_in_headless_chromium(tmp_path, diagnoses, ps1_feedback, chromium):
    """The page loads in a real browser: title, score, item rows and figures in the DOM, no
    script element despite hostile code, and a screenshot that is not blank."""
    figures = [(title, figure_png(figure))
               for title, figure in ps1_feedback.figures(synthetic_artifacts(ps1_feedback))]
    report = make_report()
    page = page_for(report, diagnoses, cells=student_cells(HOSTILE), figures=figures)
    path = write_feedback(tmp_path / "alan.html", page)

    dom = chromium("--dump-dom", path.as_uri()).stdout
    assert "<title>ps1 feedback for alan</title>" in dom
    assert 'id="score">4 <small>/ 7</small>' in dom
    assert dom.count('<tr class="item ') == len(report.items)
    assert dom.count('<img src="data:image/png;base64,') == len(figures) == 2
    assert "<script" not in dom.lower()

    screenshot = tmp_path / "alan.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1200,2000", path.as_uri())
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    from PIL import Image  # matplotlib's own dependency

    with Image.open(screenshot) as image:
        assert image.size == (1200, 2000)
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert len(colours) > 50, "the screenshot is blank or nearly one colour"
    background = max(colours)[0] / (1200 * 2000)
    assert background < 0.9, "the screenshot is mostly one colour: the page did not render"


# --- write_class_report --------------------------------------------------------------------------
def class_grades(reports=None):
    """Each student's grade of record, made of their report alone (no written answer)."""
    return {student: Grade(report) for student, report in (reports or class_reports()).items()}


def class_reports():
    def report(scores_and_tags):
        items = [ItemResult(f"item.{index}", 2.0, score, tag is None, "", tag, f"Item {index}")
                 for index, (score, tag) in enumerate(scores_and_tags)]
        return Report("ps1", "ps1.ipynb", items)

    return {
        "ada": report([(2, None), (2, None), (2, None)]),
        "alan": report([(2, None), (0, "clip_without_min"), (0, "clip_without_min")]),
        "grace": report([(0, "loss_sign"), (0, "clip_without_min"), (2, None)]),
        "=cmd|' /C calc'!A0": report([(0, "raised"), (0, "raised"), (0, "raised")]),
    }


class TestWriteClassReport:
    def test_writes_csv_png_and_html(self, tmp_path, diagnoses):
        paths = write_class_report(tmp_path / "reports" / "ps1", assignment="ps1",
                                   grades=class_grades(), diagnoses=diagnoses)
        assert set(paths) == {"scores.csv", "summary.png", "summary.html"}
        assert all(path.is_file() and path.stat().st_size > 0 for path in paths.values())
        assert paths["summary.png"].read_bytes().startswith(PNG_SIGNATURE)
        assert sorted(p.name for p in paths["scores.csv"].parent.iterdir()) == [
            "scores.csv", "summary.html", "summary.png"]

    def test_each_students_parameters_are_in_the_students_table(self, tmp_path, diagnoses):
        reports = class_reports()
        page = write_class_report(tmp_path / "a", assignment="ps1", grades=class_grades(reports),
                                  diagnoses=diagnoses)["summary.html"].read_text()
        assert "<th>Parameters</th>" not in page
        reports["ada"].parameters = {"seed": 21, "horizon": 1}
        reports["alan"].parameters = {"seed": 13, "horizon": 2}
        page = write_class_report(tmp_path / "b", assignment="ps1", grades=class_grades(reports),
                                  diagnoses=diagnoses)["summary.html"].read_text()
        assert "<th>Parameters</th>" in page
        assert '<td class="mono parameters">seed = 21, horizon = 1</td>' in page
        assert '<td class="mono parameters">seed = 13, horizon = 2</td>' in page

    def test_csv_has_one_row_per_student_and_item(self, tmp_path, diagnoses):
        reports = class_reports()
        paths = write_class_report(tmp_path, assignment="ps1", grades=class_grades(reports), diagnoses=diagnoses)
        with paths["scores.csv"].open(newline="") as stream:
            rows = list(csv.DictReader(stream))
        assert len(rows) == sum(len(report.items) for report in reports.values()) == 12
        assert list(rows[0]) == ["student", "item", "title", "score", "max_score", "passed",
                                 "diagnosis", "seconds_late", "late_penalty"]
        alan = [row for row in rows if row["student"] == "alan"]
        assert [(row["item"], row["score"], row["passed"], row["diagnosis"]) for row in alan] == [
            ("item.0", "2", "true", ""), ("item.1", "0", "false", "clip_without_min"),
            ("item.2", "0", "false", "clip_without_min")]
        assert not any(row["student"].startswith("=") for row in rows)

    def test_counts_per_tag_are_students_then_items(self):
        counts = {count.tag: (count.students, count.items) for count in diagnosis_counts(class_reports())}
        assert counts == {"clip_without_min": (("alan", "grace"), 3),
                          "raised": (("=cmd|' /C calc'!A0",), 3),
                          "loss_sign": (("grace",), 1)}
        assert [count.tag for count in diagnosis_counts(class_reports())] == [
            "clip_without_min", "raised", "loss_sign"]

    def test_summary_page_lists_tags_by_count_with_summaries(self, tmp_path, diagnoses):
        page = write_class_report(tmp_path, assignment="ps1", grades=class_grades(),
                                  diagnoses=diagnoses)["summary.html"].read_text()
        positions = [page.index(f'data-tag="{tag}"') for tag in ("clip_without_min", "raised", "loss_sign")]
        assert positions == sorted(positions)
        assert html.escape(diagnoses["clip_without_min"].summary) in page
        assert 'id="class-size">4<' in page and 'id="mean">2.5<' in page
        assert page.count('src="data:image/png;base64,') == 1
        assert "<script" not in page.lower()

    def test_an_empty_class_still_gives_a_report(self, tmp_path, diagnoses):
        paths = write_class_report(tmp_path, assignment="ps1", grades={}, diagnoses=diagnoses)
        assert paths["scores.csv"].read_text().count("\n") == 1
        assert 'id="class-size">0<' in paths["summary.html"].read_text()
