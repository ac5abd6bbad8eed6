"""`rlcourse autograde ASSIGNMENT --dry-run`: what a run would change, before it changes anything.

After a grader fix, a new release or a new engine, the staff want to see whose grade moves and
why before any student's page does. The preview grades into a scratch copy of the class
directory (the gradebook, the ledgers and the submissions, copied to a temporary folder that is
removed afterwards) with the same `autograde` a real run uses, then compares each student's
gradebook values there with the grade of record here, item by item (each graded cell and the
late penalty, as the audit log names them: rlcourse.record.audit) and by total (nbgrader's
score after the late penalty). Nothing of the class is written: not its gradebook, its ledgers,
its pages, nor its audit log. The real run then grades the same submissions the same way (the
ledger's keys decide which, here as there), and logs each change it makes.
"""
from __future__ import annotations

import dataclasses
import shutil
import tempfile
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Assignment

NOT_COPIED = ("feedback", "reports", "exports", "web", "audit.db", ".rlcourse-autograde.lock")
"""What a grading neither reads nor needs: the pages and reports it would draw again, the
service's own files, and the audit log (the scratch run's entries are thrown away)."""


@dataclasses.dataclass(frozen=True)
class Difference:
    student: str
    item: str
    now: float | None
    """The grade of record's value (None: nothing recorded)."""
    then: float | None
    """What the run would record."""


@dataclasses.dataclass
class Preview:
    differences: list[Difference]
    totals: dict[str, tuple[float | None, float | None]]
    """student -> (score now, score after the run), nbgrader's score after the late penalty."""
    statuses: dict[str, str]
    """student -> what the run would do (autograde's Outcome.status)."""

    def direction(self, student: str) -> str:
        now, then = self.totals[student]
        if now is None:
            return "new"
        if then is None or abs(then - now) < 1e-9:
            return "unchanged"
        return "up" if then > now else "down"

    def summary(self) -> dict[str, int]:
        """How many students' totals go up, down, stay unchanged, or are recorded for the first time."""
        counts = {"up": 0, "down": 0, "unchanged": 0, "new": 0}
        for student in self.totals:
            counts[self.direction(student)] += 1
        return counts


def preview_autograde(assignment: Assignment, *, class_dir: ClassDirectory, students: list[str] | None = None,
                      **grading) -> Preview:
    """Grade into a scratch copy of `class_dir` (`grading`: autograde's keyword arguments) and
    compare with the grade of record; `class_dir` is only read."""
    from rlcourse.batch.autograde import autograde

    with tempfile.TemporaryDirectory(prefix="rlcourse-dry-run-") as folder:
        scratch = ClassDirectory(Path(folder) / "class")
        if class_dir.root.is_dir():
            shutil.copytree(class_dir.root, scratch.root, symlinks=True, ignore=_not_copied(class_dir.root))
        outcomes = autograde(assignment, class_dir=scratch, students=students, **grading)
        recorded = [outcome.student for outcome in outcomes if outcome.grade is not None]
        now = _held(class_dir, assignment, recorded)
        then = _held(scratch, assignment, recorded)
    differences = [Difference(student, item, now.get(student, ({}, None))[0].get(item), value)
                   for student in recorded for item, value in then[student][0].items()
                   if now.get(student, ({}, None))[0].get(item) != value]
    return Preview(differences, {student: (now.get(student, ({}, None))[1], then[student][1]) for student in recorded},
                   {outcome.student: outcome.status for outcome in outcomes})


def _not_copied(root: Path):
    def ignore(folder, names):
        return [name for name in names if Path(folder) == root and name in NOT_COPIED]
    return ignore


def _held(class_dir: ClassDirectory, assignment: Assignment, students: list[str]) -> dict:
    """student -> (item -> value, score after the late penalty) of those the gradebook holds."""
    from nbgrader.api import MissingEntry

    from rlcourse.course.lateness import timing_of
    from rlcourse.record.audit import held_scores
    from rlcourse.record.gradebook import open_gradebook

    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        return {}
    held = {}
    with open_gradebook(class_dir.db_url) as gradebook:
        for student in students:
            try:
                score = timing_of(gradebook.find_submission(assignment.name, student)).score
            except MissingEntry:
                continue
            held[student] = (held_scores(gradebook, assignment, student), score)
    return held
