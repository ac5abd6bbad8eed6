"""Grading a class into nbgrader's gradebook, resumably: `rlcourse autograde ASSIGNMENT`.

For each `submitted/<student>/<assignment>/<notebook>.ipynb` in the class directory (nbgrader's
layout), in order:

1. `find`     pick the notebook; an unusable folder (wrong file name, a link out of the course,
              an unsafe student id) gets a reason instead, and the batch goes on
              (rlcourse.course.class_directory);
2. `grade`    the hidden graders (rlcourse.grading.pipeline) unless the ledger already holds a
              report for exactly these bytes (content hash) and `--force` was not given;
3. `ledger`   the report is saved, atomically, to `autograded/<student>/<assignment>/` before the
              gradebook is touched, so a crash after grading never costs the grading
              (rlcourse.record.ledger);
4. `record`   per-cell totals go into nbgrader's gradebook through its own API (`Grade.auto_score`
              of each test cell; manual scores are never touched); then the ledger says so
              (rlcourse.record.gradebook); every score that changed goes in the audit log with
              its cause, after any value changed outside rlcourse since (rlcourse.record.audit);
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
import datetime
import fcntl
import functools
import hashlib
import sys
import time
from pathlib import Path

from rlcourse.batch.faults import crash_point
from rlcourse.course.class_directory import ClassDirectory, Found, find_submissions, student_id_problem
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.lateness import EXCHANGE_FILES, LatePolicy, Timing, read_timestamp
from rlcourse.explain.terminal import plain, safe
from rlcourse.grading.grade import Grade
from rlcourse.grading.report import Report
from rlcourse.record.audit import AuditLog, Cause, account, account_unexplained
from rlcourse.record.gradebook import (ensure_assignment_in_gradebook, gradebook_students, open_gradebook,
                                       record_in_gradebook)
from rlcourse.record.ledger import (WRITTEN_ANSWERS, figures_folder, ledger_path, mark_binding, read_ledger,
                                    submission_key, write_ledger)


def grading_key(assignment: Assignment) -> str:
    """What decides a grade besides the submission: the graders and the assignment's
    configuration (graders/<name>/), the release, the oracle (solutions/<name>/), the generic
    diagnoses and the engine's version. Part of every ledger key, so that fixing a grader or
    the configuration regrades the class without --force."""
    from importlib import metadata

    from rlcourse.batch.backends import assignment_fingerprint
    from rlcourse.course.diagnoses import GENERIC

    from rlcourse.course.files import digest_files, files_under

    digest = hashlib.sha256(assignment_fingerprint(assignment).encode() + b"\0")
    folder = assignment.course.root / "solutions" / assignment.name
    digest_files(digest, files_under(folder), relative_to=folder)
    digest.update(GENERIC.read_bytes() + metadata.version("rlcourse").encode())
    return "grading:" + digest.hexdigest()[:16]


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
    grade: "Grade | None" = None
    """The grade of record as the gradebook now holds it (rlcourse.grading.grade); None when
    nothing was recorded (refused, not graded)."""


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
              progress: bool = True, log=None, grading=None, audited_by: str | None = None,
              audit_detail: dict | None = None) -> list[Outcome]:
    """Grade every submission of `assignment` in `class_dir` into its gradebook.

    `workers`, `backend` and `scheduler` choose where the grading runs (rlcourse.batch.backends:
    1 = this process; N = N local processes; None = every core); the ledger, the gradebook
    and the outputs are always written here, by this process alone, as each report arrives.
    `grading`: a backend the caller keeps warm across runs (rlcourse.web.job grades one web
    submission per run); it is used as given and left open. Every score the run changes goes
    in the class's audit log (rlcourse.record.audit) as `audited_by` (default: the OS user), its
    cause carrying `audit_detail` besides its own (the service: the submission's id)."""
    from rlcourse.batch.check import preflight

    preflight(assignment)  # an author's mistake stops the run here, before anything is written
    log = log or (lambda message: print(plain(message), file=sys.stderr))
    outcomes: dict[str, Outcome] = {}
    with class_lock(class_dir, log), contextlib.ExitStack() as stack:
        # The course's late policy is loaded and asked once before anything is written: a
        # plugin that cannot load or raises stops the run here (rlcourse.course.lateness.LatePolicyError).
        policy = LatePolicy(class_dir.root)
        policy.check()
        found = find_submissions(class_dir, assignment, students)
        ensure_assignment_in_gradebook(class_dir.db_url, assignment)
        stamps = _timestamps(class_dir, assignment, found, gradebook_students(class_dir.db_url), log)
        # One gradebook session for the run (opening one costs a quarter of a second); each
        # student's grades are still their own commit.
        gradebook = stack.enter_context(open_gradebook(class_dir.db_url))
        audit = Audit(stack.enter_context(AuditLog(class_dir.root)), by=audited_by,
                      detail=audit_detail or {}, say=log)
        keep = functools.partial(_keep, class_dir, assignment, policy=policy, stamps=stamps,
                                 gradebook=gradebook, audit=audit)
        with _progress(len(found), enabled=progress) as advance:
            to_grade = _keep_unchanged(class_dir, assignment, found, force=force, keep=keep,
                                       outcomes=outcomes, advance=advance, log=log, audit=audit)
            if to_grade:
                _grade_changed(class_dir, assignment, to_grade, keep=keep, outcomes=outcomes,
                               advance=advance, log=log, strategy=strategy, isolation=isolation,
                               workers=workers, backend=backend, scheduler=scheduler, grading=grading)
    return [outcomes[entry.student] for entry in found if entry.student in outcomes]


def _timestamps(class_dir: ClassDirectory, assignment: Assignment, found: list[Found], known: set[str],
                log) -> dict:
    """student -> (submission time, warning) from each safe student's timestamp.txt, saying which
    students the gradebook did not know yet (they are added, as nbgrader autograde adds them)."""
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
    return stamps


def _keep_unchanged(class_dir: ClassDirectory, assignment: Assignment, found: list[Found], *, force: bool,
                    keep, outcomes: dict, advance, log, audit: Audit) -> list[tuple[Found, str]]:
    """Refuse unsafe ids; keep (record, if a crash left that undone) every submission whose ledger
    key says it was graded as it is; return the rest, with their keys, to be graded."""
    to_grade: list[tuple[Found, str]] = []
    grading_by = grading_key(assignment)
    for entry in found:
        if student_id_problem(entry.student):
            # Never written anywhere under a name that is not a safe student id.
            log(f"refused submitted/{entry.student}: {entry.problem}")
            outcomes[entry.student] = Outcome(entry.student, _refused(assignment, entry), "refused")
            advance(entry.student, "refused")
            continue
        key = f"{submission_key(entry)} {grading_by}"
        saved = read_ledger(class_dir, assignment, entry.student)
        if saved and saved["key"] == key and not force:
            status = "unchanged" if saved.get("recorded") else "re-recorded"
            outcomes[entry.student] = keep(entry, key, Report.from_json(saved["report"]),
                                           status, saved=saved)
            advance(entry.student, outcomes[entry.student].status)
        else:
            if saved and saved.get("recorded"):  # what the gradebook holds: a regrade if graded again
                audit.recorded_submissions[entry.student] = saved["key"].partition(" ")[0]
            to_grade.append((entry, key))
    return to_grade


def _grade_changed(class_dir: ClassDirectory, assignment: Assignment, to_grade: list[tuple[Found, str]], *,
                   keep, outcomes: dict, advance, log, strategy: str, isolation: str | None,
                   workers: int | None, backend: str, scheduler: str | None, grading=None) -> None:
    """Grade `to_grade` on the chosen backend; each report goes to the ledger, then is kept as it
    arrives. A submission the backend could not grade is left for the next run, nothing written."""
    from rlcourse.batch.backends import GraderSettings, GradingFailed, Job, make_backend

    pending = {entry.student: (entry, key) for entry, key in to_grade}
    owned = grading is None
    if owned:
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
        if owned:
            grading.close()


@dataclasses.dataclass
class Audit:
    """The audit log as a run writes it: who the run is, and what it adds to every cause."""

    log: AuditLog
    by: str | None = None
    detail: dict = dataclasses.field(default_factory=dict)
    say: object = None
    """Where a value the log cannot explain is reported (the run's log)."""
    recorded_submissions: dict = dataclasses.field(default_factory=dict)
    """student -> the content key of the submission the gradebook held before this run graded
    it again (from its ledger, read before the new report replaces it)."""

    def before(self, gradebook, assignment: Assignment, student: str) -> None:
        account_unexplained(self.log, gradebook, assignment, student, report=self.say)

    def after(self, gradebook, assignment: Assignment, student: str, cause: Cause) -> None:
        account(self.log, gradebook, assignment, student,
                Cause(cause.kind, {**cause.detail, **self.detail}), by=self.by)


def recording_cause(audit: Audit, assignment: Assignment, student: str, key: str, status: str,
                    timing: Timing) -> Cause:
    """Why recording this submission may change its scores: a new grading (`autograde`, or
    `regrade` when the same submission was recorded before under other graders or engine, or
    again with --force), or, for a submission kept as it was graded, the late policy (a due
    date, an extension or the policy changed)."""
    from rlcourse import engine_version
    from rlcourse.course.lateness import iso

    submission, _, graders = key.partition(" ")
    if status in ("unchanged", "late policy updated"):
        return Cause("late_policy", {"due": iso(timing.duedate), "extension_seconds":
                                     timing.extension.total_seconds() if timing.extension else 0,
                                     "submitted": iso(timing.timestamp), "penalty": timing.penalty})
    before = audit.recorded_submissions.get(student)
    kind = "regrade" if before == submission else "autograde"
    return Cause(kind, {"engine": engine_version(), "graders": graders, "submission": submission})


def _keep(class_dir: ClassDirectory, assignment: Assignment, entry: Found, key: str, report: Report,
          status: str, *, policy: LatePolicy, stamps: dict, saved: dict | None = None,
          gradebook=None, audit: Audit, cause: Cause | None = None) -> Outcome:
    """Record a report in the gradebook (an unchanged one too: its scores, timestamp and late
    penalty are brought up to date: an extension granted since, a changed policy, a gradebook
    made again), then make sure the autograded notebook and the feedback page reflect it. What
    changed goes in the audit log under `cause`, else the recording's own (`recording_cause`);
    a value changed outside rlcourse since is logged as unexplained first."""
    timestamp, warning = stamps.get(entry.student, (None, None))
    # A TA's mark of a written answer this submission changes is flagged in the same commit.
    written = mark_binding(class_dir, assignment, entry, key)
    audit.before(gradebook, assignment, entry.student)
    # An unchanged report's scores are written again too (the same values, in the same commit):
    # a gradebook made again, or restored from an older copy, gets them back from the ledger.
    timing = record_in_gradebook(class_dir.db_url, assignment, entry.student, report,
                                 timestamp=timestamp, policy=policy, gradebook=gradebook, written=written)
    audit.after(gradebook, assignment, entry.student,
                cause or recording_cause(audit, assignment, entry.student, key, status, timing))
    if status != "unchanged":
        crash_point("recorded", entry.student)
    timing = dataclasses.replace(timing, warning=warning)
    timing_moved = (saved or {}).get("timing") != timing.to_json()
    if status != "unchanged" or timing_moved or (saved or {}).get(WRITTEN_ANSWERS) != written.to_json():
        if status == "unchanged" and timing_moved:
            status = "late policy updated"
        write_ledger(class_dir, assignment, entry.student, key=key, report=report, recorded=True,
                     timing=timing, written=written)
    mirror_exchange_files(class_dir, assignment, entry.student)
    grade = write_outputs(class_dir, assignment, entry, report, gradebook=gradebook)
    grade.timing = dataclasses.replace(grade.timing, warning=warning)
    return Outcome(entry.student, report, status, timing, grade)


def refresh_student(class_dir: ClassDirectory, assignment: Assignment, student: str, *, gradebook,
                    log, audit: AuditLog, cause: Cause) -> Path | None:
    """After a TA's marks (rlcourse.batch.rubric_import): what a run does for an unchanged
    submission, now: the late penalty recomputed on the new score (in the audit log under the
    marks' `cause`), the ledger's timing, and the feedback page drawn with the marks. Returns the
    page, or None for a student never graded."""
    saved = read_ledger(class_dir, assignment, student)
    found = find_submissions(class_dir, assignment, [student])
    if saved is None or not found or student_id_problem(student):
        log(f"{student}: marked, but not autograded yet: no feedback page to update")
        return None
    stamps = {student: read_timestamp(class_dir.submitted / student / assignment.name)}
    _keep(class_dir, assignment, found[0], saved["key"], Report.from_json(saved["report"]), "unchanged",
          policy=LatePolicy(class_dir.root), stamps=stamps, saved=saved, gradebook=gradebook,
          audit=Audit(audit, say=log), cause=cause)
    return class_dir.feedback / student / assignment.name / (Path(assignment.notebook).stem + ".html")


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
                  *, gradebook=None, force_page: bool = False):
    """The autograded notebook and the feedback page, when missing or older than the ledger (the
    page also when the written answers' marks in the gradebook are not those it shows, when the
    student's deadline has passed since it was drawn, or `force_page`). The page is what `nbgrader
    release_feedback` hands out: the grade of record (rlcourse.record.grades: the gradebook's
    total, the written answers' marks and states, the late penalty, read from `gradebook`, an
    open nbgrader Gradebook, else one is opened) as the assignment's feedback policy shows it at
    this moment (rlcourse.course.visibility): a page written before the student's deadline seals
    what waits for it, so feedback released early gives no prediction away, and the first run
    after the deadline draws it again in full. Returns that Grade."""
    from rlcourse.course.visibility import before_due, feedback_level
    from rlcourse.explain.feedback import marks_digest
    from rlcourse.explain.outputs import write_autograded_notebook, write_feedback_page
    from rlcourse.record.grades import grade_of_record

    if gradebook is None:
        with open_gradebook(class_dir.db_url) as opened:
            return write_outputs(class_dir, assignment, entry, report, gradebook=opened,
                                 force_page=force_page)
    ledger = ledger_path(class_dir, assignment, entry.student)
    stamp = ledger.stat().st_mtime if ledger.exists() else time.time()
    autograded = class_dir.autograded / entry.student / assignment.name / assignment.notebook
    if entry.path is not None and (not autograded.exists() or autograded.stat().st_mtime < stamp):
        write_autograded_notebook(autograded, submitted=entry.path, assignment=assignment, report=report)
    page = class_dir.feedback / entry.student / assignment.name / (Path(assignment.notebook).stem + ".html")
    grade = grade_of_record(gradebook, assignment, entry.student, report, submitted=entry.path)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    deadline = grade.timing.deadline if grade.timing is not None else None
    level, early = feedback_level(assignment.feedback, deadline=deadline, now=now), before_due(deadline, now)
    if (force_page or not page.exists() or page.stat().st_mtime < stamp
            or not _drawn_as(page, marks_digest(grade.written, grade.overrides),
                                      view_key(level, early))):
        write_feedback_page(page, student=entry.student, assignment=assignment, grade=grade,
                            submitted=entry.path, level=level, due_passed=not early,
                            figures_in=figures_folder(class_dir, assignment, entry.student))
    return grade


def view_key(level: str, early: bool) -> str:
    """What a page shows, as its head records it: the level and which side of the deadline."""
    return f"{level}:{'before-due' if early else 'after-due'}"


def _drawn_as(page: Path, digest: str, view: str) -> bool:
    """Whether the page was drawn with these marks and this view (its head carries both)."""
    with open(page, "rb") as handle:
        head = handle.read(2048)
    return (f'name="rlcourse-marks" content="{digest}"'.encode() in head
            and f'name="rlcourse-view" content="{view}"'.encode() in head)
