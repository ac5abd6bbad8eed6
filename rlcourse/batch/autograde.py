"""Grading a class into nbgrader's gradebook, resumably: `rlcourse autograde ASSIGNMENT`.

For each `submitted/<student>/<assignment>/<notebook>.ipynb` in the class directory (nbgrader's
layout), in order:

1. `find`     pick the notebook; an unusable folder (wrong file name, a link out of the course,
              an unsafe student id) gets a reason instead, and the batch goes on;
2. `grade`    the hidden graders (rlcourse.grading.pipeline) unless the ledger already holds a
              report for exactly these bytes (content hash) and `--force` was not given;
3. `ledger`   the report is saved, atomically, to `autograded/<student>/<assignment>/` before the
              gradebook is touched, so a crash after grading never costs the grading;
4. `record`   per-cell totals go into nbgrader's gradebook through its own API (`Grade.auto_score`
              of each test cell; manual scores are never touched); then the ledger says so;
5. `outputs`  the autograded notebook (visible test cells restored from the release, each
              carrying its hidden items' results) and the feedback page, rebuilt from the ledger
              whenever missing.

A run holds an exclusive lock on the class directory, so two runs never write the gradebook at
once; SQLite makes each gradebook commit atomic. `kill -9` at any point leaves a state the next
run completes: each submission is graded once, and every grade already written stays.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import hashlib
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

from rlcourse.course.directory import Assignment
from rlcourse.batch.faults import crash_point
from rlcourse.course.files import write_atomic
from rlcourse.grading.report import Report
from rlcourse.course.lateness import EXCHANGE_FILES, LatePolicy, Timing, read_timestamp
from rlcourse.explain.terminal import plain, safe

LEDGER_NAME = "rlcourse-report.json"
SAFE_STUDENT_ID = re.compile(r"[A-Za-z0-9_@+-][A-Za-z0-9_.@+-]*")
"""A student id, matched with `fullmatch` (never `match` with `$`, which also matches before a
trailing newline): ASCII letters, digits and _ . @ + -, not starting with a dot, never "..".
ASCII only, so no Unicode look-alike or invisible character can pass for another id."""


@dataclasses.dataclass(frozen=True)
class ClassDirectory:
    """Where a class's submissions and results live (nbgrader's course directory layout)."""

    root: Path

    @property
    def submitted(self) -> Path:
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def reports(self) -> Path:
        return self.root / "reports"

    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.root / 'gradebook.db'}"


@dataclasses.dataclass
class Found:
    """One student's folder for the assignment, as found on disk."""

    student: str
    path: Path | None = None
    problem: str | None = None
    notes: list = dataclasses.field(default_factory=list)


def student_id_problem(student: str) -> str | None:
    if not SAFE_STUDENT_ID.fullmatch(student) or ".." in student:
        return (f"student id {student!r} has characters other than letters, digits and _ . @ + - "
                "(or '..'); rename the folder to the student's id")
    return None


def find_submissions(class_dir: ClassDirectory, assignment: Assignment,
                     students: list[str] | None = None) -> list[Found]:
    """Every student folder holding this assignment, with the notebook to grade or a reason."""
    if students:
        names = list(dict.fromkeys(students))
    elif class_dir.submitted.is_dir():
        names = sorted(entry.name for entry in class_dir.submitted.iterdir()
                       if (entry / assignment.name).exists() or (entry / assignment.name).is_symlink())
    else:
        names = []
    return [_find_one(class_dir, assignment, name) for name in names]


def _find_one(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Found:
    problem = student_id_problem(student)
    if problem:
        return Found(student, problem=problem)
    folder = class_dir.submitted / student / assignment.name
    if not folder.is_dir():
        return Found(student, problem=f"no folder submitted/{student}/{assignment.name}")
    expected = folder / assignment.notebook
    others = sorted(path.name for path in folder.glob("*.ipynb") if path.name != assignment.notebook)
    notes = [f"ignored another notebook in the submission: {name}" for name in others]
    if not (expected.exists() or expected.is_symlink()):
        named = f" (found {', '.join(others)})" if others else ""
        return Found(student, problem=f"no {assignment.notebook} in the submission{named}: "
                     "the file must keep the name of the released notebook", notes=notes)
    if expected.is_symlink() or not _inside(expected.resolve(), class_dir.root.resolve()):
        return Found(student, problem=f"{assignment.notebook} is a link, not a file; "
                     "a submission must be the notebook itself", notes=notes)
    return Found(student, path=expected, notes=notes)


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.relative_to(folder)
        return True
    except ValueError:
        return False


# --- the ledger -------------------------------------------------------------------------------
def ledger_path(class_dir: ClassDirectory, assignment: Assignment, student: str) -> Path:
    return class_dir.autograded / student / assignment.name / LEDGER_NAME


def read_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str) -> dict | None:
    try:
        entry = json.loads(ledger_path(class_dir, assignment, student).read_text())
    except (OSError, ValueError):
        return None
    return entry if isinstance(entry, dict) and "report" in entry and "key" in entry else None


def write_ledger(class_dir: ClassDirectory, assignment: Assignment, student: str, *, key: str,
                 report: Report, recorded: bool, timing: Timing | None = None) -> None:
    entry = {"key": key, "recorded": recorded, "report": report.to_json()}
    if timing is not None:
        entry["timing"] = timing.to_json()
    write_atomic(ledger_path(class_dir, assignment, student), json.dumps(entry, indent=1))


def submission_key(found: Found) -> str:
    """What identifies this submission's content: the notebook's bytes, or the problem with it."""
    if found.path is not None:
        digest = hashlib.sha256()
        with open(found.path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return "sha256:" + digest.hexdigest()
    return "problem:" + hashlib.sha256(found.problem.encode()).hexdigest()


# --- the gradebook ------------------------------------------------------------------------------
def nbgrader_on_path() -> None:
    """nbgrader's Gradebook runs `alembic` by name; make this environment's scripts findable even
    when rlcourse was started by its full path without activating the environment."""
    scripts = str(Path(sys.executable).parent)
    if scripts not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = scripts + os.pathsep + os.environ.get("PATH", "")


def cell_scores(report: Report) -> dict[str, float]:
    """The report's items added up per nbgrader test cell."""
    totals: dict[str, float] = {}
    for item in report.items:
        if item.cell:
            totals[item.cell] = totals.get(item.cell, 0.0) + item.score
    return totals


def _sqlalchemy_warning():
    from sqlalchemy.exc import SAWarning

    return SAWarning


def ensure_assignment_in_gradebook(db_url: str, assignment: Assignment) -> None:
    """Create the assignment, its notebook and its cells in the gradebook from the release, as
    `nbgrader generate_assignment` would (nbgrader's own SaveCells preprocessor), if missing."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.preprocessors import SaveCells

    nbgrader_on_path()
    notebook_id = Path(assignment.notebook).stem
    with Gradebook(db_url) as gradebook:
        gradebook.update_or_create_assignment(assignment.name)
        try:
            gradebook.find_notebook(notebook_id, assignment.name)
            return
        except MissingEntry:
            pass
    notebook = nbformat.read(assignment.release_notebook, as_version=nbformat.NO_CONVERT)
    SaveCells().preprocess(notebook, {"nbgrader": {"db_url": db_url, "assignment": assignment.name,
                                                   "notebook": notebook_id}})


def record_in_gradebook(db_url: str, assignment: Assignment, student: str, report: Report | None,
                        *, timestamp=None, policy=None, gradebook=None):
    """Set the automatic score of every test cell the report covers (None: leave the scores as
    they are); leave manual scores alone; record the submission's timestamp (when known, as
    `nbgrader autograde` does) and the late penalty the course's policy (rlcourse.course.lateness.
    LatePolicy) charges for it. Scores, timestamp and penalty go in one commit: a plugin that
    fails leaves this student's grades as they were. `gradebook`: an open nbgrader Gradebook
    to use (a run keeps one open), else one is opened. Returns the submission's Timing as the
    gradebook now holds it."""
    from nbgrader.api import Gradebook, MissingEntry

    from rlcourse.course.lateness import timing_of

    if gradebook is None:
        with Gradebook(db_url) as opened:
            return record_in_gradebook(db_url, assignment, student, report, timestamp=timestamp,
                                       policy=policy, gradebook=opened)
    notebook_id = Path(assignment.notebook).stem
    totals = cell_scores(report) if report is not None else {}
    with warnings.catch_warnings():
        # nbgrader's add_submission builds rows before adding them to its session, which
        # SQLAlchemy 2 reports as a warning on every new submission; the rows are committed.
        warnings.simplefilter("ignore", category=_sqlalchemy_warning())
        gradebook.update_or_create_student(student)
        try:
            submission = gradebook.find_submission(assignment.name, student)
        except MissingEntry:
            submission = gradebook.add_submission(assignment.name, student)
        submitted = gradebook.find_submission_notebook(notebook_id, assignment.name, student)
        try:
            for grade in submitted.grades:
                if grade.cell.name in totals:
                    grade.auto_score = totals[grade.cell.name]
                    grade.needs_manual_grade = grade.manual_score is not None
            if timestamp is not None:
                submission.timestamp = timestamp
            if policy is not None:
                gradebook.db.flush()
                gradebook.db.expire_all()  # the scores are SQL expressions over the grades just set
                submitted.late_submission_penalty = policy.penalty(
                    student, score=submitted.score, seconds_late=submission.total_seconds_late,
                    cap=submitted.score)
            gradebook.db.commit()
        except BaseException:
            gradebook.db.rollback()
            raise
        gradebook.db.expire_all()
        return timing_of(submission)


# --- the run ------------------------------------------------------------------------------------
@dataclasses.dataclass
class Outcome:
    student: str
    report: Report
    status: str
    """graded; re-recorded (graded before a crash, recorded now); unchanged; late policy updated
    (unchanged, but its timestamp, deadline or penalty changed); refused (unsafe id);
    not graded (the backend could not grade it this run: nothing was written)."""
    timing: "Timing | None" = None
    """When it was submitted against the student's deadline, and the late penalty."""


def tally(outcomes: list[Outcome]) -> dict[str, int]:
    """How many submissions ended in each status; "not graded" makes the run's exit status 1."""
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    return counts


@contextlib.contextmanager
def class_lock(class_dir: ClassDirectory, log):
    class_dir.root.mkdir(parents=True, exist_ok=True)
    with open(class_dir.root / ".rlcourse-autograde.lock", "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another rlcourse autograde is running on this class; waiting for it to finish")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def autograde(assignment: Assignment, *, class_dir: ClassDirectory, students: list[str] | None = None,
              force: bool = False, strategy: str = "fork", isolation: str | None = None,
              workers: int | None = 1, backend: str = "local", scheduler: str | None = None,
              progress: bool = True, log=None) -> list[Outcome]:
    """Grade every submission of `assignment` in `class_dir` into its gradebook.

    `workers`, `backend` and `scheduler` choose where the grading runs (rlcourse.batch.backends:
    1 = this process; N = N local processes; None = every core); the ledger, the gradebook
    and the outputs are always written here, by this process alone, as each report arrives."""
    from rlcourse.batch.backends import GraderSettings, GradingFailed, Job, make_backend

    log = log or (lambda message: print(plain(message), file=sys.stderr))
    outcomes: dict[str, Outcome] = {}
    with class_lock(class_dir, log), contextlib.ExitStack() as stack:
        # The course's late policy is loaded and asked once before anything is written: a
        # plugin that cannot load or raises stops the run here (rlcourse.course.lateness.LatePolicyError).
        policy = LatePolicy(class_dir.root)
        policy.check()
        found = find_submissions(class_dir, assignment, students)
        ensure_assignment_in_gradebook(class_dir.db_url, assignment)
        known = gradebook_students(class_dir.db_url)
        stamps = {}
        for entry in found:
            if student_id_problem(entry.student):
                continue
            stamps[entry.student] = read_timestamp(class_dir.submitted / entry.student / assignment.name)
            if stamps[entry.student][1]:
                log(f"{entry.student}: {stamps[entry.student][1]}")
            if entry.student not in known:
                log(f"{entry.student} was not in the gradebook: added, as nbgrader autograde adds "
                    "students it does not know")
        # One gradebook session for the run (opening one costs a quarter of a second); each
        # student's grades are still their own commit.
        gradebook = stack.enter_context(open_gradebook(class_dir.db_url))
        keep = functools.partial(_keep, class_dir, assignment, policy=policy, stamps=stamps,
                                 gradebook=gradebook)
        to_grade: list[tuple[Found, str]] = []
        with _progress(len(found), enabled=progress) as advance:
            for entry in found:
                if student_id_problem(entry.student):
                    # Never written anywhere under a name that is not a safe student id.
                    log(f"refused submitted/{entry.student}: {entry.problem}")
                    outcomes[entry.student] = Outcome(entry.student, _refused(assignment, entry), "refused")
                    advance(entry.student, "refused")
                    continue
                key = submission_key(entry)
                saved = read_ledger(class_dir, assignment, entry.student)
                if saved and saved["key"] == key and not force:
                    status = "unchanged" if saved.get("recorded") else "re-recorded"
                    outcomes[entry.student] = keep(entry, key, Report.from_json(saved["report"]),
                                                   status, saved=saved)
                    advance(entry.student, outcomes[entry.student].status)
                else:
                    to_grade.append((entry, key))
            if to_grade:
                pending = {entry.student: (entry, key) for entry, key in to_grade}
                grading = make_backend(assignment, GraderSettings(strategy=strategy, isolation=isolation),
                                       workers=workers, backend=backend, scheduler=scheduler, log=log)
                try:
                    jobs = [Job(entry.student, entry.path, entry.problem) for entry, _ in to_grade]
                    for job, result in grading.grade(jobs):
                        entry, key = pending.pop(job.student)
                        if isinstance(result, GradingFailed):
                            # Nothing written: the next run grades this submission again.
                            log(f"not graded this run: {job.student}: {result}")
                            outcomes[entry.student] = Outcome(entry.student, Report(
                                assignment.name, assignment.notebook, [], errors=[str(result)]),
                                "not graded")
                            advance(entry.student, "not graded")
                            continue
                        result.errors.extend(entry.notes)
                        write_ledger(class_dir, assignment, entry.student, key=key, report=result,
                                     recorded=False)
                        crash_point("graded", entry.student)
                        outcomes[entry.student] = keep(entry, key, result, "graded")
                        advance(entry.student, "graded")
                finally:
                    grading.close()
    return [outcomes[entry.student] for entry in found if entry.student in outcomes]


def _keep(class_dir: ClassDirectory, assignment: Assignment, entry: Found, key: str, report: Report,
          status: str, *, policy: LatePolicy, stamps: dict, saved: dict | None = None,
          gradebook=None) -> Outcome:
    """Record a report in the gradebook unless the ledger says it already is (an unchanged one
    gets only its timestamp and late penalty brought up to date: an extension granted since, a
    changed policy), then make sure the autograded notebook and the feedback page reflect it."""
    timestamp, warning = stamps.get(entry.student, (None, None))
    if status != "unchanged":
        timing = record_in_gradebook(class_dir.db_url, assignment, entry.student, report,
                                     timestamp=timestamp, policy=policy, gradebook=gradebook)
        crash_point("recorded", entry.student)
    else:
        timing = record_in_gradebook(class_dir.db_url, assignment, entry.student, None,
                                     timestamp=timestamp, policy=policy, gradebook=gradebook)
    timing = dataclasses.replace(timing, warning=warning)
    if status != "unchanged" or (saved or {}).get("timing") != timing.to_json():
        if status == "unchanged":
            status = "late policy updated"
        write_ledger(class_dir, assignment, entry.student, key=key, report=report, recorded=True,
                     timing=timing)
    mirror_exchange_files(class_dir, assignment, entry.student)
    write_outputs(class_dir, assignment, entry, report, timing=timing)
    return Outcome(entry.student, report, status, timing)


def mirror_exchange_files(class_dir: ClassDirectory, assignment: Assignment, student: str) -> None:
    """Copy `timestamp.txt` and `submission_secret.txt` beside the autograded notebook and the
    feedback page, as nbgrader's autograde and generate_feedback do: `nbgrader release_feedback`
    names each student's page by the secret of the submission it grades."""
    source = class_dir.submitted / student / assignment.name
    for folder in (class_dir.autograded, class_dir.feedback):
        target = folder / student / assignment.name
        for name in EXCHANGE_FILES:
            original, copy = source / name, target / name
            if original.is_file() and not original.is_symlink():
                content = original.read_bytes()
                if not copy.is_file() or copy.read_bytes() != content:
                    write_atomic(copy, content)
            elif copy.exists():
                copy.unlink()  # the submission graded now has none: never keep a stale one


def open_gradebook(db_url: str):
    from nbgrader.api import Gradebook

    nbgrader_on_path()
    return Gradebook(db_url)


def gradebook_students(db_url: str) -> set[str]:
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        return {student.id for student in gradebook.students}


def _refused(assignment: Assignment, entry: Found) -> Report:
    return Report(assignment.name, assignment.notebook, [], errors=[entry.problem])


@contextlib.contextmanager
def _progress(total: int, *, enabled: bool):
    if not enabled:
        yield lambda student, status: None
        return
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)

    columns = (TextColumn("[bold]autograde"), BarColumn(), MofNCompleteColumn(),
               TextColumn("elapsed"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
               TextColumn("{task.fields[last]}"))
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task("autograde", total=total, last="")
        yield lambda student, status: bar.update(task, advance=1, last=safe(f"{student}: {status}"))


def write_outputs(class_dir: ClassDirectory, assignment: Assignment, entry: Found, report: Report,
                  *, timing: Timing | None = None) -> None:
    """The autograded notebook and the feedback page, when missing or older than the ledger.
    The page is what `nbgrader release_feedback` hands out after grading: the assignment's
    `after_due` view (rlcourse.course.visibility), with the submission's time and late penalty."""
    from rlcourse.explain.outputs import write_autograded_notebook, write_feedback_page

    ledger = ledger_path(class_dir, assignment, entry.student)
    stamp = ledger.stat().st_mtime if ledger.exists() else time.time()
    autograded = class_dir.autograded / entry.student / assignment.name / assignment.notebook
    if entry.path is not None and (not autograded.exists() or autograded.stat().st_mtime < stamp):
        write_autograded_notebook(autograded, submitted=entry.path, assignment=assignment, report=report)
    page = class_dir.feedback / entry.student / assignment.name / (Path(assignment.notebook).stem + ".html")
    if not page.exists() or page.stat().st_mtime < stamp:
        write_feedback_page(page, student=entry.student, assignment=assignment, report=report,
                            submitted=entry.path, timing=timing, level=assignment.feedback.after_due)
