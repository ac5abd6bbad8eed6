"""Fixtures for ps1's hidden graders: the exact oracle, the bug models, and grader-chosen inputs.

`student` (the submission, running in its own process) comes from rlcourse's grading plugin.
Inputs are drawn from fixed seeds so every student gets the same items, and they differ from
everything the notebook shows (other clip values, batch sizes, horizons, theta != theta_old).
"""
import zlib
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution

COURSE_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def exact():
    return load_solution(COURSE_ROOT, "ps1", "exact")


@pytest.fixture(scope="session")
def models(exact):
    module = load_course_module(Path(__file__).with_name("misconceptions.py"),
                                "rlcourse_graders.ps1.misconceptions")
    return module.Models(exact)


@pytest.fixture(scope="session")
def explain():
    return load_course_module(Path(__file__).with_name("misconceptions.py"),
                              "rlcourse_graders.ps1.misconceptions").EXPLAIN


@pytest.fixture
def rng(request):
    """A generator seeded by the item's name: same inputs for every student, different per item."""
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))
