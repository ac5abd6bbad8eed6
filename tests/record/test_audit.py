"""The audit log (rlcourse.record.audit): every change to a score of the grade of record lands
with its cause (autograde, regrade after a grader fix, the late policy after an extension, a
rubric import's file and row, a formgrader edit found and reported as unexplained), who made it
and when; and no entry is ever rewritten, by the course's own commands or by SQL.

Reports are made in advance (tests/marking.py's way): these tests are about what is recorded,
so no student code runs; the gradebook, the ledger and autograde are the real ones."""
import datetime
import json
import sqlite3

import pytest
from marking import QUESTION, ScoredReports, copy_class, formgrader_mark, make_course, mark_by_hand, new_class

from rlcourse.record.audit import AuditLog, audit_path, os_user

CELL = ScoredReports.CELL


def autograde_with(assignment, class_dir, scores, **options):
    from rlcourse.batch.autograde import autograde

    return autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports(scores),
                     log=lambda message: None, **options)


def entries(class_dir, student=None):
    with AuditLog(class_dir.root) as log:
        return [entry.to_json() for entry in log.entries("ps1", student=student)]


def changes(class_dir, student=None, kind=None):
    """(student, item, old, new) of the entries (of one cause's kind)."""
    return [(e["student"], e["item"], e["old"], e["new"]) for e in entries(class_dir, student)
            if kind is None or e["cause"]["kind"] == kind]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """ada (3 of 4) and alan (1 of 4) autograded into a fresh gradebook and audit log."""
    folder = tmp_path_factory.mktemp("audit")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {"ada": "An answer.", "alan": "Another answer."})
    autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
    return assignment, class_dir


@pytest.fixture
def klass(graded, tmp_path):
    import shutil

    assignment, class_dir = graded
    course = shutil.copytree(assignment.course.root, tmp_path / "course")
    from rlcourse.course.directory import Course

    return Course(course).assignment("ps1"), copy_class(class_dir, tmp_path / "class")


class TestEachChangeLandsWithItsCause:
    def test_autograde_records_each_cell_with_the_engine_the_graders_and_the_submission(self, klass):
        from rlcourse import engine_version
        from rlcourse.batch.autograde import grading_key

        assignment, class_dir = klass
        ada = entries(class_dir, "ada")
        assert ("ada", CELL, None, 3.0) in changes(class_dir, "ada", "autograde")
        first = next(e for e in ada if e["item"] == CELL)
        assert first["cause"]["engine"] == engine_version()
        assert first["cause"]["graders"] == grading_key(assignment)
        assert first["cause"]["submission"].startswith("sha256:")
        assert first["by"] == os_user()
        at = datetime.datetime.fromisoformat(first["at"])
        assert at.utcoffset() == datetime.timedelta(0)
        assert abs(datetime.datetime.now(datetime.timezone.utc) - at) < datetime.timedelta(minutes=30)
        assert ("alan", CELL, None, 1.0) in changes(class_dir, "alan")

    def test_a_run_that_changes_nothing_adds_nothing(self, klass):
        assignment, class_dir = klass
        before = entries(class_dir)
        autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
        assert entries(class_dir) == before

    def test_a_grader_fix_is_a_regrade_of_the_students_whose_score_moved(self, klass):
        assignment, class_dir = klass
        (assignment.course.root / "graders" / "ps1" / "fix.txt").write_text("a grader fixed\n")
        autograde_with(assignment, class_dir, {"ada": 4.0, "alan": 1.0})
        assert changes(class_dir, kind="regrade") == [("ada", CELL, 3.0, 4.0)]

    def test_an_extension_changes_the_late_penalty_under_the_late_policy(self, klass):
        from rlcourse.batch.extensions import grant_extension
        from rlcourse.record.gradebook import open_gradebook

        assignment, class_dir = klass
        with open_gradebook(class_dir.db_url) as gradebook:
            gradebook.update_or_create_assignment("ps1", duedate=datetime.datetime(2026, 3, 2, 17))
        (class_dir.submitted / "ada" / "ps1" / "timestamp.txt").write_text("2026-03-02 19:00:00.000000 UTC")
        autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
        late = [e for e in entries(class_dir, "ada") if e["item"] == "late_penalty"][-1]
        assert (late["old"], late["new"]) == (0.0, pytest.approx(0.6))  # 2 hours at 10% of 3
        grant_extension(assignment, "ada", class_dir=class_dir, days=1)
        autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
        after = [e for e in entries(class_dir, "ada") if e["item"] == "late_penalty"][-1]
        assert (after["old"], after["new"], after["cause"]["kind"]) == (pytest.approx(0.6), 0.0, "late_policy")
        assert after["cause"]["due"] == "2026-03-02 17:00:00 UTC"
        assert after["cause"]["extension_seconds"] == 86400

    def test_a_rubric_import_names_its_file_and_row(self, klass):
        assignment, class_dir = klass
        mark_by_hand(assignment, class_dir, "alan", "2", "Half of it.")
        [entry] = [e for e in entries(class_dir, "alan") if e["cause"]["kind"] == "rubric_import"]
        assert (entry["item"], entry["old"], entry["new"]) == (QUESTION, None, 1.0)
        assert entry["cause"]["file"].endswith("alan-marks.csv") and entry["cause"]["row"] == 2

    def test_the_service_submission_id_is_part_of_the_cause(self, klass):
        assignment, class_dir = klass
        autograde_with(assignment, class_dir, {"ada": 2.0, "alan": 1.0}, force=True, students=["ada"],
                       audited_by="rlcourse web", audit_detail={"service_submission": 17})
        [entry] = [e for e in entries(class_dir, "ada") if e["new"] == 2.0]
        assert (entry["by"], entry["cause"]["service_submission"], entry["cause"]["kind"]) == (
            "rlcourse web", 17, "regrade")


class TestAFormgraderEdit:
    def test_is_reported_as_unexplained_when_next_seen_and_then_recorded(self, klass):
        from rlcourse.batch.audit import audit_trail

        assignment, class_dir = klass
        mark_by_hand(assignment, class_dir, "alan", "2")
        formgrader_mark(class_dir, "alan", 0.5, "Less than that.")  # behind rlcourse's back
        said = []
        trail = audit_trail(assignment, class_dir=class_dir, log=said.append)
        last = trail[-1].to_json()
        assert (last["student"], last["item"], last["old"], last["new"], last["cause"]["kind"]) == (
            "alan", QUESTION, 1.0, 0.5, "unexplained")
        assert said and "changed outside rlcourse" in said[0] and "alan" in said[0]
        # Seen once, recorded once: the next look finds it explained.
        assert audit_trail(assignment, class_dir=class_dir, log=said.append) == trail and len(said) == 1

    def test_is_recorded_before_the_next_autograde_changes_anything(self, klass):
        assignment, class_dir = klass
        from nbgrader.api import Gradebook

        with Gradebook(class_dir.db_url) as gradebook:  # a TA overrides ada's autograded cell
            gradebook.find_grade(CELL, "ps1", "ps1", "ada").manual_score = 4.0
            gradebook.db.commit()
        autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
        assert changes(class_dir, "ada", "unexplained") == [("ada", CELL, 3.0, 4.0)]


class TestTheLogIsNeverRewritten:
    def test_sql_update_and_delete_raise(self, klass):
        _, class_dir = klass
        connection = sqlite3.connect(audit_path(class_dir.root))
        for statement in ("UPDATE entries SET new = 99", "DELETE FROM entries"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                connection.execute(statement)
        connection.close()

    def test_the_courses_commands_only_add_entries(self, klass):
        assignment, class_dir = klass
        before = entries(class_dir)
        (assignment.course.root / "graders" / "ps1" / "fix.txt").write_text("another fix\n")
        autograde_with(assignment, class_dir, {"ada": 0.0, "alan": 4.0}, force=True)
        mark_by_hand(assignment, class_dir, "ada", "1;2")
        after = entries(class_dir)
        assert after[:len(before)] == before and len(after) > len(before)


def test_the_command_line_prints_the_trail_as_json(klass):
    import os
    import subprocess
    import sys
    from pathlib import Path

    assignment, class_dir = klass
    rlcourse = Path(sys.executable).parent / "rlcourse"
    done = subprocess.run([rlcourse, "audit", "ps1", "--student", "alan", "--json",
                           "--course-dir", str(class_dir.root)], cwd=assignment.course.root,
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}"))
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed and {entry["student"] for entry in printed} == {"alan"}
    assert {"student", "assignment", "item", "old", "new", "cause", "by", "at"} <= set(printed[0])
    table = subprocess.run([rlcourse, "audit", "ps1", "--course-dir", str(class_dir.root)],
                           cwd=assignment.course.root, capture_output=True, text=True, timeout=300,
                           env=dict(os.environ, COLUMNS="200"))
    assert table.returncode == 0 and "autograde" in table.stdout and "ada" in table.stdout


def test_a_class_graded_before_the_log_began_gets_a_baseline_not_false_causes(klass):
    """The first run after upgrading records what the gradebook held as a baseline; the first
    real change after it has its true old value."""
    assignment, class_dir = klass
    audit_path(class_dir.root).unlink()
    autograde_with(assignment, class_dir, {"ada": 3.0, "alan": 1.0})
    assert {e["cause"]["kind"] for e in entries(class_dir)} == {"baseline"}
    assert ("ada", CELL, None, 3.0) in changes(class_dir, "ada", "baseline")
    (assignment.course.root / "graders" / "ps1" / "fix.txt").write_text("a grader fixed\n")
    autograde_with(assignment, class_dir, {"ada": 2.0, "alan": 1.0})
    assert changes(class_dir, kind="regrade") == [("ada", CELL, 3.0, 2.0)]
