"""Building submissions for the test bank and the demo from the released notebook.

A bank entry is a small Python file under `tests/bank/<assignment>/` that describes one student:

* a docstring saying how this submission differs from the reference, and why;
* `CELLS = {grade_id: source}`: cells written from scratch (a whole cell's source), and/or
* `EDITS = {grade_id: [(old, new), ...]}`: exact text replacements in the reference answer;
* `LOSES = {item_id: diagnosis}`: the items it must lose and the tag each must carry
  (empty for a correct submission: every item must pass);
* optionally `RAW = b"..."` (or `RAW_TEXT`) for a file that is not a notebook at all;
* optionally `FOLLOWS = "project/path.py"`: the public source the entry ports. Entries that follow
  the same source are one solution written twice, not two independent ones (the similarity
  report's calibration counts each such family once).

The base is the "reference student": the released notebook with each solution cell filled in
from the source notebook (solution markers removed). Each edit must match exactly once, so an
entry fails loudly when the source notebook changes under it.
"""
from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import nbformat

from rlcourse.course.release import Release, Source, grade_id_of
from rlcourse.course.solutions import load_course_module


@dataclasses.dataclass(frozen=True)
class BankEntry:
    name: str
    path: Path
    description: str
    loses: dict
    cells: dict
    edits: dict
    raw: bytes | None
    follows: str | None = None

    @property
    def correct(self) -> bool:
        return not self.loses


def load_entries(bank_dir: Path) -> list[BankEntry]:
    """Every entry of a bank folder (files starting with `_` are helpers, not entries)."""
    return [load_entry(path) for path in sorted(Path(bank_dir).glob("*.py"))
            if not path.name.startswith("_")]


def load_entry(path: Path) -> BankEntry:
    """One entry file, as it is now (an entry is data: a copy imported earlier, before an edit,
    is not reused); raises whatever its import raises (`rlcourse check` names the file)."""
    path = Path(path)
    name = f"rlcourse_bank.{path.parent.name}.{path.stem}"
    sys.modules.pop(name, None)
    module = load_course_module(path, name)
    raw = getattr(module, "RAW", None)
    if raw is None and hasattr(module, "RAW_TEXT"):
        raw = module.RAW_TEXT.encode("utf-8")
    return BankEntry(path.stem, path, (module.__doc__ or "").strip(),
                     dict(getattr(module, "LOSES", {})), dict(getattr(module, "CELLS", {})),
                     dict(getattr(module, "EDITS", {})), raw, getattr(module, "FOLLOWS", None))


def reference_student(source: Path, release: Path) -> nbformat.NotebookNode:
    """The release notebook with every solution cell answered as the source notebook does."""
    answers = Source.read(source).answers
    notebook = Release.read(release).notebook()
    for cell in notebook.cells:
        grade_id = grade_id_of(cell)
        if grade_id in answers:
            cell.source = answers[grade_id]
    return notebook


def build_submission(entry: BankEntry, base: nbformat.NotebookNode) -> bytes:
    """The bytes of the notebook file this entry describes."""
    if entry.raw is not None:
        return entry.raw
    notebook = copy.deepcopy(base)
    by_id = {grade_id_of(cell): cell for cell in notebook.cells}
    for grade_id, source in entry.cells.items():
        _cell(by_id, grade_id, entry).source = source
    for grade_id, edits in entry.edits.items():
        cell = _cell(by_id, grade_id, entry)
        for old, new in edits:
            count = cell.source.count(old)
            if count != 1:
                raise ValueError(f"bank entry {entry.name}: {old!r} occurs {count} times in "
                                 f"cell {grade_id}, expected exactly once")
            cell.source = cell.source.replace(old, new)
    return nbformat.writes(notebook).encode("utf-8") + b"\n"


def _cell(by_id, grade_id, entry):
    if grade_id not in by_id:
        raise ValueError(f"bank entry {entry.name}: no cell {grade_id!r} in the notebook")
    return by_id[grade_id]
