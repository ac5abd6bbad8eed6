"""Fixtures for ps3's hidden graders: the exact oracle, the bug models, and grader-chosen inputs.

`student` (the submission, running in its own process) comes from rlcourse's grading plugin.
Inputs are drawn from generators seeded by each item's name, so every student gets the same
inputs, and none of them is one the notebook shows.
"""
import zlib
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution

COURSE_ROOT = Path(__file__).resolve().parents[2]


def _misconceptions():
    return load_course_module(Path(__file__).with_name("misconceptions.py"),
                              "rlcourse_graders.ps3.misconceptions")


@pytest.fixture(scope="session")
def exact():
    return load_solution(COURSE_ROOT, "ps3", "exact")


@pytest.fixture(scope="session")
def models(exact):
    return _misconceptions().Models(exact)


@pytest.fixture(scope="session")
def explain():
    return _misconceptions().EXPLAIN


@pytest.fixture(scope="session")
def guarded(student, models):
    """student.call, except that a call which raises is checked for the [n] * [n, A] broadcast
    bug on a square probe before the error is reported (see misconceptions.Guarded)."""
    return _misconceptions().Guarded(student, models)


@pytest.fixture
def rng(request):
    """A generator seeded by the item's name: same inputs for every student, different per item."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
