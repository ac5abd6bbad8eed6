"""Shared fixtures: the course directory and the ps1 assignment."""
from pathlib import Path

import pytest

from rlcourse.course import Course

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def course():
    return Course(ROOT)


@pytest.fixture(scope="session")
def ps1(course):
    return course.assignment("ps1")
