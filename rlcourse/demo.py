"""The bundled demo: a small class of ps1 submissions, autograded end to end.

The demo notebooks live in `demo/submitted/<student>/ps1/ps1.ipynb` (nbgrader's layout). They
are built from entries of the test bank, so each demo student is also a tested case:
`python -m rlcourse.demo --rebuild` writes them again after the source notebook changes, and
a test fails while they are stale.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.course.variants import with_parameter_output
from rlcourse.report.disguise import disguised_submission

ASSIGNMENT = "ps1"
STUDENTS = {
    "ada": "reference",
    "grace": "correct_cleanrl_form",
    "alan": "buggy_clip_without_min",
    "barbara": "unfinished",
    "ken": "cheat_patches_allclose",
    "edsger": "not_json",
    "linus": "correct_cleanrl_form",
}
"""Demo student -> bank entry: correct, correct in another style, a classic bug, unfinished
work, the in-kernel cheat that fools `nbgrader autograde`, a file that is not a notebook, and
a copy of grace's notebook, disguised (DISGUISED), which the similarity report flags."""
DISGUISED = {"linus": 1}
"""Demo student -> seed of rlcourse.report.disguise: names, comments and layout changed."""

RAN_AS = {"linus": "grace"}
"""Demo student -> whose student id their notebook last ran under, when not their own: linus
copied grace's notebook with its outputs, so its parameter cell prints grace's values."""

DUE_DATE = "2026-03-02 17:00:00 UTC"
SUBMITTED_AT = {
    "ada": "2026-03-01 22:14:03.512093 UTC",
    "grace": "2026-03-02 20:20:41.002117 UTC",    # 3 h 20 min late: four started hours
    "alan": "2026-03-03 15:02:10.731460 UTC",     # a day late, inside his two-day extension
    "barbara": "2026-03-02 16:58:59.120001 UTC",
    "ken": "2026-03-02 09:30:00.000000 UTC",
    "edsger": "2026-03-02 12:00:00.000000 UTC",
    "linus": "2026-03-02 16:41:27.204518 UTC",
}
"""Each demo submission's `timestamp.txt`, as `nbgrader submit` wrote it and `collect` copied it."""
EXTENSIONS = {"alan": {"days": 2}}
"""Extensions granted through nbgrader's Gradebook.grant_extension before grading."""
TA_MARKS = "ta-marks.csv"
"""demo/ta-marks.csv: a TA's marking of alan's written answer against the rubric of
explain_clipping (criteria numbered as in source/ps1), imported after grading as
`rlcourse rubric import ps1 demo/ta-marks.csv` would."""


def demo_dir(course: Course) -> Path:
    return course.root / "demo" / "submitted"


def demo_notebooks(course: Course) -> dict[str, Path]:
    assignment = course.assignment(ASSIGNMENT)
    return {student: demo_dir(course) / student / ASSIGNMENT / assignment.notebook
            for student in STUDENTS}


def built_demo(course: Course) -> dict[str, bytes]:
    """What each demo notebook should contain, built from the bank."""
    assignment = course.assignment(ASSIGNMENT)
    entries = {entry.name: entry for entry in load_entries(course.root / "tests" / "bank" / ASSIGNMENT)}
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    built = {student: build_submission(entries[name], base) for student, name in STUDENTS.items()}
    for student, seed in DISGUISED.items():
        built[student] = disguised_submission(built[student], seed, assignment.release_notebook)
    if assignment.variants.enabled:
        built = {student: with_parameter_output(content, assignment.name, assignment.variants,
                                                RAN_AS.get(student, student))
                 for student, content in built.items()}
    return built


def rebuild(course: Course) -> None:
    targets = demo_notebooks(course)
    for student, content in built_demo(course).items():
        targets[student].parent.mkdir(parents=True, exist_ok=True)
        targets[student].write_bytes(content)
        (targets[student].parent / "timestamp.txt").write_text(SUBMITTED_AT[student])


def prepare_gradebook(class_dir, assignment) -> None:
    """What the instructor did before grading: the due date and the extensions, in the demo
    class's gradebook (`nbgrader db assignment add ps1 --duedate=...`, `grant_extension`)."""
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import GradebookOutOfDate, ensure_assignment_in_gradebook, nbgrader_on_path

    nbgrader_on_path()
    try:
        ensure_assignment_in_gradebook(class_dir.db_url, assignment)
    except GradebookOutOfDate:  # the demo's gradebook is made by this demo: make it again
        from rlcourse.record.audit import AUDIT_NAME

        print(f"The demo's gradebook was made from an older release of {assignment.name}: "
              "starting it again.", file=sys.stderr)
        (class_dir.root / "gradebook.db").unlink()
        # ... and its audit log with it: the log explains this gradebook's scores, and kept, it
        # would report every score of the one removed as changed behind rlcourse's back.
        (class_dir.root / AUDIT_NAME).unlink(missing_ok=True)
        ensure_assignment_in_gradebook(class_dir.db_url, assignment)
    with Gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment(assignment.name, duedate=DUE_DATE)
        for student, duration in EXTENSIONS.items():
            gradebook.update_or_create_student(student)
            gradebook.update_or_create_submission(assignment.name, student)
            gradebook.grant_extension(assignment.name, student, **duration)


def import_ta_marks(course: Course, assignment, class_dir) -> bool:
    """The TA's marks of demo/ta-marks.csv into the demo gradebook, so a feedback page shows the
    criteria met. Skipped with a warning, never an error, while the source notebook has no
    rubric that the file's criteria fit: the rest of the demo does not depend on it."""
    from rlcourse.batch.rubric_import import import_marks
    from rlcourse.course.config import CourseError

    try:  # a row whose question has no rubric, or no such criterion, refuses the file
        done = import_marks(assignment, class_dir, demo_dir(course).parent / TA_MARKS)
    except CourseError as error:
        print(f"demo: the TA's marks (demo/{TA_MARKS}) were not imported: {error}", file=sys.stderr)
        return False
    marked = ", ".join(f"{student} {question} {score:g}" for student, question, score in done.marked)
    already = f"{done.unchanged} already in the gradebook as they are" if done.unchanged else ""
    print(f"Imported the TA's marks (demo/{TA_MARKS}): " + "; ".join(filter(None, (marked, already))),
          file=sys.stderr)
    return True


def run_demo(course: Course, *, strategy: str = "fork", isolation: str | None = None,
             workers: int | None = None) -> int:
    """The whole path on the demo class (`demo/`, an nbgrader course directory of its own):
    autograde into its gradebook, feedback pages, the TA report and both exports."""
    from rlcourse.batch.autograde import autograde
    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.report.export import export
    from rlcourse.explain.terminal import print_report, print_summary
    from rlcourse.report.class_outputs import write_class_outputs
    from rlcourse.report.similarity import write_similarity_report

    assignment = course.assignment(ASSIGNMENT)
    class_dir = ClassDirectory(demo_dir(course).parent)
    print(f"Autograding the demo class {class_dir.root} ({len(STUDENTS)} students, {ASSIGNMENT}, "
          f"due {DUE_DATE}; extensions: " + ", ".join(
              f"{student} {' '.join(f'{n} {unit}' for unit, n in d.items())}"
              for student, d in EXTENSIONS.items()) + ") ...", file=sys.stderr)
    prepare_gradebook(class_dir, assignment)
    started = time.perf_counter()
    outcomes = autograde(assignment, class_dir=class_dir, strategy=strategy, isolation=isolation,
                         workers=workers)
    elapsed = time.perf_counter() - started
    diagnoses_dir = assignment.grader_dir
    for outcome in outcomes:
        if outcome.report.failed() and outcome.grade is not None:
            print(f"\n{outcome.student}:")
            print_report(outcome.grade, diagnoses_dir=diagnoses_dir)
    print_summary([(outcome.student, outcome.report, outcome.grade) for outcome in outcomes])
    statuses = ", ".join(f"{outcome.student} {outcome.status}" for outcome in outcomes)
    print(f"{len(outcomes)} submissions in {elapsed:.1f} s ({statuses}).")
    import_ta_marks(course, assignment, class_dir)
    written = write_class_outputs(assignment, class_dir)
    written["Gradescope results"] = export(assignment, class_dir=class_dir, format="gradescope")
    written["LMS CSV"] = export(assignment, class_dir=class_dir, format="csv")
    # The demo class is built from the reference solution, so it counts as given code here.
    written["similarity"] = write_similarity_report(assignment, class_dir, ignore_reference=True)[1]
    print("\nWhere everything is:")
    for label, path in written.items():
        print(f"  {label:20s} {path}")
    print(f"  {'one feedback page':20s} {class_dir.feedback / 'alan' / ASSIGNMENT / 'ps1.html'}")
    print(f"  (nbgrader sees it too: cd {class_dir.root} && nbgrader export)")
    print("\nFeedback before the deadline: `make web-demo` serves these students (their tokens printed) "
          "at http://127.0.0.1:8000/; on JupyterHub, `rlcourse hub config` writes a hub where each "
          "notebook's last cell submits it (docs/operators/deployment.md).")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Build or grade the bundled demo submissions.")
    parser.add_argument("--rebuild", action="store_true", help="write the demo notebooks from the bank")
    options = parser.parse_args(argv)
    course = Course.find()
    if options.rebuild:
        rebuild(course)
        return 0
    return run_demo(course)


if __name__ == "__main__":
    sys.exit(main())
