"""A class directory in nbgrader's layout, and the submissions found in it.

`submitted/<student>/<assignment>/<notebook>.ipynb` is what students handed in; `autograded/`,
`feedback/`, `reports/` and `exports/` are what grading writes beside it. Finding a submission
never trusts the folder: an unsafe student id, a missing or renamed notebook, or a link out of
the course becomes a reason, never a path to read.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from rlcourse.course.directory import Assignment

SAFE_STUDENT_ID = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*")
"""A student id, matched with `fullmatch` (never `match` with `$`, which also matches before a
trailing newline): ASCII letters, digits and _ . @ + -, not starting with a dot, never "..".
ASCII only, so no Unicode look-alike or invisible character can pass for another id."""


@dataclasses.dataclass(frozen=True)
class ClassDirectory:
    """Where a class's submissions and results live (nbgrader's course directory layout)."""

    root: Path

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"


@dataclasses.dataclass
class Found:
    """One student's folder for the assignment, as found on disk."""

    student: str
    path: Path | None = None
    problem: str | None = None
    notes: list = dataclasses.field(default_factory=list)


def student_id_problem(student: str) -> str | None:
    if not SAFE_STUDENT_ID.fullmatch(student) or ".." in student:
        return (f"student id {student!r} has characters other than letters, digits and _ . @ + - "
                "(or '..'); rename the folder to the student's id")
    return None


def find_submissions(class_dir: ClassDirectory, assignment: Assignment,
                     students: list[str] | None = None) -> list[Found]:
    """Every student folder holding this assignment, with the notebook to grade or a reason."""
    if students:
        names = list(dict.fromkeys(students))
    elif class_dir.submitted.is_dir():
        names = sorted(entry.name for entry in class_dir.submitted.iterdir()
                       if (entry / assignment.name).exists() or (entry / assignment.name).is_symlink())
    else:
        names = []
    return [_find_one(class_dir, assignment, name) for name in names]


def _find_one(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Found:
    problem = student_id_problem(student)
    if problem:
        return Found(student, problem=problem)
    folder = class_dir.submitted / student / assignment.name
    if not folder.is_dir():
        return Found(student, problem=f"no folder submitted/{student}/{assignment.name}")
    expected = folder / assignment.notebook
    others = sorted(path.name for path in folder.glob("*.ipynb") if path.name != assignment.notebook)
    notes = [f"ignored another notebook in the submission: {name}" for name in others]
    if not (expected.exists() or expected.is_symlink()):
        named = f" (found {', '.join(others)})" if others else ""
        return Found(student, problem=f"no {assignment.notebook} in the submission{named}: "
                     "the file must keep the name of the released notebook", notes=notes)
    if expected.is_symlink() or not _inside(expected.resolve(), class_dir.root.resolve()):
        return Found(student, problem=f"{assignment.notebook} is a link, not a file; "
                     "a submission must be the notebook itself", notes=notes)
    return Found(student, path=expected, notes=notes)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False
