"""The ledger: each student's report, saved beside the autograded notebook before the gradebook
is touched, so a crash after grading never costs the grading.

`autograded/<student>/<assignment>/rlcourse-report.json` holds the report, the key of what was
graded (the notebook's content hash, or the problem with it) and whether the gradebook has it
yet; a later run that finds the same key records, or skips, instead of grading again.

It also keeps `written_answers`: a hash of each written answer of the submission the gradebook
holds (which may be older than the report while a new one waits to be recorded), and of the
answer each flagged mark was made on (rlcourse.record.marks.MarkBinding). That is how a mark
entered in formgrader, which rlcourse never sees being made, is known to belong to the answer
recorded when it was made, and how `rlcourse rubric import` knows which answer is recorded now.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from rlcourse.course.class_directory import ClassDirectory, Found
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.grading.report import Report
from rlcourse.record.marks import MarkBinding, hash_answers, written_cells

if TYPE_CHECKING:
    from rlcourse.course.lateness import Timing

LEDGER_NAME = "rlcourse-report.json"
FIGURES_NAME = "rlcourse-figures"
WRITTEN_ANSWERS = "written_answers"


def ledger_path(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Path:
    return class_dir.autograded / student / assignment.name / LEDGER_NAME


def figures_folder(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Path:
    """Where the student's feedback figures are kept once drawn (`keep_in` of
    rlcourse.explain.feedback.assignment_figures): beside the ledger, on the staff's side of the
    class, never in the feedback folder that is released."""
    return class_dir.autograded / student / assignment.name / FIGURES_NAME


def read_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str) -> dict | None:
    try:
        entry = json.loads(ledger_path(class_dir, assignment, student).read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and "report" in entry and "key" in entry else None


def write_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str, *, key: str,
                 report: Report, recorded: bool, timing: Timing | None = None,
                 written: MarkBinding | None = None) -> None:
    """Save a report. `written`: the answers just recorded (MarkBinding.bind); None keeps the
    entry's record of the answers the gradebook holds, since a report saved before it is
    recorded does not change them."""
    entry = {"key": key, "recorded": recorded, "report": report.to_json()}
    if timing is not None:
        entry["timing"] = timing.to_json()
    if written is not None:
        entry[WRITTEN_ANSWERS] = written.to_json()
    else:
        kept = (read_ledger(class_dir, assignment, student) or {}).get(WRITTEN_ANSWERS)
        if kept is not None:
            entry[WRITTEN_ANSWERS] = kept
    write_atomic(ledger_path(class_dir, assignment, student), json.dumps(entry, indent=1))


def recorded_answers(class_dir: ClassDirectory, assignment: Assignment, student: str,
                     entry: dict | None = None) -> dict[str, str] | None:
    """grade_id -> answer_hash of the written answers of the submission the gradebook holds for
    `student`: the ledger's record (`entry`, else read here), or, for a ledger written before
    rlcourse kept one, the autograded notebook (the submission last recorded: it is rewritten
    only after recording); None when neither is there."""
    from rlcourse.course.rubrics import written_answers
    from rlcourse.course.submission import NotebookProblem

    entry = read_ledger(class_dir, assignment, student) if entry is None else entry
    kept = (entry or {}).get(WRITTEN_ANSWERS)
    if isinstance(kept, dict) and isinstance(kept.get("answers"), dict):
        return dict(kept["answers"])
    autograded = class_dir.autograded / student / assignment.name / assignment.notebook
    if not autograded.is_file():
        return None
    cells = written_cells(assignment.release_notebook)
    try:
        return hash_answers(written_answers(autograded, cells), cells)
    except NotebookProblem:
        return None


def mark_binding(class_dir: ClassDirectory, assignment: Assignment, found: Found, key: str) -> MarkBinding:
    """The written answers of the submission about to be recorded (`found`, graded under the
    ledger `key`) beside those recorded until now, for MarkBinding.bind. The submission is read
    only when its answers are not already in the ledger under this key."""
    from rlcourse.course.rubrics import written_answers
    from rlcourse.course.submission import NotebookProblem

    entry = read_ledger(class_dir, assignment, found.student)
    kept = (entry or {}).get(WRITTEN_ANSWERS) or {}
    recorded = recorded_answers(class_dir, assignment, found.student, entry or {})
    marked_on = kept.get("marked_on") if isinstance(kept.get("marked_on"), dict) else {}
    if kept.get("key") == key and recorded is not None:
        return MarkBinding(key, dict(recorded), recorded, dict(marked_on))
    cells = written_cells(assignment.release_notebook)
    try:
        answers = written_answers(found.path, cells) if found.path is not None else {}
    except NotebookProblem:
        answers = {}  # an unreadable notebook has no answer: a mark on a real one is stale
    return MarkBinding(key, hash_answers(answers, cells), recorded, dict(marked_on))


def submission_key(found: Found) -> str:
    """What identifies this submission's content: the notebook's bytes, or the problem with it."""
    if found.path is not None:
        digest = hashlib.sha256()
        with open(found.path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()
    return "problem:" + hashlib.sha256(found.problem.encode()).hexdigest()
