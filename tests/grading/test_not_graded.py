"""The engine's failures are never a student's score: a submission whose worker cannot be started
at all is left ungraded (NotGraded), with the reason, rather than given worker_crashed zeros."""
import pytest

from rlcourse.grading.pipeline import Grader, NotGraded


class TemplateThatCannotStart:
    """A launcher whose every launch fails, as when the fork template cannot import its framework."""

    isolation = "rlimits"
    confinement = {}

    def __init__(self, options):
        self.options = options
        self.launches = 0

    def launch(self):
        self.launches += 1
        raise RuntimeError("the worker template could not start")

    def restart(self):
        pass

    def close(self):
        pass


def test_a_worker_that_cannot_start_leaves_the_submission_ungraded(course):
    ps3 = course.assignment("ps3")
    with Grader(ps3, warm_cache=False) as grader:
        working, broken = grader._launcher, TemplateThatCannotStart(grader._launcher.options)
        grader._launcher = broken
        try:
            with pytest.raises(NotGraded, match="no worker could be started .*template could not start"):
                grader.grade(ps3.source_notebook)
        finally:
            grader._launcher = working
    assert broken.launches >= 2  # restarted once before the failure was the engine's
