"""What `rlcourse web` keeps: one SQLite file in the class directory (`web.db`), through SQLAlchemy.

Three tables: the access tokens (only their SHA-256; a token is shown once, when issued), the
browser sessions a token was exchanged for (again only hashes, each with its CSRF token), and
every submission with its state (`queued`, `running`, `graded`, `failed`) and, once graded, its
report and timing as JSON. `failed` is the service's own failure (its grading process could not
grade the notebook after `MAX_ATTEMPTS`), never a judgement of the student's work. The notebooks
themselves live on disk (rlcourse.web.intake); nbgrader's gradebook stays nbgrader's, written by
the batch's own code.

A token or session is looked up by the hash of what the client sent, so the database never holds
anything that would let a reader act as a student.
"""
from __future__ import annotations

import datetime
import hashlib
import secrets
from pathlib import Path

from sqlalchemy import Boolean, DateTime, Integer, String, Text, create_engine, event, exists, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, aliased, mapped_column, sessionmaker

QUEUED, RUNNING, GRADED, FAILED = "queued", "running", "graded", "failed"
IN_FLIGHT = (QUEUED, RUNNING)


def now() -> datetime.datetime:
    """Naive UTC, as nbgrader's gradebook keeps times."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


TOKEN_PREFIX = "rlc_"


def new_token() -> str:
    """A random token (256 bits) that a command line reads as a value: URL-safe base64 begins
    with "-" one time in 64, and `--token -Xy...` is then taken for an option ("expected one
    argument"), so every token starts with a fixed prefix, as GitHub's `ghp_` tokens do."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class Base(DeclarativeBase):
    pass


class Token(Base):
    __tablename__ = "tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user: Mapped[str] = mapped_column(String(200), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    staff: Mapped[bool] = mapped_column(Boolean, default=False)
    created: Mapped[datetime.datetime] = mapped_column(DateTime)
    revoked: Mapped[datetime.datetime | None] = mapped_column(DateTime, nullable=True)


class BrowserSession(Base):
    __tablename__ = "sessions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_hash: Mapped[str] = mapped_column(String(64), unique=True)
    token_id: Mapped[int] = mapped_column(Integer, index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    created: Mapped[datetime.datetime] = mapped_column(DateTime)


class Submission(Base):
    __tablename__ = "submissions"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    student: Mapped[str] = mapped_column(String(200), index=True)
    assignment: Mapped[str] = mapped_column(String(100), index=True)
    status: Mapped[str] = mapped_column(String(16), index=True)
    created: Mapped[datetime.datetime] = mapped_column(DateTime)
    """When the upload was accepted: the submission's time in timestamp.txt."""
    folder: Mapped[str] = mapped_column(String(300))
    """The history folder holding this upload, relative to the class directory."""
    sha256: Mapped[str] = mapped_column(String(64))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    started: Mapped[datetime.datetime | None] = mapped_column(DateTime, nullable=True)
    finished: Mapped[datetime.datetime | None] = mapped_column(DateTime, nullable=True)
    report: Mapped[str | None] = mapped_column(Text, nullable=True)
    timing: Mapped[str | None] = mapped_column(Text, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    regrade: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    """Queued again by the staff (a regrade): graded afresh even where the ledger holds its
    report, and left graded as it was if the regrade fails."""
    requested_by: Mapped[str | None] = mapped_column(String(200), nullable=True)
    """The staff account that queued the regrade: who the audit log says changed the scores."""


COLUMNS_ADDED = {"submissions": {"regrade": "BOOLEAN NOT NULL DEFAULT 0", "requested_by": "VARCHAR(200)"}}
"""Columns added since `web.db` was first written: a store made by an older rlcourse gets them
when opened (SQLite's ALTER TABLE ADD COLUMN), so an upgrade keeps the class's history."""


class Store:
    """The service's database. Each operation opens its own short session, so the request
    handlers and the grading thread never share one."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.engine = create_engine(f"sqlite:///{self.path}", connect_args={"check_same_thread": False,
                                                                           "timeout": 30})

        @event.listens_for(self.engine, "connect")
        def _pragmas(connection, _record):  # readers never wait for the grading thread's writes
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=FULL")
            cursor.close()

        Base.metadata.create_all(self.engine)
        self._add_columns()
        self.session = sessionmaker(self.engine, expire_on_commit=False)

    def _add_columns(self) -> None:
        from sqlalchemy import inspect, text

        with self.engine.begin() as connection:
            for table, columns in COLUMNS_ADDED.items():
                present = {column["name"] for column in inspect(connection).get_columns(table)}
                for name, declaration in columns.items():
                    if name not in present:
                        connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {declaration}"))

    # --- tokens --------------------------------------------------------------------------------
    def issue(self, user: str, *, staff: bool = False) -> str:
        """A new token for `user`, replacing (revoking) any earlier one; returned once, kept hashed."""
        return self.issue_all([user], staff=staff)[0][1]

    def issue_all(self, users: list[str], *, staff: bool = False) -> list[tuple[str, str]]:
        """`issue` for each user, in one transaction (a class of 2,000 is one write to disk)."""
        issued = [(user, new_token()) for user in users]
        with self.session.begin() as db:
            for user, token in issued:
                self._revoke(db, user)
                db.add(Token(user=user, token_hash=digest(token), staff=staff, created=now()))
        return issued

    def revoke(self, user: str) -> int:
        with self.session.begin() as db:
            return self._revoke(db, user)

    @staticmethod
    def _revoke(db: Session, user: str) -> int:
        tokens = db.scalars(select(Token).where(Token.user == user, Token.revoked.is_(None))).all()
        for token in tokens:
            token.revoked = now()
        return len(tokens)

    def identify(self, token: str) -> Token | None:
        """The live token `token` is, or None."""
        with self.session() as db:
            return db.scalar(select(Token).where(Token.token_hash == digest(token),
                                                 Token.revoked.is_(None)))

    def open_session(self, token: Token) -> tuple[str, str]:
        """A browser session for a token: (cookie value, CSRF token)."""
        cookie, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self.session.begin() as db:
            db.add(BrowserSession(session_hash=digest(cookie), token_id=token.id, csrf=csrf, created=now()))
        return cookie, csrf

    def open_hub_session(self, user: str, staff: bool) -> tuple[str, str]:
        """A browser session for someone the hub signed in: its own token row (the token itself
        is never known to anyone), leaving the user's rlcourse token, if any, as it was.
        Revoking the user (`--revoke`) ends these sessions too."""
        with self.session.begin() as db:
            row = Token(user=user, token_hash=digest(secrets.token_urlsafe(32)), staff=staff, created=now())
            db.add(row)
        return self.open_session(row)

    def from_session(self, cookie: str) -> tuple[Token, str] | None:
        """The live token behind a session cookie, and the session's CSRF token. Revoking the
        token ends its sessions too."""
        with self.session() as db:
            found = db.scalar(select(BrowserSession).where(BrowserSession.session_hash == digest(cookie)))
            if found is None:
                return None
            token = db.get(Token, found.token_id)
            return (token, found.csrf) if token is not None and token.revoked is None else None

    def close_session(self, cookie: str) -> None:
        with self.session.begin() as db:
            found = db.scalar(select(BrowserSession).where(BrowserSession.session_hash == digest(cookie)))
            if found is not None:
                db.delete(found)

    # --- submissions ---------------------------------------------------------------------------
    def get(self, submission_id: int) -> Submission | None:
        with self.session() as db:
            return db.get(Submission, submission_id)

    def submissions(self, *, student: str | None = None, assignment: str | None = None,
                    status: tuple[str, ...] | None = None) -> list[Submission]:
        query = select(Submission).order_by(Submission.id)
        if student is not None:
            query = query.where(Submission.student == student)
        if assignment is not None:
            query = query.where(Submission.assignment == assignment)
        if status is not None:
            query = query.where(Submission.status.in_(status))
        with self.session() as db:
            return list(db.scalars(query).all())

    def requeue_interrupted(self) -> int:
        """At start-up: a submission left `running` by a stopped service is graded again."""
        with self.session.begin() as db:
            running = db.scalars(select(Submission).where(Submission.status == RUNNING)).all()
            for submission in running:
                submission.status, submission.started = QUEUED, None
            return len(running)

    def next_queued(self) -> Submission | None:
        """The oldest queued submission, marked running (one grading thread takes it); never one
        of a student and assignment already running (a staff regrade beside a new upload): both
        would be graded from the same `submitted/` folder."""
        running = aliased(Submission)
        busy = exists().where(running.status == RUNNING, running.student == Submission.student,
                              running.assignment == Submission.assignment)
        with self.session.begin() as db:
            submission = db.scalar(select(Submission).where(Submission.status == QUEUED, ~busy)
                                   .order_by(Submission.id).limit(1))
            if submission is not None:
                submission.status, submission.started = RUNNING, now()
                submission.attempts += 1
            return submission

    def queue_again(self, submission_id: int, *, regrade: bool, by: str | None = None) -> Submission | None:
        """A staff action: a `failed` submission queued to be tried again (`regrade` False), or a
        `graded` one to be graded afresh (True) for the staff account `by`, with its attempts
        counted from zero. None when the submission is not in that state (nothing changed)."""
        with self.session.begin() as db:
            submission = db.get(Submission, submission_id)
            if submission is None or submission.status != (GRADED if regrade else FAILED):
                return None
            submission.status, submission.attempts, submission.started = QUEUED, 0, None
            submission.regrade = regrade
            submission.requested_by = by if regrade else None
            if not regrade:
                submission.error, submission.finished = None, None
            return submission

    def update(self, submission_id: int, **values) -> None:
        with self.session.begin() as db:
            submission = db.get(Submission, submission_id)
            for key, value in values.items():
                setattr(submission, key, value)
