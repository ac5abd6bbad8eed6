"""What a student may see of a graded report, and when: the assignment's feedback policy.

`graders/<assignment>/assignment.toml` may say, for the time before the student's deadline (the
due date plus any extension) and after it::

    [feedback]
    before_due = "score"   # "none" | "score" | "items" | "full"
    after_due = "full"

- `none`:  nothing yet, not even the score;
- `score`: the total only;
- `items`: the total and each item's title and points, without messages or diagnoses; each
           written answer's TA score, or that it awaits a TA;
- `full`:  everything the feedback page shows (messages, diagnoses and their fixes, figures, the
           rubric criteria a written answer met and did not, the TA's comment).

A written answer's model answer is never shown, at any level: the rubric's criteria are feedback
on what the answer had to say, the model answer is the answer to copy next year.

Both default to `full`. An assignment without a due date is always "after due". Everything that
shows a student anything asks `student_view` (the feedback page, the Gradescope export through
`gradescope_visibility`, and any service built later); nothing else decides.
"""
from __future__ import annotations

import dataclasses
import datetime

LEVELS = ("none", "score", "items", "full")


class PolicyError(ValueError):
    """An assignment's [feedback] table names something other than the documented levels."""


@dataclasses.dataclass(frozen=True)
class FeedbackPolicy:
    before_due: str = "full"
    after_due: str = "full"

    @classmethod
    def from_table(cls, table: dict | None, *, where: str = "[feedback]") -> "FeedbackPolicy":
        table = dict(table or {})
        unknown = sorted(set(table) - {"before_due", "after_due"})
        if unknown:
            raise PolicyError(f"{where}: unknown key(s) {', '.join(unknown)} (use before_due, after_due)")
        for key, value in table.items():
            if value not in LEVELS:
                raise PolicyError(f"{where}: {key} = {value!r}; use one of {', '.join(LEVELS)}")
        return cls(**table)


def feedback_level(policy: FeedbackPolicy, *, deadline: datetime.datetime | None,
                   now: datetime.datetime) -> str:
    """The one decision: how much of a report a student may see at `now`, given their deadline
    (naive UTC, as nbgrader's gradebook keeps it: the due date plus the student's extension)."""
    if deadline is None or now >= deadline:
        return policy.after_due
    return policy.before_due


def shows(level: str, what: str) -> bool:
    """Whether `level` shows `what` (a level name: "score" is shown by score, items and full)."""
    return LEVELS.index(level) >= LEVELS.index(what)


@dataclasses.dataclass
class StudentView:
    """A report cut down to what one student may see. It has the attributes the feedback page
    reads from a Report (assignment, notebook, items, errors, score, max_score, sha256,
    failed()); `score` is None when the level hides it."""

    level: str
    assignment: str
    notebook: str
    score: float | None
    max_score: float | None
    items: list
    errors: list
    sha256: str | None
    artifacts: dict
    parameters: dict = dataclasses.field(default_factory=dict)
    """The student's own parameter values (variants): theirs at every level, never a grade."""

    def failed(self) -> list:
        return [item for item in self.items if not item.passed]


def student_view(report, *, policy: FeedbackPolicy | None = None,
                 deadline: datetime.datetime | None = None, now: datetime.datetime | None = None,
                 level: str | None = None) -> StudentView:
    """What the student may see of `report` at `now` (default: the current time, UTC), or at an
    explicit `level`. Messages, diagnoses, notebook notes and figure data need `full`; item
    titles and points need `items`; the total needs `score`."""
    if level is None:
        if policy is None:
            raise PolicyError("student_view needs a policy (and the deadline) or an explicit level")
        now = now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        level = feedback_level(policy, deadline=deadline, now=now)
    if level not in LEVELS:
        raise PolicyError(f"unknown feedback level {level!r}")
    items = []
    if shows(level, "items"):
        for item in report.items:
            copy = dataclasses.replace(item)
            if not shows(level, "full"):
                copy.message, copy.diagnosis = "", None
            items.append(copy)
    return StudentView(
        level=level, assignment=report.assignment, notebook=report.notebook,
        score=report.score if shows(level, "score") else None,
        max_score=report.max_score if shows(level, "score") else None,
        items=items, errors=list(report.errors) if shows(level, "full") else [],
        sha256=report.sha256, artifacts=dict(report.artifacts) if shows(level, "full") else {},
        parameters=dict(getattr(report, "parameters", {})))


def gradescope_visibility(policy: FeedbackPolicy, what: str) -> str:
    """When Gradescope may show `what` ("score", "items" or "full"), in Gradescope's own terms:
    `visible` (before the due date already), `after_due_date`, or `hidden` (never by this
    policy). Decided by asking `feedback_level` on either side of a deadline."""
    deadline = datetime.datetime(2000, 1, 2)
    before = feedback_level(policy, deadline=deadline, now=deadline - datetime.timedelta(seconds=1))
    after = feedback_level(policy, deadline=deadline, now=deadline)
    if shows(before, what):
        return "visible"
    if shows(after, what):
        return "after_due_date"
    return "hidden"
