"""`rlcourse rubric import`: a TA's CSV into nbgrader's real gradebook through its API, whole or
not at all, visible in `nbgrader export`'s totals; and, after a real autograde (slow), on the
student's feedback page and the TA's sheet.

The fast tests share one gradebook made once (nbgrader's alembic migrations take seconds) and
copy it per test; its submissions are recorded through autograde with empty reports made in
advance (tests/marking.py), so only manual scores count and no student code runs. Marks bound to
the answer they marked: a pre-filled sheet imported again, re-marking ended by an import, and
every bad row (unknown students, an answer changed since the sheet) named by its line."""
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, add_clipping_rubric
from course_copy import copy_course

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError
from rlcourse.course.directory import Course

BIN = Path(sys.executable).parent
DEMO = ROOT / "demo" / "submitted"
STUDENTS = ("ada", "alan")


def copy_ps1(target: Path, *, rubric: bool = True) -> Path:
    copy_course(target)
    if rubric:
        add_clipping_rubric(target / "source" / "ps1" / "ps1.ipynb")
    return target


def env():
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}")


def run(cwd, *args):
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=900, env=env())


def nbgrader_export(class_dir) -> dict[str, float]:
    done = run(class_dir, BIN / "nbgrader", "export")
    assert done.returncode == 0, done.stderr
    with open(Path(class_dir) / "grades.csv") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A course whose ps1 has a rubric and a class whose gradebook has ada's and alan's
    submissions, recorded through autograde with empty reports (no automatic points, no code
    run: tests/marking.py)."""
    from marking import record

    folder = tmp_path_factory.mktemp("rubric")
    course = copy_ps1(folder / "course")
    class_dir = ClassDirectory(folder / "class")
    for student in STUDENTS:
        (class_dir.submitted / student / "ps1").mkdir(parents=True)
        shutil.copy(DEMO / student / "ps1" / "ps1.ipynb", class_dir.submitted / student / "ps1")
    shutil.copy(ROOT / "demo" / "nbgrader_config.py", class_dir.root)
    record(Course(course).assignment("ps1"), class_dir)
    return course, class_dir.root


@pytest.fixture
def marked_class(template, tmp_path):
    course, class_root = template
    shutil.copytree(course, tmp_path / "course")
    shutil.copytree(class_root, tmp_path / "class")
    return Course(tmp_path / "course").assignment("ps1"), ClassDirectory(tmp_path / "class")


def write_csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def section(page: str, grade_id: str) -> str:
    """The part of a page about one written answer."""
    start = page.index(f'data-question="{grade_id}"')
    return page[start:page.index("</section>", start)]


def marks(class_dir, assignment, student):
    from rlcourse.record.marks import read_marks_from

    return read_marks_from(class_dir.db_url, assignment, student, ["explain_clipping"]).get("explain_clipping")


class TestImport:
    def test_met_criteria_set_the_manual_score_and_the_comment(self, marked_class, tmp_path):
        from nbgrader.api import Gradebook

        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir = marked_class
        with Gradebook(class_dir.db_url) as gradebook:  # autograde flagged it for formgrader
            assert gradebook.find_grade("explain_clipping", "ps1", "ps1", "alan").needs_manual_grade
        sheet = write_csv(tmp_path / "marks.csv", "student,question,group,criteria,comment\n"
                          "ada,explain_clipping,1,1;2,Both halves.\n"
                          "alan,explain_clipping,1,2,\n")
        done = import_marks(assignment, class_dir, sheet)
        assert sorted(done.marked) == [("ada", "explain_clipping", 2.0), ("alan", "explain_clipping", 1.0)]
        with Gradebook(class_dir.db_url) as gradebook:
            grade = gradebook.find_grade("explain_clipping", "ps1", "ps1", "alan")
            assert (grade.manual_score, grade.needs_manual_grade) == (1.0, False)
            comment = gradebook.find_comment("explain_clipping", "ps1", "ps1", "ada").manual_comment
        assert comment == "Rubric criteria met: 1, 2 (of 2)\n\nBoth halves."
        assert (marks(class_dir, assignment, "alan").met, marks(class_dir, assignment, "ada").comment) == (
            (2,), "Both halves.")
        # nbgrader's own export (the real CLI) now counts the TA's points.
        assert nbgrader_export(class_dir.root) == {"ada": 2.0, "alan": 1.0}
        # The sheet is written again and shows each mark beside the student.
        sheet_html = (class_dir.reports / "ps1" / "rubric.html").read_text()
        assert "(marked 1, criteria 2)" in sheet_html and "(marked 2, criteria 1;2)" in sheet_html

    def test_a_file_with_a_bad_row_is_refused_whole_with_a_line_per_row(self, marked_class, tmp_path):
        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir = marked_class
        sheet = write_csv(tmp_path / "marks.csv", "student,question,criteria\n"
                          "ada,explain_clipping,1\n"           # fine, but not written either
                          "alan,explain_clipping,3\n"          # no criterion 3
                          "alan,explain_clipping,1 and 2\n"    # not numbers
                          "ada,explain_clipping,2\n"           # twice
                          "../x,explain_clipping,1\n"          # not a student id
                          "alan,policy_loss,1\n")              # not a manual question
        with pytest.raises(CourseError) as raised:
            import_marks(assignment, class_dir, sheet)
        message = str(raised.value)
        assert message.startswith("5 bad row(s), nothing imported")
        for line, what in [(3, "criteria 1 to 2, not 3"), (4, "'1 and 2' is not a list"), (5, "marked twice"),
                           (6, "is not a student id"), (7, "'policy_loss' is not a manually graded question")]:
            assert f"marks.csv:{line}: " in message and what in message, message
        assert marks(class_dir, assignment, "ada").score is None

    def test_blank_rows_wait_and_an_unknown_submission_writes_nothing(self, marked_class, tmp_path):
        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir = marked_class
        blank = write_csv(tmp_path / "blank.csv", "student,question,criteria\nada,explain_clipping,\n")
        assert (import_marks(assignment, class_dir, blank).blank, marks(class_dir, assignment, "ada").score) == (1, None)
        unknown = write_csv(tmp_path / "unknown.csv", "student,question,criteria\nada,explain_clipping,1\n"
                            "zoe,explain_clipping,2\n")
        with pytest.raises(CourseError, match="1 bad row.*\n.*unknown.csv:3: 'zoe' has no ps1 submission in the gradebook"):
            import_marks(assignment, class_dir, unknown)
        assert marks(class_dir, assignment, "ada").score is None

    def test_a_question_without_a_rubric_is_marked_in_formgrader_instead(self, marked_class, tmp_path):
        """As explain_clipping was before its author wrote its rubric."""
        import nbformat

        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir = marked_class
        notebook = nbformat.read(assignment.source_notebook, as_version=4)
        cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_clipping")
        cell.source = "### BEGIN SOLUTION\nOnly a model answer.\n### END SOLUTION"
        nbformat.write(notebook, assignment.source_notebook)
        sheet = write_csv(tmp_path / "marks.csv", "student,question,criteria\nada,explain_clipping,1\n")
        with pytest.raises(CourseError, match="explain_clipping cannot be marked by criteria: it has no rubric"):
            import_marks(assignment, class_dir, sheet)
        assert marks(class_dir, assignment, "ada").score is None

    def test_the_command_line_prints_each_mark(self, marked_class, tmp_path):
        assignment, class_dir = marked_class
        sheet = write_csv(tmp_path / "marks.csv", "student,question,criteria,comment\nalan,explain_clipping,none,Try again.\n")
        done = run(assignment.course.root, BIN / "rlcourse", "rubric", "import", "ps1", sheet,
                   "--course-dir", class_dir.root)
        assert done.returncode == 0, done.stderr
        assert "alan explain_clipping: 0\n1 answer(s) marked, 0 row(s) left blank, 0 unchanged" in done.stdout
        assert marks(class_dir, assignment, "alan").score == 0.0


@pytest.fixture(scope="module")
def five(tmp_path_factory):
    """A class recorded through autograde (tests/marking.py): ada awaiting, bob re-marking (marked
    0, then rewritten), cy marked 1.5 in formgrader, dee rewritten and not autograded, ed marked 2."""
    from marking import class_of_five

    return class_of_five(tmp_path_factory.mktemp("five"))


@pytest.fixture
def sheet_class(five, tmp_path):
    """A copy of `five` with its marking sheet written: (assignment, class_dir, the CSV)."""
    from marking import copy_class

    from rlcourse.report.rubric_sheet import write_marking_sheet

    assignment, class_dir = five
    class_dir = copy_class(class_dir, tmp_path / "class")
    return assignment, class_dir, write_marking_sheet(assignment, class_dir).csv


def fill(path: Path, criteria: dict[str, str]) -> Path:
    """The sheet's explain_clipping rows with the criteria a TA gives each student, saved."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        if row["question"] == "explain_clipping" and row["student"] in criteria:
            row["criteria"] = criteria[row["student"]]
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


class TestMarksBoundToAnswers:
    def test_a_pre_filled_sheet_imported_as_it_is_changes_nothing(self, sheet_class):
        from marking import held

        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir, sheet = sheet_class
        before = {student: held(class_dir, student) for student in ("ada", "bob", "cy", "dee", "ed")}
        done = import_marks(assignment, class_dir, sheet)
        assert (done.marked, done.unchanged, done.pages) == ([], 1, [])  # ed's row holds ed's mark
        assert {student: held(class_dir, student) for student in before} == before
        assert done.sheet == sheet  # and the freshest sheet is the same file

    def test_importing_the_new_answer_from_a_fresh_sheet_ends_re_marking(self, sheet_class):
        from marking import mark_of, record

        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir, sheet = sheet_class
        assert mark_of(assignment, class_dir, "bob").stale
        done = import_marks(assignment, class_dir, fill(sheet, {"bob": "1;2", "ada": "2"}))
        assert sorted(done.marked) == [("ada", "explain_clipping", 1.0), ("bob", "explain_clipping", 2.0)]
        bob = mark_of(assignment, class_dir, "bob")
        assert (bob.score, bob.met, bob.stale, bob.pending) == (2.0, (1, 2), False, False)
        record(assignment, class_dir)  # bound to the answer it was made on: a re-record keeps it current
        assert not mark_of(assignment, class_dir, "bob").stale
        page = section((class_dir.feedback / "bob" / "ps1" / "ps1.html").read_text(), "explain_clipping")
        assert "(2 / 2 points)" in page

    def test_unknown_students_and_a_changed_answer_are_each_a_bad_row_with_its_line(self, sheet_class, tmp_path):
        from marking import REWRITTEN, mark_of, record, submit

        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir, sheet = sheet_class
        submit(class_dir, "ada", REWRITTEN)  # after the sheet was written: her row is of the old answer
        record(assignment, class_dir)
        with open(sheet, newline="") as handle:
            rows = {row["student"]: row for row in csv.DictReader(handle) if row["question"] == "explain_clipping"}
        marks_csv = write_csv(tmp_path / "marks.csv", "student,question,criteria,answer_hash\n"
                              f"zoe,explain_clipping,1,{rows['ada']['answer_hash']}\n"
                              f"ed,explain_clipping,1,{rows['ed']['answer_hash']}\n"        # fine, not written
                              f"ada,explain_clipping,2,{rows['ada']['answer_hash']}\n"
                              "yann,explain_clipping,none,\n")
        with pytest.raises(CourseError) as raised:
            import_marks(assignment, class_dir, marks_csv)
        assert str(raised.value).splitlines() == [
            "3 bad row(s), nothing imported:",
            f"{marks_csv}:2: 'zoe' has no ps1 submission in the gradebook (a typo, or not autograded yet?)",
            f"{marks_csv}:4: ada explain_clipping: the answer changed since this sheet was written: "
            "mark it from a fresh sheet",
            f"{marks_csv}:5: 'yann' has no ps1 submission in the gradebook (a typo, or not autograded yet?)"]
        assert mark_of(assignment, class_dir, "ed").score == 2.0 and mark_of(assignment, class_dir, "ada").score is None

    def test_an_answer_submitted_but_not_autograded_cannot_be_marked_yet(self, sheet_class):
        from rlcourse.batch.rubric_import import import_marks

        assignment, class_dir, sheet = sheet_class
        with pytest.raises(CourseError, match=r"1 bad row.*\n.*:\d+: dee explain_clipping: the answer changed"):
            import_marks(assignment, class_dir, fill(sheet, {"dee": "1"}))


@pytest.mark.slow
@pytest.mark.nbgrader
def test_after_autograde_the_import_reaches_the_feedback_page_and_export(tmp_path):
    """The whole path: autograde writes the sheet with each answer and pages that await a TA;
    the import marks alan; his page shows the criteria met and not met, ada's still waits; a
    mark made as formgrader makes it (no criteria line) reaches ada's page at the next run;
    alan rewrites his answer and is graded again: his mark waits for re-marking, kept, and the
    TA's template is not written over."""
    from marking import REWRITTEN, held, submit
    from nbgrader.api import Gradebook

    course = copy_ps1(tmp_path / "course")
    class_dir = ClassDirectory(tmp_path / "class")
    for student in STUDENTS:
        (class_dir.submitted / student / "ps1").mkdir(parents=True)
        shutil.copy(DEMO / student / "ps1" / "ps1.ipynb", class_dir.submitted / student / "ps1")
    shutil.copy(ROOT / "demo" / "nbgrader_config.py", class_dir.root)

    def rlcourse(*args):
        done = run(course, BIN / "rlcourse", *args, "--course-dir", class_dir.root)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    graded = rlcourse("autograde", "ps1", "--workers", "1", "--no-similarity")
    sheet = class_dir.reports / "ps1" / "rubric.html"
    assert f"rubric sheet: {sheet}" in graded.stdout
    before = nbgrader_export(class_dir.root)
    page = class_dir.feedback / "alan" / "ps1" / "ps1.html"
    assert "Awaiting a TA" in page.read_text()

    marks_csv = write_csv(tmp_path / "marks.csv", "student,question,criteria,comment\n"
                          "alan,explain_clipping,2,Say what the min does.\n")
    rlcourse("rubric", "import", "ps1", marks_csv)
    assert nbgrader_export(class_dir.root) == {"ada": before["ada"], "alan": before["alan"] + 1.0}
    rlcourse("export", "ps1", "--format", "csv")  # rlcourse's LMS export reads the same gradebook
    with open(class_dir.exports / "ps1" / "ps1-grades.csv") as handle:
        assert {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)} == {
            "ada": before["ada"], "alan": before["alan"] + 1.0}
    shown = section(page.read_text(), "explain_clipping")  # ps1 may have other written answers
    assert "Awaiting a TA" not in shown and "(1 / 2 points)" in shown
    assert shown.count('class="criterion met"') == 1 and shown.count('class="criterion unmet"') == 1
    assert "Say what the min does." in shown
    assert "Awaiting a TA" in section((class_dir.feedback / "ada" / "ps1" / "ps1.html").read_text(), "explain_clipping")

    with Gradebook(class_dir.db_url) as gradebook:  # as formgrader does: a score and a comment
        gradebook.find_grade("explain_clipping", "ps1", "ps1", "ada").manual_score = 1.5
        gradebook.find_grade("explain_clipping", "ps1", "ps1", "ada").needs_manual_grade = False
        gradebook.find_comment("explain_clipping", "ps1", "ps1", "ada").manual_comment = "Clear."
        gradebook.db.commit()
    again = rlcourse("autograde", "ps1", "--workers", "1", "--no-similarity")
    # Nothing is graded again; ada's ledger timing (which holds the raw score) is brought up to date.
    assert " graded" not in again.stdout and "1 unchanged" in again.stdout, again.stdout
    ada = section((class_dir.feedback / "ada" / "ps1" / "ps1.html").read_text(), "explain_clipping")
    assert "(1.5 / 2 points)" in ada and "Clear." in ada and "without ticking these criteria" in ada

    # alan rewrites his marked answer and is graded again: his mark waits for a TA, kept as it
    # was; the TA's template, filled in meanwhile, is not written over.
    template = class_dir.reports / "ps1" / "rubric-template.csv"
    filled = fill(template, {"ada": "1;2"}).read_text()
    submit(class_dir, "alan", REWRITTEN)
    resubmitted = rlcourse("autograde", "ps1", "--workers", "1", "--no-similarity")
    assert "1 graded" in resubmitted.stdout, resubmitted.stdout
    assert held(class_dir, "alan") == (1.0, True, "Rubric criteria met: 2 (of 2)\n\nSay what the min does.")
    assert nbgrader_export(class_dir.root)["alan"] == before["alan"] + 1.0  # kept, never dropped
    fresh = Path(resubmitted.stdout.split("rubric CSV to fill: ")[1].splitlines()[0])
    assert fresh.parent == template.parent and fresh.name.startswith("rubric-marks-") and fresh.is_file()
    assert template.read_text() == filled
    assert ('data-student="alan" data-state="re-marking">alan <span class="staff">(re-marking: answer changed '
            'since it was marked (was 1/2))') in sheet.read_text()


def test_a_file_without_the_columns_says_which_are_missing(tmp_path):
    from rlcourse.batch.rubric_import import read_rows
    from rlcourse.course.rubrics import Rubrics

    path = write_csv(tmp_path / "marks.csv", "student,grade_id,criteria\nada,explain_clipping,1\n")
    with pytest.raises(CourseError, match="needs a header with the columns student, question, criteria "
                                          r"\(and optionally comment, answer_hash\); missing question"):
        read_rows(path, Rubrics(()), "marks.csv")
    assert read_rows(write_csv(tmp_path / "empty.csv", "student,question,criteria\n"), Rubrics(()), "x") == ([], 0)


@pytest.mark.parametrize("text, met", [("1;3", (1, 3)), (" 3, 1 ", (1, 3)), ("2 2", (2,)), ("none", ()), ("-", ())])
def test_criteria_are_written_as_a_ta_would(text, met):
    from rlcourse.batch.rubric_import import parse_criteria

    assert parse_criteria(text) == met
