"""The ledger: each student's report, saved beside the autograded notebook before the gradebook
is touched, so a crash after grading never costs the grading.

`autograded/<student>/<assignment>/rlcourse-report.json` holds the report, the key of what was
graded (the notebook's content hash, or the problem with it) and whether the gradebook has it
yet; a later run that finds the same key records, or skips, instead of grading again.
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

if TYPE_CHECKING:
    from rlcourse.course.lateness import Timing

LEDGER_NAME = "rlcourse-report.json"


def ledger_path(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Path:
    return class_dir.autograded / student / assignment.name / LEDGER_NAME


def read_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str) -> dict | None:
    try:
        entry = json.loads(ledger_path(class_dir, assignment, student).read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and "report" in entry and "key" in entry else None


def write_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str, *, key: str,
                 report: Report, recorded: bool, timing: Timing | None = None) -> None:
    entry = {"key": key, "recorded": recorded, "report": report.to_json()}
    if timing is not None:
        entry["timing"] = timing.to_json()
    write_atomic(ledger_path(class_dir, assignment, student), json.dumps(entry, indent=1))


def submission_key(found: Found) -> str:
    """What identifies this submission's content: the notebook's bytes, or the problem with it."""
    if found.path is not None:
        digest = hashlib.sha256()
        with open(found.path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()
    return "problem:" + hashlib.sha256(found.problem.encode()).hexdigest()
