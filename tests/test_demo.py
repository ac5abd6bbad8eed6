"""The bundled demo class: up to date with the bank, and graded as its students deserve."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.demo import STUDENTS, SUBMITTED_AT, built_demo, demo_notebooks

RLCOURSE = str(Path(sys.executable).with_name("rlcourse"))
ROOT = Path(__file__).resolve().parents[1]


def test_demo_notebooks_are_built_from_the_current_bank_and_release(course):
    """Are the committed demo notebooks what `python -m rlcourse.demo --rebuild` writes?"""
    paths = demo_notebooks(course)
    for student, content in built_demo(course).items():
        assert paths[student].read_bytes() == content, \
            f"demo notebook of {student} is stale: run `python -m rlcourse.demo --rebuild`"
        assert (paths[student].parent / "timestamp.txt").read_text() == SUBMITTED_AT[student]


def row_of(table: str, student: str) -> str:
    """The text of one student's row in a rich table, across the lines it wraps onto."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"│ {student} "))
    end = start + 1
    while end < len(lines) and lines[end].startswith("│  "):
        end += 1
    return " ".join(line.replace("│", " ") for line in lines[start:end])


@pytest.mark.slow
def test_make_demo_runs_the_whole_path_and_says_where_everything_is(course):
    demo = course.root / "demo"
    # As on a fresh clone: no gradebook yet, so the table printed before the TA's marks are
    # imported holds none (a gradebook left by an earlier run would hold alan's mark already).
    # The ledgers an earlier run left are kept: recording them grades nothing.
    (demo / "gradebook.db").unlink(missing_ok=True)
    (demo / "audit.db").unlink(missing_ok=True)  # neither is in a fresh clone
    result = subprocess.run([RLCOURSE, "demo"], cwd=course.root, capture_output=True, text=True,
                            check=True, timeout=900)
    # The demo's audit log explains every score of its gradebook: nothing changed behind its back.
    assert "unexplained" not in subprocess.run([RLCOURSE, "audit", "ps1", "--json", "--course-dir", str(demo)],
                                               cwd=course.root, capture_output=True, text=True,
                                               check=True).stdout
    for path in ("gradebook.db", "feedback/alan/ps1/ps1.html", "reports/ps1/summary.html",
                 "reports/ps1/scores.csv", "exports/ps1/gradescope/ken/results.json",
                 "exports/ps1/ps1-grades.csv", "autograded/grace/ps1/ps1.ipynb",
                 "reports/ps1/similarity.html", "reports/ps1/rubric.html", "reports/ps1/rubric-template.csv"):
        assert (demo / path).is_file(), path
        assert str(demo / path.split("/")[0]) in result.stdout
    summary = result.stdout[result.stdout.index("Scores"):]
    for student in STUDENTS:
        assert student in summary
    # Every total is the gradebook's: out of 46, ps1's 42 autograded points and the 4 of its
    # written answers, which await a TA (pending) when the batch prints it.
    assert "42 / 46" in row_of(summary, "ada") and "4" in row_of(summary, "ada").split("46")[1]
    grace = row_of(summary, "grace")                        # 3 h 20 min late: 40% of her 42 off
    assert "25.2 / 46" in grace and "3 h 20 min" in grace and "-16.8" in grace
    alan = row_of(summary, "alan")                          # late, inside his extension
    assert "34 / 46" in alan and "-16.8" not in alan
    assert "clip_without_min" in summary                    # alan's bug, named
    assert "every item (unreadable_notebook)" in row_of(summary, "edsger")
    ken = row_of(summary, "ken")
    assert "42 / 46" not in ken and "training_not_improving" in ken
    assert "Traceback" not in result.stderr
    assert "42 / 46" in row_of(summary, "linus")            # grace's notebook, disguised
    similarity = (demo / "reports/ps1/similarity.html").read_text()
    assert '<strong id="flagged-count">1</strong>' in similarity
    assert "<h3>1. grace and linus:" in similarity
    assert '<tr class="borrowed"><td>linus</td><td>grace</td>' in similarity  # grace's parameters
    assert similarity.count('<tr class="borrowed">') == 1

    # A gradebook lost (or made again) after grading: the next run grades nothing and records
    # every ledger's report into it again, penalty and all.
    (demo / "gradebook.db").unlink()
    again = subprocess.run([RLCOURSE, "demo"], cwd=course.root, capture_output=True, text=True,
                           check=True, timeout=900)
    assert "graded" not in again.stdout.split("submissions in")[1].split("\n")[0].replace("not graded", "")
    grace = row_of(again.stdout[again.stdout.index("Scores"):], "grace")
    assert "25.2 / 46" in grace and "-16.8" in grace


def test_the_demo_marks_fit_explain_clippings_rubric(ps1_with_rubric):
    """demo/ta-marks.csv reads against the rubric ps1's author writes (2 criteria of 1 point)."""
    from rlcourse.batch.rubric_import import read_rows
    from rlcourse.course.rubrics import Rubrics

    marks, blank = read_rows(ROOT / "demo" / "ta-marks.csv", Rubrics.of(ps1_with_rubric), "ta-marks.csv")
    assert blank == 0 and [(m.student, m.grade_id, m.score, m.met) for m in marks] == [
        ("alan", "explain_clipping", 1.0, (2,))]


def test_the_demo_skips_the_ta_marks_with_a_warning_while_there_is_no_rubric(ps1_with_rubric, tmp_path, capsys):
    import nbformat

    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.demo import TA_MARKS, import_ta_marks

    source = ps1_with_rubric.source_notebook
    notebook = nbformat.read(source, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_clipping")
    cell.source = "### BEGIN SOLUTION\nOnly a model answer.\n### END SOLUTION"
    nbformat.write(notebook, source)
    (ps1_with_rubric.course.root / "demo").mkdir()
    shutil.copy(ROOT / "demo" / TA_MARKS, ps1_with_rubric.course.root / "demo" / TA_MARKS)
    class_dir = ClassDirectory(ps1_with_rubric.course.root / "demo")
    (class_dir.root / "gradebook.db").touch()
    assert import_ta_marks(ps1_with_rubric.course, ps1_with_rubric, class_dir) is False
    assert "demo: the TA's marks (demo/ta-marks.csv) were not imported: 1 bad row(s)" in capsys.readouterr().err
