"""`rlcourse --version`, and the engine's version in every report: the JSON of `rlcourse grade
--json` (the report and the grade built on it), the service's view of it, the similarity JSON,
Gradescope's staff data and the feedback page's footer, so a grade can be traced to the engine
that gave it."""
import io
import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from rlcourse import engine_version
from rlcourse.course.diagnoses import load_diagnoses
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.explain.feedback import render_feedback
from rlcourse.grading.grade import Grade, student_view
from rlcourse.grading.report import ItemResult, Report

ROOT = Path(__file__).resolve().parents[2]
RLCOURSE = Path(sys.executable).parent / "rlcourse"


def a_report(**fields) -> Report:
    items = [ItemResult("returns_to_go.random_batches", 2.0, 2.0, True, "", None, "reward-to-go",
                        "test_returns_to_go"),
             ItemResult("policy_loss.ppo_value", 3.0, 0.0, False, "the clipped term without the min",
                        "clip_without_min", "clipped loss value", "test_policy_loss")]
    return Report("ps1", "ps1.ipynb", items, sha256="ab" * 32, **fields)


def test_the_version_is_the_installed_packages_and_pyprojects():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert engine_version() == metadata.version("rlcourse") == declared


def test_rlcourse_version_prints_it_and_exits_zero():
    done = subprocess.run([str(RLCOURSE), "--version"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"rlcourse {engine_version()}"


def test_a_report_records_the_engine_that_graded_it_and_keeps_it_through_the_ledger():
    data = a_report().to_json()
    assert data["rlcourse_version"] == engine_version()
    # A report saved by another version says so when read back, not today's version.
    older = dict(data, rlcourse_version="0.0.9")
    assert Report.from_json(older).to_json()["rlcourse_version"] == "0.0.9"
    saved_before_versions = {key: value for key, value in data.items() if key != "rlcourse_version"}
    assert Report.from_json(saved_before_versions).rlcourse_version == "unknown"


def test_grade_json_and_the_students_view_carry_it():
    grade = Grade(a_report(rlcourse_version="0.0.9"))
    assert grade.to_json()["rlcourse_version"] == "0.0.9"  # what `rlcourse grade --json` prints
    for level in ("none", "score", "items", "full"):
        assert student_view(grade, level=level).to_json()["rlcourse_version"] == "0.0.9"


def test_the_feedback_pages_footer_names_the_version():
    page = render_feedback(Grade(a_report(rlcourse_version="0.0.9")), student="alan", submission_cells=(),
                           todo_ids=set(), diagnoses=load_diagnoses(ROOT / "graders" / "ps1"), figures=[],
                           policy=FeedbackPolicy())
    footer = page[page.index("<footer>"):page.index("</footer>")]
    assert "rlcourse 0.0.9" in footer


def test_gradescope_results_name_it_for_the_staff():
    from rlcourse.batch.gradescope import results_json

    results = results_json(Grade(a_report(rlcourse_version="0.0.9")), policy=FeedbackPolicy(),
                           late=False, seconds=1.0)
    assert results["extra_data"]["rlcourse_version"] == "0.0.9"


def test_the_similarity_json_names_it():
    import numpy as np

    from rlcourse.report.similarity import Comparison, write_json

    fields = {name: None for name in Comparison.__dataclass_fields__}
    fields.update(assignment="ps1", threshold=0.4, students=["ada", "grace"], scores=np.array([0.1]),
                  first=np.array([0]), second=np.array([1]), borrowed=[])
    stream = io.StringIO()
    write_json(Comparison(**fields), stream)
    assert json.loads(stream.getvalue())["rlcourse_version"] == engine_version()
