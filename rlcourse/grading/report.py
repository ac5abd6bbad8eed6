"""A graded submission as data: item scores, diagnoses, and notebook-level errors.

`Report.to_json()` is the contract of `rlcourse grade --json` (see docs/architecture.md):
`{"assignment", "score", "max_score", "items": [{"id", "score", "max_score", "passed", "message",
"diagnosis"}], "errors": [...]}`. Extra keys are added beside these, never instead of them.
"""
from __future__ import annotations

import dataclasses
import json

from rlcourse import engine_version


@dataclasses.dataclass
class ItemResult:
    id: str
    max_score: float
    score: float = 0.0
    passed: bool = False
    message: str = ""
    diagnosis: str | None = None
    title: str = ""
    cell: str | None = None
    seconds: float = 0.0
    kind: str = "code"
    """What the item grades (rlcourse.grading.rubric.KINDS): decides, with the assignment's
    feedback policy, whether its outcome may be shown before the due date."""
    fix: str = ""
    """The remedy, kept out of `message` (rlcourse.grading.rubric.Failure): shown after the due
    date only."""

    def to_json(self) -> dict:
        return {"id": self.id, "score": self.score, "max_score": self.max_score,
                "passed": self.passed, "message": self.message, "diagnosis": self.diagnosis,
                "title": self.title, "cell": self.cell, "seconds": round(self.seconds, 3),
                "kind": self.kind, "fix": self.fix}


@dataclasses.dataclass
class Report:
    assignment: str
    notebook: str
    items: list[ItemResult]
    errors: list[str] = dataclasses.field(default_factory=list)
    sha256: str | None = None
    isolation: str = "rlimits"
    confinement: dict = dataclasses.field(default_factory=dict)
    """What confined the worker besides `isolation`: {"landlock": ABI version (0: none),
    "pids_cgroup": bool}; empty in reports older than these layers."""
    timings: dict = dataclasses.field(default_factory=dict)
    artifacts: dict = dataclasses.field(default_factory=dict)
    """Plain data for the feedback page's figures (see graders/<assignment>/feedback.py)."""
    parameters: dict = dataclasses.field(default_factory=dict)
    """The student's own values the submission was graded with ([variants]); empty without."""
    rlcourse_version: str = dataclasses.field(default_factory=engine_version)
    """The engine that graded it (`rlcourse --version`); "unknown" in reports saved before
    versions were recorded."""

    @property
    def score(self) -> float:
        return round(sum(item.score for item in self.items), 6)

    @property
    def max_score(self) -> float:
        return round(sum(item.max_score for item in self.items), 6)

    def failed(self) -> list[ItemResult]:
        return [item for item in self.items if not item.passed]

    @property
    def unreadable_reason(self) -> str | None:
        """Why the notebook could not be graded at all (every item `unreadable_notebook`), or
        None when it was graded."""
        if self.items and all(item.diagnosis == "unreadable_notebook" for item in self.items):
            return self.errors[0] if self.errors else self.items[0].message
        return None

    def to_json(self) -> dict:
        return {"assignment": self.assignment, "score": self.score, "max_score": self.max_score,
                "items": [item.to_json() for item in self.items], "errors": list(self.errors),
                "notebook": self.notebook, "sha256": self.sha256, "isolation": self.isolation,
                "confinement": dict(self.confinement),
                "timings": {key: round(value, 3) for key, value in self.timings.items()},
                "artifacts": self.artifacts, "parameters": dict(self.parameters),
                "rlcourse_version": self.rlcourse_version}

    @classmethod
    def from_json(cls, data: dict) -> "Report":
        """Rebuild a report saved with `to_json` (the autograde ledger keeps them)."""
        items = [ItemResult(id=item["id"], max_score=item["max_score"], score=item["score"],
                            passed=item["passed"], message=item["message"],
                            diagnosis=item["diagnosis"], title=item.get("title", ""),
                            cell=item.get("cell"), seconds=item.get("seconds", 0.0),
                            kind=item.get("kind", "code"), fix=item.get("fix", ""))
                 for item in data["items"]]
        return cls(data["assignment"], data.get("notebook", ""), items,
                   errors=list(data.get("errors", [])), sha256=data.get("sha256"),
                   isolation=data.get("isolation", "rlimits"),
                   confinement=dict(data.get("confinement", {})), timings=dict(data.get("timings", {})),
                   artifacts=dict(data.get("artifacts", {})),
                   parameters=dict(data.get("parameters", {})),
                   rlcourse_version=data.get("rlcourse_version", "unknown"))

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2)
