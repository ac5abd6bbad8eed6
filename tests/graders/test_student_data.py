"""Whatever a submission sends back, the graders never fail on it (issue 29, finding 7).

Every value a hidden grader computes with came from the student's process: a function's result,
a notebook variable, records the given code returned. A value that breaks the notebook's
contract (observations that are not integer cells, an array of strings, NaN, a dict of another
shape) must cost the item that received it, as `bad_output` or another documented tag, and never
raise inside the grader, which would leave the whole submission "not graded" on every run.

The reference notebook is graded once per assignment through a recorder (every request and its
reply, keyed by what was asked); then each hostile twist of those replies is graded again
without a worker, answering every request from the recording with the twisted reply. An item
may fail any way it likes except `grader_error`.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from rlcourse.course.submission import load_submission
from rlcourse.grading.pipeline import Grader
from rlcourse.grading.student import StudentCode
from rlcourse.worker import protocol
from rlcourse.worker.errors import WorkerError

pytestmark = [pytest.mark.slow]


def request_key(op: str, function: str, args, kwargs, wrt=None) -> str:
    """What was asked, as a digest: the operation, the function and every argument's bytes."""
    encoded = protocol.encode({"op": op, "function": function, "args": list(args), "kwargs": kwargs,
                               "wrt": wrt})
    return hashlib.sha256(json.dumps(encoded, sort_keys=True).encode()).hexdigest()


class Recorder:
    """A StudentCode that keeps every reply (or the WorkerError raised) under its request."""

    def __init__(self, student: StudentCode):
        self.student = student
        self.submission = student.submission
        self.timings: dict[str, float] = {}
        self.replies: dict[str, object] = {}

    def _keep(self, key, ask):
        try:
            reply = ask()
        except WorkerError as error:
            self.replies[key] = error
            raise
        self.replies[key] = reply
        return reply

    def call(self, function, *args, compiled=False, **kwargs):
        return self._keep(request_key("call", function, args, kwargs),
                          lambda: self.student.call(function, *args, compiled=compiled, **kwargs))

    def value_and_grad(self, function, *args, wrt, compiled=False, **kwargs):
        return self._keep(request_key("grad", function, args, kwargs, wrt),
                          lambda: self.student.value_and_grad(function, *args, wrt=wrt, compiled=compiled,
                                                              **kwargs))

    def get(self, *names):
        return self._keep(request_key("get", "", names, {}),
                          lambda: self.student.get(*names))


class Replayed:
    """Answers every request from a recording, each reply passed through `twist` first; a
    request the reference never made raises as a function of the student's would."""

    def __init__(self, recorder: Recorder, twist):
        self.submission = recorder.submission
        self.timings: dict[str, float] = {}
        self._replies = recorder.replies
        self._twist = twist

    def _answer(self, key):
        if key not in self._replies:
            raise WorkerError("raised", "ValueError: an input the recording does not hold")
        reply = self._replies[key]
        if isinstance(reply, WorkerError):
            raise reply
        return self._twist(reply)

    def call(self, function, *args, compiled=False, **kwargs):
        return self._answer(request_key("call", function, args, kwargs))

    def value_and_grad(self, function, *args, wrt, compiled=False, **kwargs):
        value, grad = self._answer(request_key("grad", function, args, kwargs, wrt))
        return value, grad

    def get(self, *names):
        return self._answer(request_key("get", "", names, {}))


def twisting(leaf, kinds="biuf"):
    """A twist that replaces every array (and number) of a dtype kind in `kinds` in a reply by
    `leaf(array)`, keeping dicts, lists and tuples."""
    def twist(value):
        if isinstance(value, dict):
            return {key: twist(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(twist(item) for item in value)
        if isinstance(value, (np.ndarray, np.generic, float, int)) and np.asarray(value).dtype.kind in kinds:
            return leaf(np.asarray(value))
        return value
    return twist


def shifted_cells(value):
    """The finding's attack: records whose observations are cells plus a half."""
    if isinstance(value, dict):
        return {key: (np.asarray(item) + 0.5 if key == "observation" else shifted_cells(item))
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(shifted_cells(item) for item in value)
    return value


TWISTS = {
    "observations_off_the_cells": shifted_cells,
    "every_array_plus_a_half": twisting(lambda a: a + 0.5),
    "every_array_nan": twisting(lambda a: np.full(a.shape, np.nan)),
    "every_array_huge": twisting(lambda a: np.full(a.shape, 1e300)),
    "every_array_minus_seven": twisting(lambda a: np.full(a.shape, -7, dtype=np.int64)),
    "every_array_strings": twisting(lambda a: np.full(a.shape, "x")),
    "every_array_empty": twisting(lambda a: np.zeros((0,) * max(a.ndim, 1))),
    "every_array_one_more_axis": twisting(lambda a: a[..., None]),
    "every_array_a_list_of_strings": twisting(lambda a: ["x"] * 3),
    "every_array_none": twisting(lambda a: None),
    "every_array_booleans": twisting(lambda a: np.ones(a.shape, dtype=bool)),
    "every_array_huge_integers": twisting(lambda a: np.full(a.shape, 2 ** 62, dtype=np.int64)),
    "integers_plus_a_half": twisting(lambda a: a + 0.5, kinds="iu"),
    "integers_out_of_range": twisting(lambda a: a + 5, kinds="iu"),
    "floats_nan": twisting(lambda a: np.where(np.ones(a.shape, bool), np.nan, a), kinds="f"),
    "floats_positive": twisting(lambda a: np.abs(a) + 1.0, kinds="f"),
    "flags_as_integers": twisting(lambda a: a.astype(np.int64) * 2, kinds="b"),
}


@pytest.fixture(scope="module", params=["ps1", "ps2", "ps3"])
def recorded(request, course):
    """The assignment's grader and the reference notebook's requests and replies."""
    assignment = course.assignment(request.param)
    with Grader(assignment) as grader:
        submission = grader._as_graded(load_submission(assignment.source_notebook))
        student = StudentCode(submission, grader._launcher, reference_seconds=grader.reference,
                              call_limits=grader.call_limits)
        recorder = Recorder(student)
        try:
            items, internal = grader._run_graders(recorder, assignment.parameters(None),
                                                  notebook="reference")
        finally:
            student.close()
        assert not internal and all(item.passed for item in items), [
            (item.id, item.message) for item in items if not item.passed]
        yield grader, assignment, recorder


@pytest.mark.hostile("replies-outside-the-contract")
@pytest.mark.parametrize("twist", sorted(TWISTS))
def test_no_reply_makes_a_grader_fail(recorded, twist):
    """Each twist of every reply costs items, never the grading: no grader_error anywhere."""
    grader, assignment, recorder = recorded
    replayed = Replayed(recorder, TWISTS[twist])
    items, internal = grader._run_graders(replayed, assignment.parameters(None), notebook=twist)
    assert not internal, [str(problem) for problem in internal]
    assert not [item.id for item in items if item.diagnosis == "grader_error"]
