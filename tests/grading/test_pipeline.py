"""What one grading session costs the grading process beyond the graders themselves."""
import gc

from rlcourse.grading.pipeline import Grader
from test_not_graded import hw  # noqa: F401 - the scaffold's numpy course, a fixture


def test_a_grading_session_leaves_garbage_collection_to_python(hw, monkeypatch):  # noqa: F811
    """pytest's unraisableexception plugin ran two full garbage collections at the end of every
    grading session, to report exceptions raised in __del__ that grading never shows: 0.26 s of
    a warm grading process's time per submission (ps1), before its feedback. Grading runs
    pytest without it."""
    collections = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *args: collections.append(args) or collect(*args))
    with Grader(hw, warm_cache=False) as grader:
        for _ in range(2):
            report = grader.grade(hw.source_notebook)
            assert report.score == report.max_score > 0
    assert collections == []
