"""The audit log: every change to a score of the grade of record, with who, when, why and what
it was before, in `audit.db` beside the gradebook.

Append-only by construction: SQLite rows behind triggers that abort any UPDATE or DELETE, so
no code path (rlcourse's or a stray `sqlite3` session's) rewrites an entry without first
dropping a trigger, which is itself a schema change a backup shows. A hash chain was the other
choice; it detects a rewrite after the fact, while the triggers refuse it at the moment it is
tried, need no verifier, and keep each entry a plain row `sqlite3 audit.db` can read.

How an entry comes to be: the log's latest `new` value of each (student, assignment, item) is
what the log can explain. Each command that changes grades first *accounts* for the gradebook as
it finds it (a value that differs from the log's was changed behind rlcourse's back, in
formgrader most likely: it is reported and recorded as `unexplained`), then makes its change,
then accounts again under its own cause. So the log follows the gradebook, the grade of record,
rather than what a command meant to write: a write that changed nothing leaves no entry.

Items: each graded cell of the notebook by its grade_id (the score it counts: a TA's
manual_score when set, else the automatic one), and `late_penalty`.
"""
from __future__ import annotations

import dataclasses
import datetime
import getpass
import json
import sqlite3
from pathlib import Path

AUDIT_NAME = "audit.db"
LATE_PENALTY = "late_penalty"
UNEXPLAINED = "unexplained"
"""The cause of a gradebook value the log cannot explain (changed outside rlcourse)."""
OVERRIDE = "override"
"""The cause of a TA's score set on an autograded cell through `rlcourse override`."""
REGRADE_REQUEST = "regrade_request"
"""The cause of a score set by accepting a student's regrade request (rlcourse.record.requests),
with the request's id and the staff's comment."""
BASELINE = "baseline"
"""What the gradebook held of a student when the log first saw it, if anything."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    by TEXT NOT NULL,
    student TEXT NOT NULL,
    assignment TEXT NOT NULL,
    item TEXT NOT NULL,
    old REAL,
    new REAL,
    cause TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_by_grade ON entries (assignment, student, item);
CREATE TRIGGER IF NOT EXISTS entries_never_updated BEFORE UPDATE ON entries
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: an entry is never updated'); END;
CREATE TRIGGER IF NOT EXISTS entries_never_deleted BEFORE DELETE ON entries
BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: an entry is never deleted'); END;
"""


@dataclasses.dataclass(frozen=True)
class Cause:
    """Why a score changed: a kind (autograde, regrade, late_policy, rubric_import, unexplained,
    service) and what pins it down (the engine and graders' versions, the due date and
    extension, the file and row, the submission id), kept as given."""

    kind: str
    detail: dict = dataclasses.field(default_factory=dict)

    def describe(self) -> str:
        return self.kind + "".join(f" {key}={value}" for key, value in self.detail.items())


@dataclasses.dataclass(frozen=True)
class Entry:
    student: str
    assignment: str
    item: str
    old: float | None
    new: float | None
    cause: Cause
    by: str
    at: str
    """UTC, ISO 8601."""

    def to_json(self) -> dict:
        return {"student": self.student, "assignment": self.assignment, "item": self.item,
                "old": self.old, "new": self.new, "cause": {"kind": self.cause.kind, **self.cause.detail},
                "by": self.by, "at": self.at}


def audit_path(class_root: Path) -> Path:
    return Path(class_root) / AUDIT_NAME


def os_user() -> str:
    """Who ran the command: the OS account (the service passes its staff account instead)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


class AuditLog:
    """The log of one class directory. Opening creates it (and its triggers) when missing."""

    def __init__(self, class_root: Path):
        self.path = audit_path(class_root)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, timeout=60)
        self.connection.executescript(_SCHEMA)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def append(self, entries: list[Entry]) -> None:
        with self.connection:  # one transaction: all of a change's entries, or none
            self.connection.executemany(
                "INSERT INTO entries (at, by, student, assignment, item, old, new, cause, detail) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(entry.at, entry.by, entry.student, entry.assignment, entry.item, entry.old, entry.new,
                  entry.cause.kind, json.dumps(entry.cause.detail, sort_keys=True, default=str))
                 for entry in entries])

    def entries(self, assignment: str, *, student: str | None = None) -> list[Entry]:
        query = ("SELECT student, assignment, item, old, new, cause, detail, by, at FROM entries "
                 "WHERE assignment = ?" + (" AND student = ?" if student else "") + " ORDER BY seq")
        rows = self.connection.execute(query, (assignment, student) if student else (assignment,))
        return [Entry(row[0], row[1], row[2], row[3], row[4], Cause(row[5], json.loads(row[6])), row[7], row[8])
                for row in rows]

    def explained(self, assignment: str, student: str) -> dict[str, float | None]:
        """item -> the latest value the log holds for it (what the log can explain)."""
        rows = self.connection.execute(
            "SELECT item, new FROM entries WHERE assignment = ? AND student = ? ORDER BY seq",
            (assignment, student))
        return {item: new for item, new in rows}


def _read_only(class_root: Path, query: str, parameters: tuple) -> list:
    """The rows `query` selects from the class's log, opened read only; none for a class without
    a log (pages and reports read it, and never create one)."""
    path = audit_path(class_root)
    if not path.is_file():
        return []
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=60)
    try:
        return connection.execute(query, parameters).fetchall()
    finally:
        connection.close()


def override_notes(class_root: Path, assignment: str, student: str) -> dict[str, tuple[str, str]]:
    """cell -> (comment, by) of the latest change the log holds for each of `student`'s items,
    when that change was an override (`rlcourse override`, or an accepted regrade request); a cell changed last in formgrader
    has ("", "unknown (outside rlcourse)"). Read only: a class without a log has none."""
    rows = _read_only(class_root, "SELECT item, cause, detail, by FROM entries WHERE assignment = ? AND "
                      "student = ? ORDER BY seq", (assignment, student))
    latest = {item: (cause, detail, by) for item, cause, detail, by in rows}
    return {item: (json.loads(detail).get("comment", ""), by) for item, (cause, detail, by) in latest.items()
            if cause in (OVERRIDE, REGRADE_REQUEST, UNEXPLAINED)}


def latest_regrade(class_root: Path, assignment: str, student: str):
    """The latest regrade of `student`'s grade in the log (rlcourse.grading.grade.Regrade: the
    changes one regrading made, which share its moment), or None. Read only."""
    from rlcourse.grading.grade import Regrade

    rows = _read_only(class_root, "SELECT item, old, new, at FROM entries WHERE assignment = ? AND student = ? "
                      "AND cause = 'regrade' ORDER BY seq", (assignment, student))
    if not rows:
        return None
    at = rows[-1][3]
    return Regrade(at, tuple((item, old, new) for item, old, new, when in rows if when == at))


def held_scores(gradebook, assignment, student: str) -> dict[str, float | None]:
    """item -> what nbgrader's open `gradebook` holds for `student`: each graded cell's score
    (the TA's manual score when set, else the automatic one; None when neither) and the late
    penalty. Empty when the gradebook has no such submission."""
    from nbgrader.api import MissingEntry

    try:
        notebook = gradebook.find_submission_notebook(Path(assignment.notebook).stem, assignment.name, student)
    except MissingEntry:
        return {}
    held = {}
    for grade in notebook.grades:
        score = grade.manual_score if grade.manual_score is not None else grade.auto_score
        held[grade.cell.name] = None if score is None else round(float(score), 6)
    held[LATE_PENALTY] = round(float(notebook.late_submission_penalty or 0.0), 6)
    return held


def now_utc() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def account(log: AuditLog, gradebook, assignment, student: str, cause: Cause, *, by: str | None = None,
            items=None) -> list[Entry]:
    """Append an entry under `cause` for every item (or each of `items`) whose gradebook value
    is not the one the log last recorded; returns them. A first recording has `old` None."""
    gradebook.db.expire_all()  # read what is committed, not what this session cached
    held = held_scores(gradebook, assignment, student)
    known = log.explained(assignment.name, student)
    at, by = now_utc(), by or os_user()
    entries = [Entry(student, assignment.name, item, known.get(item), value, cause, by, at)
               for item, value in held.items()
               if (items is None or item in items) and (item not in known and value is not None
                                                        or item in known and known[item] != value)]
    if entries:
        log.append(entries)
    return entries


def account_unexplained(log: AuditLog, gradebook, assignment, student: str, *, report=None) -> list[Entry]:
    """Before a command changes `student`'s grades: any value the log cannot explain was changed
    outside rlcourse (formgrader's override, a hand-edited gradebook). Recorded as such and, through
    `report` (a callable taking a line), said. A student the log knows nothing of whose grades
    the gradebook already holds (a class graded before the log began) is recorded as a
    `baseline`, so the first change after it has its real old value and cause."""
    if not log.explained(assignment.name, student):
        return account(log, gradebook, assignment, student,
                       Cause(BASELINE, {"found": "in the gradebook before the audit log began"}),
                       by="unknown (before the log)")
    entries = account(log, gradebook, assignment, student,
                      Cause(UNEXPLAINED, {"found": "the gradebook differs from the log: changed outside "
                                                   "rlcourse (formgrader?)"}),
                      by="unknown (outside rlcourse)")
    for entry in entries:
        if report is not None:
            report(f"{student} {assignment.name} {entry.item}: the gradebook holds {entry.new}, the audit "
                   f"log last recorded {entry.old}: changed outside rlcourse (formgrader?); recorded as unexplained")
    return entries
