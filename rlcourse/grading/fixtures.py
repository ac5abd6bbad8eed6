"""The fixtures every assignment's hidden graders share, as a pytest plugin of the engine.

Each assignment's `conftest.py` used to repeat them (the same twenty lines three times); now
`GradingPlugin` registers this plugin, and a conftest holds only what is its own. A conftest
fixture of the same name still wins (pytest prefers the closer definition).

* `exact`: the assignment's exact oracle, `solutions/<name>/exact.py`; an oracle whose answers
  depend on the student's own values defines `for_parameters(params)`, and `exact` is then what
  that returns for the graded student (ps1: the corridor's rewards bound);
* `misconceptions`: `graders/<name>/misconceptions.py` (the bug models), if the assignment has one;
* `models`: `misconceptions.Models(exact)`, the buggy variants `Evidence` tries on a wrong value;
* `explain`: `misconceptions.EXPLAIN`, the sentences that explain each model;
* `params`: the graded student's own parameter values (`[variants]` of assignment.toml,
  rlcourse.course.variants), the defaults when no student is named or variants are off;
* `rng`: a generator seeded by the item's name, so every student gets the same inputs and
  each item its own.
"""
from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from rlcourse.course.solutions import load_course_module, load_solution


class GraderFixtures:
    def __init__(self, grader_dir: Path, params: dict | None = None):
        self.grader_dir = Path(grader_dir).resolve()
        self.name = self.grader_dir.name
        self.course_root = self.grader_dir.parents[1]
        self._params = params

    @classmethod
    def for_config(cls, config, params: dict | None = None) -> "GraderFixtures":
        """From the path pytest was given: the graders' folder, or one grader file in it."""
        target = Path(str(config.args[0]).split("::")[0]) if config.args else Path.cwd()
        return cls(target if target.is_dir() else target.parent, params)

    @pytest.fixture(scope="session")
    def params(self) -> dict:
        if self._params is not None:
            return dict(self._params)
        from rlcourse.course.config import AssignmentConfig

        return AssignmentConfig.read(self.grader_dir / "assignment.toml").variants.defaults

    @pytest.fixture(scope="session")
    def exact(self, params):
        oracle = load_solution(self.course_root, self.name, "exact")
        bind = getattr(oracle, "for_parameters", None)
        return oracle if bind is None else bind(params)

    @pytest.fixture(scope="session")
    def misconceptions(self):
        return load_course_module(self.grader_dir / "misconceptions.py",
                                  f"rlcourse_graders.{self.name}.misconceptions")

    @pytest.fixture(scope="session")
    def models(self, exact, misconceptions):
        return misconceptions.Models(exact)

    @pytest.fixture(scope="session")
    def explain(self, misconceptions):
        return misconceptions.EXPLAIN

    @pytest.fixture
    def rng(self, request):
        """A generator seeded by the item's name: same inputs for every student, different per item."""
        return np.random.default_rng(zlib.crc32(request.node.name.encode()))
