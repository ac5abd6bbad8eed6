"""The Release model: the released notebook as nbgrader sees it, checked against nbgrader's own
view of ps1 (its gradebook's cells, via SaveCells) and against hand-made notebooks."""
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.release import Release, Source

ROOT = Path(__file__).resolve().parents[2]
PS1 = ROOT / "release" / "ps1" / "ps1.ipynb"


def _cell(kind, source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = dict(nbgrader, schema_version=3)
    return cell


def _release(*cells) -> Release:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    return Release.from_notebook(notebook)


def test_ps1_cells_are_what_nbgrader_records_in_its_gradebook(tmp_path):
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import ensure_assignment_in_gradebook
    from rlcourse.course.directory import Course

    release = Release.read(PS1)
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    ensure_assignment_in_gradebook(db_url, Course(ROOT).assignment("ps1"))  # nbgrader's SaveCells
    with Gradebook(db_url) as gradebook:
        notebook = gradebook.find_notebook("ps1", "ps1")
        graded = {cell.name: cell.max_score for cell in notebook.grade_cells}
        solutions = {cell.name for cell in notebook.solution_cells}
        locked = {cell.name for cell in notebook.source_cells if cell.locked}
    assert {cell.grade_id: cell.points for cell in release.cells if cell.grade} == graded
    assert release.answer_ids == solutions
    assert {cell.grade_id for cell in release.cells if cell.locked} == locked
    assert release.todo_ids == solutions - {"explain_clipping", "explain_flip_horizon"}  # prose answers
    assert set(release.given) == {"given_environment", "given_parameters", "given_training",
                                  "example_training", "horizon_run"}
    assert release.expected_ids == release.todo_ids | set(release.given)
    # The parameter cell comes first: the given environment reads the student's rewards from it.
    assert release.order[:4] == ["given_parameters", "given_environment", "returns_to_go",
                                 "test_returns_to_go"]


def test_a_missing_or_broken_release_is_empty_only_when_asked(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{not json")
    with pytest.raises(ValueError):
        Release.read(broken)
    with pytest.raises(OSError):
        Release.read(tmp_path / "missing.ipynb")
    assert Release.read_or_empty(broken).cells == ()
    assert Release.read_or_empty(tmp_path / "missing.ipynb").expected_ids == set()


def test_a_test_cell_is_locked_even_without_the_flag_as_nbgrader_restores_it():
    release = _release(_cell("code", "assert f(1) == 2", grade=True, solution=False, locked=False,
                             grade_id="t", points=3))
    (cell,) = release.cells
    assert cell.locked and cell.visible_test and not cell.given and cell.points == 3
    assert release.expected_ids == set()


def test_skip_cells_must_be_given_cells_after_every_answer():
    release = _release(_cell("code", "early = 1", locked=True, grade=False, solution=False, grade_id="early"),
                       _cell("code", "def f(): ...", solution=True, grade=False, locked=False, grade_id="f"),
                       _cell("code", "assert f()", grade=True, solution=False, locked=True, grade_id="t", points=1),
                       _cell("code", "plot()", locked=True, grade=False, solution=False, grade_id="demo"))
    assert release.skip_cell_problems(["demo"]) == []
    assert release.skip_cell_problems(["early", "t", "f", "nope"]) == [
        "nope is not a cell of the release",
        "early comes before a solution cell, whose code may use it",
        "f is not a locked cell without points",
        "t is not a locked cell without points"]



def test_a_written_answer_may_follow_a_skip_cell():
    """A markdown answer explains what a skipped demonstration showed; it runs no code."""
    release = _release(_cell("code", "def f(): ...", solution=True, grade=False, locked=False, grade_id="f"),
                       _cell("code", "plot()", locked=True, grade=False, solution=False, grade_id="demo"),
                       _cell("markdown", "Because ...", solution=True, grade=True, locked=False,
                             grade_id="why", points=2))
    assert release.skip_cell_problems(["demo"]) == []


def test_released_cells_are_copies():
    release = Release.read(PS1)
    cell = release.released_cell("test_returns_to_go")
    cell.source = "changed"
    assert release.released_cell("test_returns_to_go").source != "changed"
    assert release.released_cell("no_such_cell") is None
    assert release.notebook().cells[0] is not release.notebook().cells[0]


def test_source_answers_drop_the_markers_and_regions_keep_only_the_answers():
    source = Source.read(ROOT / "source" / "ps1" / "ps1.ipynb")
    release = Release.read(PS1)
    assert set(source.answers) == release.answer_ids
    assert not any("### BEGIN SOLUTION" in answer for answer in source.answers.values())
    assert source.regions and all(region.strip() for region in source.regions)
    released = set(release.lines)
    assert any(line.strip() and line not in released for region in source.regions
               for line in region.splitlines())


def test_a_written_answer_is_the_model_answer_without_its_rubric(tmp_path):
    """The bank's reference student (and the demo built from it) answers as a student would: the
    model answer, never the TA's rubric that follows it in the solution region."""
    notebook = nbformat.v4.new_notebook(cells=[
        _cell("markdown", "### BEGIN SOLUTION\nThe min removes the incentive.\n\n**Rubric** (1 point):\n"
                          "* 1: names the min.\n### END SOLUTION", grade=True, solution=True,
              grade_id="explain", points=1, locked=False),
        _cell("code", "def f():\n    ### BEGIN SOLUTION\n    return 1  # **Rubric** in code stays\n"
                      "    ### END SOLUTION", solution=True, grade_id="f", grade=False, locked=False),
    ])
    path = tmp_path / "source.ipynb"
    nbformat.write(notebook, path)
    answers = Source.read(path).answers
    assert answers["explain"].strip() == "The min removes the incentive."
    assert "**Rubric** in code stays" in answers["f"]
    assert all("Rubric" not in answer for grade_id, answer in
               Source.read(ROOT / "source" / "ps1" / "ps1.ipynb").answers.items() if grade_id.startswith("explain"))
