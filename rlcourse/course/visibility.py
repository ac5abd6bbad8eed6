"""What a student may see of a grade, and when: the assignment's feedback policy.

`graders/<assignment>/assignment.toml` may say, for the time before the student's deadline (the
due date plus any extension) and after it::

    [feedback]
    before_due = "score"   # "none" | "score" | "items" | "full"
    after_due = "full"

- `none`:  nothing yet, not even the score;
- `score`: the total only;
- `items`: the total and each item's title and points, without messages or diagnoses; each
           written answer's TA score, or that it awaits a TA;
- `full`:  everything the feedback page shows (messages, diagnoses, figures, the rubric criteria
           a written answer met and did not, the TA's comment).

Both default to `full`. An assignment without a due date is always "after due".

**Answers a student could try until one passes wait for the due date.** An item whose answer is
a choice or a few numbers (a prediction, a concept check, an exercise's value: rlcourse.grading.
rubric.KINDS) measures nothing once the student has seen its outcome: they change the answer
and submit again. So before the student's deadline such an item shows only that an answer was
recorded (or, if it could not be read at all, why: a missing or computed answer is a problem of
form, and saying so reveals nothing of the right answer); its points are left out of the total
the student sees, and come back with its outcome once the deadline has passed. The grade of
record (the gradebook, the exports, the staff's views) holds every item's points from the first
grading: only what the student is shown waits. When each kind's outcome may be shown, and any
single item's, is the policy's too::

    [feedback.kinds]          # the defaults
    code = "visible"          # a function the graders call on inputs of their own
    value = "after_due"
    prediction = "after_due"
    concept = "after_due"

    [feedback.items]          # one item, by the id its report gives it
    "exercises.horizon_change" = "visible"

`visible` shows the item as the level allows, before and after the due date; `after_due` seals it
until the student's deadline. Whatever an item's visibility, before the due date no view shows a
remedy (a grader's `fix`, a diagnosis's "how to fix it"): the misconception, the inputs, what the
code gave and how to see it are the feedback; the line to copy waits for the due date.

A written answer's model answer is never shown, at any level: the rubric's criteria are feedback
on what the answer had to say, the model answer is the answer to copy next year.

Everything that shows a student anything asks `student_view` (rlcourse.grading.grade) with this
policy: the feedback page, the service, the Gradescope results (`gradescope_visibility`).
"""
from __future__ import annotations

import dataclasses
import datetime

LEVEL_MEANINGS = {
    "none": "nothing yet, not even the score",
    "score": "the total only",
    "items": "the total and each item's title and points, without messages or diagnoses; each "
             "written answer's TA score, or that it awaits a TA",
    "full": "everything the feedback page shows: messages, diagnoses, figures, the rubric criteria "
            "a written answer met and did not, the TA's comment",
}
"""What each level shows a student, least first (the documentation's reference is drawn from it)."""
LEVELS = tuple(LEVEL_MEANINGS)
KINDS = {
    "code": "a function of the student's, called by the graders on inputs of their own",
    "value": "an exercise's value left in a variable (a number or a few), which a student who saw "
             "the expected value could type in",
    "prediction": "a prediction written before the experiment it predicts is run",
    "concept": "a concept check's answer: a letter or a number",
}
"""What an item grades (`@item(kind=...)`, rlcourse.grading.rubric)."""
WHEN = ("visible", "after_due")
DEFAULT_KINDS = (("code", "visible"), ("value", "after_due"), ("prediction", "after_due"),
                 ("concept", "after_due"))


class PolicyError(ValueError):
    """An assignment's [feedback] table names something other than the documented levels."""


@dataclasses.dataclass(frozen=True)
class FeedbackPolicy:
    before_due: str = "full"
    """How much a student sees before their deadline (the due date plus any extension)."""
    after_due: str = "full"
    """How much a student sees from their deadline on (always, for an assignment without one)."""
    kinds: tuple[tuple[str, str], ...] = DEFAULT_KINDS
    """(kind, when) for every kind of item: `visible` or `after_due`."""
    items: tuple[tuple[str, str], ...] = ()
    """(item id, when) for the items whose visibility is not their kind's."""

    def when(self, item) -> str:
        """`visible` or `after_due` for an item (anything with `.id` and `.kind`)."""
        return dict(self.items).get(item.id) or dict(self.kinds).get(getattr(item, "kind", "code"), "visible")

    def seals(self, item) -> bool:
        """Whether the item's outcome waits for the due date."""
        return self.when(item) == "after_due"

    @classmethod
    def from_table(cls, table: dict | None, *, where: str = "[feedback]") -> "FeedbackPolicy":
        table = dict(table or {})
        unknown = sorted(set(table) - {"before_due", "after_due", "kinds", "items"})
        if unknown:
            raise PolicyError(f"{where}: unknown key(s) {', '.join(unknown)} "
                              "(use before_due, after_due, kinds, items)")
        for key in ("before_due", "after_due"):
            if key in table and table[key] not in LEVELS:
                raise PolicyError(f"{where}: {key} = {table[key]!r}; use one of {', '.join(LEVELS)}")
        kinds = dict(DEFAULT_KINDS)
        for kind, when in _when_table(table.get("kinds", {}), f"{where} kinds").items():
            if kind not in KINDS:
                raise PolicyError(f"{where} kinds: unknown kind {kind!r} (use {', '.join(KINDS)})")
            kinds[kind] = when
        items = _when_table(table.get("items", {}), f"{where} items")
        return cls(before_due=table.get("before_due", "full"), after_due=table.get("after_due", "full"),
                   kinds=tuple(kinds.items()), items=tuple(sorted(items.items())))


def _when_table(table, where: str) -> dict[str, str]:
    if not isinstance(table, dict):
        raise PolicyError(f"{where}: must be a table of names = \"visible\" or \"after_due\"")
    for name, when in table.items():
        if when not in WHEN:
            raise PolicyError(f"{where}: {name} = {when!r}; use \"visible\" or \"after_due\"")
    return dict(table)


def feedback_level(policy: FeedbackPolicy, *, deadline: datetime.datetime | None,
                   now: datetime.datetime) -> str:
    """The one decision: how much of a report a student may see at `now`, given their deadline
    (naive UTC, as nbgrader's gradebook keeps it: the due date plus the student's extension)."""
    return policy.before_due if before_due(deadline, now) else policy.after_due


def shows(level: str, what: str) -> bool:
    """Whether `level` shows `what` (a level name: "score" is shown by score, items and full)."""
    return LEVELS.index(level) >= LEVELS.index(what)


def before_due(deadline: datetime.datetime | None, now: datetime.datetime) -> bool:
    """Whether `now` is before the student's deadline (none: never)."""
    return deadline is not None and now < deadline


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
