"""Whose notebook it is, on the paths that grade one upload: `rlcourse grade --student` and
Gradescope's autograder (the uploader from submission_metadata.json). ps1 gives each student their
own seed, clip and rewards ([variants]); a notebook written for ada, with her seed and clip typed
in as numbers (as a student who copies the printed line does), keeps its points only when graded
as ada (its rewards come from the given cell, pinned to whoever it is graded as).

Slow: each test grades whole ps1 notebooks in child processes (about 25 s and 15 s idle).
"""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.variants import STUDENT_VARIABLES, defaults_note, with_parameter_output

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
VARIANT_ITEMS = {"exercises.changed_seed", "exercises.clipping_signs"}


def environment(**extra) -> dict:
    env = {key: value for key, value in os.environ.items()
           if key not in (*STUDENT_VARIABLES, "RLCOURSE_ROOT", "RLCOURSE_SERVICE")}
    env["RLCOURSE_SERVICE"] = "/nonexistent/rlcourse-test.sock"  # never a running service's grades
    return dict(env, **extra)


@pytest.fixture(scope="module")
def adas_notebook(ps1, tmp_path_factory) -> Path:
    """The reference, with exercises 1 and 4 answered from ada's printed values as numbers, and
    her parameter cell's output as her own run left it."""
    own = ps1.parameters("ada")
    assert own != ps1.variants.defaults and own != ps1.parameters("bob")
    entry = next(e for e in load_entries(ROOT / "tests" / "bank" / "ps1") if e.name == "reference")
    entry = dataclasses.replace(entry, cells={
        "exercise_changed_seed": f"other_theta, other_history = train(seed={own['seed']}, "
                                 "method='reinforce', epochs=1)\n",
        "exercise_clipping_signs": f"ratio = jnp.array([0.6, 1.0, 1.4])\neps = {own['clip']}\n"
                                   "positive = jnp.minimum(ratio * 1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * 1.0)\n"
                                   "negative = jnp.minimum(ratio * -1.0, jnp.clip(ratio, 1 - eps, 1 + eps) * -1.0)\n"})
    content = build_submission(entry, reference_student(ps1.source_notebook, ps1.release_notebook))
    path = tmp_path_factory.mktemp("ada") / "ps1.ipynb"
    path.write_bytes(with_parameter_output(content, "ps1", ps1.variants, "ada"))
    return path


def lost(report: dict) -> set[str]:
    return {item["id"] for item in report["items"] if not item["passed"]}


def test_rlcourse_grade_grades_as_the_student_it_is_told(ps1, adas_notebook):
    """One run, two students (--student once per notebook): ada's own keep every point, bob's
    lose the two exercises that read a parameter; without an id, the defaults, and the report
    says so."""
    command = [str(BIN / "rlcourse"), "grade", "ps1", str(adas_notebook), str(adas_notebook), "--json",
               "--no-service"]
    done = subprocess.run([*command, "--student", "ada", "--student", "bob"], cwd=ROOT, env=environment(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    as_ada, as_bob = json.loads(done.stdout)
    # every hidden item passed; the written answers await a TA
    assert as_ada["score"] == as_ada["auto_max_score"] == as_ada["max_score"] - as_ada["pending"]
    assert as_ada["errors"] == []
    assert as_ada["parameters"] == ps1.parameters("ada")
    assert lost(as_bob) == VARIANT_ITEMS and as_bob["parameters"] == ps1.parameters("bob")

    done = subprocess.run(command[:4] + command[5:], cwd=ROOT, env=environment(), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    unknown = json.loads(done.stdout)
    assert lost(unknown) == VARIANT_ITEMS and unknown["parameters"] == ps1.variants.defaults
    assert unknown["errors"] == [defaults_note(ps1.variants)]
    assert "no student id was given" in done.stderr


def test_gradescopes_autograder_grades_as_the_uploader(ps1, adas_notebook, tmp_path):
    """run_autograder's own command, in a simulated /autograder whose source/ is this course:
    the uploader's `sid` is the student id."""
    (tmp_path / "source").symlink_to(ROOT)
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "ps1.ipynb").write_bytes(adas_notebook.read_bytes())
    metadata = {"created_at": "2026-12-01T10:00:00-08:00", "submission_method": "upload",
                "assignment": {"due_date": "2026-12-10T23:00:00-08:00", "late_due_date": None},
                "users": [{"email": "ada.lovelace@example.edu", "id": 1234, "name": "Ada", "sid": "ada"}]}
    (tmp_path / "submission_metadata.json").write_text(json.dumps(metadata))
    done = subprocess.run([sys.executable, "-m", "rlcourse.batch.gradescope", "run", "ps1",
                           "--autograder", str(tmp_path)], cwd=tmp_path, env=environment(),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    results = json.loads((tmp_path / "results" / "results.json").read_text())
    extra = results["extra_data"]
    assert results["score"] == extra["max_score"] - extra["pending"] > 0, results  # written: a TA's
    assert all(test["status"] == "passed" for test in results["tests"] if "status" in test)
    # no notes but the written answers awaiting a TA: not the defaults' either
    assert results["output"] == "4 points of written answers await a TA: they count once marked."
