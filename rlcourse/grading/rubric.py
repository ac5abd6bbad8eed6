"""What a hidden grader writes: items with points, and failures that name a misconception.

A grader item is a plain pytest test marked with `@item(points=..., cell=...)`. It passes, or it
raises `Failure(tag, did=..., should=..., see=...)`: the tag is a documented misconception and the
three sentences tell the student what their code did, what it should do, and how to see it.
Comparisons go through `Evidence` (or `expect_close` for a single case), which tries the known
buggy variants (`models`) when the value is wrong, so the diagnosis is a measurement, not a guess.

Messages are written for students: they quote values, never grader source (pytest's own failure
text, which shows the test's code, is never used).
"""
from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np
import pytest

from rlcourse.course.visibility import KINDS
from rlcourse.worker.errors import WorkerError


def item(points: float, *, cell: str | None = None, title: str = "", kind: str = "code"):
    """Mark a test as one rubric item worth `points`.

    `cell` is the grade_id of the notebook's visible test cell whose points this item adds up to,
    so totals per cell line up with nbgrader's gradebook. `kind` says what it grades (one of
    rlcourse.course.visibility.KINDS: code, value, prediction, concept): an answer a student could
    try until one passes waits for the due date before its outcome is shown.
    """
    if kind not in KINDS:
        raise ValueError(f"@item(kind={kind!r}): use one of {', '.join(KINDS)}")
    return pytest.mark.item(points=points, cell=cell, title=title, kind=kind)


class Failure(AssertionError):
    """A graded item failed for a diagnosed reason.

    `did`, `should` and `see` make the message: what the code did, what it should do, and how to
    see it for oneself. `fix`, kept apart, is the remedy itself, often a line of code to copy
    ("use jax.lax.stop_gradient(...)"): it is shown once the due date has passed, never before,
    so that feedback before the deadline teaches the misconception without handing over the line."""

    def __init__(self, tag: str, *, did: str, should: str, see: str = "", fix: str = ""):
        self.tag = tag
        self.did, self.should, self.see, self.fix = did, should, see, _sentence(fix)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        parts = [_sentence(self.did), _sentence(self.should)]
        if self.see:
            parts.append("To see it: " + _sentence(self.see))
        return " ".join(parts)


class BadOutput(Failure):
    """The value came back with the wrong type, shape, dtype, or not finite."""

    def __init__(self, did: str, should: str):
        super().__init__("bad_output", did=did, should=should)


def _sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return text
    if text.split()[0].isalpha():  # prose, not an identifier such as policy_loss(...)
        text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


SHOWN = 6
"""How many values of a long array a message shows."""


def fmt(value, digits: int = 6, *, against=None, rtol: float = 0.0, atol: float = 0.0) -> str:
    """A short, readable rendering of a number or array for messages.

    A long array shows SHOWN values. With `against` (the array it is compared with, of the same
    shape) they are the values around the first entry where the two differ beyond `rtol` and
    `atol`, and the message says which entry that is: the first six values of two arrays that
    differ later are the same six numbers twice ("gave [-1.45528, 0.522243, …]", "should be
    [-1.45528, 0.522243, …]"), which tells the student nothing."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{float(array):.{digits}g}"
    flat = array.ravel()
    if flat.size <= SHOWN:
        return "[" + ", ".join(f"{float(x):.{digits}g}" for x in flat) + "]"
    first = first_difference(array, against, rtol=rtol, atol=atol)
    start = 0 if first is None else min(max(first - 2, 0), flat.size - SHOWN)
    shown = ", ".join(f"{float(x):.{digits}g}" for x in flat[start:start + SHOWN])
    before = "…, " if start > 0 else ""
    after = ", …" if start + SHOWN < flat.size else ""
    if first is None:
        return f"[{before}{shown}{after}] ({flat.size} values)"
    where = ", ".join(str(int(i)) for i in np.unravel_index(first, array.shape))
    entries = "entries" if array.ndim > 1 else "values"
    return (f"[{before}{shown}{after}] ({flat.size} {entries}, from [{where}] on, the first that "
            f"differs)" if first == start else
            f"[{before}{shown}{after}] ({flat.size} {entries}; the first that differs is "
            f"[{where}], the {_ordinal(first - start + 1)} shown)")


def first_difference(actual, expected, *, rtol: float = 0.0, atol: float = 0.0) -> int | None:
    """The flat index of the first entry where `actual` and `expected` differ beyond the
    tolerances (None if they have different shapes, or none differs)."""
    if expected is None:
        return None
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        return None
    apart = ~np.isclose(actual, expected, rtol=rtol, atol=atol).ravel()
    return int(np.argmax(apart)) if apart.any() else None


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth", 5: "fifth", 6: "sixth"}[n]


def digits_for(rtol: float, atol: float, *values) -> int:
    """Significant digits that show a difference the check sees: six, or more where the
    tolerance is finer than six digits can tell (a check to rtol 1e-9 printed to six digits
    shows two different numbers as one). The smallest difference the check flags, relative to
    the values' size, is the larger of rtol and atol over that size."""
    finite = [np.abs(np.asarray(v, dtype=np.float64)) for v in values if np.size(v)]
    scale = max([float(np.max(v[np.isfinite(v)], initial=0.0)) for v in finite] + [0.0])
    relative = max(rtol, atol / scale if scale else 0.0) or 1e-6
    return int(min(12, max(6, math.ceil(-math.log10(relative)) + 1)))


def as_array(value, *, what: str, shape: tuple | None = None, allow_nan: bool = False) -> np.ndarray:
    """The student's value as a float64 array, or a BadOutput explaining what is wrong with it."""
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(part, np.ndarray) for part in value):
        raise BadOutput(f"{what} returned a sequence of {len(value)} arrays",
                        "it should return one array")
    try:
        array = np.asarray(value)
        if array.dtype == object or array.dtype.kind not in "biuf":
            raise TypeError
        array = array.astype(np.float64)
    except (TypeError, ValueError):
        raise BadOutput(f"{what} returned {type(value).__name__}", "it should return a numeric array") from None
    if shape is not None and tuple(array.shape) != tuple(shape):
        if array.size == math.prod(shape) and array.size == 1:
            array = array.reshape(shape)
        else:
            raise BadOutput(f"{what} returned an array of shape {tuple(array.shape)}",
                            f"it should have shape {tuple(shape)}")
    if not allow_nan and not np.all(np.isfinite(array)):
        raise BadOutput(f"{what} returned NaN or infinite values ({fmt(array)})",
                        "every value should be finite")
    return array


@dataclasses.dataclass(frozen=True)
class Field:
    """What one entry of a student's records holds, by the notebook's contract: its `kind`
    ("integer", "real" or "flag") and, for numbers, the closed range [`low`, `high`] every value
    lies in. `meaning` says it in words for the message ("cells 0 to 3")."""

    kind: str
    low: float = -math.inf
    high: float = math.inf
    meaning: str = ""

    ACCEPTS = {"integer": "iu", "real": "iuf", "flag": "b"}
    """The numpy dtype kinds each kind accepts (an integer array is a real one too)."""

    def problem(self, array: np.ndarray) -> str | None:
        """What is wrong with `array` as this field (None if nothing)."""
        if array.dtype.kind not in self.ACCEPTS[self.kind]:
            return f"{array.dtype} values"
        if self.kind == "flag":
            return None
        if self.kind == "real" and not np.all(np.isfinite(array)):
            return "NaN or infinite values"
        if array.size and (np.min(array) < self.low or np.max(array) > self.high):
            return f"values from {fmt(np.min(array))} to {fmt(np.max(array))}"
        return None

    def describe(self) -> str:
        kind = {"integer": "integers", "real": "finite numbers", "flag": "booleans"}[self.kind]
        return self.meaning or kind


def as_records(value, *, what: str, fields: dict[str, Field],
               max_elements: int = 1 << 20) -> dict[str, np.ndarray]:
    """A student's rollout records (a dict of [horizon, batch] arrays) with every key of `fields`,
    each as its Field says (the notebook's contract: integer cells within the corridor, actions
    in range, booleans, finite rewards, log-probabilities at most 0), its dtype kept
    (observations index arrays), all of one and the same 2-d shape and at most `max_elements`
    entries; or a BadOutput saying what is wrong. Checked before the grader computes anything
    with them: observations that are not integer cells made the oracle raise inside a hidden
    item, and the whole submission was never graded (issue 29); arrays shaped to broadcast
    against each other ([n, 1] with [1, n]) would make the grader's own exact computation build
    an n x n array (6000 x 6000: 38 s and 2 GB in the grader)."""
    if not isinstance(value, dict) or not set(fields) <= set(value):
        raise BadOutput(f"{what} is not the rollout's records dict",
                        "keep the given line that makes it with rollout(...)")
    records = {}
    for key, field in fields.items():
        try:
            records[key] = np.asarray(value[key])
        except (TypeError, ValueError):
            records[key] = None
        if records[key] is None or records[key].dtype == object:
            raise BadOutput(f"{what}[{key!r}] is a {type(value[key]).__name__}",
                            f"it should be an array of {field.describe()}, as rollout returns")
    shapes = {tuple(array.shape) for array in records.values()}
    shape = next(iter(shapes))
    if len(shapes) != 1 or len(shape) != 2 or math.prod(shape) > max_elements:
        raise BadOutput(f"{what} holds arrays of shapes {', '.join(map(str, sorted(shapes)))}",
                        "every entry should have the same shape [horizon, batch], as rollout returns")
    for key, field in fields.items():
        problem = field.problem(records[key])
        if problem:
            raise BadOutput(f"{what}[{key!r}] holds {problem}",
                            f"it should hold {field.describe()}, as rollout returns")
    return records


class StudentDataError(BadOutput):
    """The grader's own computation raised on a value derived from the student's (see
    `on_student_data`): the item is lost as bad_output, and `cause` is kept for the staff."""

    def __init__(self, what: str, cause: BaseException):
        self.cause = cause
        super().__init__(f"the grader could not use {what}: its computation with it raised "
                         f"{type(cause).__name__}",
                         "it should hold what the notebook says it holds (its types, shapes and "
                         "ranges)")


@contextlib.contextmanager
def on_student_data(what: str):
    """Where a grader computes with values derived from the student's (the oracle on their
    batch, a model on their parameters): an exception raised in here costs this item, as
    `bad_output` naming `what`, never the whole grading. Checking the value against the
    notebook's contract first (`as_array`, `as_records`) is what the message should rest on;
    this is the net under those checks.

    A grader's exception outside such a block stays the grader's failure (the submission is not
    graded and the staff are told): its inputs are the graders' own, the same for every student,
    and the reference run and `rlcourse check` exercise them before any student is graded, so a
    bug there shows up first on the course's own notebook. Inside the block the only input that
    differs from the reference run's is the student's, which is why it is theirs to lose; the
    plugin still logs each such exception with its traceback, so that an oracle bug on data the
    contract allows is seen and the item regraded by hand."""
    try:
        yield
    except (Failure, WorkerError):
        raise
    except Exception as error:  # noqa: BLE001 - whatever the student's data made the grader raise
        raise StudentDataError(what, error) from error


def close(actual, expected, *, rtol: float, atol: float) -> bool:
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    return actual.shape == expected.shape and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


class Evidence:
    """Comparisons gathered over all of an item's cases before a verdict, so that a diagnosis
    rests on every case: a misconception is named only if its model matches the student's value
    in each case that has one (a single coincidence, such as an all-zero answer matching a model
    that is zero on one input, names nothing)."""

    def __init__(self):
        self._cases = []

    def compare(self, actual, expected, *, what: str, rtol: float = 1e-4, atol: float = 1e-5,
                models=None, see: str | dict = "", fix: str | dict = "",
                explain: dict | None = None) -> bool:
        """Record one case; True if it matched. `models`: a dict tag -> value, or a list of
        (tag, value) pairs when one tag has several forms, or a function of no arguments
        returning either (bind its inputs now, e.g. with functools.partial): it is called only
        if the item fails, so costly models (finite differences of every bug) cost nothing for
        the students who pass.

        `see` and `fix` go to the Failure if this is the case the item fails on: `see` says how
        the student can observe the problem (an input to try, a value to print), `fix` is the
        remedy itself (a line such as `sampled = -jax.grad(...)`), kept out of the message
        because it is shown only after the due date. Either may be a dict from a tag to its own
        sentence, with "*" for every other diagnosis: a hint written for the usual mistake can
        point the wrong way for a named one (`for_tag`)."""
        ok = close(actual, expected, rtol=rtol, atol=atol)
        self._cases.append(dict(ok=ok, actual=actual, expected=expected, what=what, see=see, fix=fix,
                                explain=explain or {}, models=models, rtol=rtol, atol=atol))
        return ok

    @staticmethod
    def _weigh_models(case: dict) -> None:
        """Which of the case's bug models match the student's value, and which differ from the
        right answer (a model equal to the truth on this input cannot tell anything)."""
        models = case["models"]() if callable(case["models"]) else case["models"]
        pairs = list(models.items() if isinstance(models, dict) else (models or ()))
        close_to = lambda a, b: close(a, b, rtol=case["rtol"], atol=case["atol"])  # noqa: E731
        case["tags"] = [tag for tag, _ in pairs]
        case["matching"] = {tag for tag, value in pairs if close_to(case["actual"], value)}
        case["distinct"] = {tag for tag, value in pairs if not close_to(value, case["expected"])}

    def conclude(self) -> None:
        """Pass if every case matched; otherwise raise a Failure about the first wrong case."""
        failing = [case for case in self._cases if not case["ok"]]
        if not failing:
            return
        for case in self._cases:
            self._weigh_models(case)
        first = failing[0]
        tag = "wrong_value"
        for candidate in dict.fromkeys(t for case in self._cases for t in case["tags"]):
            relevant = [case for case in self._cases if candidate in case["tags"]]
            if (candidate in first["distinct"] and candidate in first["matching"]
                    and all(candidate in case["matching"] for case in relevant)):
                tag = candidate
                break
        tolerance = dict(rtol=first["rtol"], atol=first["atol"])
        digits = digits_for(first["rtol"], first["atol"], first["actual"], first["expected"])
        did = f"{first['what']} gave {fmt(first['actual'], digits, against=first['expected'], **tolerance)}"
        if tag != "wrong_value" and tag in first["explain"]:
            did += f", which is what {first['explain'][tag]} gives"
        should = f"it should be {fmt(first['expected'], digits, against=first['actual'], **tolerance)}"
        raise Failure(tag, did=did, should=should,
                      see=for_tag(first["see"], tag), fix=for_tag(first["fix"], tag))


def for_tag(text: str | dict, tag: str) -> str:
    """`text` itself, or, if it is a dict from tags to sentences, the sentence for `tag` (the one
    under "*" when `tag` has none of its own, else nothing)."""
    if isinstance(text, dict):
        return text.get(tag, text.get("*", ""))
    return text


def negated(models, *args) -> list:
    """`models(*args)` (a dict tag -> value) with every value's sign flipped, as (tag, value)
    pairs: for comparing minus a gradient. Pass it lazily: `partial(negated, models, ...)`."""
    return [(tag, -np.asarray(value)) for tag, value in models(*args).items()]


def expect_close(actual, expected, *, see: str | dict = "", fix: str | dict = "", **options) -> None:
    """One comparison, concluded at once (see `Evidence` for items with several cases).

    `see` (how to observe the problem) and `fix` (the remedy, shown only after the due date) go
    to the Failure as in `Evidence.compare`, which takes the other options."""
    evidence = Evidence()
    evidence.compare(actual, expected, see=see, fix=fix, **options)
    evidence.conclude()
