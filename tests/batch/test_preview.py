"""`rlcourse autograde --dry-run` (rlcourse.batch.preview): after a grader fix, the preview
lists exactly the students and items whose grades would move, with how many go up, down or
stay, and changes nothing of the class (gradebook, ledgers, pages, audit log); the real run
then makes those changes and no other, and the pages of the students it moved say what
changed and why. Reports are made in advance (tests/marking.py): no
student code runs."""
import hashlib

from marking import ScoredReports, make_course, new_class

from rlcourse.record.audit import AuditLog

CELL = ScoredReports.CELL


def fingerprint(class_dir) -> dict[str, str]:
    """relative path -> sha256 of every file of the class directory but the lock."""
    return {str(path.relative_to(class_dir.root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(class_dir.root.rglob("*")) if path.is_file() and path.name != ".rlcourse-autograde.lock"}


def run(assignment, class_dir, scores):
    from rlcourse.batch.autograde import autograde

    return autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports(scores),
                     log=lambda message: None)


def test_a_grader_fix_lists_the_students_it_moves_and_writes_nothing(tmp_path):
    from rlcourse.batch.preview import Difference, preview_autograde

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "A.", "alan": "B.", "bob": "C."})
    run(assignment, class_dir, {"ada": 3.0, "alan": 1.0, "bob": 2.0})
    (assignment.course.root / "graders" / "ps1" / "fix.txt").write_text("the grader, fixed\n")
    before = fingerprint(class_dir)

    fixed = {"ada": 4.0, "alan": 1.0, "bob": 0.0}
    preview = preview_autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports(fixed),
                                log=lambda message: None)
    assert preview.differences == [Difference("ada", CELL, 3.0, 4.0), Difference("bob", CELL, 2.0, 0.0)]
    assert preview.totals == {"ada": (3.0, 4.0), "alan": (1.0, 1.0), "bob": (2.0, 0.0)}
    assert preview.summary() == {"up": 1, "down": 1, "unchanged": 1, "new": 0}
    assert fingerprint(class_dir) == before  # gradebook, ledgers, pages and audit log as they were

    with AuditLog(class_dir.root) as log:
        logged = len(log.entries("ps1"))
    run(assignment, class_dir, fixed)  # the real run makes exactly the changes previewed
    with AuditLog(class_dir.root) as log:
        made = [(e.student, e.item, e.old, e.new) for e in log.entries("ps1")[logged:]]
    assert made == [(d.student, d.item, d.now, d.then) for d in preview.differences]
    # ... and tells the students whose grade moved what changed and why; alan's page says nothing.
    pages = {student: (class_dir.feedback / student / "ps1" / "ps1.html").read_text() for student in fixed}
    assert "the course's graders were corrected" in pages["ada"] and f"{CELL}</span>: 3 → 4" in pages["ada"]
    assert f"{CELL}</span>: 2 → 0" in pages["bob"] and 'id="regraded"' not in pages["alan"]


def test_a_student_not_graded_before_is_new(tmp_path):
    from rlcourse.batch.preview import preview_autograde

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "A."})
    preview = preview_autograde(assignment, class_dir=class_dir, progress=False,
                                grading=ScoredReports({"ada": 2.0}), log=lambda message: None)
    assert preview.summary() == {"up": 0, "down": 0, "unchanged": 0, "new": 1}
    assert not (class_dir.root / "gradebook.db").exists() and not (class_dir.root / "audit.db").exists()


def test_the_command_line_prints_the_summary_and_writes_nothing(tmp_path):
    """`rlcourse autograde ps1 --dry-run` on a class graded under the current graders: every
    submission is unchanged (its ledger key matches), so nothing is graded, and nothing written."""
    import subprocess
    import sys
    from pathlib import Path

    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "A.", "alan": "B."})
    run(assignment, class_dir, {"ada": 1.0, "alan": 2.0})
    before = fingerprint(class_dir)
    done = subprocess.run([Path(sys.executable).parent / "rlcourse", "autograde", "ps1", "--dry-run",
                           "--course-dir", class_dir.root], cwd=assignment.course.root, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["ps1: no grade would change (dry run: nothing written)",
                                        "0 up, 0 down, 2 unchanged, 0 new (each student's total after any late penalty)"]
    assert fingerprint(class_dir) == before
