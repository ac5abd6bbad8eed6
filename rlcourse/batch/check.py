"""`rlcourse check ASSIGNMENT`: the author's mistakes, found before any student is graded.

Each mistake below once became students' grades: an `@item(cell=...)` naming no grade cell
dropped its points from the gradebook; a test cell's `points` other than its items' total showed
3/2; a tag missing from diagnoses.toml turned a diagnosed bug into a grader error. So grading
(`grade`, `autograde`, `serve`, the service) runs the quick checks first (`preflight`) and
stops with one line naming the file and what to change; `rlcourse check` adds the slow ones
(the release against nbgrader's own output, the bank, the oracle, the reference's full marks).

The quick checks' verdict is kept under the course's cache by a fingerprint of what they read
(graders, release, assignment.toml), so a run on an unchanged course pays only the hashing.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rlcourse.course.config import CourseError
from rlcourse.course.directory import Assignment
from rlcourse.course.release import Release

CHECK_VERSION = b"rlcourse-check-1\0"
"""Bumped when the quick checks change, so an old verdict is not trusted."""


def read_release(assignment: Assignment) -> Release:
    """The released notebook (rlcourse.course.release), or a CourseError saying what is missing."""
    try:
        return Release.read(assignment.release_notebook)
    except (OSError, ValueError) as error:
        raise CourseError(f"{_shown(assignment, assignment.release_notebook)}: cannot be read "
                          f"({error}); run `make release` (nbgrader generate_assignment)") from None


class _Items:
    """Collects every `@item` with the file it is in (pytest --collect-only)."""

    def __init__(self):
        self.items: list[tuple[str, str, float, str | None]] = []
        self.errors: list[str] = []

    def pytest_collectreport(self, report):
        if report.failed:
            lines = report.longreprtext.strip().splitlines() or ["collection failed"]
            self.errors.append(f"{report.nodeid}: {lines[-1]}")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        from rlcourse.grading.plugin import item_id

        for node in items:
            marker = node.get_closest_marker("item")
            if marker is None:
                self.items.append((item_id(node), str(node.path), 0.0, None))
                self.errors.append(f"{node.nodeid} has no @item(points=..., cell=...) marker")
            else:
                self.items.append((item_id(node), str(node.path),
                                   float(marker.kwargs["points"]), marker.kwargs.get("cell")))


def collect_items(assignment: Assignment) -> _Items:
    """The assignment's grader items, collected as grading collects them (nothing runs)."""
    from rlcourse.grading.plugin import GradingPlugin

    ini = assignment.course.cache_dir / "grader-pytest.ini"
    if not ini.exists():
        ini.parent.mkdir(parents=True, exist_ok=True)
        ini.write_text("[pytest]\naddopts =\n")
    collector = _Items()
    args = [str(assignment.grader_dir), "--collect-only", "-p", "no:cacheprovider",
            "-p", "no:terminal", "--import-mode=importlib", "--rootdir", str(assignment.course.root),
            "-c", str(ini)]
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[GradingPlugin(None, known_tags=set()), collector])
    return collector


def emitted_tags(assignment: Assignment) -> dict[str, str]:
    """Tags the graders raise by name, `Failure("tag", ...)`, and the file each is raised in."""
    tags = {}
    for path in sorted(assignment.grader_dir.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(), filename=str(path))
        except SyntaxError:
            continue  # reported by the collection
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and node.args
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Failure"
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                tags.setdefault(node.args[0].value, f"{_shown(assignment, path)}:{node.lineno}")
    return tags


def quick_problems(assignment: Assignment) -> list[str]:
    """The checks grading runs first: each problem as `file: what to change`."""
    from rlcourse.course.diagnoses import load_diagnoses

    model = read_release(assignment)
    release = _shown(assignment, assignment.release_notebook)
    spec = _shown(assignment, assignment.grader_dir / "assignment.toml")
    problems = []
    if assignment.skip_cells:
        problems += [f"{spec}: skip_cells: {problem}"
                     for problem in model.skip_cell_problems(set(assignment.skip_cells))]
    problems += variants_problems(assignment, model, release)
    points = {cell.grade_id: cell.points for cell in model.cells if cell.visible_test}
    collected = collect_items(assignment)
    problems += [f"{_shown(assignment, assignment.grader_dir)}: cannot be collected: {error}"
                 for error in collected.errors]
    totals: dict[str, float] = {}
    for name, path, worth, cell in collected.items:
        if cell not in points:
            problems.append(f"{_shown(assignment, Path(path))}: item {name} names cell {cell!r}, "
                            f"which is not a test cell of {release}; set @item(cell=...) to one "
                            f"of {', '.join(points) or '(none)'}")
        else:
            totals[cell] = totals.get(cell, 0.0) + worth
    misnamed = any(cell not in points for *_, cell in collected.items)
    for cell, worth in [] if misnamed else points.items():  # a misnamed cell explains its total
        if abs(totals.get(cell, 0.0) - worth) > 1e-9:
            problems.append(f"{_shown(assignment, assignment.source_notebook)}: cell {cell} has "
                            f"points = {worth:g} but its items total {totals.get(cell, 0.0):g}; "
                            "make them equal and run `make release`")
    try:
        documented = set(load_diagnoses(assignment.grader_dir))
    except (ValueError, KeyError, TypeError) as error:
        return [*problems, f"{_shown(assignment, assignment.grader_dir / 'diagnoses.toml')}: {error}"]
    diagnoses = _shown(assignment, assignment.grader_dir / "diagnoses.toml")
    for tag, where in sorted(emitted_tags(assignment).items()):
        if tag not in documented:
            problems.append(f"{diagnoses}: tag {tag!r} (raised at {where}) is not documented; "
                            "add it with a summary and a fix")
    return problems


def variants_problems(assignment: Assignment, model: Release, release: str) -> list[str]:
    """With [variants], the release's locked parameter cell must derive the values the graders
    use: a stale cell (the salt or a set changed since `make release`) would show each student
    values other than those they are graded with."""
    from rlcourse.course.variants import PARAMETER_CELL, parameter_cell

    if not assignment.variants.enabled:
        return []
    expected = parameter_cell(assignment.name, assignment.variants).rstrip("\n")
    shown = model.given.get(PARAMETER_CELL)
    if shown is None:
        return [f"{release}: [variants] is on but there is no locked cell {PARAMETER_CELL!r}; add "
                "rlcourse.course.variants.parameter_cell's code as one and run `make release`"]
    if shown.rstrip("\n") != expected:
        return [f"{release}: cell {PARAMETER_CELL} does not derive the values [variants] of "
                "assignment.toml declares; write it again with rlcourse.course.variants."
                "parameter_cell and run `make release`"]
    return []


def full_problems(assignment: Assignment, *, log=None) -> list[str]:
    """Every check: the quick ones, then the release, the bank, the oracle and the reference."""
    problems = quick_problems(assignment)
    if problems:  # the slow checks would only repeat them (a release made from wrong points)
        return problems
    problems += release_problems(assignment)
    problems += bank_problems(assignment)
    problems += model_tag_problems(assignment)
    try:
        from rlcourse.course.solutions import load_solution

        load_solution(assignment.course.root, assignment.name, "exact")
    except Exception as error:  # noqa: BLE001 - any failure to import the oracle is the finding
        problems.append(f"solutions/{assignment.name}/exact.py: the oracle does not load "
                        f"({type(error).__name__}: {error})")
    if not problems:
        problems += reference_problems(assignment, log=log)
    return problems


def model_tag_problems(assignment: Assignment) -> list[str]:
    """Tags the bug models name (`EXPLAIN`'s keys, and the `*_BUGS` collections of `Models`)
    must be documented too: `Evidence` raises them when a model matches."""
    from rlcourse.course.diagnoses import load_diagnoses
    from rlcourse.course.solutions import load_course_module

    path = assignment.grader_dir / "misconceptions.py"
    if not path.is_file():
        return []
    try:
        module = load_course_module(path, f"rlcourse_graders.{assignment.name}.misconceptions")
    except Exception as error:  # noqa: BLE001 - a module that does not import is the finding
        return [f"{_shown(assignment, path)}: does not import ({type(error).__name__}: {error})"]
    tags = set(getattr(module, "EXPLAIN", {}))
    for name, value in vars(getattr(module, "Models", object)).items():
        if name.endswith("_BUGS"):
            for group in (value.values() if isinstance(value, dict) else [value]):
                tags |= {tag for tag in group if isinstance(tag, str)}
    documented = set(load_diagnoses(assignment.grader_dir))
    diagnoses = _shown(assignment, assignment.grader_dir / "diagnoses.toml")
    return [f"{diagnoses}: tag {tag!r} (a bug model of {_shown(assignment, path)}) is not "
            "documented; add it with a summary and a fix" for tag in sorted(tags - documented)]


def release_problems(assignment: Assignment) -> list[str]:
    """The release must be nbgrader's output for the source: generated afresh and compared cell
    by cell (type, source, nbgrader metadata), ignoring metadata nbgrader does not own."""
    root = assignment.course.root
    if not assignment.source_notebook.is_file():
        return [f"{_shown(assignment, assignment.source_notebook)}: missing"]
    nbgrader = Path(sys.executable).with_name("nbgrader")
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        shutil.copy(root / "nbgrader_config.py", scratch)
        shutil.copytree(assignment.source_notebook.parent, scratch / "source" / assignment.name)
        done = subprocess.run([str(nbgrader), "generate_assignment", assignment.name, "--force"],
                              cwd=scratch, capture_output=True, text=True,
                              env={"PATH": f"{nbgrader.parent}:/usr/bin:/bin", "HOME": str(scratch)})
        fresh = scratch / "release" / assignment.name / assignment.notebook
        if done.returncode != 0 or not fresh.is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            return [f"{_shown(assignment, assignment.source_notebook)}: nbgrader "
                    f"generate_assignment fails: {last}"]
        expected = _comparable(Release.read(fresh).notebook().cells)
    actual = _comparable(read_release(assignment).notebook().cells)
    if actual != expected:
        differ = next((index for index, (a, b) in enumerate(zip(actual, expected)) if a != b),
                      min(len(actual), len(expected)))
        return [f"{_shown(assignment, assignment.release_notebook)}: differs from nbgrader's output "
                f"for the source (first at cell {differ}); run `make release` and commit it"]
    return []


def _comparable(cells) -> list[tuple]:
    """What nbgrader decides of each cell: its type, its source and its nbgrader metadata."""
    return [(cell.cell_type, cell.source, json.dumps(cell.metadata.get("nbgrader", {}), sort_keys=True))
            for cell in cells]


def bank_problems(assignment: Assignment) -> list[str]:
    """The bank (tests/bank/<name>/) is as large as the assignment needs, and says what to add:

    * every solution code cell (a TODO) is written another way than the reference's by at least
      one correct entry, so a different correct form is seen to get full marks (fairness);
    * every misconception the assignment documents has a buggy entry that loses an item with
      that tag, so each diagnosis is seen to be reachable and right.

    The minimums grow with the assignment (one per TODO, one per tag) rather than being fixed
    counts, so a one-exercise assignment made by `rlcourse new` passes, and a ten-exercise one
    with three correct entries does not."""
    from rlcourse.course.bank import load_entries
    from rlcourse.course.diagnoses import load_diagnoses

    folder = assignment.course.root / "tests" / "bank" / assignment.name
    shown = _shown(assignment, folder)
    entries = load_entries(folder) if folder.is_dir() else []
    if not any(entry.correct for entry in entries):
        return [f"{shown}/: no correct entry (a file with LOSES = {{}}); add one"]
    problems = []
    rewritten = {grade_id for entry in entries if entry.correct and entry.raw is None
                 for grade_id in (*entry.cells, *entry.edits)}
    for grade_id in sorted(read_release(assignment).todo_ids - rewritten):
        problems.append(f"{shown}/: no correct entry writes solution cell {grade_id!r} another way "
                        f"than the reference; add one (LOSES = {{}}, CELLS or EDITS for "
                        f"{grade_id!r}) so a different correct form is seen to get full marks")
    seen = {tag for entry in entries for tag in entry.loses.values()}
    documented = {tag for tag, d in load_diagnoses(assignment.grader_dir).items() if not d.generic}
    problems += [f"{shown}/: no entry loses an item with tag {tag!r}; add a buggy entry that shows it"
                 for tag in sorted(documented - seen)]
    return problems


def reference_problems(assignment: Assignment, *, log=None) -> list[str]:
    """The source notebook must score full marks: the grader's own warm-up run (reused when it
    has run for these graders and source already) records times only when it does."""
    from rlcourse.grading.pipeline import Grader

    with Grader(assignment, warm_cache=True, log=log, workers=False) as grader:
        if grader.reference is None:
            return [f"{_shown(assignment, assignment.source_notebook)}: the reference solution "
                    "does not score full marks (see the warning above); fix the graders or the source"]
    return []


def _shown(assignment: Assignment, path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(assignment.course.root.resolve()))
    except ValueError:
        return str(path)


def _fingerprint(assignment: Assignment) -> str:
    import hashlib

    from rlcourse.batch.backends import assignment_fingerprint

    return hashlib.sha256(CHECK_VERSION + assignment_fingerprint(assignment).encode()).hexdigest()[:24]


def preflight(assignment: Assignment) -> None:
    """Stop with a CourseError (one line) if the quick checks find a mistake; grading calls this
    before anything is graded or written. A passing verdict is remembered per fingerprint."""
    marker = assignment.course.cache_dir / "checked" / f"{assignment.name}-{_fingerprint(assignment)}"
    if marker.is_file():
        return
    problems = quick_problems(assignment)
    if problems:
        raise CourseError(_one_line(problems, assignment))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("ok\n")


def _one_line(problems: list[str], assignment: Assignment) -> str:
    more = (f" (and {len(problems) - 1} more: run `rlcourse check {assignment.name}`)"
            if len(problems) > 1 else "")
    return problems[0] + more


def rubric_findings(assignment: Assignment) -> tuple[list[str], list[str]]:
    """(problems, warnings) of the manually graded answers' rubrics (rlcourse.course.rubrics).
    A rubric whose points do not add up to the cell's is a problem: every mark a TA makes with
    it would be off. An answer without a rubric is a warning: the TA still has the model answer,
    and grading never depends on a rubric. Neither stops grading (preflight does not ask)."""
    from rlcourse.course.rubrics import Rubrics

    if not Path(assignment.source_notebook).is_file():
        return [], []
    try:
        rubrics = Rubrics.of(assignment)
    except (OSError, ValueError) as error:
        return [f"{_shown(assignment, assignment.source_notebook)}: cannot be read ({error})"], []
    source = _shown(assignment, assignment.source_notebook)
    problems, warnings = [], []
    for question in rubrics.questions:
        if not question.has_rubric:
            warnings.append(f"{source}: manually graded cell {question.grade_id} has no rubric; add "
                            f"`**Rubric** ({question.points:g} points):` and `* POINTS: criterion` "
                            "lines after the model answer, inside its solution region")
        elif question.problem():
            problems.append(f"{source}: manually graded cell {question.grade_id}: {question.problem()}")
    return problems, warnings


def check(assignment: Assignment, *, full: bool = True, log=None, warn=None) -> list[str]:
    """Every problem found (empty: the assignment passes); `warn(line)` is told each warning."""
    problems = full_problems(assignment, log=log) if full else quick_problems(assignment)
    rubric_problems, warnings = rubric_findings(assignment)
    for warning in warnings:
        if warn is not None:
            warn(warning)
    return problems + rubric_problems
