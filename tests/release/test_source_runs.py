"""Each source notebook runs top to bottom in a real Jupyter kernel, its visible tests passing."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from rlcourse.course.directory import Course

COURSE = Course(Path(__file__).resolve().parents[2])


@pytest.mark.slow
@pytest.mark.parametrize("name", COURSE.assignment_names())
def test_source_notebook_runs_in_a_kernel(name, tmp_path):
    assignment = COURSE.assignment(name)
    notebook = nbformat.read(assignment.source_notebook, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    errors = [output for cell in notebook.cells for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    assert not errors
