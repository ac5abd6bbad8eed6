"""rlcourse.web.matching: an upload is refused as another assignment only when that assignment's
release explains it better; the right notebook, however edited, never is."""
import json
from pathlib import Path

import pytest

from rlcourse.web.matching import Releases, describe, upload_grade_ids

ROOT = Path(__file__).resolve().parents[2]
RELEASES = {name: ROOT / "release" / name / f"{name}.ipynb" for name in ("ps1", "ps2", "ps3")}


def notebook_bytes(name: str, edit=None) -> bytes:
    notebook = json.loads(RELEASES[name].read_bytes())
    if edit:
        edit(notebook)
    return json.dumps(notebook).encode()


def resemblance(data: bytes, target: str):
    return Releases().resemblance(upload_grade_ids(data), target, RELEASES)


def released_cells(name: str) -> int:
    """The cells nbgrader tracks in a release, counted from its JSON (25 in ps2 since issue 30's
    second written explanation)."""
    cells = json.loads(RELEASES[name].read_bytes())["cells"]
    return len({cell["metadata"]["nbgrader"]["grade_id"] for cell in cells
                if cell["metadata"].get("nbgrader", {}).get("grade_id")})


def test_another_assignments_notebook_looks_like_it():
    found = resemblance(notebook_bytes("ps2"), "ps1")
    whole = released_cells("ps2")
    assert (found.assignment, found.shared, found.released, found.target_shared) == ("ps2", whole, whole, 5)
    assert describe(found, filename="mine.ipynb", target="ps1").startswith(
        f"mine.ipynb looks like ps2, not ps1: it holds {whole} of the {whole} cells released in ps2 and 5 of ps1's.")
    assert resemblance(notebook_bytes("ps3"), "ps2").assignment == "ps3"


def without_two_thirds_of_its_cells(notebook):
    """A student who deleted most cells and added one of their own."""
    graded = [cell for cell in notebook["cells"] if cell["metadata"].get("nbgrader")]
    for cell in graded[: 2 * len(graded) // 3]:
        notebook["cells"].remove(cell)
    notebook["cells"].append({"cell_type": "code", "metadata": {}, "source": "print('mine')",
                              "outputs": [], "execution_count": None})


@pytest.mark.parametrize("name", ["ps1", "ps2", "ps3"])
def test_the_right_notebook_is_never_refused_however_edited(name):
    assert resemblance(notebook_bytes(name), name) is None
    assert resemblance(notebook_bytes(name, without_two_thirds_of_its_cells), name) is None


def test_a_notebook_with_no_grade_ids_is_left_to_the_grader():
    """Answers pasted into a fresh notebook: nothing says it is another assignment."""
    def strip(notebook):
        for cell in notebook["cells"]:
            cell["metadata"].pop("nbgrader", None)

    assert upload_grade_ids(notebook_bytes("ps2", strip)) == set()
    assert resemblance(notebook_bytes("ps2", strip), "ps1") is None
