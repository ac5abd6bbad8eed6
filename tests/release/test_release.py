"""release/ is exactly what nbgrader makes from source/, and gives nothing away."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

SOLUTION_REGION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.DOTALL)


def solution_lines(source: Path) -> set[str]:
    lines = set()
    for cell in nbformat.read(source, as_version=4).cells:
        for region in SOLUTION_REGION.findall(cell.source):
            lines |= {line.strip() for line in region.splitlines()
                      if len(line.strip()) >= 8 and not line.strip().startswith("#")}
    return lines


def release_text(release: Path) -> str:
    return "\n".join(cell.source for cell in nbformat.read(release, as_version=4).cells)


@pytest.mark.nbgrader
def test_release_is_what_nbgrader_generates_from_source(ps1, tmp_path):
    """Is the committed release byte-for-byte the output of `nbgrader generate_assignment`?"""
    shutil.copy(ps1.course.root / "nbgrader_config.py", tmp_path)
    shutil.copytree(ps1.source_notebook.parent, tmp_path / "source" / ps1.name)
    bin_dir = Path(sys.executable).parent
    subprocess.run([str(bin_dir / "nbgrader"), "generate_assignment", ps1.name, "--force"],
                   cwd=tmp_path, check=True, capture_output=True,
                   env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)})
    fresh = (tmp_path / "release" / ps1.name / ps1.notebook).read_bytes()
    assert fresh == ps1.release_notebook.read_bytes(), \
        "release/ is stale: run `make release` and commit the result"


def test_source_has_solution_regions(ps1):
    """Does the staleness check below have something to look for?"""
    assert len(solution_lines(ps1.source_notebook)) >= 15


def test_release_contains_no_solution_line(ps1):
    """No line of a solution region reaches the release (unless the given code has it too)."""
    given = SOLUTION_REGION.sub("", release_text(ps1.source_notebook))
    leaked = {line for line in solution_lines(ps1.source_notebook)
              if line in release_text(ps1.release_notebook) and line not in given}
    assert not leaked


def test_release_contains_no_hidden_grader_text(ps1):
    text = release_text(ps1.release_notebook)
    for path in sorted(ps1.grader_dir.glob("*.py")):
        distinctive = {line.strip() for line in path.read_text().splitlines()
                       if len(line.strip()) >= 30 and not line.strip().startswith(("import", "from", "#"))}
        assert not {line for line in distinctive if line in text}, path.name
    assert "BEGIN HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text


def test_release_keeps_every_signature_and_stubs_every_body(ps1):
    """Does each TODO cell keep its def line and docstring, with a body that raises?"""
    source_cells = {c.metadata["nbgrader"]["grade_id"]: c for c in
                    nbformat.read(ps1.source_notebook, as_version=4).cells
                    if c.metadata.get("nbgrader", {}).get("solution")}
    release_cells = {c.metadata["nbgrader"]["grade_id"]: c for c in
                     nbformat.read(ps1.release_notebook, as_version=4).cells
                     if c.metadata.get("nbgrader", {}).get("solution")}
    assert set(release_cells) == set(source_cells)
    for grade_id, cell in release_cells.items():
        assert "raise NotImplementedError()" in cell.source, grade_id
        before_solution = source_cells[grade_id].source.split("### BEGIN SOLUTION")[0]
        assert cell.source.startswith(before_solution), grade_id
