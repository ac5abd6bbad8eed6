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
import re
from pathlib import Path

MAX_NOTEBOOK_BYTES = 100 * 1024 * 1024
MAX_DEPTH = 64
"""Nesting of JSON objects and arrays (a Jupyter notebook needs under 10; widget state more)."""
MAX_CONTAINERS = 200_000
"""JSON objects and arrays in the whole file: 5.8 MB of empty dicts is two million of them, and
parsing them (and nbformat's validation after) took 2.4 GB; a course notebook has a few thousand."""
MAX_STRINGS = 2_000_000
"""JSON strings (keys included) in the whole file; each source line of each cell is one."""
MAX_CELLS = 5_000
MAX_METADATA_BYTES = 1 << 20
"""The notebook's and each cell's metadata, as JSON."""
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


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


def check_structure(text: str, name: str = "the notebook") -> None:
    """Raise NotebookProblem when the JSON `text` nests deeper or holds more objects, arrays or
    strings than a notebook may, before anything parses it into objects: a file well under the
    size cap can otherwise cost gigabytes to parse (each empty dict is about 64 bytes in Python,
    and more in nbformat). Strings are skipped whole, so brackets inside them do not count.
    When even counting every bracket and quote stays under the caps (the usual case, at memory
    speed), the exact scan is skipped and the depth is checked after parsing."""
    if (text.count("{") + text.count("[") <= MAX_CONTAINERS
            and text.count('"') <= 2 * MAX_STRINGS):
        return
    depth = containers = strings = 0
    for token in _TOKENS.finditer(text):
        first = token.group()[0]
        if first == '"':
            strings += 1
            if strings > MAX_STRINGS:
                raise NotebookProblem(f"{name} holds more than {MAX_STRINGS:,} JSON strings")
        elif first in "[{":
            depth += 1
            containers += 1
            if depth > MAX_DEPTH:
                raise NotebookProblem(f"{name} nests JSON deeper than {MAX_DEPTH} levels")
            if containers > MAX_CONTAINERS:
                raise NotebookProblem(f"{name} holds more than {MAX_CONTAINERS:,} JSON objects "
                                      "and arrays; Jupyter does not write such notebooks")
        else:
            depth -= 1


def _check_parsed(notebook: dict, name: str) -> None:
    """The bounds that need the parsed notebook: depth, cells, and the size of their metadata."""
    level, deepest = [(notebook, 1)], 1
    while level:
        value, depth = level.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise NotebookProblem(f"{name} nests JSON deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value
        level.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    cells = notebook.get("cells")
    if isinstance(cells, list) and len(cells) > MAX_CELLS:
        raise NotebookProblem(f"{name} has {len(cells):,} cells, more than the {MAX_CELLS:,} allowed")
    for where, metadata in [("the notebook's", notebook.get("metadata")),
                            *((f"cell {index + 1}'s", cell.get("metadata"))
                              for index, cell in enumerate(cells if isinstance(cells, list) else [])
                              if isinstance(cell, dict))]:
        if metadata and len(json.dumps(metadata)) > MAX_METADATA_BYTES:
            raise NotebookProblem(f"{name}: {where} metadata is larger than "
                                  f"{MAX_METADATA_BYTES >> 10} KB")


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


SUBMIT_CELL_TAG = "rlcourse-submit"
"""The tag of the released notebooks' submit cell (rlcourse.web.notebook_submit): it sends the
notebook from the student's hub server, so grading never runs it."""


def is_submit_cell(cell) -> bool:
    tags = cell.get("metadata", {}).get("tags")
    return isinstance(tags, list) and SUBMIT_CELL_TAG in tags


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
    check_structure(text, path.name)
    try:
        notebook = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise NotebookProblem(f"{path.name} is not valid JSON: it may be truncated or "
                              f"not saved by Jupyter ({str(error)[:120]})") from None
    if not isinstance(notebook, dict) or "nbformat" not in notebook:
        raise NotebookProblem(f"{path.name} is not a Jupyter notebook (no nbformat version)")
    _check_parsed(notebook, path.name)
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
            warnings.append(f"cell {index + 1} has malformed metadata; it is run as a plain code cell")
            cell = dict(cell, metadata={})
        if is_visible_test_cell(cell) or is_submit_cell(cell):
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(str(part) for part in source)
        if not isinstance(source, str):
            warnings.append(f"cell {index + 1} has no readable source and was skipped")
            continue
        grade_id = _nbgrader_metadata(cell).get("grade_id")
        cells.append(CodeCell(index, grade_id if isinstance(grade_id, str) else None, source))
    missing = sorted(set(expected_ids) - {cell.grade_id for cell in cells})
    if missing:
        warnings.append("cells expected from the release are missing or lost their nbgrader "
                        "metadata: " + ", ".join(missing) + " (the notebook still runs as it is)")
    return Submission(path, hashlib.sha256(raw).hexdigest(), tuple(cells), tuple(warnings))
