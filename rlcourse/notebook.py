"""Reading a submitted notebook without trusting it: the cells to run, and what is wrong with it.

Nothing here executes code. A file that is not JSON, not a notebook, too large or not UTF-8 gives a
`NotebookProblem` with a reason a student can act on; a readable notebook gives the code cells
the worker should run, in order. nbgrader's own test cells (grade cells that are not solution
cells) are left out: the hidden graders replace them, and a student's edited asserts never run.

Version 4 notebooks (what Jupyter has written since 2015) are read with the json module and
checked cell by cell here; older versions go through nbformat's converter. Importing nbformat
costs about a second (its schema validator compiles grammars on import), which was a fifth of
grading one notebook from the command line.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

MAX_NOTEBOOK_BYTES = 100 * 1024 * 1024


class NotebookProblem(Exception):
    """The submission cannot be graded as a notebook; the message says why."""


@dataclasses.dataclass(frozen=True)
class CodeCell:
    index: int
    """Position among all cells of the notebook (0-based), as a student sees it."""
    grade_id: str | None
    source: str


@dataclasses.dataclass(frozen=True)
class Submission:
    path: Path
    sha256: str
    cells: tuple[CodeCell, ...]
    warnings: tuple[str, ...] = ()

    def grade_ids(self) -> set[str]:
        return {cell.grade_id for cell in self.cells if cell.grade_id}


def _upgrade(notebook: dict, path: Path) -> dict:
    import nbformat

    try:
        return nbformat.convert(nbformat.from_dict(notebook), 4)
    except Exception as error:  # noqa: BLE001 - nbformat raises many kinds on odd input
        raise NotebookProblem(f"{path.name} is not a Jupyter notebook nbformat can read "
                              f"({str(error)[:120]})") from None


def _nbgrader_metadata(cell) -> dict:
    metadata = cell.get("metadata", {}).get("nbgrader", {})
    return metadata if isinstance(metadata, dict) else {}


def is_visible_test_cell(cell) -> bool:
    meta = _nbgrader_metadata(cell)
    return bool(meta.get("grade")) and not meta.get("solution")


def load_submission(path: Path, *, expected_ids: set[str] = frozenset()) -> Submission:
    """Parse a notebook and list its code cells; raise NotebookProblem if it cannot be used."""
    path = Path(path)
    try:
        if not path.is_file():
            raise NotebookProblem(f"{path.name} is not a regular file")
        size = path.stat().st_size
        if size == 0:
            raise NotebookProblem(f"{path.name} is empty")
        if size > MAX_NOTEBOOK_BYTES:
            raise NotebookProblem(f"{path.name} is {size / 2**20:.0f} MB, more than the "
                                  f"{MAX_NOTEBOOK_BYTES / 2**20:.0f} MB a notebook may be")
        raw = path.read_bytes()
    except OSError as error:
        raise NotebookProblem(f"{path.name} cannot be read ({error.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise NotebookProblem(f"{path.name} is not UTF-8 text (byte {error.start})") from None
    try:
        notebook = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise NotebookProblem(f"{path.name} is not valid JSON: it may be truncated or "
                              f"not saved by Jupyter ({str(error)[:120]})") from None
    if not isinstance(notebook, dict) or "nbformat" not in notebook:
        raise NotebookProblem(f"{path.name} is not a Jupyter notebook (no nbformat version)")
    if notebook["nbformat"] != 4:
        notebook = _upgrade(notebook, path)
    cells_data = notebook.get("cells")
    if not isinstance(cells_data, list):
        raise NotebookProblem(f"{path.name} is not a Jupyter notebook (it has no list of cells)")

    warnings = []
    cells = []
    for index, cell in enumerate(cells_data):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        if not isinstance(cell.get("metadata", {}), dict):
            warnings.append(f"cell {index} has malformed metadata; it is run as a plain code cell")
            cell = dict(cell, metadata={})
        if is_visible_test_cell(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(part) for part in source)
        if not isinstance(source, str):
            warnings.append(f"cell {index} has no readable source and was skipped")
            continue
        grade_id = _nbgrader_metadata(cell).get("grade_id")
        cells.append(CodeCell(index, grade_id if isinstance(grade_id, str) else None, source))
    missing = sorted(set(expected_ids) - {cell.grade_id for cell in cells})
    if missing:
        warnings.append("cells expected from the release are missing or lost their nbgrader "
                        "metadata: " + ", ".join(missing) + " (the notebook still runs as it is)")
    return Submission(path, hashlib.sha256(raw).hexdigest(), tuple(cells), tuple(warnings))
