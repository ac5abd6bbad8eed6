"""Where a course lives on disk and what each assignment declares about itself.

A course directory is the one holding `nbgrader_config.py`; each assignment has a folder in
`graders/` with `assignment.toml` (its notebook, framework and limits) and `diagnoses.toml`
(the misconception tags its items may report).
"""
from __future__ import annotations

import dataclasses
import os
import tomllib
from pathlib import Path

from rlcourse.course.visibility import FeedbackPolicy, PolicyError
from rlcourse.worker.limits import Limits


class CourseError(Exception):
    """The course directory or an assignment's configuration is missing or wrong."""


@dataclasses.dataclass(frozen=True)
class Assignment:
    """One assignment as the engine sees it."""

    name: str
    """Folder name under source/, release/ and graders/, e.g. "ps1"."""
    notebook: str
    """File name of the notebook students submit."""
    framework: str
    """Array library student functions use: "jax", "torch" or "numpy"."""
    course: "Course"
    limits: Limits = Limits()
    title: str = ""
    fixed_limits: frozenset[str] = frozenset()
    """The limits `assignment.toml` sets; the time limits it leaves out are derived from the
    reference solution's measured times (rlcourse.grading.pipeline.budget)."""
    skip_cells: tuple[str, ...] = ()
    """grade_ids of locked demonstration cells (experiments, plots) that grading does not run.
    Each must be locked and come after every solution cell of the release, so no student code
    can depend on it; the graders must not need it either (the bank's reference entry checks)."""
    feedback: FeedbackPolicy = FeedbackPolicy()
    """What students may see of their report before and after their deadline ([feedback])."""

    @property
    def grader_dir(self) -> Path:
        return self.course.root / "graders" / self.name

    @property
    def source_notebook(self) -> Path:
        return self.course.root / "source" / self.name / self.notebook

    @property
    def release_notebook(self) -> Path:
        return self.course.root / "release" / self.name / self.notebook


@dataclasses.dataclass(frozen=True)
class Course:
    root: Path

    @classmethod
    def find(cls, start: Path | None = None) -> "Course":
        """The course holding `start` (default: $RLCOURSE_ROOT, then the working directory)."""
        candidates = []
        if start is not None:
            candidates.append(Path(start))
        if os.environ.get("RLCOURSE_ROOT"):
            candidates.append(Path(os.environ["RLCOURSE_ROOT"]))
        candidates += [Path.cwd(), Path(__file__).resolve().parents[2]]
        for candidate in candidates:
            for folder in (candidate.resolve(), *candidate.resolve().parents):
                if (folder / "nbgrader_config.py").is_file() and (folder / "graders").is_dir():
                    return cls(folder)
        raise CourseError("no course directory found (a folder with nbgrader_config.py and graders/)")

    def assignment(self, name: str) -> Assignment:
        if not name.isidentifier():
            raise CourseError(f"{name!r} is not an assignment name")
        spec = self.root / "graders" / name / "assignment.toml"
        if not spec.is_file():
            known = ", ".join(self.assignment_names()) or "none"
            raise CourseError(f"no assignment {name!r} (known: {known})")
        data = tomllib.loads(spec.read_text())
        limits = Limits(**data.get("limits", {}))
        fixed = frozenset(data.get("limits", {}))
        skip = data.get("skip_cells", [])
        if not (isinstance(skip, list) and all(isinstance(cell, str) for cell in skip)):
            raise CourseError(f"{spec}: skip_cells must be a list of grade_ids")
        try:
            feedback = FeedbackPolicy.from_table(data.get("feedback"), where=f"{spec} [feedback]")
        except PolicyError as error:
            raise CourseError(str(error)) from None
        return Assignment(name=name, notebook=data["notebook"], framework=data["framework"],
                          course=self, limits=limits, title=data.get("title", ""),
                          skip_cells=tuple(skip), fixed_limits=fixed, feedback=feedback)

    def assignment_names(self) -> list[str]:
        return sorted(path.parent.name for path in (self.root / "graders").glob("*/assignment.toml"))

    @property
    def cache_dir(self) -> Path:
        return self.root / ".rlcourse-cache"
