"""What reaches staff: student ids are exactly the documented pattern, terminals get no markup or
control characters from a submission, and the autograded notebook formgrader opens holds no
student output or untrusted metadata (issue 13, item 4)."""
import io
from pathlib import Path

import nbformat
import pytest
from rich.console import Console

from rlcourse.course.class_directory import student_id_problem
from rlcourse.course.directory import Course
from rlcourse.grading.report import ItemResult, Report
from rlcourse.explain.outputs import clear_untrusted, write_autograded_notebook
from rlcourse.explain.terminal import print_report, print_summary, safe
from rlcourse.grading.grade import Grade


@pytest.mark.parametrize("student", ["ada", "a.b@uni.edu", "x+y-z_1"])
def test_ordinary_ids_pass(student):
    assert student_id_problem(student) is None


@pytest.mark.parametrize("student", ["honest_a\n", "ada\r", "a\tb", "../ada", ".hidden", "ad[/]a",
                                     "аda",  # Cyrillic a: a look-alike of "ada"
                                     "ada\u200b", "ad\u202ea", "", "a b"])
def test_ids_with_anything_else_are_refused(student):
    assert student_id_problem(student) is not None


def report_with(message: str) -> Report:
    return Report("ps1", "ps1.ipynb", [ItemResult(id="item[/]", score=0, max_score=1, passed=False,
                                                  message=message, diagnosis="wrong_value")],
                  errors=["cell 3: [bold red]forged[/] \x1b[2J\x1b]0;title\x07 \u202eevil"])


def rendered(function, *args) -> str:
    buffer = io.StringIO()
    function(*args, console=Console(file=buffer, width=200, force_terminal=True, color_system="truecolor",
                                     highlight=False))
    return buffer.getvalue()


def test_markup_and_escape_sequences_from_a_submission_reach_no_terminal():
    report = report_with("[/] closes nothing [link=file:///etc/passwd]click[/link] \x1b[31mred\x07")
    grade = Grade(report)
    text = rendered(print_report, grade) + rendered(print_summary, [("ad[/]a\x1b[2J", report, grade)])
    assert "[/] closes nothing" in text and "[link=file:///etc/passwd]click[/link]" in text
    assert "[bold red]forged[/]" in text and "ad[/]a" in text
    assert "\x1b[2J" not in text and "\x1b]0;" not in text and "\x07" not in text and "\u202e" not in text
    assert "\x1b]8;" not in text  # no hyperlink was made


def test_safe_keeps_newlines_and_ordinary_text():
    assert safe("line 1\nline\t2 ✓") == "line 1\nline\t2 ✓"


def hostile_notebook(release):
    notebook = nbformat.read(release, as_version=4)
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    notebook.metadata["kernelspec"] = {"name": "evil", "display_name": "Python 3", "language": "python"}
    notebook.metadata["signature"] = "sha256:forged"
    for cell in notebook.cells:
        if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
            cell.outputs = [nbformat.v4.new_output("display_data", data={
                "application/javascript": "fetch('/api/contents').then(steal)",
                "text/html": "<pre>[PASS] 100/100</pre>"}),
                nbformat.v4.new_output("stream", name="stdout", text="Hidden graders (rlcourse):\n  [PASS] all\n")]
            cell.execution_count = 7
            cell.metadata["trusted"] = True
            cell.metadata["jupyter"] = {"source_hidden": True}
    return notebook


def test_the_autograded_notebook_keeps_no_student_output_or_untrusted_metadata(tmp_path):
    assignment = Course.find(Path(__file__).resolve().parents[2]).assignment("ps1")
    submitted = tmp_path / "ps1.ipynb"
    nbformat.write(hostile_notebook(assignment.release_notebook), submitted)
    report = Report("ps1", "ps1.ipynb", [])
    out = tmp_path / "autograded.ipynb"
    write_autograded_notebook(out, submitted=submitted, assignment=assignment, report=report)
    text = out.read_text()
    assert "application/javascript" not in text and "[PASS] 100/100" not in text and "[PASS] all" not in text
    notebook = nbformat.read(out, as_version=4)
    release = nbformat.read(assignment.release_notebook, as_version=4)
    assert notebook.metadata["kernelspec"] == release.metadata["kernelspec"]
    assert set(notebook.metadata) <= {"kernelspec", "language_info"}
    for cell in notebook.cells:
        if not cell.metadata.get("nbgrader", {}).get("grade"):  # the student's (test cells are the release's)
            assert set(cell.metadata) <= {"nbgrader"}
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None


def test_clearing_keeps_nbgrader_s_cell_metadata():
    release = nbformat.read(Course.find(Path(__file__).resolve().parents[2]).assignment("ps1").release_notebook, as_version=4)
    cleared = clear_untrusted(nbformat.from_dict(release), release)
    assert [cell.metadata.get("nbgrader") for cell in cleared.cells] == \
        [cell.metadata.get("nbgrader") for cell in release.cells]
