"""A submission's grade of record, and what a student may see of it.

nbgrader's gradebook is the one record of a grade: each cell's automatic or manual score, and the
late penalty the course's policy charged. A `Grade` is that record for one submission together
with what explains it: the hidden graders' items (the report) behind the autograded cells, each
written answer with its TA mark and its state, any TA override of an autograded cell, and when the
notebook came in. Every view of a grade (the terminal, the feedback page in the batch and in the
service, the class report, `rlcourse grade --json`, `rlcourse submit --json`, the exports,
Gradescope) is drawn from a Grade, so they all state one total on one basis:

- `raw_score`: automatic points (with any TA override) plus the written answers' marks, as
  nbgrader adds them up; `max_score`: every graded cell's points, written answers included;
- `pending`: the points of written answers no TA has marked yet, or marked on an answer the
  student has changed since (their old mark still counts in the gradebook until it is redone:
  never kept silently, never dropped silently);
- `penalty` and `score`: nbgrader's late penalty and final score (raw minus penalty, at least 0).

Built from the gradebook by rlcourse.record.grades; from a report alone (`rlcourse grade`,
Gradescope's container) every written answer is awaiting a TA.

`student_view` cuts a Grade to what the assignment's feedback policy (rlcourse.course.visibility)
shows a student at a given moment: the level, the items sealed until the due date, the remedies
kept back before it.
"""
from __future__ import annotations

import dataclasses
import datetime

from rlcourse.course.visibility import FeedbackPolicy, PolicyError, before_due, feedback_level, shows
from rlcourse.grading.report import ItemResult, Report

AWAITING, MARKED, REMARKING = "awaiting", "marked", "re-marking"
FORM_PROBLEMS = frozenset({"missing_name", "bad_output", "not_implemented", "raised", "timeout",
                           "worker_crashed", "bad_reply", "unreadable_notebook", "grader_error"})
"""Diagnoses that say an answer could not be read or run at all, not whether it is right: a
sealed item shows them before the due date (they reveal nothing of the right answer, and the
student must be able to mend the form in time)."""


def _round(value: float) -> float:
    return round(float(value), 6)


@dataclasses.dataclass(frozen=True)
class Criterion:
    """One rubric criterion as a student may see it: never the model answer."""

    number: int
    points: float
    text: str
    met: bool | None
    """None when the mark does not say (a score entered in formgrader without criteria)."""


@dataclasses.dataclass(frozen=True)
class Written:
    """One manually graded answer in a grade."""

    grade_id: str
    max_score: float
    score: float | None = None
    """The TA's mark as the gradebook holds it; kept (and counted) while re-marking."""
    state: str = AWAITING
    """`awaiting` (no mark yet), `marked`, or `re-marking` (marked, but the answer has changed)."""
    heading: str = ""
    criteria: tuple[Criterion, ...] = ()
    comment: str = ""
    answer: str | None = None
    """The student's own answer, as submitted (None: not in the notebook)."""

    @property
    def pending(self) -> bool:
        return self.state != MARKED

    def to_json(self, *, full: bool = True) -> dict:
        data = {"id": self.grade_id, "max_score": self.max_score, "score": self.score,
                "state": self.state}
        if full:
            data.update(criteria=[dataclasses.asdict(criterion) for criterion in self.criteria],
                        comment=self.comment)
        return data


@dataclasses.dataclass(frozen=True)
class Override:
    """An autograded cell whose gradebook score a TA set by hand (`rlcourse override`, or
    formgrader): the original, automatic score is kept beside it."""

    cell: str
    graded: float
    """What the hidden items behind the cell add up to: the original score."""
    recorded: float
    """What the gradebook holds: the TA's score."""
    comment: str = ""
    """Why, in the staff's words (`rlcourse override --comment`; formgrader keeps none)."""
    by: str = ""
    """Who, as the audit log has it (empty when the log does not know)."""


@dataclasses.dataclass(frozen=True)
class Regrade:
    """The latest regrade that changed this grade (the same submission graded again after the
    graders or the engine changed), as the audit log has it: when, and each item's scores."""

    at: str
    """UTC, ISO 8601."""
    changes: tuple[tuple[str, float | None, float | None], ...]
    """(cell or `late_penalty`, before, after)."""


@dataclasses.dataclass
class Grade:
    report: Report
    written: tuple[Written, ...] = ()
    overrides: tuple[Override, ...] = ()
    timing: object = None
    """rlcourse.course.lateness.Timing: the submission's time, deadline and late penalty."""
    recorded: tuple[float, float] | None = None
    """(score, maximum) of the autograded cells as the gradebook holds them (nbgrader's own sums:
    a TA's override and extra credit included, every cell's points in the maximum); None for a
    grade no gradebook holds, whose autograded part is the report's."""
    regrade: Regrade | None = None
    """The latest regrade that changed it, for the student's page to say what changed and why."""

    @classmethod
    def from_report(cls, report: Report, written_cells=(), *, timing=None) -> "Grade":
        """A grade no gradebook holds yet: every written answer (`(grade_id, points)` pairs, the
        release's manually graded cells) awaits a TA."""
        return cls(report, tuple(Written(grade_id, float(points)) for grade_id, points in written_cells),
                   timing=timing)

    @property
    def assignment(self) -> str:
        return self.report.assignment

    @property
    def auto_score(self) -> float:
        if self.recorded is not None:
            return _round(self.recorded[0])
        return _round(self.report.score + sum(o.recorded - o.graded for o in self.overrides))

    @property
    def auto_max(self) -> float:
        return _round(self.recorded[1]) if self.recorded is not None else self.report.max_score

    @property
    def written_score(self) -> float:
        return _round(sum(answer.score for answer in self.written if answer.score is not None))

    @property
    def written_max(self) -> float:
        return _round(sum(answer.max_score for answer in self.written))

    @property
    def raw_score(self) -> float:
        return _round(self.auto_score + self.written_score)

    @property
    def max_score(self) -> float:
        return _round(self.auto_max + self.written_max)

    @property
    def pending(self) -> float:
        """Points of written answers that await a TA (unmarked, or marked on an older answer)."""
        return _round(sum(answer.max_score for answer in self.written if answer.pending))

    @property
    def penalty(self) -> float:
        return float(getattr(self.timing, "penalty", 0.0) or 0.0)

    @property
    def score(self) -> float:
        """The final score, as `nbgrader export` gives it: raw score minus penalty, at least 0."""
        return _round(max(0.0, self.raw_score - self.penalty))

    def to_json(self) -> dict:
        """The grade as `rlcourse grade --json` prints it (docs/architecture.md): the report's
        keys, with `score` and `max_score` on the gradebook's basis, beside the parts."""
        data = self.report.to_json()
        data.update(score=self.score, max_score=self.max_score, raw_score=self.raw_score,
                    late_penalty=self.penalty, pending=self.pending, auto_score=self.auto_score,
                    auto_max_score=self.auto_max,
                    written=[answer.to_json() for answer in self.written],
                    overrides=[dataclasses.asdict(override) for override in self.overrides])
        if self.timing is not None:
            data["timing"] = self.timing.to_json()
        return data


# --- what a student may see ----------------------------------------------------------------------
@dataclasses.dataclass
class ShownItem(ItemResult):
    """An item as a student sees it. A sealed item (its outcome waits for the due date) carries
    its id, title, kind and points only: `score` and `passed` are None."""

    sealed: bool = False

    def to_json(self) -> dict:
        return dict(super().to_json(), sealed=self.sealed)


@dataclasses.dataclass
class StudentView:
    """A grade cut down to what one student may see at one moment. Totals are None when the
    level hides them; before the due date they leave out the sealed items' points."""

    level: str
    before_due: bool
    assignment: str
    notebook: str
    score: float | None
    """The final score shown (after any late penalty)."""
    max_score: float | None
    raw_score: float | None
    penalty: float
    pending: float | None
    """Points of written answers awaiting a TA."""
    sealed_points: float
    """Points of items whose outcome waits for the due date (left out of the totals)."""
    items: list[ShownItem]
    written: list[Written]
    errors: list[str]
    sha256: str | None
    artifacts: dict
    timing: object = None
    parameters: dict = dataclasses.field(default_factory=dict)
    """The student's own parameter values (variants): theirs at every level, never a grade."""
    rlcourse_version: str = "unknown"
    """The engine that graded it (the report's): shown at every level, never a grade."""
    overrides: list[Override] = dataclasses.field(default_factory=list)
    """The cells whose score the staff changed, with their comment (from `items`; none of a
    sealed cell before the due date). Who changed it is the staff's, not shown."""
    regrade: Regrade | None = None
    """The latest regrade's changes (from `items`; none of a sealed cell before the due date)."""

    def failed(self) -> list[ShownItem]:
        return [item for item in self.items if item.passed is False]

    @property
    def show_fix(self) -> bool:
        """Remedies (a grader's fix, a diagnosis's "how to fix it") wait for the due date."""
        return not self.before_due

    def to_json(self) -> dict:
        """The view as the service's API returns it: the shape of `rlcourse grade --json`."""
        return {"assignment": self.assignment, "notebook": self.notebook, "level": self.level,
                "before_due": self.before_due, "score": self.score, "max_score": self.max_score,
                "raw_score": self.raw_score, "late_penalty": self.penalty if self.score is not None else None,
                "pending": self.pending, "sealed_points": self.sealed_points,
                "items": [item.to_json() for item in self.items],
                "written": [answer.to_json(full=shows(self.level, "full")) for answer in self.written],
                "errors": list(self.errors), "parameters": dict(self.parameters),
                "rlcourse_version": self.rlcourse_version}


def student_view(grade: Grade, *, policy: FeedbackPolicy | None = None,
                 deadline: datetime.datetime | None = None, now: datetime.datetime | None = None,
                 level: str | None = None, due_passed: bool = True) -> StudentView:
    """What the student may see of `grade` at `now` (default: the current time, UTC) under
    `policy` and their `deadline`; or at an explicit `level`, then before the due date only if
    `due_passed` is False (a page written for `nbgrader release_feedback` is read after it).

    Messages, diagnoses, notebook notes and figure data need `full`; item titles and points and
    the written answers' states need `items`; the totals need `score`. Before the due date, items
    the policy seals show that an answer was recorded (or why it could not be read) and nothing
    else, and their points are left out of every total shown; no remedy is shown."""
    policy = policy or FeedbackPolicy()
    if level is None:
        now = now or datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        level = feedback_level(policy, deadline=deadline, now=now)
        early = before_due(deadline, now)
    else:
        early = not due_passed
    if level not in ("none", "score", "items", "full"):
        raise PolicyError(f"unknown feedback level {level!r}")
    report = grade.report
    full = shows(level, "full")
    sealed = {item.id for item in report.items if early and policy.seals(item)}
    items = [_shown(item, sealed=item.id in sealed, full=full, early=early) for item in report.items] \
        if shows(level, "items") else []
    held_back = [item for item in report.items if item.id in sealed]
    sealed_cells = {item.cell for item in held_back}
    shown_raw = grade.raw_score - sum(item.score for item in held_back) - sum(
        override.recorded - override.graded for override in grade.overrides if override.cell in sealed_cells)
    shown_max = grade.max_score - sum(item.max_score for item in held_back)
    with_score = shows(level, "score")
    return StudentView(
        level=level, before_due=early, assignment=grade.assignment, notebook=report.notebook,
        score=_round(max(0.0, shown_raw - grade.penalty)) if with_score else None,
        max_score=_round(shown_max) if with_score else None,
        raw_score=_round(shown_raw) if with_score else None,
        penalty=grade.penalty if with_score else 0.0,
        pending=grade.pending if with_score else None,
        sealed_points=_round(sum(item.max_score for item in held_back)),
        items=items, written=[_written(answer, level) for answer in grade.written] if shows(level, "items") else [],
        errors=list(report.errors) if full else [], sha256=report.sha256,
        artifacts=dict(report.artifacts) if full else {}, timing=grade.timing,
        parameters=dict(report.parameters), rlcourse_version=report.rlcourse_version,
        overrides=[dataclasses.replace(override, by="") for override in grade.overrides
                   if override.cell not in sealed_cells] if shows(level, "items") else [],
        regrade=_regrade_shown(grade.regrade, sealed_cells) if shows(level, "items") else None)


def _regrade_shown(regrade: Regrade | None, sealed_cells: set) -> Regrade | None:
    """A regrade without the changes of cells sealed until the due date (their scores would
    tell the outcome); None when nothing is left to say."""
    if regrade is None:
        return None
    changes = tuple(change for change in regrade.changes if change[0] not in sealed_cells)
    return Regrade(regrade.at, changes) if changes else None


def _shown(item: ItemResult, *, sealed: bool, full: bool, early: bool) -> ShownItem:
    fields = {field.name: getattr(item, field.name) for field in dataclasses.fields(ItemResult)}
    # How long an item took is the staff's (a slow student call); a student is not shown it, and
    # a sealed item's time could tell a right answer's path from a wrong one's.
    shown = ShownItem(**dict(fields, seconds=0.0), sealed=sealed)
    if sealed and item.diagnosis not in FORM_PROBLEMS:
        shown.score, shown.passed, shown.message, shown.diagnosis = None, None, "", None
    if early:
        shown.fix = ""
    if not full:
        shown.message, shown.diagnosis, shown.fix = "", None, ""
    return shown


def _written(answer: Written, level: str) -> Written:
    """A written answer at `level`: its state and mark from `items`; the criteria and the TA's
    comment at `full`; a mark being redone shows no old criteria or comment (they were about
    another answer)."""
    if shows(level, "full") and answer.state == MARKED:
        return answer
    return dataclasses.replace(answer, criteria=(), comment="")
