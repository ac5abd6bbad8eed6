"""The documented diagnosis tags: the engine's generic ones plus each assignment's misconceptions."""
from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

GENERIC = Path(__file__).with_name("diagnoses.toml")


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    tag: str
    summary: str
    fix: str
    generic: bool


def load_diagnoses(grader_dir: Path | None = None) -> dict[str, Diagnosis]:
    """All tags an assignment's items may report, generic ones first."""
    tags = {}
    sources = [(GENERIC, True)]
    if grader_dir is not None and (Path(grader_dir) / "diagnoses.toml").is_file():
        sources.append((Path(grader_dir) / "diagnoses.toml", False))
    for path, generic in sources:
        for tag, entry in tomllib.loads(path.read_text()).items():
            if tag in tags:
                raise ValueError(f"diagnosis tag {tag!r} is defined twice ({path})")
            tags[tag] = Diagnosis(tag, entry["summary"].strip(), entry["fix"].strip(), generic)
    return tags
