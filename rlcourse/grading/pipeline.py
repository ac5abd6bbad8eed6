"""Grading one or many notebooks: load → run in a worker → grade with hidden pytest items → report.

The stages, in order, for each submission:

1. `load`: parse the notebook without running it (`rlcourse.course.submission`); a file that cannot be
   used becomes a report with every item at 0 and the reason, and the batch goes on.
2. `run`: `StudentCode` runs the code cells in a worker process, started at once in a background
   thread while pytest collects the graders; the first call waits for them.
3. `grade`: pytest collects `graders/<assignment>/` in this process; every comparison and every
   point is decided here, on plain data the worker sent back.
4. `report`: items, diagnoses, notebook errors, timings.

Before the first submission, the instructor's own source notebook is graded once (the
reference run): its slowest cell, slowest call and whole run are measured, and the time limits
`assignment.toml` leaves out are set from them (`budget`); for JAX assignments the same run
warms the compilation cache, in a worker allowed to write it, with the programs of the given
code only (`given_lines`): student workers never see the cache, and get its entries from the
grader by key (rlcourse.worker.compile_cache).
That run is also a self-check: the source notebook must get full marks. Its results are kept in
a `warmed-<fingerprint>` file, whose fingerprint covers what the run depends on, the course's
location included, so a changed or moved course is measured again (a moved course finds its
compiled programs: JAX's cache keys do not depend on where the cache lies,
rlcourse.worker.frameworks).

Over 300 lines on purpose: `Grader` is the stages above in order, with the reference run that
sets their limits; the stages' own work lives in student.py, plugin.py, given.py and redact.py.
"""
from __future__ import annotations

import contextlib
import dataclasses
from importlib import metadata
import hashlib
import io
import json
import re
import sys
import time
from pathlib import Path

import pytest

from rlcourse.course.directory import Assignment
from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.course.solutions import assignment_feedback
from rlcourse.grading.plugin import GraderError, GradingPlugin, one_line
from rlcourse.grading.redact import Redactor
from rlcourse.grading.report import ItemResult, Report
from rlcourse.grading.student import StudentCode, cell_number
from rlcourse.course.release import Release
from rlcourse.course.submission import NotebookProblem, load_submission
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.sandbox import choose_isolation

REFERENCE_FACTOR = 10.0
"""Each time limit `assignment.toml` leaves out is this many times the reference solution's
(its slowest cell, its slowest call, its whole run): a correct submission five times slower than
the reference still fits, with room for a busy machine."""
FLOOR_SECONDS = {"cell_seconds": 20.0, "call_seconds": 10.0, "submission_seconds": 120.0}
"""The least each derived limit may be, however fast the reference: a busy machine (ten
runnable processes on two cores) stretches wall times several fold. A hang is paid once per
submission, so a generous floor costs little."""


def call_limits(limits: Limits, measured: dict | None, fixed=frozenset()) -> dict[str, float]:
    """Seconds per call of each function the reference run called: REFERENCE_FACTOR x its own
    slowest call, at least the call floor, at most `limits.call_seconds` (ps2's training call
    takes 10 s, its losses milliseconds: a loop in a loss should not cost 100 s)."""
    if not measured or "call_seconds" in fixed or not isinstance(measured.get("calls"), dict):
        return {}
    return {str(name): round(min(limits.call_seconds, max(FLOOR_SECONDS["call_seconds"],
                                                          REFERENCE_FACTOR * seconds)), 1)
            for name, seconds in measured["calls"].items() if isinstance(seconds, (int, float))}


def budget(limits: Limits, measured: dict | None, fixed=frozenset()) -> Limits:
    """`limits` with the time limits not in `fixed` (those assignment.toml sets) derived from
    the reference run's `measured` {"cell", "call", "total"} seconds; unchanged without them."""
    if not measured:
        return limits
    derived = {}
    for name, key in (("cell_seconds", "cell"), ("call_seconds", "call"), ("submission_seconds", "total")):
        seconds = measured.get(key)
        if name not in fixed and isinstance(seconds, (int, float)) and seconds >= 0:
            derived[name] = round(max(FLOOR_SECONDS[name], REFERENCE_FACTOR * seconds), 1)
    return dataclasses.replace(limits, **derived)



def given_code_cache(assignment: Assignment) -> Path:
    """The JAX compilation cache a course serves its workers for `assignment`:
    `jax-<version>/<assignment>/given-code` in the course's cache folder, a folder of its own for
    the given code's programs only (a course graded before issue 29 kept the reference's programs
    one level up, where no worker is shown them either)."""
    # The version from the package metadata: importing JAX here would cost a second or more.
    return assignment.course.cache_dir / f"jax-{metadata.version('jax')}" / assignment.name / "given-code"

class NotGraded(RuntimeError):
    """The engine or the graders failed on a submission (no worker could be started, a grader
    raised or named an undocumented tag, a grader module does not import): nothing of it is the
    student's doing, so no score is recorded; the submission stays ungraded with this reason and
    the next run grades it again. The reason names each grader failure by file and line, with
    the exception's type and message (`problems`, rlcourse.grading.plugin.GraderError); their
    tracebacks go to the staff's log, never into the reason."""

    SHOWN = 3
    """Grader failures the reason spells out; the rest are counted (all are in the log)."""

    def __init__(self, reason: str, problems=()):
        super().__init__(reason)
        self.problems = list(problems)

    @classmethod
    def graders_failed(cls, problems, *, collecting: bool = False) -> "NotGraded":
        """`the graders failed: graders/ps1/test_x.py:31 in test_y: IndexError: ...`, one
        entry per failure up to SHOWN."""
        what = "the hidden graders could not be collected" if collecting else "the graders failed"
        count = f" ({len(problems)} problems)" if len(problems) > 1 else ""
        shown = "; ".join(str(problem) for problem in problems[:cls.SHOWN])
        more = f"; and {len(problems) - cls.SHOWN} more" if len(problems) > cls.SHOWN else ""
        return cls(f"{what}{count}: {shown}{more}", problems)


@dataclasses.dataclass(frozen=True)
class ReferenceLoss:
    """Why the source notebook, graded as a submission, did not get full marks: an item it
    lost (`item`, with the grader's `diagnosis` and `message`, or the grader's own exception
    `grader_error`), a cell of it that raised (`cell_error`), or the engine's failure
    (`engine_failure`). `rlcourse check` names the file to change from these."""

    item: str | None = None
    diagnosis: str | None = None
    message: str = ""
    grader_error: GraderError | None = None
    cell_error: str | None = None
    engine_failure: str | None = None

    def __str__(self) -> str:
        if self.engine_failure:
            return f"the engine failed: {self.engine_failure}"
        if self.cell_error:
            return f"its {one_line(self.cell_error)}"
        if self.grader_error:
            item = f"{self.item}, " if self.item else ""
            return f"{item}the grader failed: {self.grader_error}"
        return f"{self.item} ({self.diagnosis}: {one_line(self.message)})"


def reference_losses(items: list[ItemResult], internal: list[GraderError],
                     student: StudentCode) -> list[ReferenceLoss]:
    """What kept the reference run from full marks: the engine's failure alone when it failed
    (every item is lost then), else each lost item and each cell that raised."""
    if student.engine_failure:
        return [ReferenceLoss(engine_failure=student.engine_failure)]
    failures = {problem.item: problem for problem in internal}
    lost = [ReferenceLoss(item=entry.id, diagnosis=entry.diagnosis, message=entry.message,
                          grader_error=failures.get(entry.id))
            for entry in items if not entry.passed]
    lost += [ReferenceLoss(grader_error=problem) for problem in internal
             if problem.item is None or problem.item not in {entry.id for entry in items}]
    if not lost:
        return []
    return [*lost, *(ReferenceLoss(cell_error=error) for error in student.cell_errors)]


class Grader:
    """Grades submissions of one assignment; reuse it for a batch so fixed costs are paid once."""

    def __init__(self, assignment: Assignment, *, strategy: str = "fork", warm_cache: bool = True,
                 isolation: str | None = None, log=None, workers: bool = True):
        """`workers=False` only makes sure the reference is measured (and the compilation cache
        warm): a batch does that once before its grading processes start, and a fork template
        started for it would import JAX or PyTorch only to be closed (3 to 4 core-seconds and as
        many seconds before the first submission)."""
        self.assignment = assignment
        self.strategy = strategy
        self.log = log or (lambda message: print(message, file=sys.stderr))
        self.known_tags = set(load_diagnoses(assignment.grader_dir))
        self._catalogue = None
        release = Release.read_or_empty(assignment.release_notebook)
        self._release_lines = frozenset(release.lines)
        self._cell_order, self._expected_ids = release.order, release.expected_ids
        self._skip = self._skippable_cells(release)
        self._given = release.given
        self._redact = Redactor.for_assignment(assignment, release)
        assignment.course.cache_dir.mkdir(parents=True, exist_ok=True)  # a worker's mounts hide it
        self._cache_dir = self._compile_cache_dir() if assignment.framework == "jax" else None
        self._isolation_request = isolation
        level, why = choose_isolation(isolation)
        self._level = level
        if level != "bwrap":
            self.log(f"isolation: {why}")
        self.reference_losses: list[ReferenceLoss] = []
        """What the source notebook lost, when its run here did not score full marks."""
        self.reference = self._recorded_reference()
        if self.reference is None and warm_cache:
            with self._reference_lock():  # grading processes started together warm it once
                self.reference = self._recorded_reference() or self._run_reference(level)
        self.limits = budget(assignment.limits, self.reference, assignment.fixed_limits)
        self.call_limits = call_limits(self.limits, self.reference, assignment.fixed_limits)
        self._launcher = make_launcher(
            WorkerOptions(assignment.framework, self.limits, compile_cache=self._cache_dir,
                          hidden=(str(assignment.course.cache_dir),), isolation=level),
            strategy=strategy) if workers else None

    @property
    def isolation(self) -> str:
        return self._launcher.isolation if self._launcher is not None else self._level

    def wait_ready(self) -> None:
        """Return once a submission's worker can start at once: the fork template (if this
        grader's strategy has one) has imported its framework. A spawned worker imports its own."""
        wait = getattr(self._launcher, "wait_ready", None)
        if wait is not None:
            wait()

    def close(self) -> None:
        if self._launcher is not None:
            self._launcher.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # --- public -------------------------------------------------------------------------------
    def grade(self, path: Path, *, student: str | None = None) -> Report:
        """Grade the notebook at `path` as `student`'s: with their own parameter values when the
        assignment has variants (the defaults when `student` is None)."""
        started = time.perf_counter()
        student_id, parameters = student, self.assignment.parameters(student)
        try:
            submission = load_submission(path, expected_ids=self._expected_ids)
        except NotebookProblem as problem:
            report = self.unreadable(str(problem), notebook=Path(path).name, path=Path(path))
            report.timings = {"total": time.perf_counter() - started}
            report.parameters = parameters if self.assignment.variants.enabled else {}
            return report
        submission = self._as_graded(submission, student=student_id)
        student = StudentCode(submission, self._launcher, reference_seconds=self.reference,
                              call_limits=self.call_limits)
        student.start()  # the cells run while pytest collects the graders
        try:
            items, internal = self._run_graders(student, parameters, notebook=Path(path).name)
            artifacts = self._collect_artifacts(student, parameters)
        finally:
            student.close()
        if student.engine_failure:
            raise NotGraded(student.engine_failure)
        if internal:
            raise NotGraded.graders_failed(internal)
        for item in items:
            item.message, item.fix = self._redact(item.message), self._redact(item.fix)
        report = Report(self.assignment.name, Path(path).name, items,
                        errors=[self._redact(text) for text in [*submission.warnings, *student.cell_errors]],
                        sha256=submission.sha256, isolation=self.isolation,
                        confinement=self._launcher.confinement, artifacts=artifacts,
                        parameters=parameters if self.assignment.variants.enabled else {})
        report.timings = dict(student.timings, total=time.perf_counter() - started)
        return report

    # --- stages ---------------------------------------------------------------------------------
    def _run_graders(self, student: StudentCode, parameters: dict, *,
                     notebook: str) -> tuple[list[ItemResult], list[GraderError]]:
        """The items, and the graders' own failures (each logged with its traceback for the
        staff). A grader module that does not import stops here: NotGraded."""
        plugin = GradingPlugin(student, known_tags=self.known_tags, cell_order=self._cell_order,
                               params=parameters)
        started = time.perf_counter()
        args = grader_session_args(self.assignment, "--assert=plain", "-W", "ignore::DeprecationWarning")
        with contextlib.redirect_stdout(io.StringIO()):
            pytest.main(args, plugins=[plugin])
        student.timings["graders"] = time.perf_counter() - started
        for problem in [*plugin.collection_errors, *plugin.internal_errors]:
            self.log(f"[{notebook}] grader problem: {problem}\n{problem.traceback}".rstrip())
        for problem in plugin.student_data_errors:  # the student's loss, logged in case of an oracle bug
            self.log(f"[{notebook}] {problem.item} lost (bad_output): the grader's computation on the "
                     f"student's data raised at {problem}\n{problem.traceback}".rstrip())
        if plugin.collection_errors:
            raise NotGraded.graders_failed(plugin.collection_errors, collecting=True)
        return plugin.results, plugin.internal_errors

    def _collect_artifacts(self, student: StudentCode, parameters: dict) -> dict:
        """Data for the feedback page's figures, from `graders/<assignment>/feedback.py`'s
        `collect(student, parameters)` (the student's own values, as the graders get them) if
        the assignment has one. Never costs a grade: any failure here (the student's code
        raising, a crashed worker) just leaves the figures out."""
        module = assignment_feedback(self.assignment)
        if module is None or not hasattr(module, "collect"):
            return {}
        started = time.perf_counter()
        try:
            artifacts = module.collect(student, parameters)
        except Exception as error:  # noqa: BLE001 - student failures and grader bugs alike
            self.log(f"feedback data not collected: {type(error).__name__}: {error}")
            artifacts = {}
        student.timings["feedback_data"] = time.perf_counter() - started
        return artifacts if isinstance(artifacts, dict) else {}

    def catalogue(self) -> list[ItemResult]:
        """Every item with its points, as a report lists them (without running anything)."""
        if self._catalogue is None:
            self._catalogue = item_catalogue(self.assignment, known_tags=self.known_tags,
                                             cell_order=self._cell_order)
        return [ItemResult(**vars(entry)) for entry in self._catalogue]

    def unreadable(self, reason: str, *, notebook: str, path: Path | None = None) -> Report:
        """A report for a submission that cannot be graded: every item 0, with the reason."""
        items = self.catalogue()
        for entry in items:
            entry.diagnosis = "unreadable_notebook"
            entry.message = reason
        digest = None
        if path is not None and path.is_file() and not path.is_symlink():
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        return Report(self.assignment.name, notebook, items, errors=[reason], sha256=digest,
                      isolation=self.isolation, confinement=self._launcher.confinement)

    def _skippable_cells(self, release: Release) -> frozenset[str]:
        """The assignment's `skip_cells`, checked against the release (Release.skip_cell_problems)."""
        wanted = set(self.assignment.skip_cells)
        if not wanted:
            return frozenset()
        problems = release.skip_cell_problems(wanted)
        if problems:
            from rlcourse.course.directory import CourseError

            raise CourseError(f"{self.assignment.name}: skip_cells: " + "; ".join(problems))
        return frozenset(wanted)

    def _as_graded(self, submission, *, student: str | None = None):
        """What runs for a submission: its cells in its order, with the given (locked) cells
        restored to the release's code, as nbgrader's autograde restores them, so that an edited
        training loop or grading helper cannot hand the graders made-up results; and without the
        demonstration cells grading skips. The parameter cell (variants) runs pinned to the
        graded student's id, whatever the worker's environment holds."""
        import dataclasses

        from rlcourse.course.variants import PARAMETER_CELL, parameter_cell
        from rlcourse.grading.given import bound_names, definitions, imports, shadowing

        given, known = {}, set()
        for grade_id, source in self._given.items():
            if grade_id in self._skip:
                continue
            if grade_id == PARAMETER_CELL:
                # The engine's own cell, pinned to the student: run again whole, it binds every
                # name it binds (PARAMS in its if/else) as it did.
                source = parameter_cell(self.assignment.name, self.assignment.variants, student=student or "")
                given[grade_id] = (bound_names(source), source)
            else:
                given[grade_id] = definitions(source, known)
            known |= given[grade_id][0]
        given_names = {name: grade_id for grade_id, (names, _) in given.items() for name in names}
        given_imports = {name: target for grade_id in given for name, target in imports(self._given[grade_id]).items()}
        cells, notes, added = [], [], False
        for cell in submission.cells:
            if cell.grade_id in self._skip:
                continue
            released = self._given.get(cell.grade_id)
            if released is not None and cell.source != released:
                notes.append(f"cell {cell_number(cell.index)} ({cell.grade_id}) is given code but was changed; "
                             "the released version was run instead")
                cell = dataclasses.replace(cell, source=released)
            # Pinned also when its metadata was lost but its code is the release's parameter cell.
            parameter_source = self._given.get(PARAMETER_CELL)
            if parameter_source is not None and (cell.grade_id == PARAMETER_CELL
                                                 or cell.source.strip() == parameter_source.strip()):
                cell = dataclasses.replace(cell, source=parameter_cell(
                    self.assignment.name, self.assignment.variants, student=student or ""))
                added = True
            cells.append(cell)
            shadowed = set() if released is not None else shadowing(cell.source, set(given_names), given_imports)
            if shadowed:  # given code stays given (rlcourse.grading.given)
                notes.append(f"cell {cell_number(cell.index)}" + (f" ({cell.grade_id})" if cell.grade_id else "")
                             + f" redefines or patches {', '.join(sorted(shadowed))}, defined by the "
                             "given code; that was ignored: the released definitions were used")
                restore = [grade_id for grade_id in given if grade_id in {given_names[n] for n in shadowed}]
                cells.extend(dataclasses.replace(cell, grade_id=grade_id, source=given[grade_id][1])
                             for grade_id in restore)
                added = True
        if not notes and not added and len(cells) == len(submission.cells):
            return submission
        return dataclasses.replace(submission, cells=tuple(cells),
                                   warnings=(*submission.warnings, *notes))

    # --- compilation cache ----------------------------------------------------------------------
    def _compile_cache_dir(self) -> str:
        folder = given_code_cache(self.assignment)
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    def _reference_marker(self) -> Path:
        """`warmed-<fingerprint>`: what decides the reference run's programs and times (its
        notebook, the graders' calls, the worker code that makes them) and where they live (the
        course, the compilation cache and the Python environment): a copied or moved course is
        measured again, on the programs its copied cache already holds."""
        fingerprint = hashlib.sha256(self.assignment.source_notebook.read_bytes())
        worker_code = Path(__file__).resolve().parents[1] / "worker"
        for path in [*sorted(self.assignment.grader_dir.rglob("*.py")), *sorted(worker_code.glob("*.py"))]:
            fingerprint.update(path.read_bytes())
        folder = Path(self._cache_dir) if self._cache_dir else (
            self.assignment.course.cache_dir / "reference" / self.assignment.name)
        fingerprint.update(b"reference-record-3\0")  # what the record holds: cell, call, total, calls
        for place in (self.assignment.course.root, folder, Path(sys.prefix), worker_code):
            fingerprint.update(str(place.resolve()).encode() + b"\0")
        return folder / f"warmed-{fingerprint.hexdigest()[:16]}"

    @contextlib.contextmanager
    def _reference_lock(self):
        """Held while the reference runs: a second process that wants it waits, then reads the
        record the first one wrote, instead of running it again beside it."""
        import fcntl

        marker = self._reference_marker()
        marker.parent.mkdir(parents=True, exist_ok=True)
        with open(marker.parent / "reference.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _recorded_reference(self) -> dict | None:
        """The reference run's times for this fingerprint, if it has run (None otherwise)."""
        if not self.assignment.source_notebook.is_file():
            return None
        try:
            recorded = json.loads(self._reference_marker().read_text() or "null")
        except (OSError, ValueError):
            return None
        return recorded if isinstance(recorded, dict) else None

    def _run_reference(self, isolation: str) -> dict | None:
        """Grade the source notebook (warming JAX's cache on the way) and record its times."""
        source = self.assignment.source_notebook
        if not source.is_file():
            return None
        marker = self._reference_marker()
        started = time.perf_counter()
        submission = self._as_graded(load_submission(source))
        writer = make_launcher(WorkerOptions(self.assignment.framework, self.assignment.limits,
                                             compile_cache=self._cache_dir,
                                             cache_writable=self._cache_dir is not None,
                                             given_lines=given_lines(submission, self._release_lines),
                                             isolation=isolation),
                               strategy=self.strategy)
        try:
            student = StudentCode(submission, writer)
            try:
                items, internal = self._run_graders(student, self.assignment.parameters(None),
                                                    notebook=f"reference {source.name}")
            finally:
                student.close()
        finally:
            writer.close()
        total = time.perf_counter() - started
        self.reference_losses = reference_losses(items, internal, student)
        if self.reference_losses:
            self.log("warning: the source notebook itself does not get full marks ("
                     + "; ".join(str(loss) for loss in self.reference_losses)
                     + "); check the graders before trusting these grades")
            return None
        measured = {"cell": round(student.longest["cell"], 3), "call": round(student.longest["call"], 3),
                    "calls": {name: round(seconds, 3) for name, seconds in student.longest_calls.items()},
                    "total": round(total, 3)}
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps(measured) + "\n")
        what = "warmed the compilation cache with" if self._cache_dir else "measured"
        self.log(f"{what} the reference in {total:.1f} s (slowest cell {measured['cell']:.1f} s, "
                 f"slowest call {measured['call']:.1f} s)")
        return measured


REGION_MARKER = re.compile(r"[ \t]*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)[ \t]*")
"""nbgrader's delimiters of what the release leaves out of a cell (whole lines)."""


def given_lines(submission, released_lines) -> dict[int, list[int]]:
    """Per cell of `submission` (the source notebook, as the reference run runs it), the numbers
    of the lines every student is given: outside every solution and hidden-tests region, and
    word for word a line of the release (`released_lines`). Counted in the cell as the worker
    compiles it (IPython's transformation, which drops leading blank lines, applied), and keyed
    by the number the worker names the cell's code with (`cell_number`: "<cell 13>" is the cell
    at index 12), since that name is what a traced program's locations carry. The reference run
    stores a compiled program only if it comes from these lines alone
    (rlcourse.worker.compile_cache.GivenCodeOnly)."""
    from rlcourse.worker.server import _transform_cell

    found = {}
    for cell in submission.cells:
        lines, inside = [], False
        for number, text in enumerate(_transform_cell(cell.source).splitlines(), start=1):
            marker = REGION_MARKER.fullmatch(text)
            if marker:
                inside = marker.group(1) == "BEGIN"
            elif not inside and text in released_lines:
                lines.append(number)
        found[cell_number(cell.index)] = lines
    return found


def grader_session_args(assignment: Assignment, *extra: str) -> list[str]:
    """pytest's arguments for a session over the assignment's graders (grading one submission, or
    collecting the items): the grader's own settings file, never the course's test suite's, and
    none of the plugins such a session has no use for. Not the unraisableexception plugin either:
    it collects every generation of garbage twice at the end of each session (to report
    exceptions raised in __del__, which grading never shows), 0.13 s each in a grading process
    that has imported its graders and matplotlib, on every submission's path."""
    ini = assignment.course.cache_dir / "grader-pytest.ini"
    if not ini.exists():
        ini.parent.mkdir(parents=True, exist_ok=True)
        ini.write_text("[pytest]\n# The grader's own pytest settings, independent of the course's "
                       "test suite.\naddopts =\n")
    return [str(assignment.grader_dir), *extra, "-p", "no:cacheprovider", "-p", "no:terminal",
            "-p", "no:stepwise", "-p", "no:unraisableexception", "--import-mode=importlib",
            "--rootdir", str(assignment.course.root), "-c", str(ini)]


def item_catalogue(assignment: Assignment, *, known_tags=(), cell_order=None) -> list[ItemResult]:
    """Every item of the assignment's graders (id, points, title, cell, kind), in the notebook's
    order, collected as grading collects them and never run."""
    if cell_order is None:
        cell_order = Release.read_or_empty(assignment.release_notebook).order
    plugin = GradingPlugin(None, known_tags=set(known_tags), cell_order=cell_order)
    args = grader_session_args(assignment, "--collect-only")
    collector = _Collector()
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[plugin, collector])
    return collector.items


class _Collector:
    def __init__(self):
        self.items: list[ItemResult] = []

    @pytest.hookimpl(trylast=True)  # after GradingPlugin has put the items in notebook order
    def pytest_collection_modifyitems(self, items):
        from rlcourse.grading.plugin import item_result

        for node in items:
            marker = node.get_closest_marker("item")
            if marker is not None:
                self.items.append(dataclasses.replace(item_result(node, marker),
                                                      diagnosis="unreadable_notebook"))


def grade_notebooks(assignment: Assignment, paths, *, strategy: str = "fork", warm_cache: bool = True,
                    isolation: str | None = None, on_report=None,
                    students=None) -> list[Report]:
    """Grade several notebooks of one assignment, one fresh worker each; `students` (one id or
    None per path) says whose parameters each is graded with (None: the defaults)."""
    reports = []
    students = list(students) if students is not None else [None] * len(paths)
    with Grader(assignment, strategy=strategy, warm_cache=warm_cache, isolation=isolation) as grader:
        for path, student in zip(paths, students):
            report = grader.grade(Path(path), student=student)
            reports.append(report)
            if on_report:
                on_report(report)
    return reports
