"""Regrade requests: a student asks for one autograded cell or one written answer of their grade
of record to be looked at again, with a reason; the staff accept (a new score and a comment) or
decline (a reason). Kept in `regrades.db`, beside `gradebook.db` and `audit.db` in the class
directory.

Why there and not in the service's `web.db`: a request is part of a grade's record, as the audit
log is. Its outcome writes the gradebook and names the request's id in the audit log, and the
staff may answer from the command line (`rlcourse regrade-requests`) as well as from the service; both
must see the same requests, and a class directory copied or backed up carries them with the
grades they explain.

What the store itself guarantees, whoever writes it:
- at most one open request per (student, assignment, cell): a partial unique index, so a second
  one is refused by SQLite even if two requests race past a route's check;
- a request is answered once: a trigger aborts any change of state away from `accepted` or
  `declined`, and answering takes the write lock before it checks the state, so two staff
  members answering at once cannot both write the gradebook;
- the thread (the student's reason, the staff's answer) only grows: messages are never updated
  or deleted (triggers, as in the audit log).

The unit of a request is the gradebook's: an autograded *cell* (its score is what the gradebook
holds; a student may name it or any item graded in it) or a written answer's cell. Two open
requests on two items of one cell would race to set one score, so the cell is what is unique.

The window (`[regrades]`, rlcourse.course.config.RegradePolicy) is per cell: it opens when the
cell's outcome is visible to the student (never before: a sealed prediction's window opens at
the student's deadline) and its score was last set, and closes `days` later.
"""
from __future__ import annotations

import dataclasses
import datetime
import sqlite3
from pathlib import Path

REQUESTS_NAME = "regrades.db"
OPEN, ACCEPTED, DECLINED = "open", "accepted", "declined"
AUTOGRADED, WRITTEN = "autograded", "written"
STUDENT, STAFF = "student", "staff"
MAX_REASON_CHARS = 4000
"""A reason or an answer longer than this is refused: a page's worth, not a file."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    student TEXT NOT NULL,
    assignment TEXT NOT NULL,
    cell TEXT NOT NULL,
    item TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('autograded', 'written')),
    state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'accepted', 'declined')),
    opened TEXT NOT NULL,
    closed TEXT,
    answered_by TEXT,
    automatic REAL,
    before REAL,
    max_score REAL NOT NULL,
    score REAL
);
CREATE UNIQUE INDEX IF NOT EXISTS one_open_request_per_cell
    ON requests (student, assignment, cell) WHERE state = 'open';
CREATE TRIGGER IF NOT EXISTS requests_answered_once BEFORE UPDATE OF state ON requests
    WHEN OLD.state != 'open'
BEGIN SELECT RAISE(ABORT, 'a regrade request is answered once'); END;
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    request INTEGER NOT NULL REFERENCES requests (id),
    author TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('student', 'staff')),
    text TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS messages_never_updated BEFORE UPDATE ON messages
BEGIN SELECT RAISE(ABORT, 'a message of a regrade request is never changed'); END;
CREATE TRIGGER IF NOT EXISTS messages_never_deleted BEFORE DELETE ON messages
BEGIN SELECT RAISE(ABORT, 'a message of a regrade request is never deleted'); END;
"""


class RequestRefused(Exception):
    """A request that cannot be opened or answered, with the HTTP status the service answers
    (404 no such request or item, 409 one is already open or it was answered, 403 outside the
    window, 422 a reason or score that is not acceptable) and one sentence saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Message:
    author: str
    role: str
    """`student` or `staff`."""
    text: str
    at: str
    """UTC, ISO 8601."""


@dataclasses.dataclass(frozen=True)
class RegradeRequest:
    id: int
    student: str
    assignment: str
    cell: str
    """The gradebook cell whose score is in question (an autograded cell or a written answer)."""
    item: str
    """What the student named: an item graded in the cell, or the cell itself."""
    kind: str
    """`autograded` or `written`."""
    state: str
    opened: str
    closed: str | None
    answered_by: str | None
    automatic: float | None
    """The cell's automatic score when the request was opened (None for a written answer)."""
    before: float | None
    """The score the grade of record held when the request was opened."""
    max_score: float
    score: float | None
    """The new score, once accepted."""
    messages: tuple[Message, ...] = ()

    def to_json(self, *, staff: bool = False) -> dict:
        """As the API returns it; who answered is the staff's to know."""
        data = {"id": self.id, "student": self.student, "assignment": self.assignment, "cell": self.cell,
                "item": self.item, "kind": self.kind, "state": self.state, "opened": self.opened,
                "closed": self.closed, "before": self.before, "max_score": self.max_score, "score": self.score,
                "messages": [{"role": message.role, "text": message.text, "at": message.at}
                             | ({"author": message.author} if staff or message.role == STUDENT else {})
                             for message in self.messages]}
        if staff:
            data.update(automatic=self.automatic, answered_by=self.answered_by)
        return data


def requests_path(class_root: Path) -> Path:
    return Path(class_root) / REQUESTS_NAME


def now_utc() -> datetime.datetime:
    """Naive UTC, as nbgrader's gradebook and the service keep times."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _iso(moment: datetime.datetime) -> str:
    return moment.replace(microsecond=0).isoformat() + "+00:00"


def checked_text(text: str, what: str) -> str:
    text = (text or "").strip()
    if not text:
        raise RequestRefused(422, f"give a {what}: what should be looked at again, and why")
    if len(text) > MAX_REASON_CHARS:
        raise RequestRefused(422, f"the {what} is {len(text)} characters; at most {MAX_REASON_CHARS}")
    return text


class RegradeRequests:
    """The requests of one class directory. Opening creates the file (and its index and
    triggers) when missing."""

    def __init__(self, class_root: Path):
        self.path = requests_path(class_root)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.connection = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self.connection.execute("PRAGMA foreign_keys = ON")
        self.connection.executescript(_SCHEMA)

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> RegradeRequests:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- opening -------------------------------------------------------------------------------
    def open(self, *, student: str, assignment: str, target: "Target", item: str, reason: str,
             now: datetime.datetime | None = None) -> RegradeRequest:
        """A new open request on `target` (one of `targets`), with the student's reason; refused
        outside the target's window or when one is already open on its cell."""
        reason = checked_text(reason, "reason")
        moment = now or now_utc()
        if not target.window.is_open(moment):
            raise RequestRefused(403, f"{target.cell}: {target.window.describe(moment)}")
        try:
            with self._transaction():
                number = self.connection.execute(
                    "INSERT INTO requests (student, assignment, cell, item, kind, opened, automatic, before, "
                    "max_score) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (student, assignment, target.cell, item, target.kind, _iso(moment), target.automatic,
                     target.score, target.max_score)).lastrowid
                self._message(number, student, STUDENT, reason, moment)
        except sqlite3.IntegrityError:
            raise RequestRefused(409, f"a regrade request on {target.cell} is already open: its answer "
                                      "comes first") from None
        return self.get(number)

    # --- answering -----------------------------------------------------------------------------
    def answer(self, request_id: int, *, accept: bool, by: str, text: str, score: float | None = None,
               write=None, now: datetime.datetime | None = None) -> RegradeRequest:
        """Accept (with `score`, the cell's new score) or decline an open request, with the
        staff's `text` (a comment, or the reason for declining). `write(request)`, when given,
        changes the grade of record first, under this store's write lock: if it raises, the
        request stays open and nothing is recorded here; two staff members answering at once
        cannot both write."""
        text = checked_text(text, "comment" if accept else "reason for declining")
        moment = now or now_utc()
        with self._transaction():
            request = self.get(request_id)
            if request is None:
                raise RequestRefused(404, "no such regrade request")
            if request.state != OPEN:
                raise RequestRefused(409, f"regrade request #{request_id} was already {request.state}")
            if accept:
                if score is None or not 0 <= score <= request.max_score:
                    raise RequestRefused(422, f"{request.cell} is worth {request.max_score:g} points: give a "
                                              f"new score from 0 to {request.max_score:g}")
                if write is not None:
                    write(request)
            self.connection.execute(
                "UPDATE requests SET state = ?, closed = ?, answered_by = ?, score = ? WHERE id = ?",
                (ACCEPTED if accept else DECLINED, _iso(moment), by, score if accept else None, request_id))
            self._message(request_id, by, STAFF, text, moment)
        return self.get(request_id)

    def reply(self, request_id: int, *, student: str, text: str,
              now: datetime.datetime | None = None) -> RegradeRequest:
        """The student's further word on their own open request."""
        text = checked_text(text, "reply")
        with self._transaction():
            request = self.get(request_id)
            if request is None or request.student != student:
                raise RequestRefused(404, "no such regrade request")
            if request.state != OPEN:
                raise RequestRefused(409, f"regrade request #{request_id} was already {request.state}")
            self._message(request_id, student, STUDENT, text, now or now_utc())
        return self.get(request_id)

    # --- reading -------------------------------------------------------------------------------
    def get(self, request_id: int) -> RegradeRequest | None:
        found = self.list(ids=(request_id,))
        return found[0] if found else None

    def list(self, *, student: str | None = None, assignment: str | None = None, cell: str | None = None,
             state: str | None = None, ids=None) -> list[RegradeRequest]:
        """Requests matching every filter given, open ones first, then newest first."""
        where, values = [], []
        for column, value in (("student", student), ("assignment", assignment), ("state", state)):
            if value is not None:
                where.append(f"{column} = ?")
                values.append(value)
        if cell is not None:  # a filter by item: its cell, or the item the student named
            where.append("(cell = ? OR item = ?)")
            values += [cell, cell]
        if ids is not None:
            where.append(f"id IN ({', '.join('?' for _ in ids)})")
            values += list(ids)
        rows = self.connection.execute(
            "SELECT id, student, assignment, cell, item, kind, state, opened, closed, answered_by, automatic, "
            "before, max_score, score FROM requests" + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY state != 'open', id DESC", values).fetchall()
        threads: dict[int, list[Message]] = {}
        if rows:
            numbers = [row[0] for row in rows]
            for request, author, role, text, at in self.connection.execute(
                    f"SELECT request, author, role, text, at FROM messages WHERE request IN "
                    f"({', '.join('?' for _ in numbers)}) ORDER BY seq", numbers):
                threads.setdefault(request, []).append(Message(author, role, text, at))
        return [RegradeRequest(*row, messages=tuple(threads.get(row[0], ()))) for row in rows]

    # --- plumbing ------------------------------------------------------------------------------
    def _message(self, request_id: int, author: str, role: str, text: str, moment: datetime.datetime) -> None:
        self.connection.execute("INSERT INTO messages (request, author, role, text, at) VALUES (?, ?, ?, ?, ?)",
                                (request_id, author, role, text, _iso(moment)))

    def _transaction(self):
        """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on an exception): the write lock is taken before
        anything is read, so a check and the write it allows are one step."""
        import contextlib

        @contextlib.contextmanager
        def transaction():
            self.connection.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self.connection.execute("ROLLBACK")
                raise
            self.connection.execute("COMMIT")

        return transaction()


# --- the window and what a student may ask about -------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Window:
    """When a student may ask about one cell: from `opens` to `closes` (naive UTC); `opens`
    None when its outcome is never shown to them under the feedback policy."""

    opens: datetime.datetime | None
    closes: datetime.datetime | None
    enabled: bool = True

    def is_open(self, now: datetime.datetime) -> bool:
        return self.enabled and self.opens is not None and self.opens <= now < self.closes

    def describe(self, now: datetime.datetime) -> str:
        """Why a request is or is not possible now, with the dates."""
        if not self.enabled:
            return "this assignment takes no regrade requests"
        if self.opens is None:
            return "its outcome is not shown to you, so no regrade request can be made on it"
        span = f"from {_iso(self.opens)} to {_iso(self.closes)}"
        if now < self.opens:
            return f"regrade requests open once its outcome is shown to you: {span}"
        if now >= self.closes:
            return f"the window for regrade requests has closed: it was {span}"
        return f"regrade requests are open {span}"


def window_of(policy, *, shown_from: datetime.datetime | None, set_at: datetime.datetime | None,
              deadline: datetime.datetime | None) -> Window:
    """The window of one cell under `policy` (RegradePolicy): it opens when the outcome is shown
    to the student (`shown_from`), not before the score was last set (`set_at`: a mark made
    late opens its own window), and under `opens = "due"` not before the deadline; it closes
    `policy.days` later."""
    if shown_from is None:
        return Window(None, None, policy.enabled)
    opens = max(moment for moment in (shown_from, set_at, deadline if policy.opens == "due" else None)
                if moment is not None)
    return Window(opens, opens + datetime.timedelta(days=policy.days), policy.enabled)


@dataclasses.dataclass(frozen=True)
class Target:
    """One thing of a student's grade of record a request can be about."""

    cell: str
    kind: str
    title: str
    items: tuple[str, ...]
    """The items graded in an autograded cell (the names a student may use for it)."""
    score: float | None
    """What the grade of record holds now."""
    automatic: float | None
    max_score: float
    window: Window


def targets(grade, *, assignment, deadline: datetime.datetime | None, graded_at: datetime.datetime,
            set_at: dict[str, datetime.datetime] | None = None) -> list[Target]:
    """Every cell of `grade` (rlcourse.grading.grade.Grade, the grade of record) a request could
    be about, each with its window: each autograded cell the report grades, and each written
    answer a TA has marked (one awaiting a mark, or re-marking, has nothing to dispute yet).

    When its outcome is shown to the student (rlcourse.course.visibility): never, if the level
    after the due date does not show items; at the deadline, for a cell with a sealed item or
    when the level before it does not show items; else when it was graded (`graded_at`).
    `set_at`: cell -> when its score was last set (the audit log's latest entry)."""
    from rlcourse.course.visibility import shows

    feedback, set_at = assignment.feedback, set_at or {}
    before_deadline = graded_at if deadline is None else deadline

    def shown_from(sealed: bool):
        if not shows(feedback.after_due, "items"):
            return None
        if sealed or not shows(feedback.before_due, "items"):
            return max(before_deadline, graded_at)
        return graded_at

    overrides = {override.cell: override.recorded for override in grade.overrides}
    cells: dict[str, list] = {}
    for item in grade.report.items:
        if item.cell:
            cells.setdefault(item.cell, []).append(item)
    found = []
    for cell, items in cells.items():
        automatic = round(sum(item.score for item in items), 6)
        window = window_of(assignment.regrades, shown_from=shown_from(any(feedback.seals(item) for item in items)),
                           set_at=set_at.get(cell), deadline=deadline)
        found.append(Target(cell, AUTOGRADED, ", ".join(item.title or item.id for item in items),
                            tuple(item.id for item in items), overrides.get(cell, automatic), automatic,
                            round(sum(item.max_score for item in items), 6), window))
    for answer in grade.written:
        if answer.score is None or answer.state != "marked":
            continue
        window = window_of(assignment.regrades, shown_from=shown_from(False), set_at=set_at.get(answer.grade_id),
                           deadline=deadline)
        found.append(Target(answer.grade_id, WRITTEN, answer.heading or answer.grade_id, (), answer.score, None,
                            answer.max_score, window))
    return found


def find_target(found: list[Target], name: str) -> Target:
    """The target a student means by `name`: a cell, or an item graded in it."""
    for target in found:
        if name == target.cell or name in target.items:
            return target
    raise RequestRefused(404, f"{name!r} is not an item or written answer of your grade of record that can be "
                              "regraded (a marked written answer, or an autograded item, by its id)")


def last_set(class_root: Path, assignment: str, student: str) -> dict[str, datetime.datetime]:
    """cell -> when the audit log last recorded a change of `student`'s score in it (naive UTC).
    Read only; none for a class without a log."""
    from rlcourse.record.audit import audit_path

    path = audit_path(class_root)
    if not path.is_file():
        return {}
    connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=60)
    try:
        rows = connection.execute("SELECT item, max(at) FROM entries WHERE assignment = ? AND student = ? "
                                  "GROUP BY item", (assignment, student)).fetchall()
    finally:
        connection.close()
    return {item: datetime.datetime.fromisoformat(at).astimezone(datetime.timezone.utc).replace(tzinfo=None)
            for item, at in rows}
