"""`rlcourse check ASSIGNMENT`: the author's mistakes, found before any student is graded.

Each mistake below once became students' grades: an `@item(cell=...)` naming no grade cell
dropped its points from the gradebook; a test cell's `points` other than its items' total showed
3/2; a tag missing from diagnoses.toml turned a diagnosed bug into a grader error. So grading
(`grade`, `autograde`, `serve`, the service) runs the quick checks first (`preflight`) and
stops with one line naming the file and what to change; `rlcourse check` adds the slow ones
(the release against nbgrader's own output, the bank, the oracle, the reference's full marks).

Every line names the file to change, and the command when one fixes it: a release that is not
the source's is the release's to make again (`make release`), whatever the graders say; a
reference that loses an item names the grader's exception by file and line, or the item, its
diagnosis and message.

The quick checks' verdict is kept under the course's cache by a fingerprint of what they read
(graders, release, assignment.toml, source), so a run on an unchanged course pays only the hashing.

Over 300 lines on purpose: every check is here, each a function returning its lines, so that
`quick_problems`, `full_problems` and `check` read as the list of them.
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

CHECK_VERSION = b"rlcourse-check-3\0"
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

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        from rlcourse.grading.plugin import item_id

        for node in items:
            marker = node.get_closest_marker("item")
            if marker is None:
                self.items.append((item_id(node), str(node.path), 0.0, None))
                self.errors.append(f"{node.nodeid}: has no @item(points=..., cell=...) marker")
            else:
                self.items.append((item_id(node), str(node.path),
                                   float(marker.kwargs["points"]), marker.kwargs.get("cell")))


def collect_items(assignment: Assignment) -> _Items:
    """The assignment's grader items, collected as grading collects them (nothing runs)."""
    from rlcourse.grading.pipeline import grader_session_args
    from rlcourse.grading.plugin import GradingPlugin

    collector, plugin = _Items(), GradingPlugin(None, known_tags=set())
    args = grader_session_args(assignment, "--collect-only")
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[plugin, collector])
    # A module that does not import, by the file and line its exception points at
    # (rlcourse.grading.plugin.GraderError), before the items' own mistakes.
    collector.errors[:0] = [f"{error.where}: cannot be collected: {error.error}"
                            for error in plugin.collection_errors]
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


MAKE_RELEASE = "run `make release` (nbgrader generate_assignment {name}) and commit it"
"""What fixes a release that is not the source's: nbgrader makes it again from the source."""


def read_source(assignment: Assignment) -> Release | None:
    """The source notebook as nbgrader sees it (the same model as the release: its cells'
    grade ids, flags and points), or None where a course is deployed without its sources (a
    Gradescope image may be): the release is then all there is to check against."""
    if not assignment.source_notebook.is_file():
        return None
    try:
        return Release.read(assignment.source_notebook)
    except (OSError, ValueError) as error:
        raise CourseError(f"{_shown(assignment, assignment.source_notebook)}: cannot be read "
                          f"({error})") from None


def quick_problems(assignment: Assignment) -> list[str]:
    """The checks grading runs first: each problem as `file: what to change`.

    The points are the source's: nbgrader makes the release from it, so a cell whose points
    disagree with its items is the source's to fix (then `make release`), and a release whose
    test cells or points are not the source's is stale: it is the file to make again, whatever
    the graders say. Without a source (a deployed copy), the release's points are checked."""
    from rlcourse.course.diagnoses import load_diagnoses

    model = read_release(assignment)
    source = read_source(assignment)
    release = _shown(assignment, assignment.release_notebook)
    spec = _shown(assignment, assignment.grader_dir / "assignment.toml")
    problems = []
    if assignment.skip_cells:
        problems += [f"{spec}: skip_cells: {problem}"
                     for problem in model.skip_cell_problems(set(assignment.skip_cells))]
    problems += variants_problems(assignment, model, release, source=source)
    authority = source or model  # where the points are decided
    decided_in = _shown(assignment, assignment.source_notebook if source else assignment.release_notebook)
    points = {cell.grade_id: cell.points for cell in authority.cells if cell.visible_test}
    collected = collect_items(assignment)
    problems += collected.errors
    totals: dict[str, float] = {}
    files: dict[str, set[str]] = {}
    for name, path, worth, cell in collected.items:
        if cell not in points:
            problems.append(f"{_shown(assignment, Path(path))}: item {name} names cell {cell!r}, "
                            f"which is not a test cell of {decided_in}; set @item(cell=...) to one "
                            f"of {', '.join(points) or '(none)'}")
        else:
            totals[cell] = totals.get(cell, 0.0) + worth
            files.setdefault(cell, set()).add(_shown(assignment, Path(path)))
    misnamed = any(cell not in points for *_, cell in collected.items)
    unequal = []
    for cell, worth in [] if misnamed else points.items():  # a misnamed cell explains its total
        if abs(totals.get(cell, 0.0) - worth) > 1e-9:
            graders = ", ".join(sorted(files.get(cell, ()))) or "no grader file"
            unequal.append(f"{decided_in}: cell {cell} has points = {worth:g} but its items "
                           f"({graders}) total {totals.get(cell, 0.0):g}; make them equal"
                           + (", then run `make release`" if source else ""))
    problems += unequal
    known = {name for name, *_ in collected.items}
    problems += [f"{spec}: [feedback.items] names {item_id!r}, which is no item of the graders; "
                 f"use an id the report gives (one of {', '.join(sorted(known)) or 'none'})"
                 for item_id, _ in assignment.feedback.items if item_id not in known]
    if source is not None and not unequal:  # a source to fix first would make the release again anyway
        problems += stale_release_problems(assignment, model, source)
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


def stale_release_problems(assignment: Assignment, model: Release, source: Release) -> list[str]:
    """One line when the release's cells are not the source's as nbgrader sees them (grade ids,
    which are answers and which are tests, and the tests' points): the release was made from
    an older source, or edited by hand. Either way the release is the file to make again (an
    edit made in it belongs in the source first). The full check (`release_problems`)
    compares every cell's text with nbgrader's own output; this one reads no more than grading
    does, so grading runs it too."""
    def cells(notebook: Release) -> dict[str, tuple]:
        # Not `locked`: nbgrader's LockCells may lock in the release what the source leaves open.
        return {cell.grade_id: (cell.cell_type, cell.solution, cell.grade, cell.points)
                for cell in notebook.cells if cell.grade_id}

    ours, theirs = cells(model), cells(source)
    if ours == theirs:
        return []
    differences = []
    lacking = [grade_id for grade_id in source.order if grade_id not in ours]
    if lacking:
        differences.append(f"lacks {', '.join(lacking)}")
    extra = [grade_id for grade_id in model.order if grade_id not in theirs]
    if extra:
        differences.append(f"has {', '.join(extra)}, which the source no longer has")
    for grade_id in source.order:
        if grade_id in ours and ours[grade_id] != theirs[grade_id]:
            mine, wanted = model.cell(grade_id), source.cell(grade_id)
            if mine.points != wanted.points:
                differences.append(f"test cell {grade_id}: {mine.points:g} points in the release, "
                                   f"{wanted.points:g} in the source")
            else:
                differences.append(f"cell {grade_id} has other nbgrader flags than in the source")
    return [f"{_shown(assignment, assignment.release_notebook)}: is not what nbgrader makes of "
            f"{_shown(assignment, assignment.source_notebook)} ({'; '.join(differences)}); "
            "an edit made in the release belongs in the source; then "
            + MAKE_RELEASE.format(name=assignment.name)]


def variants_problems(assignment: Assignment, model: Release, release: str, *,
                      source: Release | None = None) -> list[str]:
    """With [variants], the locked parameter cell must derive the values the graders use: a
    stale cell (the salt or a set changed since it was written) would show each student values
    other than those they are graded with. The cell is written in the source (the file named
    when it is wrong there); a release whose cell is not the source's is stale."""
    from rlcourse.course.variants import PARAMETER_CELL, parameter_cell

    if not assignment.variants.enabled:
        return []
    expected = parameter_cell(assignment.name, assignment.variants).rstrip("\n")
    make_release = MAKE_RELEASE.format(name=assignment.name)
    if source is not None:
        written = _shown(assignment, assignment.source_notebook)
        shown = source.given.get(PARAMETER_CELL)
        if shown is None:
            return [f"{written}: [variants] is on but there is no locked cell {PARAMETER_CELL!r}; "
                    f"add rlcourse.course.variants.parameter_cell's code as one, then {make_release}"]
        if shown.rstrip("\n") != expected:
            return [f"{written}: cell {PARAMETER_CELL} does not derive the values [variants] of "
                    "assignment.toml declares; write it again with rlcourse.course.variants."
                    f"parameter_cell, then {make_release}"]
        released = model.given.get(PARAMETER_CELL)
        if released is None or released.rstrip("\n") != expected:
            return [f"{release}: cell {PARAMETER_CELL} is not the source's (the release is older "
                    f"than {written}); {make_release}"]
        return []
    shown = model.given.get(PARAMETER_CELL)
    if shown is None:
        return [f"{release}: [variants] is on but there is no locked cell {PARAMETER_CELL!r}; add "
                "rlcourse.course.variants.parameter_cell's code as one in the source and "
                "run `make release`"]
    if shown.rstrip("\n") != expected:
        return [f"{release}: cell {PARAMETER_CELL} does not derive the values [variants] of "
                "assignment.toml declares; write it again with rlcourse.course.variants."
                "parameter_cell in the source and run `make release`"]
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
        return [f"{_shown(assignment, assignment.source_notebook)}: missing; the release is made "
                "from it (restore it, or write it and run `make release`)"]
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
    if actual == expected:
        return []
    what = ("its type", "its text", "its nbgrader metadata")
    differing = [(index, next(name for name, a, b in zip(what, mine, theirs) if a != b), theirs)
                 for index, (mine, theirs) in enumerate(zip(actual, expected)) if mine != theirs]
    found = []
    if differing:
        index, part, theirs = differing[0]
        named = f" ({theirs[3]})" if theirs[3] else ""
        more = f", and {len(differing) - 1} more cell(s) differ" if len(differing) > 1 else ""
        found.append(f"cell {index}{named} differs in {part}{more}")
    if len(actual) != len(expected):
        found.append(f"it has {len(actual)} cells, nbgrader makes {len(expected)}")
    return [f"{_shown(assignment, assignment.release_notebook)}: is not nbgrader's output for "
            f"{_shown(assignment, assignment.source_notebook)} ({'; '.join(found)}); an edit made "
            f"in the release belongs in the source; then {MAKE_RELEASE.format(name=assignment.name)}"]


def _comparable(cells) -> list[tuple]:
    """What nbgrader decides of each cell: its type, its source and its nbgrader metadata (and,
    to name the cell, its grade id, which the metadata holds)."""
    return [(cell.cell_type, cell.source, json.dumps(cell.metadata.get("nbgrader", {}), sort_keys=True),
             cell.metadata.get("nbgrader", {}).get("grade_id"))
            for cell in cells]


def bank_problems(assignment: Assignment) -> list[str]:
    """The bank (tests/bank/<name>/) is right, and as large as the assignment needs:

    * every entry loads, and builds on the reference student (its CELLS and EDITS name cells
      of the release, each edit matching once), and its LOSES names items of the assignment
      with documented tags: an entry that expects a misspelt item would fail the bank's test
      for a reason no one is looking for (`entry_problems`);
    * every solution code cell (a TODO) is written another way than the reference's by at least
      one correct entry, so a different correct form is seen to get full marks (fairness);
    * every misconception the assignment documents has a buggy entry that loses an item with
      that tag, so each diagnosis is seen to be reachable and right.

    The minimums grow with the assignment (one per TODO, one per tag) rather than being fixed
    counts, so a one-exercise assignment made by `rlcourse new` passes, and a ten-exercise one
    with three correct entries does not."""
    from rlcourse.course.bank import load_entry
    from rlcourse.course.diagnoses import load_diagnoses

    folder = assignment.course.root / "tests" / "bank" / assignment.name
    shown = _shown(assignment, folder)
    entries, problems = [], []
    for path in sorted(folder.glob("*.py")) if folder.is_dir() else []:
        if path.name.startswith("_"):
            continue
        try:
            entries.append(load_entry(path))
        except Exception as error:  # noqa: BLE001 - a bank file that does not load is the finding
            problems.append(f"{_shown(assignment, path)}: does not load ({type(error).__name__}: {error})")
    problems += entry_problems(assignment, entries)
    if not any(entry.correct for entry in entries):
        return [*problems, f"{shown}/: no correct entry (a file with LOSES = {{}}); add one"]
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


def entry_problems(assignment: Assignment, entries) -> list[str]:
    """Each entry's own mistakes, one line naming its file: a LOSES id that is no item of the
    assignment (with the ids there are), a LOSES tag no diagnoses.toml documents, a cell of
    CELLS or EDITS the release does not have, an edit that does not match exactly once."""
    from rlcourse.course.bank import build_submission, reference_student
    from rlcourse.course.diagnoses import load_diagnoses

    if not entries:
        return []
    known = [name for name, *_ in collect_items(assignment).items]
    documented = set(load_diagnoses(assignment.grader_dir))
    base = None
    if assignment.source_notebook.is_file():
        base = reference_student(assignment.source_notebook, assignment.release_notebook)
    problems = []
    for entry in entries:
        where = _shown(assignment, entry.path)
        unknown = [item for item in entry.loses if item not in known]
        if unknown:
            problems.append(f"{where}: LOSES names {', '.join(repr(item) for item in unknown)}, "
                            f"no item of {assignment.name}; its items are {', '.join(known) or '(none)'}")
        undocumented = sorted({tag for tag in entry.loses.values() if tag not in documented})
        if undocumented:
            problems.append(f"{where}: LOSES expects the tag(s) {', '.join(map(repr, undocumented))}, "
                            f"which {_shown(assignment, assignment.grader_dir / 'diagnoses.toml')} "
                            "does not document")
        if base is not None and entry.raw is None:
            try:
                build_submission(entry, base)
            except ValueError as error:
                problems.append(f"{where}: {error}")
    return problems


def reference_problems(assignment: Assignment, *, log=None) -> list[str]:
    """The source notebook must score full marks: the grader's own warm-up run (reused when it
    has run for these graders and source already) records times only when it does. When it
    does not, one line per reason, each naming the file to change: a grader's exception at its
    file and line; an item the source loses, with the grader's diagnosis and message; a cell of
    the source that raised; or the engine's own failure."""
    from rlcourse.grading.pipeline import Grader, NotGraded
    from rlcourse.grading.plugin import one_line

    source = _shown(assignment, assignment.source_notebook)
    try:
        with Grader(assignment, warm_cache=True, log=log, workers=False) as grader:
            if grader.reference is not None:
                return []
            losses = grader.reference_losses
    except NotGraded as error:  # the graders did not even collect
        return [f"{problem.where}: {problem.error} (grading the reference solution {source})"
                for problem in error.problems] or [f"{source}: the reference was not graded: {error}"]
    if not losses:
        return [f"{source}: the reference solution does not score full marks; fix the graders "
                "or the source"]
    files = {name: _shown(assignment, Path(path)) for name, path, *_ in collect_items(assignment).items}
    lines = []
    for loss in losses:
        if loss.engine_failure:
            lines.append(f"{source}: the engine failed grading the reference solution: "
                         f"{loss.engine_failure}; see `rlcourse doctor`")
        elif loss.cell_error:
            lines.append(f"{source}: the reference solution's {one_line(loss.cell_error)}")
        elif loss.grader_error:
            item = f"item {loss.item}, " if loss.item else ""
            lines.append(f"{loss.grader_error.where}: {loss.grader_error.error} ({item}grading the "
                         f"reference solution {source}); fix the grader")
        else:
            grader = files.get(loss.item, _shown(assignment, assignment.grader_dir))
            lines.append(f"{source}: the reference solution loses {loss.item} ({grader}; fix "
                         f"the source or the grader): {loss.diagnosis}: {one_line(loss.message)}")
    return lines


def assignment_problem(course, name: str) -> str | None:
    """Why `course.assignment(name)` cannot be read (None: it can), naming the file to change.
    A release folder without the notebook that `assignment.toml` names, where the source has
    it, is a release older than the source (a renamed or new notebook): the release is made
    again, assignment.toml is right."""
    from rlcourse.course.config import AssignmentConfig

    try:
        course.assignment(name)
        return None
    except CourseError as error:
        try:
            config = AssignmentConfig.read(course.root / "graders" / name / "assignment.toml")
        except (CourseError, OSError):
            return str(error)
        release, source = course.root / "release" / name, course.root / "source" / name
        if (source / config.notebook).is_file() and not (release / config.notebook).is_file():
            return (f"release/{name}/{config.notebook}: missing, though source/{name}/"
                    f"{config.notebook} has it (the release is older than the source); "
                    + MAKE_RELEASE.format(name=name))
        return str(error)


def _shown(assignment: Assignment, path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(assignment.course.root.resolve()))
    except ValueError:
        return str(path)


def _fingerprint(assignment: Assignment) -> str:
    import hashlib

    from rlcourse.batch.backends import assignment_fingerprint

    digest = hashlib.sha256(CHECK_VERSION + assignment_fingerprint(assignment).encode())
    if assignment.source_notebook.is_file():  # its points decide (quick_problems)
        digest.update(b"source\0" + assignment.source_notebook.read_bytes())
    return digest.hexdigest()[:24]


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
