"""The TA's rubric sheet: answers grouped for marking, each student's mark state, the CSV to fill
(pre-filled, and never written over a file a TA may have edited), every student's answer on the
page and escaped, and the page as headless Chromium shows it."""
import csv
import io
import shutil
from pathlib import Path

import nbformat
import pytest
from markupsafe import escape

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.rubrics import Rubrics
from rlcourse.report.rubric_sheet import Sheet, group_answers, marking_csv, write_rubric_sheet

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
    # Nothing is autograded in this class: no row can be imported until it is.
    assert {row["state"] for row in rows} == {"not autograded yet: run rlcourse autograde before marking this answer"}
    ada, grace = rows[0], rows[1]
    assert ada["answer_hash"] == grace["answer_hash"] != rows[2]["answer_hash"]  # one group, one answer


def test_no_sheet_without_a_source_notebook(ps1_with_rubric, tmp_path):
    class_dir = class_with_answers(tmp_path / "class", ps1_with_rubric.release_notebook)
    Path(ps1_with_rubric.source_notebook).unlink()
    assert write_rubric_sheet(ps1_with_rubric, class_dir) is None
    assert not (class_dir.reports / "ps1").exists()


def test_the_csv_of_no_question_is_only_its_header():
    assert marking_csv(Sheet([], [])) == "student,question,group,state,criteria,comment,answer_hash\n"


# --- mark states and the files a TA fills, on a class recorded through autograde ---------------


def fill(path: Path, student: str, criteria: str, question: str = "explain_clipping") -> str:
    """The CSV's text with `criteria` in the student's row, as a TA fills it."""
    rows = list(csv.reader(io.StringIO(path.read_text())))
    header = rows[0]
    for row in rows[1:]:
        if row[header.index("student")] == student and row[header.index("question")] == question:
            row[header.index("criteria")] = criteria
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    assert buffer.getvalue() != path.read_text()
    return buffer.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """ada awaiting, bob re-marking, cy marked in formgrader, dee not autograded, ed marked."""
    from marking import class_of_five

    return class_of_five(tmp_path_factory.mktemp("states"))


@pytest.fixture
def marked(recorded, tmp_path):
    from marking import copy_class

    assignment, class_dir = recorded
    return assignment, copy_class(class_dir, tmp_path / "class")


def test_each_student_is_shown_with_the_state_of_their_mark_and_the_csv_is_pre_filled(marked):
    from marking import QUESTION, csv_rows

    from rlcourse.report.rubric_sheet import write_marking_sheet

    assignment, class_dir = marked
    files = write_marking_sheet(assignment, class_dir)
    clipping = section(files.html.read_text(), QUESTION)
    for student, state, shown in [
            ("ada", "awaiting", '<span class="meta">(awaiting)</span>'),
            ("bob", "re-marking", '<span class="staff">(re-marking: answer changed since it was marked (was 0/2))</span>'),
            ("cy", "marked", '<span class="meta">(marked 1.5, criteria not recorded)</span>'),
            ("dee", "not autograded", '<span class="staff">(not autograded yet: autograde before marking)</span>'),
            ("ed", "marked", '<span class="meta">(marked 2, criteria 1;2)</span>')]:
        assert f'data-student="{student}" data-state="{state}">{student} {shown}' in clipping, student
    rows = {row["student"]: row for row in csv_rows(files.csv) if row["question"] == QUESTION}
    assert {student: (row["state"], row["criteria"], row["comment"]) for student, row in rows.items()} == {
        "ada": ("awaiting a TA", "", ""),
        "bob": ("re-marking: answer changed since it was marked (was 0/2)", "", ""),  # never the old criteria
        "cy": ("marked 1.5/2 in formgrader (criteria not recorded)", "", "Nearly."),
        "dee": ("not autograded yet: run rlcourse autograde before marking this answer", "", ""),
        "ed": ("marked 2/2", "1;2", "Both halves, well put.")}
    # bob's new answer is ed's: one group, one hash; dee's (the same words) is not recorded yet.
    assert rows["bob"]["answer_hash"] == rows["ed"]["answer_hash"] == rows["dee"]["answer_hash"]
    assert rows["ada"]["answer_hash"] == rows["cy"]["answer_hash"] != rows["bob"]["answer_hash"]


def test_the_tas_template_survives_rubric_sheet_and_autograde(marked):
    """The template is written once; every later sheet that differs is a new file beside it,
    named by the HTML sheet; an unedited older one is tidied away, an edited one never."""
    from marking import REWRITTEN, record, submit

    from rlcourse.report.class_outputs import write_class_outputs
    from rlcourse.report.rubric_sheet import write_marking_sheet

    assignment, class_dir = marked
    folder = class_dir.reports / "ps1"
    first = write_marking_sheet(assignment, class_dir)
    template = folder / "rubric-template.csv"
    assert first.csv == template and 'href="rubric-template.csv"' in first.html.read_text()
    assert write_marking_sheet(assignment, class_dir).csv == template  # nothing changed: nothing new
    filled = fill(template, "ada", "1")
    template.write_text(filled)  # the TA starts marking in it

    again = write_marking_sheet(assignment, class_dir)  # `rlcourse rubric sheet`
    assert template.read_text() == filled
    assert again.csv.name.startswith("rubric-marks-") and again.csv.parent == folder
    assert f'href="{again.csv.name}"' in again.html.read_text()
    assert write_marking_sheet(assignment, class_dir).csv == again.csv  # the same rows: the same file

    submit(class_dir, "dee", REWRITTEN + " And the KL shows it.")
    record(assignment, class_dir)
    outputs = write_class_outputs(assignment, class_dir)  # what `rlcourse autograde` writes after a run
    fresh = outputs["rubric CSV to fill"]
    assert template.read_text() == filled
    assert fresh != again.csv and fresh.name.startswith("rubric-marks-") and fresh.is_file()
    assert not again.csv.exists()  # superseded and never edited: tidied away
    assert f'href="{fresh.name}"' in outputs["rubric sheet"].read_text()

    fresh.write_text(fresh.read_text() + "\n")  # a TA edits the fresh one too
    edited = fresh.read_text()
    submit(class_dir, "ada", REWRITTEN)
    record(assignment, class_dir)
    newest = write_marking_sheet(assignment, class_dir).csv
    assert newest not in (template, fresh) and fresh.read_text() == edited and template.read_text() == filled
    assert sorted(folder.glob("rubric*.csv")) == sorted([template, fresh, newest])


def test_the_command_prints_the_csv_to_fill(marked):
    import subprocess
    import sys

    assignment, class_dir = marked
    done = subprocess.run([Path(sys.executable).parent / "rlcourse", "rubric", "sheet", "ps1", "--course-dir",
                           class_dir.root], cwd=assignment.course.root, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    folder = class_dir.reports / "ps1"
    assert done.stdout == f"rubric sheet: {folder / 'rubric.html'}\nmarking CSV to fill: {folder / 'rubric-template.csv'}\n"


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
