"""Where a course lives on disk and what each assignment declares about itself.

A course directory is the one holding `nbgrader_config.py`; each assignment has a folder in
`graders/` with `assignment.toml` (its notebook, framework and limits) and `diagnoses.toml`
(the misconception tags its items may report).
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rlcourse.course.config import (AssignmentConfig, CourseError, GradescopePolicy, RegradePolicy, WebPolicy,
                                    check_release_has_notebook)
from rlcourse.course.variants import Variants
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.worker.limits import Limits

__all__ = ["Assignment", "Course", "CourseError"]


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
    variants: Variants = Variants()
    """Each student's own parameter values ([variants], rlcourse.course.variants)."""

    def parameters(self, student: str | None) -> dict:
        """The values `student` works with (the defaults for None or with variants off)."""
        return self.variants.for_student(self.name, student)
    web: WebPolicy = WebPolicy()
    """What `rlcourse web` allows each student: gradings per window, late submissions ([web])."""
    gradescope: GradescopePolicy = GradescopePolicy()
    """Which field of Gradescope's metadata names the student ([gradescope])."""
    regrades: RegradePolicy = RegradePolicy()
    """When a student may ask for a regrade ([regrades], rlcourse.record.requests)."""

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
        config = AssignmentConfig.read(spec)
        check_release_has_notebook(config, release_dir=self.root / "release" / name, where=str(spec))
        return Assignment(name=name, notebook=config.notebook, framework=config.framework,
                          course=self, limits=config.limits, title=config.title,
                          skip_cells=config.skip_cells, fixed_limits=config.fixed_limits,
                          feedback=config.feedback, variants=config.variants,
                          web=config.web, gradescope=config.gradescope, regrades=config.regrades)

    def assignment_names(self) -> list[str]:
        return sorted(path.parent.name for path in (self.root / "graders").glob("*/assignment.toml"))

    @property
    def cache_dir(self) -> Path:
        return self.root / ".rlcourse-cache"
