"""A pytest plugin that turns hidden grader tests into rubric item results.

pytest runs in the grader process with this plugin: it provides the `student` fixture (the
submission's `StudentCode`) and records, for each `@item`-marked test, its points and, on failure,
a diagnosis tag and a student-facing message. pytest's own failure text quotes the grader's
source, so it is never used; only the messages graders write (`Failure`) and the worker's error
descriptions reach a report.

A grader that raises, names an undocumented tag or does not import is the course's failure, not
the student's: the item's message is `INTERNAL_ERROR_MESSAGE`, and the plugin keeps a
`GraderError` for the staff: the exception's type and message and the grader file and line it
was raised at (`graders/ps1/test_returns.py:31 in test_dones: IndexError: ...`), with the whole
traceback for their log.
"""
from __future__ import annotations

import dataclasses
import time
import traceback
from pathlib import Path

import pytest

from rlcourse.grading.report import ItemResult
from rlcourse.grading.rubric import Failure, StudentDataError
from rlcourse.worker.errors import WorkerError

INTERNAL_ERROR_MESSAGE = ("The grader failed on this item; this is not your fault. "
                          "The course staff will regrade it by hand.")


MESSAGE_LIMIT = 300
"""The characters of an exception's message a one-line reason keeps (an array's repr can run to
pages; the traceback in the log keeps it whole)."""

COURSE_CODE = ("graders", "solutions")
"""The course's own folders: the frame named as where an exception was raised is the innermost
one in these, not pytest's, the engine's or a library's."""


@dataclasses.dataclass(frozen=True)
class GraderError:
    """What the staff need to fix a grader: `where` (file:line in the course, and the function),
    `error` (the exception's type and message, or what the grader did wrong), and, for their
    log only, the whole `traceback`. Never shown to a student."""

    where: str
    error: str
    traceback: str = ""
    item: str | None = None
    """The rubric item the failure cost (None: a module that does not import)."""

    def __str__(self) -> str:
        return f"{self.where}: {self.error}"


def _shown_path(filename: str, root: Path | None) -> str:
    """`filename` relative to the course root, else to the folder holding the engine (for a
    frame in rlcourse itself), else as it is."""
    path = Path(filename)
    for base in (root, Path(__file__).resolve().parents[2]):
        if base is None:
            continue
        try:
            return path.resolve().relative_to(Path(base).resolve()).as_posix()
        except (ValueError, OSError):
            continue
    return str(path)


def _in_course(filename: str, root: Path | None) -> bool:
    if root is None:
        return False
    try:
        relative = Path(filename).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError):
        return False
    return relative.parts[:1] in {(folder,) for folder in COURSE_CODE}


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`text` on one line, cut to `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def exception_text(error: BaseException) -> str:
    """`Type: message` on one line, the message cut to MESSAGE_LIMIT characters."""
    message = one_line(error.msg if isinstance(error, SyntaxError) and error.msg else str(error))
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def raised_where(error: BaseException, *, root: Path | None) -> tuple[str, bool]:
    """`path:line in function` of the innermost frame in the course's graders/ or solutions/
    (where a grader author looks), else of the innermost frame at all; for a SyntaxError, the
    line that does not parse. And whether that place is the course's own code."""
    if isinstance(error, SyntaxError) and error.filename and error.lineno:
        return f"{_shown_path(error.filename, root)}:{error.lineno}", _in_course(error.filename, root)
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return "(no traceback)", False
    ours = [frame for frame in frames if _in_course(frame.filename, root)]
    frame = (ours or frames)[-1]
    return f"{_shown_path(frame.filename, root)}:{frame.lineno} in {frame.name}", bool(ours)


def describe_error(error: BaseException, *, root: Path | None) -> GraderError:
    """A raised exception as the staff read it (GraderError), with its traceback kept."""
    where, _ = raised_where(error, root=root)
    return GraderError(where, exception_text(error), traceback_text(error, root=root))


def traceback_text(error: BaseException, *, root: Path | None) -> str:
    """The traceback from the first frame in the course's code inward (pytest's and pluggy's
    frames above it say nothing about the grader), or whole when no frame is the course's."""
    start = error.__traceback__
    while start is not None and not _in_course(start.tb_frame.f_code.co_filename, root):
        start = start.tb_next
    return "".join(traceback.format_exception(type(error), error, start or error.__traceback__))


def _collection_error(report, root: Path | None) -> GraderError:
    """A grader module that does not import: the error pytest caught while collecting it. pytest
    wraps a SyntaxError or ImportError in its CollectError (raised `from` the original), so the
    original is described, with the file and line it points at."""
    call = getattr(report, "call", None)
    error = call.excinfo.value if call is not None and call.excinfo is not None else None
    if error is not None and type(error).__name__ == "CollectError" and error.__cause__ is not None:
        error = error.__cause__
    if error is None:  # no exception to read: pytest's own text, its last line
        lines = report.longreprtext.strip().splitlines() or ["collection failed"]
        return GraderError(report.nodeid or "graders", lines[-1].removeprefix("E").strip(),
                           report.longreprtext)
    where, ours = raised_where(error, root=root)
    if not ours and report.nodeid:  # raised outside the course's code: name the module too
        where = f"{report.nodeid} (at {where})"
    return GraderError(where, exception_text(error), traceback_text(error, root=root))


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
        self.internal_errors: list[GraderError] = []
        """The graders' failures while grading (an exception, an undocumented tag, an item
        without a marker); any of them makes the submission not graded."""
        self.collection_errors: list[GraderError] = []
        """Grader modules that do not import."""
        self.student_data_errors: list[GraderError] = []
        """Exceptions the graders' computations raised on a student's data
        (rlcourse.grading.rubric.on_student_data): each cost its item (bad_output) and is kept
        for the staff's log, in case it was an oracle's bug on data the contract allows."""
        self._root: Path | None = None
        self._on_item = on_item
        self._started = {}

    @pytest.fixture(scope="session")
    def student(self):
        return self._student

    def pytest_configure(self, config):
        from rlcourse.grading.fixtures import GraderFixtures

        self._root = Path(config.rootpath)
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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_make_collect_report(self, collector):
        """The collect report still carries pytest's CallInfo here (`report.call`), and with it
        the exception a module's import raised; `pytest_collectreport` gets only its text."""
        outcome = yield
        report = outcome.get_result()
        if report.failed:
            self.collection_errors.append(_collection_error(report, self._root))

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
            path, line, _ = node.location  # relative to the rootdir, the course; line from 0
            self.internal_errors.append(GraderError(
                f"{path}:{(line or 0) + 1} in {node.name}",
                "has no @item(points=..., cell=...) marker, so it was not scored", item=item_id(node)))
            return
        result = item_result(node, marker)
        result.seconds = time.perf_counter() - self._started.get(node.nodeid, time.perf_counter())
        if call.excinfo is None:
            result.passed, result.score = True, result.max_score
        else:
            result.diagnosis, result.message = self._diagnose(node, call.excinfo)
            if isinstance(call.excinfo.value, Failure) and result.diagnosis == call.excinfo.value.tag:
                result.fix = call.excinfo.value.fix
            if isinstance(call.excinfo.value, StudentDataError):
                self.student_data_errors.append(dataclasses.replace(
                    describe_error(call.excinfo.value.cause, root=self._root), item=result.id))
        self.results.append(result)
        if self._on_item:
            self._on_item(result)

    def _diagnose(self, node, excinfo) -> tuple[str, str]:
        error = excinfo.value
        if isinstance(error, Failure):
            if error.tag not in self.known_tags:
                return self._internal(node, dataclasses.replace(
                    describe_error(error, root=self._root),
                    error=f"raised the undocumented tag {error.tag!r}; document it in "
                          "diagnoses.toml or raise a documented one"))
            return error.tag, error.message
        if isinstance(error, WorkerError):
            where = f" (at {error.where})" if error.where else ""
            return error.kind, f"{error}{where}"
        if isinstance(error, AssertionError):
            return "wrong_value", str(error) or "The result is not correct."
        return self._internal(node, describe_error(error, root=self._root))

    def _internal(self, node, problem: GraderError) -> tuple[str, str]:
        """The grader's own failure: kept for the staff; the student reads only that it was not
        their fault."""
        self.internal_errors.append(dataclasses.replace(problem, item=item_id(node)))
        return "grader_error", INTERNAL_ERROR_MESSAGE
