"""The feedback figures' data collected as grading collects it: a notebook (the reference, or a
bank entry) run in a real worker, and `graders/<assignment>/feedback.py`'s `collect` asked of it."""
from pathlib import Path

from rlcourse.course.bank import build_submission, load_entry, reference_student
from rlcourse.course.solutions import assignment_feedback
from rlcourse.course.submission import load_submission
from rlcourse.grading.pipeline import Grader
from rlcourse.grading.student import StudentCode

ROOT = Path(__file__).resolve().parents[2]


def collected(assignment, entries: list[str], folder: Path, *, params: tuple = (None,)) -> dict:
    """{entry name: [artifacts for each of `params`]} for bank entries of `assignment`
    ("reference" is the reference student), each entry in a fresh worker through one Grader, as
    the pipeline collects them after the graders; None in `params` is the default student's."""
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    module = assignment_feedback(assignment)
    artifacts = {}
    with Grader(assignment) as grader:
        for name in entries:
            entry = load_entry(ROOT / "tests" / "bank" / assignment.name / f"{name}.py")
            path = folder / f"{name}.ipynb"
            path.write_bytes(build_submission(entry, base))
            student = StudentCode(grader._as_graded(load_submission(path)), grader._launcher,
                                  reference_seconds=grader.reference, call_limits=grader.call_limits)
            try:
                artifacts[name] = [module.collect(student, assignment.parameters(None) if p is None else p)
                                   for p in params]
            finally:
                student.close()
    return artifacts


def graded_page(assignment, entry_name: str, folder: Path) -> tuple:
    """(report, page, path): a bank entry graded as `rlcourse grade` grades it, and its feedback
    page after the due date (every figure and message drawn)."""
    from rlcourse.course.diagnoses import load_diagnoses
    from rlcourse.explain.feedback import assignment_figures, render_feedback, todo_cell_ids
    from rlcourse.grading.grade import Grade

    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    path = folder / f"{entry_name}.ipynb"
    path.write_bytes(build_submission(load_entry(ROOT / "tests" / "bank" / assignment.name / f"{entry_name}.py"),
                                      base))
    with Grader(assignment) as grader:
        report = grader.grade(path)
    page = render_feedback(Grade(report), student="ada", submission_cells=load_submission(path).cells,
                           todo_ids=todo_cell_ids(assignment.release_notebook),
                           diagnoses=load_diagnoses(assignment.grader_dir),
                           figures=assignment_figures(assignment, report), policy=assignment.feedback,
                           level="full", due_passed=True)
    return report, page, path


def leaked_source_lines(page: str, assignment, submitted: Path) -> list:
    """Lines of 30 characters or more of the assignment's graders and solutions that appear on the
    page, except lines the student wrote themselves (a right answer may equal the reference's)."""
    import html

    text = html.unescape(page)
    own = {line.strip() for cell in load_submission(submitted).cells for line in cell.source.splitlines()}
    sources = [*(ROOT / "graders" / assignment.name).glob("*.py"),
               *(ROOT / "solutions" / assignment.name).glob("*.py")]
    lines = {(path.name, line.strip()) for path in sources
             for line in path.read_text().splitlines() if len(line.strip()) >= 30}
    return sorted((name, line) for name, line in lines if line in text and line not in own)
