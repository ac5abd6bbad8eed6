"""The TA's rubric sheet: answers grouped for marking, the CSV template, every student's answer on
the page and escaped, and the page as headless Chromium shows it."""
import csv
import io
import shutil
from pathlib import Path

import nbformat
import pytest
from markupsafe import escape

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.rubrics import Rubrics
from rlcourse.report.rubric_sheet import group_answers, template_csv, write_rubric_sheet

HOSTILE = "</div><script>alert(1)</script><img src=x onerror=alert(2)>"
ANSWERS = {
    "ada": "The min removes the incentive.\nClipping is not a trust region.",
    "grace": "the min removes   the incentive. clipping is not a trust region.",  # same words
    "alan": "Clipping bounds the ratio.",
    "barbara": "YOUR ANSWER HERE",
    "ken": HOSTILE,
}


def section(page: str, grade_id: str) -> str:
    """The part of the page about one question."""
    start = page.index(f'data-question="{grade_id}"')
    return page[start:page.index("</section>", start)]


def test_answers_equal_up_to_spacing_and_case_share_a_group_and_blanks_come_last():
    groups = group_answers({**ANSWERS, "edsger": None, "linus": "  "}, placeholder="YOUR ANSWER HERE")
    assert [(group.students, group.empty) for group in groups] == [
        (["ada", "grace"], False), (["alan"], False), (["ken"], False),
        (["barbara", "edsger", "linus"], True)]
    assert groups[0].text == ANSWERS["ada"]  # shown as the first student wrote it


def class_with_answers(folder: Path, release: Path) -> ClassDirectory:
    """A class whose students each wrote ANSWERS[student] in explain_clipping, and one whose file
    is not a notebook."""
    class_dir = ClassDirectory(folder)
    for student, answer in ANSWERS.items():
        notebook = nbformat.read(release, as_version=4)
        cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_clipping")
        cell.source = answer
        (class_dir.submitted / student / "ps1").mkdir(parents=True)
        nbformat.write(notebook, class_dir.submitted / student / "ps1" / "ps1.ipynb")
    (class_dir.submitted / "edsger" / "ps1").mkdir(parents=True)
    (class_dir.submitted / "edsger" / "ps1" / "ps1.ipynb").write_text("not json")
    return class_dir


@pytest.fixture
def sheet(ps1_with_rubric, tmp_path):
    class_dir = class_with_answers(tmp_path / "class", ps1_with_rubric.release_notebook)
    return ps1_with_rubric, class_dir, write_rubric_sheet(ps1_with_rubric, class_dir)


def test_the_sheet_has_the_prompt_model_answer_rubric_and_every_answer_escaped(sheet):
    assignment, class_dir, path = sheet
    assert path == class_dir.reports / "ps1" / "rubric.html"
    page = path.read_text()
    question = Rubrics.of(assignment).question("explain_clipping")
    assert "Staff only" in page and str(escape(question.prompt.splitlines()[0])) in page
    assert str(escape(question.model_answer[:200])) in page
    clipping = section(page, "explain_clipping")  # ps1 may have other written answers too
    assert clipping.count("<li data-criterion=") == len(question.criteria) == 2
    for student in ANSWERS:
        assert f'data-student="{student}"' in clipping
    assert "Clipping bounds the ratio." in clipping and "The min removes the incentive." in clipping
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in clipping
    assert clipping.count('class="answer-group"') == 3 and clipping.count('class="answer-group empty"') == 1


def test_the_csv_template_lists_each_student_once_per_question_in_the_sheets_order(sheet):
    assignment, class_dir, _ = sheet
    rows = list(csv.DictReader(io.StringIO((class_dir.reports / "ps1" / "rubric-template.csv").read_text())))
    assert [(row["student"], row["group"]) for row in rows if row["question"] == "explain_clipping"] == [
        ("ada", "1"), ("grace", "1"), ("alan", "2"), ("ken", "3"), ("barbara", "empty"), ("edsger", "empty")]
    assert len(rows) == 6 * len(Rubrics.of(assignment).questions)
    assert all(row["criteria"] == row["comment"] == "" for row in rows)


def test_no_sheet_without_a_source_notebook(ps1_with_rubric, tmp_path):
    class_dir = class_with_answers(tmp_path / "class", ps1_with_rubric.release_notebook)
    Path(ps1_with_rubric.source_notebook).unlink()
    assert write_rubric_sheet(ps1_with_rubric, class_dir) is None
    assert not (class_dir.reports / "ps1").exists()


def test_the_template_of_no_question_is_only_its_header():
    assert template_csv([]) == "student,question,group,criteria,comment\n"


@pytest.mark.browser
def test_the_sheet_renders_in_headless_chromium_with_each_answer(sheet, chromium, tmp_path):
    _, _, path = sheet
    dom = chromium("--dump-dom", path.as_uri()).stdout
    assert "<title>ps1 rubric sheet (staff only)</title>" in dom
    for student in ANSWERS:
        assert f'data-student="{student}"' in dom
    assert "Clipping bounds the ratio." in dom and "<script" not in dom.lower()
    assert section(dom, "explain_clipping").count("data-criterion=") == 2
    screenshot = tmp_path / "sheet.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1200,1600", path.as_uri())
    from PIL import Image

    with Image.open(screenshot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert len(colours) > 50 and max(colours)[0] / (1200 * 1600) < 0.95, "the page did not render"
    shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)
