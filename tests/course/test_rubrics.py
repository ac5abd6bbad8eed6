"""The rubrics of the manually graded answers, read from the source notebook: ps2's real cell,
crafted cells for each way an author can get one wrong, and the students' written answers."""
import json
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.rubrics import Rubrics, parse_rubric, written_answers
from rlcourse.course.submission import NotebookProblem

ROOT = Path(__file__).resolve().parents[2]


def manual_cell(source, grade_id="explain", points=2):
    cell = nbformat.v4.new_markdown_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": points,
                                 "grade_id": grade_id, "schema_version": 3}
    return cell


def notebook_with(*cells, path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    nbformat.write(notebook, path)
    return path


def solution(text):
    return f"### BEGIN SOLUTION\n{text}\n### END SOLUTION"


class TestPs2:
    def test_the_break_it_rubric_has_four_half_point_criteria_and_its_model_answer(self):
        rubrics = Rubrics.read(ROOT / "source/ps2/ps2.ipynb", ROOT / "release/ps2/ps2.ipynb")
        question = rubrics.question("explain_break_it")
        assert question is not None and question.points == 2 and question.usable
        assert [(c.number, c.points) for c in question.criteria] == [(1, .5), (2, .5), (3, .5), (4, .5)]
        # Wrapped criteria are joined into one line; the next bullet starts the next criterion.
        assert question.criteria[0].text.startswith("clip without the min stops rewarding ratios")
        assert question.criteria[0].text.endswith("hence less movement than no clip;")
        assert "\n" not in question.criteria[3].text and question.criteria[3].text.endswith("earn nothing here.")
        assert question.model_answer.startswith("**Model answer.**") and "**Rubric**" not in question.model_answer
        assert question.stated_total == 2
        # The prompt is what the student read: the markdown just before the answer in the release.
        assert question.prompt.startswith("### Your first explanation (graded by hand)")
        assert question.score({1, 3}) == 1.0 and question.unknown({1, 5}) == [5]

    def test_the_release_has_no_rubric(self):
        """The rubric sits in the hidden region, so generate_assignment removed it."""
        assert "**Rubric**" not in (ROOT / "release/ps2/ps2.ipynb").read_text()


class TestCrafted:
    def test_wrapped_criteria_with_points_written_out(self):
        model, criteria, stated, found = parse_rubric(
            "A model.\n\n**Rubric**:\n- 1 point: first,\n  wrapped\n\ttwice;\n- 0.5: second\n\nA note after.")
        assert (model, stated, found) == ("A model.", None, True)
        assert [(c.number, c.points, c.text) for c in criteria] == [
            (1, 1.0, "first, wrapped twice;"), (2, 0.5, "second")]

    def test_a_cell_without_a_rubric_is_all_model_answer(self, tmp_path):
        path = notebook_with(manual_cell(solution("Only a model answer.")), path=tmp_path / "s.ipynb")
        question = Rubrics.read(path).questions[0]
        assert (question.has_rubric, question.criteria, question.problem(), question.usable) == (False, (), None, False)
        assert question.model_answer == "Only a model answer."

    @pytest.mark.parametrize("rubric, problem", [
        ("**Rubric** (2 points):\n* 1: one\n* 0.5: two", "criteria add up to 1.5 points but the cell is worth 2"),
        ("**Rubric** (3 points):\n* 1: one\n* 1: two", "heading says 3 points but the cell is worth 2"),
        ("**Rubric** (2 points):\nno bullets here", "lists no criteria"),
    ])
    def test_a_rubric_that_cannot_be_used_says_why(self, tmp_path, rubric, problem):
        path = notebook_with(manual_cell(solution(f"Model.\n\n{rubric}")), path=tmp_path / "s.ipynb")
        question = Rubrics.read(path).questions[0]
        assert question.has_rubric and not question.usable and problem in question.problem()

    def test_only_markdown_cells_with_grade_and_solution_are_manual(self, tmp_path):
        code = nbformat.v4.new_code_cell("x = 1")
        code.metadata["nbgrader"] = {"grade": True, "solution": True, "grade_id": "code_answer", "points": 1}
        prompt = nbformat.v4.new_markdown_cell("## Question\nWhy?")
        ungraded = manual_cell("text", grade_id="notes")
        ungraded.metadata.nbgrader["grade"] = False
        path = notebook_with(code, prompt, manual_cell(solution("M.")), ungraded, path=tmp_path / "s.ipynb")
        rubrics = Rubrics.read(path)
        assert rubrics.ids == ["explain"] and rubrics.questions[0].prompt == "## Question\nWhy?"


class TestWrittenAnswers:
    def test_a_students_answer_is_read_by_grade_id(self, tmp_path):
        path = notebook_with(manual_cell("My <b>answer</b>.", grade_id="explain"),
                             manual_cell("Other.", grade_id="other"), path=tmp_path / "s.ipynb")
        assert written_answers(path, ["explain", "missing"]) == {"explain": "My <b>answer</b>."}

    def test_a_file_that_is_not_a_notebook_is_a_notebook_problem(self, tmp_path):
        path = tmp_path / "s.ipynb"
        path.write_text(json.dumps({"not": "a notebook"}))
        with pytest.raises(NotebookProblem):
            written_answers(path, ["explain"])
