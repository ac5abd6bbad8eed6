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
