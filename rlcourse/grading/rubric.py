"""What a hidden grader writes: items with points, and failures that name a misconception.

A grader item is a plain pytest test marked with `@item(points=..., cell=...)`. It passes, or it
raises `Failure(tag, did=..., should=..., see=...)`: the tag is a documented misconception and the
three sentences tell the student what their code did, what it should do, and how to see it.
Comparisons go through `expect_close`, which tries the known buggy variants (`models`) when the
value is wrong, so the diagnosis is a measurement, not a guess.

Messages are written for students: they quote values, never grader source (pytest's own failure
text, which shows the test's code, is never used).
"""
from __future__ import annotations

import math

import numpy as np
import pytest


def item(points: float, *, cell: str | None = None, title: str = ""):
    """Mark a test as one rubric item worth `points`.

    `cell` is the grade_id of the notebook's visible test cell whose points this item adds up to,
    so totals per cell line up with nbgrader's gradebook.
    """
    return pytest.mark.item(points=points, cell=cell, title=title)


class Failure(AssertionError):
    """A graded item failed for a diagnosed reason."""

    def __init__(self, tag: str, *, did: str, should: str, see: str = ""):
        self.tag = tag
        self.did, self.should, self.see = did, should, see
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
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def fmt(value, digits: int = 6) -> str:
    """A short, readable rendering of a number or array for messages."""
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{float(array):.{digits}g}"
    flat = array.ravel()
    shown = ", ".join(f"{float(x):.{digits}g}" for x in flat[:6])
    more = f", … ({flat.size} values)" if flat.size > 6 else ""
    return f"[{shown}{more}]"


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


def close(actual, expected, *, rtol: float, atol: float) -> bool:
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    return actual.shape == expected.shape and bool(np.allclose(actual, expected, rtol=rtol, atol=atol))


def expect_close(actual, expected, *, what: str, rtol: float = 1e-4, atol: float = 1e-5,
                 models=None, see: str = "", explain: dict | None = None) -> None:
    """Pass if `actual` matches `expected`; otherwise fail with the misconception it matches.

    `models` maps a diagnosis tag to the value that misconception would produce on the same
    input (a dict, or a list of (tag, value) pairs when one tag has several forms); the first
    one that matches (and differs from the correct value) names the failure.
    `explain` maps a tag to a sentence about what that bug does, used in the message.
    """
    if close(actual, expected, rtol=rtol, atol=atol):
        return
    tag = "wrong_value"
    pairs = models.items() if isinstance(models, dict) else (models or ())
    for candidate, model_value in pairs:
        if close(actual, model_value, rtol=rtol, atol=atol) and not close(
                model_value, expected, rtol=rtol, atol=atol):
            tag = candidate
            break
    did = f"{what} gave {fmt(actual)}"
    if tag != "wrong_value" and explain and tag in explain:
        did += f", which is what {explain[tag]} gives"
    raise Failure(tag, did=did, should=f"it should be {fmt(expected)}", see=see)
