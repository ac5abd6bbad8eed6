"""Which assignment an uploaded notebook is: its nbgrader cells against each assignment's release.

Every cell nbgrader generated carries a `grade_id` in its metadata (answers, written answers,
test cells, locked given code), and a student's notebook keeps them: Jupyter saves cell metadata
as it is. A ps2 notebook submitted as ps1 holds ps2's 24 cells and 5 whose names ps1 shares
(`concept_checks`, `given_training`, ...); graded as ps1 it scores 0 and, as the newest
submission, would replace the student's real ps1 grade. So before anything is stored, the
upload's grade ids are counted against each assignment's release (`Release.order`, every cell
with a grade id), and the upload is refused when **another assignment's release explains it
better**: it holds more of that release's cells than of the target's, and at least half of that
release (`LOOKS_LIKE_SHARE`).

The rule never refuses the right notebook, however edited:

- a student who deleted cells, or added their own (which have no grade id), still holds more of
  the target's cells than of any other (another release shares only cell names such as
  `concept_checks`), and ties go to the target;
- a notebook with no grade ids at all (answers pasted into a fresh notebook), or with the ids of
  no assignment of the course (an older release), is graded as it is: nothing says it is another
  assignment, and the grader runs whatever cells it has, warning about the missing ones.

Grade ids, not the locked cells' checksums: a checksum changes whenever the author edits a cell
and regenerates the release, so a student working from the first release would look like no
assignment; the names stay.
"""
from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path

from rlcourse.course.release import grade_id_of

LOOKS_LIKE_SHARE = 0.5
"""The share of another release's cells an upload must hold to be called that assignment."""


@dataclasses.dataclass(frozen=True)
class Resemblance:
    """What an upload looks like, when it looks like another assignment than the one it was sent to."""

    assignment: str
    """The assignment it looks like."""
    shared: int
    """How many of that assignment's released cells it holds."""
    released: int
    """How many cells with a grade id that assignment's release has."""
    target_shared: int
    """How many of the target's released cells it holds."""


def upload_grade_ids(data: bytes) -> set[str]:
    """The grade ids of every cell of a notebook already checked to read (rlcourse.course.
    submission.load_submission): nbformat 4's `cells`, or an older notebook converted."""
    notebook = json.loads(data.decode("utf-8"))
    if notebook.get("nbformat") != 4:
        import nbformat

        notebook = nbformat.convert(nbformat.from_dict(notebook), 4)
    cells = notebook.get("cells")
    return {grade_id for grade_id in map(grade_id_of, cells if isinstance(cells, list) else []) if grade_id}


class Releases:
    """Each assignment's released grade ids, read once per release file version."""

    def __init__(self):
        self._cache: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}
        self._lock = threading.Lock()

    def grade_ids(self, path: Path) -> frozenset[str] | None:
        """The release's grade ids, or None when it cannot be read."""
        from rlcourse.course.release import Release

        try:
            stat = Path(path).stat()
        except OSError:
            return None
        version = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._cache.get(path)
            if cached and cached[0] == version:
                return cached[1]
        try:
            ids = frozenset(Release.read(path).order)
        except (OSError, ValueError):
            return None
        with self._lock:
            self._cache[path] = (version, ids)
        return ids

    def resemblance(self, uploaded: set[str], target: str, releases: dict[str, Path]) -> Resemblance | None:
        """The assignment the upload looks like instead of `target` (`releases`: name -> release
        notebook of every assignment of the course), or None when nothing says it is not `target`."""
        counts = {}
        for name, path in releases.items():
            ids = self.grade_ids(path)
            if ids:
                counts[name] = (len(uploaded & ids), len(ids))
        mine = counts.get(target, (0, 0))[0]
        best = max(((shared, name) for name, (shared, size) in counts.items()
                    if name != target and shared > mine and shared >= LOOKS_LIKE_SHARE * size), default=None)
        if best is None:
            return None
        shared, name = best
        return Resemblance(name, shared, counts[name][1], mine)


def describe(resemblance: Resemblance, *, filename: str, target: str) -> str:
    """The refusal, for the student."""
    return (f"{filename} looks like {resemblance.assignment}, not {target}: it holds "
            f"{resemblance.shared} of the {resemblance.released} cells released in "
            f"{resemblance.assignment} and {resemblance.target_shared} of {target}'s. "
            f"Submit your {target} notebook to {target} (and this one to {resemblance.assignment})")
