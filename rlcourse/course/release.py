"""The released notebook, read once: which cell is which to nbgrader, and what grading needs of it.

Grading, the feedback page, the autograded notebook, the redactor, the test bank and the
similarity report all ask the same questions of the release: which cells a student answers,
which are given code that grading restores, which are nbgrader's visible test cells and what
they are worth, which demonstration cells may be skipped. They ask them here, through nbgrader's
own helpers (`nbgrader.utils.is_grade`, `is_solution`, `is_locked`), so a cell means the same
thing to rlcourse as to `nbgrader autograde`.

The source notebook (the release with the instructor's answers) is read here too, for the two
things the engine takes from it: each solution cell's answer (the bank's "reference student")
and the text of its solution regions (lines the redactor keeps out of reports). Neither ever
reaches a student: the model lives in the grader process.
"""
from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_locked, is_solution

from rlcourse.course.submission import is_submit_cell

SOLUTION_MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", re.MULTILINE)
"""nbgrader's solution delimiters as the course writes them (Python comments), whole lines."""
SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)


def grade_id_of(cell) -> str | None:
    """The grade_id of any notebook's cell (a submission's too, whose metadata may be anything):
    how a cell is matched to the release's."""
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
    return grade_id if isinstance(grade_id, str) and grade_id else None


@dataclasses.dataclass(frozen=True)
class ReleasedCell:
    """One cell of the release, with nbgrader's view of it."""

    index: int
    cell_type: str
    source: str
    grade_id: str | None
    solution: bool
    """A cell the student writes (nbgrader `is_solution`)."""
    grade: bool
    """A cell that carries points (nbgrader `is_grade`)."""
    locked: bool
    """nbgrader would restore its source (`is_locked`: test cells and locked given cells)."""
    points: float
    """Its points if it is a grade cell, else 0."""
    submit: bool = False
    """The submit cell (tagged `SUBMIT_CELL_TAG`): never run by grading, nor expected of a
    submission (one made before the cell was released has none)."""

    @property
    def visible_test(self) -> bool:
        """nbgrader's autograded test cell: points, no answer. Never run by rlcourse: the
        hidden graders its points stand for are."""
        return self.grade and not self.solution

    @property
    def given(self) -> bool:
        """Locked code that is neither an answer nor a test: the environment, training loop and
        helpers graders call. Grading runs the release's version of it."""
        return (self.cell_type == "code" and self.locked and bool(self.grade_id)
                and not self.solution and not self.grade and not self.submit)

    @property
    def todo(self) -> bool:
        """A code cell the student writes."""
        return self.cell_type == "code" and self.solution and bool(self.grade_id)


@dataclasses.dataclass(frozen=True)
class Release:
    """The released notebook as nbgrader sees it."""

    path: Path | None
    cells: tuple[ReleasedCell, ...]
    _notebook: nbformat.NotebookNode = dataclasses.field(repr=False, compare=False)

    @classmethod
    def read(cls, path: Path) -> "Release":
        """Parse the release; raises OSError or ValueError if it cannot be read."""
        return cls.from_notebook(nbformat.read(Path(path), as_version=4), path=Path(path))

    @classmethod
    def read_or_empty(cls, path: Path) -> "Release":
        """The release, or one without cells if it is missing or unreadable (then no cell is
        expected, none restored, none may be skipped)."""
        try:
            return cls.read(path)
        except (OSError, ValueError):
            return cls.from_notebook(nbformat.v4.new_notebook(), path=Path(path))

    @classmethod
    def from_notebook(cls, notebook: nbformat.NotebookNode, *, path: Path | None = None) -> "Release":
        cells = []
        for index, cell in enumerate(notebook.cells):
            meta = cell.metadata.get("nbgrader", {})
            grade = bool(is_grade(cell))
            cells.append(ReleasedCell(
                index=index, cell_type=cell.cell_type, source=cell.source,
                grade_id=meta.get("grade_id") or None, solution=bool(is_solution(cell)), grade=grade,
                locked=bool(is_locked(cell)), points=float(meta.get("points", 0)) if grade else 0.0,
                submit=is_submit_cell(cell)))
        return cls(path, tuple(cells), notebook)

    # --- cells by grade id -----------------------------------------------------------------------
    def cell(self, grade_id: str) -> ReleasedCell | None:
        return self.by_id.get(grade_id)

    @property
    def by_id(self) -> dict[str, ReleasedCell]:
        return {cell.grade_id: cell for cell in self.cells if cell.grade_id}

    @property
    def order(self) -> list[str]:
        """Every grade_id in the notebook's order."""
        return [cell.grade_id for cell in self.cells if cell.grade_id]

    @property
    def expected_ids(self) -> set[str]:
        """The cells a submission's run should have: every nbgrader code cell but the visible
        test cells and the submit cell, which are never run."""
        return {cell.grade_id for cell in self.cells
                if cell.grade_id and cell.cell_type == "code" and not cell.visible_test and not cell.submit}

    @property
    def todo_ids(self) -> set[str]:
        """The code cells a student writes."""
        return {cell.grade_id for cell in self.cells if cell.todo}

    @property
    def answer_ids(self) -> set[str]:
        """Every cell a student writes, code or prose."""
        return {cell.grade_id for cell in self.cells if cell.solution and cell.grade_id}

    @property
    def written(self) -> list[tuple[str, float]]:
        """(grade_id, points) of every answer a TA marks by hand (nbgrader's manually graded
        cells: points and an answer), in order: the part of the gradebook's maximum the hidden
        graders do not score."""
        return [(cell.grade_id, cell.points) for cell in self.cells
                if cell.grade and cell.solution and cell.grade_id]

    @property
    def given(self) -> dict[str, str]:
        """grade_id -> source of every given (locked, neither answer nor test) code cell."""
        return {cell.grade_id: cell.source for cell in self.cells if cell.given}

    @property
    def lines(self) -> list[str]:
        """Every line of every cell, in order (what a student already has)."""
        return "\n".join(cell.source for cell in self.cells).splitlines()

    def notebook(self) -> nbformat.NotebookNode:
        """A copy of the released notebook to build on (a submission, a restored cell)."""
        return copy.deepcopy(self._notebook)

    def released_cell(self, grade_id: str) -> nbformat.NotebookNode | None:
        """A copy of the release's own cell, metadata and all, as nbgrader would restore it."""
        found = self.cell(grade_id)
        return copy.deepcopy(self._notebook.cells[found.index]) if found else None

    # --- skip cells ------------------------------------------------------------------------------
    def skip_cell_problems(self, wanted) -> list[str]:
        """What is wrong with `skip_cells`: each must be a given cell of the release (locked,
        neither an answer nor a test) after its last solution code cell, so that no student code
        written in the notebook's own cells can depend on what it defines. A written answer (a
        markdown solution cell) runs no code, so it may follow: it explains what the cell showed."""
        wanted = set(wanted)
        last_solution = max((cell.index for cell in self.cells if cell.solution and cell.cell_type == "code"),
                            default=-1)
        found = {cell.grade_id: cell for cell in self.cells if cell.grade_id in wanted}
        problems = [f"{name} is not a cell of the release" for name in sorted(wanted - set(found))]
        for name, cell in sorted(found.items()):
            if cell.solution or cell.grade or not cell.locked:
                problems.append(f"{name} is not a locked cell without points")
            elif cell.index < last_solution:
                problems.append(f"{name} comes before a solution cell, whose code may use it")
        return problems


RUBRIC_HEADING = re.compile(r"^\*\*Rubric\*\*\s*(?:\((?P<total>\d+(?:\.\d+)?)\s*points?\))?\s*:?\s*$",
                            re.MULTILINE)
"""The line where a written answer's rubric starts in its solution region (`**Rubric** (2
points):`): what comes before it is the model answer, what follows the criteria
(rlcourse.course.rubrics reads them)."""


@dataclasses.dataclass(frozen=True)
class Source:
    """The instructor's source notebook: the release with the answers in."""

    answers: dict[str, str]
    """grade_id -> the instructor's answer of every solution cell, solution markers removed (and,
    for a written answer, its rubric: a student's answer holds no rubric)."""
    regions: tuple[str, ...]
    """The text between every BEGIN SOLUTION and END SOLUTION marker, in order."""

    @classmethod
    def read(cls, path: Path) -> "Source":
        notebook = nbformat.read(Path(path), as_version=4)
        answers, regions = {}, []
        for cell in notebook.cells:
            if is_solution(cell):
                answer = SOLUTION_MARKERS.sub("", cell.source)
                if cell.cell_type == "markdown":  # the model answer, without the TA's rubric
                    rubric = RUBRIC_HEADING.search(answer)
                    answer = answer[:rubric.start()].rstrip() + "\n" if rubric else answer
                answers[cell.metadata.nbgrader["grade_id"]] = answer
            regions += SOLUTION_REGION.findall(cell.source)
        return cls(answers, tuple(regions))
