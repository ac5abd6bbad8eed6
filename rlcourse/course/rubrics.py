"""The rubrics of the manually graded answers, read once from the source notebook (not to be
confused with rlcourse.grading.rubric, the API the hidden graders of code are written with).

A manually graded answer is an nbgrader cell with `grade` and `solution` set, in markdown. Its
model answer and its rubric live in the source notebook's hidden solution region, which
`nbgrader generate_assignment` removes from the release::

    ### BEGIN SOLUTION
    **Model answer.** ...

    **Rubric** (2 points):
    * 1: criterion text, possibly wrapped
      onto indented continuation lines;
    * 1: ...
    ### END SOLUTION

Criteria are numbered 1, 2, ... in order; a TA marks an answer by saying which numbers it meets,
and its score is the sum of their points. The prompt is the release's markdown cell just before
the answer (what the student read). `rlcourse check` reports an answer without a rubric (a
warning: the TA still has the model answer) and a rubric whose points do not add up to the cell's
(an error: every mark made with it would be off).

The model answer never reaches a student: this model is read by the TA's sheet, the CSV import
and `rlcourse check`; the feedback page is given the criteria only (rlcourse.explain.feedback).
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution

from rlcourse.course.release import RUBRIC_HEADING, SOLUTION_MARKERS, SOLUTION_REGION

CRITERION = re.compile(r"^[*-][ \t]+(?P<points>\d+(?:\.\d+)?)[ \t]*(?:points?)?[ \t]*:[ \t]*(?P<text>.*)$")


@dataclasses.dataclass(frozen=True)
class Criterion:
    number: int
    """1-based, in the rubric's order: what a TA writes in the CSV's `criteria` column."""
    points: float
    text: str


@dataclasses.dataclass(frozen=True)
class ManualQuestion:
    """One manually graded answer: what the student was asked, the model answer, the rubric."""

    grade_id: str
    points: float
    """The cell's nbgrader points."""
    prompt: str
    model_answer: str
    criteria: tuple[Criterion, ...]
    stated_total: float | None = None
    """The total the rubric's heading states, if it states one."""
    has_rubric: bool = False
    """A `**Rubric**` heading was found (it may still list no criteria)."""

    @property
    def criteria_total(self) -> float:
        return round(sum(criterion.points for criterion in self.criteria), 6)

    def problem(self) -> str | None:
        """What makes the rubric unusable for marking (None: it can be used)."""
        if not self.has_rubric:
            return None
        if not self.criteria:
            return "its **Rubric** heading lists no criteria (write `* POINTS: text` lines)"
        if abs(self.criteria_total - self.points) > 1e-9:
            return (f"its rubric's criteria add up to {self.criteria_total:g} points but the cell "
                    f"is worth {self.points:g}; make them equal")
        if self.stated_total is not None and abs(self.stated_total - self.points) > 1e-9:
            return (f"its rubric's heading says {self.stated_total:g} points but the cell is worth "
                    f"{self.points:g}")
        return None

    @property
    def usable(self) -> bool:
        return self.has_rubric and self.problem() is None

    def score(self, met) -> float:
        """The points of the criteria numbered in `met`."""
        met = set(met)
        return round(sum(criterion.points for criterion in self.criteria if criterion.number in met), 6)

    def unknown(self, met) -> list[int]:
        """The numbers in `met` that are not criteria of this rubric."""
        numbers = {criterion.number for criterion in self.criteria}
        return sorted(set(met) - numbers)


def parse_rubric(answer: str) -> tuple[str, tuple[Criterion, ...], float | None, bool]:
    """(model answer, criteria, stated total, found) from a solution region's text."""
    heading = RUBRIC_HEADING.search(answer)
    if heading is None:
        return answer.strip(), (), None, False
    model = answer[:heading.start()].strip()
    stated = float(heading["total"]) if heading["total"] else None
    criteria: list[list] = []
    for line in answer[heading.end():].splitlines():
        match = CRITERION.match(line)
        if match:
            criteria.append([float(match["points"]), match["text"].strip()])
        elif criteria and line[:1] in (" ", "\t") and line.strip():
            criteria[-1][1] += " " + line.strip()  # a wrapped criterion
        elif line.strip() and criteria:
            break  # prose after the list ends the rubric
    return model, tuple(Criterion(number, points, text)
                        for number, (points, text) in enumerate(criteria, start=1)), stated, True


def _hidden_text(source: str) -> str:
    """What nbgrader hides of a cell: its solution regions, or the whole cell without markers."""
    regions = SOLUTION_REGION.findall(source)
    return "\n".join(regions) if regions else SOLUTION_MARKERS.sub("", source)


@dataclasses.dataclass(frozen=True)
class Rubrics:
    """Every manually graded answer of an assignment, in the notebook's order."""

    questions: tuple[ManualQuestion, ...]

    @classmethod
    def read(cls, source: Path, release: Path | None = None) -> "Rubrics":
        """From the source notebook; the prompts from the release when given (else the source:
        the markdown before an answer is locked text, the same in both)."""
        source_nb = nbformat.read(Path(source), as_version=4)
        prompts = _prompts(nbformat.read(Path(release), as_version=4) if release else source_nb)
        questions = []
        for cell in source_nb.cells:
            if cell.cell_type != "markdown" or not (is_grade(cell) and is_solution(cell)):
                continue
            meta = cell.metadata.nbgrader
            model, criteria, stated, found = parse_rubric(_hidden_text(cell.source))
            questions.append(ManualQuestion(
                grade_id=meta["grade_id"], points=float(meta.get("points", 0)),
                prompt=prompts.get(meta["grade_id"], ""), model_answer=model, criteria=criteria,
                stated_total=stated, has_rubric=found))
        return cls(tuple(questions))

    @classmethod
    def of(cls, assignment) -> "Rubrics":
        """The assignment's rubrics; read again only when a notebook changed (a batch asks once
        per student)."""
        source, release = Path(assignment.source_notebook), Path(assignment.release_notebook)
        release = release if release.is_file() else None
        return _read_cached(source, release, source.stat().st_mtime_ns,
                            release.stat().st_mtime_ns if release else 0)

    def question(self, grade_id: str) -> ManualQuestion | None:
        return {question.grade_id: question for question in self.questions}.get(grade_id)

    @property
    def ids(self) -> list[str]:
        return [question.grade_id for question in self.questions]


@functools.lru_cache(maxsize=8)
def _read_cached(source: Path, release: Path | None, *_mtimes) -> Rubrics:
    return Rubrics.read(source, release)


def _prompts(notebook) -> dict[str, str]:
    """grade_id of each manual answer -> the markdown cell just before it."""
    prompts, previous = {}, ""
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("grade") and meta.get("solution"):
            prompts[meta.get("grade_id")] = previous
        elif cell.cell_type == "markdown":
            previous = cell.source
    return prompts


def written_answers(path: Path, grade_ids) -> dict[str, str]:
    """grade_id -> the student's text of each manually graded answer in a submitted notebook
    (missing cells are left out); raises rlcourse.course.submission.NotebookProblem for a file
    that is not a notebook. The file is checked by `load_submission` before it is parsed."""
    from rlcourse.course.release import grade_id_of
    from rlcourse.course.submission import load_submission

    load_submission(path)
    notebook = json.loads(Path(path).read_bytes())
    wanted, answers = set(grade_ids), {}
    for cell in notebook.get("cells", []) if notebook.get("nbformat") == 4 else []:
        grade_id = grade_id_of(cell)
        if grade_id in wanted and isinstance(cell, dict) and grade_id not in answers:
            source = cell.get("source", "")
            answers[grade_id] = ("".join(str(part) for part in source)
                                 if isinstance(source, list) else str(source))
    return answers
