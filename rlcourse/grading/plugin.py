"""A pytest plugin that turns hidden grader tests into rubric item results.

pytest runs in the grader process with this plugin: it provides the `student` fixture (the
submission's `StudentCode`) and records, for each `@item`-marked test, its points and, on failure,
a diagnosis tag and a student-facing message. pytest's own failure text quotes the grader's
source, so it is never used; only the messages graders write (`Failure`) and the worker's error
descriptions reach a report.
"""
from __future__ import annotations

import time
import traceback

import pytest

from rlcourse.grading.report import ItemResult
from rlcourse.grading.rubric import Failure
from rlcourse.worker.errors import WorkerError

INTERNAL_ERROR_MESSAGE = ("The grader failed on this item; this is not your fault. "
                          "The course staff will regrade it by hand.")


def item_id(node) -> str:
    module = node.path.stem.removeprefix("test_")
    return f"{module}.{node.originalname.removeprefix('test_')}"


def item_result(node, marker) -> ItemResult:
    """An unscored result for the test `node` from its `@item` marker: id, points, title, cell
    and kind, as every report lists them."""
    return ItemResult(id=item_id(node), max_score=float(marker.kwargs["points"]),
                      title=marker.kwargs.get("title", ""), cell=marker.kwargs.get("cell"),
                      kind=marker.kwargs.get("kind", "code"))


class GradingPlugin:
    def __init__(self, student, *, known_tags: set[str], cell_order=(), on_item=None, params=None):
        self._student = student
        self._params = params
        self._cell_rank = {cell: rank for rank, cell in enumerate(cell_order)}
        self.known_tags = known_tags
        self.results: list[ItemResult] = []
        self.internal_errors: list[str] = []
        self.collection_errors: list[str] = []
        self._on_item = on_item
        self._started = {}

    @pytest.fixture(scope="session")
    def student(self):
        return self._student

    def pytest_configure(self, config):
        from rlcourse.grading.fixtures import GraderFixtures

        config.addinivalue_line("markers", "item(points, cell, title): one rubric item")
        config.pluginmanager.register(GraderFixtures.for_config(config, params=self._params),
                                      "rlcourse-grader-fixtures")

    def pytest_collection_modifyitems(self, items):
        """Items follow the notebook: ordered by the position of the cell they grade."""
        def rank(node):
            marker = node.get_closest_marker("item")
            cell = marker.kwargs.get("cell") if marker else None
            return self._cell_rank.get(cell, len(self._cell_rank))

        items.sort(key=rank)  # stable: within one cell, file order is kept

    def pytest_collectreport(self, report):
        if report.failed:
            self.collection_errors.append(f"{report.nodeid}: {report.longreprtext[-2000:]}")

    def pytest_runtest_setup(self, item):
        self._started[item.nodeid] = time.perf_counter()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        if report.when == "call" or (report.when == "setup" and report.failed):
            self._record(item, call)

    def _record(self, node, call) -> None:
        marker = node.get_closest_marker("item")
        if marker is None:
            self.internal_errors.append(f"{node.nodeid} has no @item marker and was not scored")
            return
        result = item_result(node, marker)
        result.seconds = time.perf_counter() - self._started.get(node.nodeid, time.perf_counter())
        if call.excinfo is None:
            result.passed, result.score = True, result.max_score
        else:
            result.diagnosis, result.message = self._diagnose(node, call.excinfo)
            if isinstance(call.excinfo.value, Failure) and result.diagnosis == call.excinfo.value.tag:
                result.fix = call.excinfo.value.fix
        self.results.append(result)
        if self._on_item:
            self._on_item(result)

    def _diagnose(self, node, excinfo) -> tuple[str, str]:
        error = excinfo.value
        if isinstance(error, Failure):
            if error.tag not in self.known_tags:
                self.internal_errors.append(f"{node.nodeid} raised undocumented tag {error.tag!r}")
                return "grader_error", INTERNAL_ERROR_MESSAGE
            return error.tag, error.message
        if isinstance(error, WorkerError):
            where = f" (at {error.where})" if error.where else ""
            return error.kind, f"{error}{where}"
        if isinstance(error, AssertionError):
            return "wrong_value", str(error) or "The result is not correct."
        self.internal_errors.append(
            f"{node.nodeid}: " + "".join(traceback.format_exception(error))[-3000:])
        return "grader_error", INTERNAL_ERROR_MESSAGE
