"""`rlcourse autograde`: a class graded into nbgrader's real gradebook, resumably, with bad input
recorded rather than fatal. Everything runs the real CLIs (rlcourse and nbgrader) on a class
directory made from the demo submissions (ps1, the end-to-end path) or, where a test is about the
mechanics (kills, reruns, locks, bad input) rather than ps1, from ps2's bank: a ps2 grading costs a
fraction of a ps1 one, whose JAX programs compile afresh for every student."""
import csv
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course
from rlcourse.record.ledger import read_ledger

pytestmark = [pytest.mark.slow, pytest.mark.nbgrader]

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEMO = ROOT / "demo" / "submitted"
COURSE = Course(ROOT)
PS2_BANK = {entry.name: entry for entry in load_entries(ROOT / "tests" / "bank" / "ps2")}
# Three ps2 entries with three different totals, so a mix-up between students fails an assertion:
# full marks, a bug losing 9 points over four items in three cells, a bug losing one 2-point item.
FULL, CLIP, TRPO = "reference", "buggy_clip_without_min", "buggy_trpo_no_sqrt"


def env(**extra):
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", **extra)


def rlcourse(class_dir, *args, check=True, **extra_env):
    return subprocess.run([str(BIN / "rlcourse"), *map(str, args), "--course-dir", str(class_dir)],
                          cwd=ROOT, capture_output=True, text=True, check=check, timeout=900,
                          env=env(**extra_env))


def nbgrader_export(class_dir) -> dict[str, float]:
    """Totals per student as `nbgrader export` (the real CLI) reports them."""
    subprocess.run([str(BIN / "nbgrader"), "export"], cwd=class_dir, check=True, capture_output=True, env=env())
    with open(Path(class_dir) / "grades.csv") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


def make_class(folder: Path, students: dict[str, str]) -> Path:
    """A class directory whose student `name` submitted the ps1 demo notebook of `demo_student`."""
    for name, demo_student in students.items():
        target = folder / "submitted" / name / "ps1"
        target.mkdir(parents=True)
        shutil.copy(DEMO / demo_student / "ps1" / "ps1.ipynb", target / "ps1.ipynb")
    return folder


def ps2_notebook(entry_name: str) -> bytes:
    """The ps2 notebook of a bank entry, built as tests/graders/test_bank.py builds it."""
    assignment = COURSE.assignment("ps2")
    return build_submission(PS2_BANK[entry_name],
                            reference_student(assignment.source_notebook, assignment.release_notebook))


def make_ps2_class(folder: Path, students: dict[str, str]) -> Path:
    """A class directory whose student `name` submitted the ps2 notebook of bank entry `entry`."""
    for name, entry in students.items():
        target = folder / "submitted" / name / "ps2"
        target.mkdir(parents=True)
        (target / "ps2.ipynb").write_bytes(ps2_notebook(entry))
    return folder


@functools.cache
def ps2_item_points() -> dict[str, tuple[float, str | None]]:
    """Each ps2 grader item's points and test cell, as grading collects them (nothing runs)."""
    from rlcourse.batch.check import collect_items

    return {item: (points, cell) for item, _, points, cell in collect_items(COURSE.assignment("ps2")).items}


def ps2_autograded_score(entry_name: str, cell: str | None = None) -> float:
    """The automatic points of a bank entry (of one test cell, if given): every item's points but
    those of the items its LOSES names. The written answers wait for a TA, so they add nothing."""
    lost = PS2_BANK[entry_name].loses
    return sum(points for item, (points, in_cell) in ps2_item_points().items()
               if item not in lost and (cell is None or in_cell == cell))


def ledger_score(class_dir, student, assignment="ps1"):
    entry = read_ledger(ClassDirectory(Path(class_dir)), COURSE.assignment(assignment), student)
    return entry["report"]["score"]


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    class_dir = make_class(tmp_path_factory.mktemp("class"), {"ada": "ada", "alan": "alan", "edsger": "edsger"})
    first = rlcourse(class_dir, "autograde", "ps1")
    return class_dir, first


class TestGradebook:
    def test_nbgrader_export_gives_the_hidden_graders_totals(self, graded_class):
        class_dir, _ = graded_class
        assert nbgrader_export(class_dir) == {"ada": 42.0, "alan": 34.0, "edsger": 0.0}

    def test_each_test_cell_holds_the_total_of_its_items(self, graded_class):
        from nbgrader.api import Gradebook

        class_dir, _ = graded_class
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:
            grade = gradebook.find_grade("test_policy_loss", "ps1", "ps1", "alan")
            assert (grade.auto_score, grade.max_score) == (8.0, 16.0)

    def test_the_run_prints_progress_a_summary_and_where_outputs_are(self, graded_class):
        _, first = graded_class
        assert "3/3" in first.stderr
        assert "clip_without_min" in first.stdout and "unreadable_notebook" in first.stdout
        assert "TA report:" in first.stdout and "3 graded" in first.stdout

    def test_the_run_ends_with_the_similarity_report(self, graded_class):
        class_dir, first = graded_class
        page = class_dir / "reports" / "ps1" / "similarity.html"
        assert f"similarity: {page} (1 of 1 pairs flagged)" in first.stdout  # both on the reference
        assert "edsger" in page.read_text()                                  # not compared: not JSON

    def test_outputs_exist_for_every_student(self, graded_class):
        class_dir, _ = graded_class
        for student in ("ada", "alan", "edsger"):
            assert (class_dir / "feedback" / student / "ps1" / "ps1.html").is_file()
        notebook = nbformat.read(class_dir / "autograded" / "alan" / "ps1" / "ps1.ipynb", as_version=4)
        test_cell = next(c for c in notebook.cells if c.get("id") == "test_policy_loss")
        assert "[FAIL] policy_loss.ppo_value" in test_cell.outputs[0]["text"]
        assert (class_dir / "reports" / "ps1" / "scores.csv").is_file()


class TestRerun:
    def test_unchanged_submissions_are_skipped_and_force_regrades(self, graded_class):
        class_dir, _ = graded_class
        again = rlcourse(class_dir, "autograde", "ps1")
        assert "3 unchanged" in again.stdout
        forced = rlcourse(class_dir, "autograde", "ps1", "--student", "ada", "--force")
        assert "1 graded" in forced.stdout

    def test_a_changed_submission_is_graded_again_and_a_manual_grade_survives_a_forced_rerun(self, tmp_path):
        """One class, three runs: a changed notebook is graded again without --force; the TA's
        manual scores (a written answer, an override of a test cell) survive a forced rerun."""
        from nbgrader.api import Gradebook

        class_dir = make_ps2_class(tmp_path, {"tia": FULL})
        rlcourse(class_dir, "autograde", "ps2")
        (class_dir / "submitted" / "tia" / "ps2" / "ps2.ipynb").write_bytes(ps2_notebook(CLIP))
        again = rlcourse(class_dir, "autograde", "ps2")
        changed_total = ps2_autograded_score(CLIP)
        assert changed_total < ps2_autograded_score(FULL)  # the first grading's total would fail
        assert "1 graded" in again.stdout and nbgrader_export(class_dir) == {"tia": changed_total}
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:
            gradebook.find_grade("explain_break_it", "ps2", "ps2", "tia").manual_score = 1.5
            gradebook.find_grade("test_ppo_loss", "ps2", "ps2", "tia").manual_score = 6.0
            gradebook.db.commit()
        rlcourse(class_dir, "autograde", "ps2", "--force")
        cell_auto = ps2_autograded_score(CLIP, "test_ppo_loss")  # the bug loses 5 of the cell's 7
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:
            assert gradebook.find_grade("explain_break_it", "ps2", "ps2", "tia").manual_score == 1.5
            overridden = gradebook.find_grade("test_ppo_loss", "ps2", "ps2", "tia")
            assert (overridden.manual_score, overridden.auto_score) == (6.0, cell_auto)
        # The automatic points, of which the ppo_loss cell's are overridden to 6, plus 1.5.
        assert nbgrader_export(class_dir) == {"tia": changed_total - cell_auto + 6.0 + 1.5}


class TestNothingLost:
    @pytest.mark.parametrize("stage", ["graded", "recorded"])
    def test_a_kill_between_stages_is_completed_by_the_next_run_without_regrading(self, tmp_path, stage):
        class_dir = make_ps2_class(tmp_path, {"a1": FULL, "b2": CLIP, "c3": TRPO})
        # One grading process, so a1 is recorded before b2 and c3 is not yet graded.
        killed = rlcourse(class_dir, "autograde", "ps2", "--workers", "1", check=False,
                          RLCOURSE_KILL_AT=f"{stage}:b2")
        assert killed.returncode == -signal.SIGKILL
        resumed = rlcourse(class_dir, "autograde", "ps2")
        assert "1 graded" in resumed.stdout  # only c3 is graded; b2's grading was kept
        assert "1 re-recorded" in resumed.stdout and "1 unchanged" in resumed.stdout
        assert nbgrader_export(class_dir) == {s: ps2_autograded_score(e) for s, e in
                                              {"a1": FULL, "b2": CLIP, "c3": TRPO}.items()}

    def test_kill_9_at_an_arbitrary_moment_then_resume(self, tmp_path):
        # Six students: a ps2 grading is quick, and the kill must land with work still to do.
        students = {f"s{i}": entry for i, entry in enumerate([FULL, CLIP, TRPO, FULL, CLIP, TRPO])}
        class_dir = make_ps2_class(tmp_path, students)
        process = subprocess.Popen([str(BIN / "rlcourse"), "autograde", "ps2", "--course-dir", str(class_dir)],
                                   cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ledgers = class_dir / "autograded"
        deadline = time.monotonic() + 300
        while len(list(ledgers.glob("*/ps2/rlcourse-report.json"))) < 2:  # any two, in any order
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        time.sleep(0.5)  # somewhere inside the next submissions
        assert process.poll() is None  # the kill lands mid-batch, not after the run
        process.send_signal(signal.SIGKILL)
        process.wait()
        done = [path.parts[-3] for path in ledgers.glob("*/ps2/rlcourse-report.json")]
        kept = {s: ledger_score(class_dir, s, "ps2") for s in done}
        resumed = rlcourse(class_dir, "autograde", "ps2")
        assert "graded" in resumed.stdout
        assert {s: ledger_score(class_dir, s, "ps2") for s in done} == kept
        assert nbgrader_export(class_dir) == {s: ps2_autograded_score(e) for s, e in students.items()}

    def test_two_runs_at_once_leave_one_consistent_gradebook(self, tmp_path):
        class_dir = make_ps2_class(tmp_path, {"p": FULL, "q": CLIP})
        command = [str(BIN / "rlcourse"), "autograde", "ps2", "--course-dir", str(class_dir)]
        runs = [subprocess.Popen(command, cwd=ROOT, env=env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outputs = [run.communicate(timeout=900) for run in runs]
        assert all(run.returncode == 0 for run in runs)
        assert any("waiting for it to finish" in err for _, err in outputs)
        assert any("2 unchanged" in out for out, _ in outputs)  # the second found the work done
        assert nbgrader_export(class_dir) == {"p": ps2_autograded_score(FULL), "q": ps2_autograded_score(CLIP)}


class TestBadInput:
    @pytest.mark.hostile("autograde-bad-submission-folders")
    def test_every_kind_of_bad_submission_is_recorded_and_the_batch_goes_on(self, tmp_path):
        class_dir = make_ps2_class(tmp_path, {"good": FULL})
        submitted = class_dir / "submitted"

        def add(student, name="ps2.ipynb", *, content=None, notebook=None):
            folder = submitted / student / "ps2"
            folder.mkdir(parents=True, exist_ok=True)
            if notebook is not None:
                nbformat.write(notebook, folder / name)
            else:
                (folder / name).write_bytes(content)

        full_marks = ps2_notebook(FULL)
        base = nbformat.reads(full_marks.decode(), as_version=4)
        add("truncated", content=full_marks[:len(full_marks) // 2])
        no_grade_cells = nbformat.from_dict(json.loads(json.dumps(base)))
        no_grade_cells.cells = [c for c in no_grade_cells.cells
                                if not c.metadata.get("nbgrader", {}).get("grade")]
        add("deleted_cells", notebook=no_grade_cells)
        edited = nbformat.from_dict(json.loads(json.dumps(base)))
        for cell in edited.cells:
            cell.metadata.pop("nbgrader", None)
        edited.cells.append(nbformat.v4.new_code_cell("extra = 'a cell the student added'"))
        edited.metadata["kernelspec"] = {"name": "conda-rl", "display_name": "RL", "language": "python"}
        add("edited_metadata", notebook=edited)
        huge = nbformat.from_dict(json.loads(json.dumps(base)))
        first_code = next(c for c in huge.cells if c.cell_type == "code")
        first_code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (50 << 20))]
        add("huge_output", notebook=huge)
        add("latin1", content="{'cells': 'caf\xe9'}".encode("latin-1"))
        add("empty", content=b"")
        add("two_notebooks", notebook=base)
        add("two_notebooks", "scratch.ipynb", notebook=base)
        add("renamed", "my_ps2.ipynb", notebook=base)
        (submitted / "linked" / "ps2").mkdir(parents=True)
        (submitted / "linked" / "ps2" / "ps2.ipynb").symlink_to(ROOT / "solutions" / "ps2" / "reference.py")
        add("with space", notebook=base)
        add("a..b", notebook=base)

        # One grading process: on a loaded 2-core machine, ten parallel PyTorch gradings once made
        # the training item's ppo_update overrun its 20 s cell limit (a timeout, not bad input).
        result = rlcourse(class_dir, "autograde", "ps2", "--workers", "1")
        totals = nbgrader_export(class_dir)
        full = ps2_autograded_score(FULL)
        assert full > 0 and totals["good"] == full
        assert totals["deleted_cells"] == totals["edited_metadata"] == totals["huge_output"] == full
        assert totals["two_notebooks"] == full
        for student in ("truncated", "latin1", "empty", "renamed", "linked"):
            assert totals[student] == 0.0
        assert "with space" not in totals and "a..b" not in totals
        assert "refused" in result.stdout
        reasons = {s: json.loads((class_dir / "autograded" / s / "ps2" / "rlcourse-report.json").read_text())
                   ["report"]["errors"][0] for s in ("truncated", "latin1", "empty", "renamed", "linked")}
        assert "not valid JSON" in reasons["truncated"] and "not UTF-8" in reasons["latin1"]
        assert "empty" in reasons["empty"] and "must keep the name" in reasons["renamed"]
        assert "is a link" in reasons["linked"]
        two = json.loads((class_dir / "autograded" / "two_notebooks" / "ps2" / "rlcourse-report.json").read_text())
        assert any("scratch.ipynb" in note for note in two["report"]["errors"])
        edited_report = json.loads((class_dir / "autograded" / "edited_metadata" / "ps2" / "rlcourse-report.json").read_text())
        assert any("missing or lost their nbgrader metadata" in note for note in edited_report["report"]["errors"])
        page = (class_dir / "feedback" / "linked" / "ps2" / "ps2.html").read_text()
        assert "def clipped_surrogate" in (ROOT / "solutions" / "ps2" / "reference.py").read_text()
        assert "def clipped_surrogate" not in page  # the linked solution file was never read


class TestExport:
    def test_gradescope_results_have_one_visible_test_per_item(self, graded_class):
        class_dir, _ = graded_class
        folder = Path(rlcourse(class_dir, "export", "ps1", "--format", "gradescope").stdout.strip())
        results = json.loads((folder / "alan" / "results.json").read_text())
        # a test per hidden item and per written answer: Gradescope's total is the gradebook's
        assert results["score"] == 34.0 and len(results["tests"]) == 25 + 2
        assert sum(t["max_score"] for t in results["tests"]) == results["extra_data"]["max_score"] == 46.0
        failed = [t for t in results["tests"] if t["score"] < t["max_score"] and "tags" in t]
        assert {t["tags"][0] for t in failed} == {"clip_without_min"}
        # ps1's concept checks, prediction and value exercises wait for the due date; the rest not
        waiting = [t for t in results["tests"] if t["visibility"] == "after_due_date"]
        assert len(waiting) == 7 and all(t["visibility"] == "visible" for t in results["tests"] if t not in waiting)

    def test_csv_has_a_row_per_student_with_gradebook_totals_and_items(self, graded_class):
        class_dir, _ = graded_class
        path = Path(rlcourse(class_dir, "export", "ps1", "--format", "csv").stdout.strip())
        rows = {row["student_id"]: row for row in csv.DictReader(open(path))}
        assert set(rows) == {"ada", "alan", "edsger"}
        assert float(rows["alan"]["score"]) == 34.0 and float(rows["alan"]["max_score"]) == 46.0
        assert float(rows["alan"]["policy_loss.ppo_value"]) == 0.0
