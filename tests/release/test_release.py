"""release/ is exactly what nbgrader makes from source/, and gives nothing away (every assignment)."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.directory import Course

SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)
COURSE = Course(Path(__file__).resolve().parents[2])
ASSIGNMENTS = [COURSE.assignment(name) for name in COURSE.assignment_names()]
each_assignment = pytest.mark.parametrize("assignment", ASSIGNMENTS, ids=lambda a: a.name)


def solution_lines(source: Path) -> set[str]:
    lines = set()
    for cell in nbformat.read(source, as_version=4).cells:
        for region in SOLUTION_REGION.findall(cell.source):
            lines |= {line.strip() for line in region.splitlines()
                      if len(line.strip()) >= 8 and not line.strip().startswith("#")}
    return lines


def all_text(notebook: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(notebook, as_version=4).cells)


def solution_cells(notebook: Path) -> dict:
    return {cell.metadata["nbgrader"]["grade_id"]: cell
            for cell in nbformat.read(notebook, as_version=4).cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


@pytest.mark.nbgrader
@each_assignment
def test_release_is_what_nbgrader_generates_from_source(assignment, tmp_path):
    """Is the committed release byte-for-byte the output of `nbgrader generate_assignment`?"""
    shutil.copy(COURSE.root / "nbgrader_config.py", tmp_path)
    shutil.copytree(assignment.source_notebook.parent, tmp_path / "source" / assignment.name)
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "nbgrader"), "generate_assignment", assignment.name, "--force"],
                   cwd=tmp_path, check=True, capture_output=True,
                   env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    fresh = (tmp_path / "release" / assignment.name / assignment.notebook).read_bytes()
    assert fresh == assignment.release_notebook.read_bytes(), \
        "release/ is stale: run `make release` and commit the result"


@each_assignment
def test_source_has_solution_regions(assignment):
    """Do the leak checks below have something to look for, in every solution cell? (Per cell,
    not a count for the notebook: `rlcourse new`'s one exercise has one line to look for.)"""
    cells = solution_cells(assignment.source_notebook)
    assert cells
    for grade_id, cell in cells.items():
        lines = {line.strip() for region in SOLUTION_REGION.findall(cell.source)
                 for line in region.splitlines()
                 if len(line.strip()) >= 8 and not line.strip().startswith("#")}
        assert lines, grade_id


@each_assignment
def test_release_contains_no_solution_line(assignment):
    """No line of a solution region reaches the release (unless the given code has it too)."""
    given = SOLUTION_REGION.sub("", all_text(assignment.source_notebook))
    released = all_text(assignment.release_notebook)
    leaked = {line for line in solution_lines(assignment.source_notebook)
              if line in released and line not in given}
    assert not leaked


@each_assignment
def test_release_contains_no_hidden_grader_or_oracle_text(assignment):
    released = all_text(assignment.release_notebook)
    hidden = [*assignment.grader_dir.glob("*.py"),
              *(COURSE.root / "solutions" / assignment.name).glob("exact*.py")]
    for path in sorted(hidden):
        distinctive = {line.strip() for line in path.read_text().splitlines()
                       if len(line.strip()) >= 30 and not line.strip().startswith(("import", "from", "#"))}
        assert not {line for line in distinctive if line in released}, path.name
    assert "BEGIN HIDDEN TESTS" not in released and "BEGIN SOLUTION" not in released


@each_assignment
def test_release_keeps_every_signature_and_stubs_every_body(assignment):
    """Does each TODO cell keep its def line and docstring, with a body that raises?"""
    source_cells = solution_cells(assignment.source_notebook)
    release_cells = solution_cells(assignment.release_notebook)
    assert set(release_cells) == set(source_cells)
    for grade_id, cell in release_cells.items():
        if cell.cell_type == "markdown":  # a written answer, graded by hand
            assert cell.source.strip() == "YOUR ANSWER HERE", grade_id
            continue
        assert "raise NotImplementedError()" in cell.source, grade_id
        before_solution = source_cells[grade_id].source.split("### BEGIN SOLUTION")[0]
        assert cell.source.startswith(before_solution), grade_id
