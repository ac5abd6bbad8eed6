"""Gradescope's autograder: the zip Gradescope installs once, and what it runs on every upload.

`build_autograder` (`rlcourse gradescope psN`) writes `autograder.zip` as Gradescope's autograder
specification asks: `setup.sh` and `run_autograder` at its root, beside the course itself (the
engine, a neutral `nbgrader_config.py`, and the assignment's graders, oracle, instructor notebook
and release). Gradescope unpacks the zip into `/autograder/source/`, runs `setup.sh` there once when
it builds its image, and for every upload runs `run_autograder`, which calls `run` here:

1. `find`:  the one notebook in `/autograder/submission/` (at any depth); none, several, a link or
            one too large to grade becomes a report with every item at 0 and the reason;
2. `grade`: the same `Grader` (worker sandbox, hidden pytest items, redaction) as everywhere else;
3. `write`: `/autograder/results/results.json`, one test per hidden item, each shown when the
            assignment's feedback policy says (rlcourse.course.visibility, in Gradescope's own
            `visibility` values). `/autograder/submission_metadata.json` says whether the upload
            came after the deadline, when the policy's after-due view applies at once, and who
            uploaded it: the student whose own parameters ([variants]) it is graded with, by the
            fields `[gradescope] student_id` names (default `sid`, then `email`).

The hidden files (`HIDDEN`: the graders, the oracle and solutions, the instructor's notebook) are
for the grading process alone, which runs as root: `setup.sh` gives them to `HIDDEN_OWNER`, mode
0700/0600 (`lock_hidden_files`), and the zip stores them 0600. Where bubblewrap cannot start
(Gradescope's containers may forbid user namespaces), a root grader's workers run as `nobody`
(rlcourse.worker.privileges) or, where nobody cannot start Python, as uid 0 without any
capability; neither is the files' owner, so neither reads them, Landlock or not, while root
reads them through its capabilities. The instructor's notebook
ships because the grader needs it: the reference run at `setup.sh` measures the time limits
`assignment.toml` leaves out and fills JAX's cache, the redactor blanks its solution lines from
every message, and the written answers' questions come from it (`ungraded`).

A results.json is always written: a provisional 0 before grading starts (replaced when it ends),
and a 0 with the reason if anything fails, so a student never sees "autograder failed" alone.
Gradescope's late due dates and extensions stay Gradescope's: nothing here changes a score for
lateness.

This module must not import nbgrader (through rlcourse.batch.autograde, rlcourse.record or
rlcourse.report.export): that import alone takes seconds, paid again by every upload.

Just over 300 lines: building the zip and running inside it are the two halves of one
contract with Gradescope (the files the zip holds are the ones `run` expects).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import stat
import sys
import time
import traceback
import zipfile
from pathlib import Path

from rlcourse.course.directory import Assignment, Course
from rlcourse.course.files import write_atomic
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.grading.grade import Grade

TEMPLATES = Path(__file__).with_name("gradescope_files")
MAX_UPLOAD_BYTES = 25 * 2**20
"""Largest notebook the autograder grades. A ps1 notebook with its figures is under 2 MB; parsing
a much larger one costs memory Gradescope's container may not have."""
IGNORED_PARTS = ("__MACOSX",)
"""Folders of an upload that are never the submission (macOS's zip resource forks); hidden files
and folders (`.ipynb_checkpoints/`, `._ps1.ipynb`) are ignored too."""
SKIPPED_IN_ZIP = ("__pycache__", ".rlcourse-cache")
HIDDEN = ("graders", "solutions", "source")
"""The course's folders only the grading process may read (mode 0600 in the zip; `HIDDEN_OWNER`'s,
0700/0600, once `setup.sh` has run `lock_hidden_files`)."""
HIDDEN_OWNER = 65533
"""The uid that owns the hidden files in the image: no process runs as it. Not root: a worker
keeps uid 0 without capabilities where nobody cannot start Python, and uid 0 would then be the
owner (owners read 0600 files, and may chmod them without a capability). Not nobody (65534), the
workers' other identity. Root's grading process reads them through CAP_DAC_OVERRIDE."""


class UploadProblem(Exception):
    """The upload holds no single notebook to grade; the message says why, for the student."""


# --- building the zip ---------------------------------------------------------------------------
def course_files(assignment: Assignment) -> list[tuple[Path, str]]:
    """(file, name in the zip) for everything the autograder needs: the engine, the course's
    pinned environment, and this assignment's graders, oracle, instructor notebook and release.
    Nothing of other assignments, no caches, no gradebook, and not the course's
    `nbgrader_config.py` (it may name the instructor's own paths: the zip has a neutral one,
    `gradescope_files/nbgrader_config.py`)."""
    root = assignment.course.root
    engine = Path(__file__).resolve().parents[1]
    files = [(root / name, name) for name in ("pyproject.toml", "constraints.txt")]
    folders = [(engine, "rlcourse")]
    folders += [(root / kind / assignment.name, f"{kind}/{assignment.name}")
                for kind in ("graders", "solutions", "source", "release")]
    for folder, prefix in folders:
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is missing: the autograder needs it")
        for path in sorted(folder.rglob("*")):
            relative = path.relative_to(folder)
            if path.is_file() and not path.is_symlink() and not set(relative.parts) & set(SKIPPED_IN_ZIP):
                files.append((path, f"{prefix}/{relative.as_posix()}"))
    return files


def render_template(name: str, assignment: Assignment) -> str:
    import jinja2

    # Bash's ${#array[@]} would open a Jinja comment: comments get a marker shell never uses.
    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                                     comment_start_string="{##", comment_end_string="##}")
    return environment.get_template(name).render(assignment=assignment.name)


def build_autograder(assignment: Assignment, *, out: Path) -> Path:
    """Write `out/autograder.zip` for `assignment` and return its path. Entries have a fixed date
    and order, so the same course gives the same bytes."""
    from rlcourse.batch.check import preflight

    preflight(assignment)  # an author's mistake is found here, not by the class's uploads
    target = Path(out) / "autograder.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")

    def add(archive, name: str, data: bytes, mode: int) -> None:
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (stat.S_IFREG | mode) << 16
        archive.writestr(info, data)

    with zipfile.ZipFile(temporary, "w") as archive:
        for script in ("setup.sh", "run_autograder"):
            add(archive, script, render_template(script, assignment).encode(), 0o755)
        add(archive, "nbgrader_config.py", render_template("nbgrader_config.py", assignment).encode(), 0o644)
        for path, name in course_files(assignment):
            add(archive, name, path.read_bytes(), 0o600 if name.split("/")[0] in HIDDEN else 0o644)
    os.replace(temporary, target)
    return target


# --- at grading time ----------------------------------------------------------------------------
def find_notebook(submission: Path) -> Path:
    """The one `.ipynb` file of an upload, at any depth; UploadProblem when there is none, more
    than one, or it is a link. Links are never followed: a notebook that points at the
    autograder's own files would have them graded, and perhaps quoted back."""
    found, links, others = [], [], []
    for folder, dirs, files in os.walk(submission):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED_PARTS)
        for name in sorted(files):
            path = Path(folder) / name
            shown = path.relative_to(submission).as_posix()
            if name.startswith("."):
                continue
            if not name.lower().endswith(".ipynb"):
                others.append(shown)
            elif path.is_symlink() or not path.is_file():
                links.append(shown)
            else:
                found.append(path)
    if links:
        raise UploadProblem(f"{', '.join(links)} is a link or special file, not a notebook: "
                            "upload the .ipynb file itself")
    if len(found) > 1:
        names = ", ".join(sorted(path.relative_to(submission).as_posix() for path in found))
        raise UploadProblem(f"the upload holds {len(found)} notebooks ({names}); upload exactly one")
    if not found:
        archives = [name for name in others if name.lower().endswith((".zip", ".tar", ".gz", ".tgz", ".7z", ".rar"))]
        if archives:
            raise UploadProblem(f"no notebook (.ipynb) was uploaded, only the archive {', '.join(archives)}: "
                                "upload the .ipynb file itself")
        listing = f" (the upload holds: {', '.join(others[:10])})" if others else " (the upload is empty)"
        raise UploadProblem(f"no notebook (.ipynb) was uploaded{listing}")
    notebook = found[0]
    size = notebook.stat().st_size
    if size > MAX_UPLOAD_BYTES:
        raise UploadProblem(f"{notebook.name} is {size / 2**20:.0f} MB, more than the "
                            f"{MAX_UPLOAD_BYTES / 2**20:.0f} MB this autograder grades: clear the "
                            "outputs (Kernel > Restart Kernel and Clear All Outputs), save, and upload again")
    return notebook


def _utc(text) -> datetime.datetime | None:
    """An ISO 8601 time as Gradescope writes it, as naive UTC (how rlcourse.course.visibility compares)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment


def after_deadline(metadata: dict | None) -> bool:
    """Whether the upload came after the last moment anyone may submit: Gradescope's late due
    date if the assignment has one, else its due date (the moment Gradescope's own
    `after_due_date` waits for). False when unknown: Gradescope then decides by the clock."""
    if not isinstance(metadata, dict):
        return False
    assignment = metadata.get("assignment") if isinstance(metadata.get("assignment"), dict) else {}
    created = _utc(metadata.get("created_at"))
    deadline = _utc(assignment.get("late_due_date")) or _utc(assignment.get("due_date"))
    return created is not None and deadline is not None and created >= deadline


def uploader(metadata: dict | None, fields=("sid", "email")) -> str | None:
    """The course's student id of the upload's first user (a group upload is graded as its
    first member): the first of `fields` present and non-empty; None when there is none."""
    users = metadata.get("users") if isinstance(metadata, dict) else None
    user = users[0] if isinstance(users, list) and users and isinstance(users[0], dict) else {}
    for field in fields:
        if field == "email_user":
            value = str(user.get("email") or "").partition("@")[0]
        else:
            value = user.get(field)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value).strip()
    return None


def read_metadata(path: Path) -> dict | None:
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def results_json(grade: Grade, *, policy: FeedbackPolicy, late: bool, seconds: float,
                 isolation_reason: str = "", upload_problem: str | None = None) -> dict:
    """One graded upload as Gradescope's results.json: the grade (rlcourse.grading.grade.Grade:
    the hidden items and the written answers, which await a TA here) as every export gives it
    (rlcourse.report.export.gradescope_results, with the feedback policy's visibility), plus what
    the autograder's run adds for the staff (time, isolation, confinement). `late`: the upload
    came after the deadline, so what the policy shows after it is visible now."""
    from rlcourse.report.export import gradescope_results

    report = grade.report
    results = gradescope_results(grade, policy=policy, late=late, upload_problem=upload_problem)
    results["execution_time"] = round(seconds)
    results["extra_data"].update(
        isolation=report.isolation, isolation_reason=isolation_reason,
        confinement=dict(report.confinement), sha256=report.sha256, late=late,
        rlcourse_version=report.rlcourse_version, timings={key: round(value, 3) for key, value in report.timings.items()})
    return results


def failure_results(reason: str) -> dict:
    """What a student sees when the autograder itself could not finish: 0 and what to do."""
    return {"score": 0.0, "output": f"The autograder could not grade this upload: {reason}. "
                                    "Your course staff can see why; upload again or ask them.",
            "visibility": "visible", "stdout_visibility": "hidden", "tests": []}


def run(assignment_name: str, *, autograder: Path = Path("/autograder")) -> dict:
    """Grade the upload in `autograder/submission/` and write `autograder/results/results.json`;
    return what was written. Never raises for anything the upload or the engine does."""
    from rlcourse.course.variants import defaults_note
    from rlcourse.grading.pipeline import Grader
    from rlcourse.record.grades import ungraded
    from rlcourse.worker.sandbox import choose_isolation

    started = time.monotonic()
    autograder = Path(autograder)
    results_path = autograder / "results" / "results.json"
    write_atomic(results_path, json.dumps(failure_results(
        "it did not finish (the grading run was stopped, perhaps by Gradescope's time limit)")))
    try:
        assignment = Course((autograder / "source").resolve()).assignment(assignment_name)
        metadata = read_metadata(autograder / "submission_metadata.json")
        late, student = after_deadline(metadata), uploader(metadata, assignment.gradescope.student_id)
        try:
            notebook, problem = find_notebook(autograder / "submission"), None
        except UploadProblem as error:
            notebook, problem = None, str(error)
        _, isolation_reason = choose_isolation()
        with Grader(assignment, warm_cache=problem is None) as grader:
            if problem is None:
                report = grader.grade(notebook, student=student)
                problem = report.unreadable_reason
                if problem is None and student is None and assignment.variants.enabled:
                    report.errors.append(defaults_note(assignment.variants))
            else:
                report = grader.unreadable(problem, notebook=assignment.notebook)
        grade = ungraded(assignment, report, submitted=notebook)
        results = results_json(grade, policy=assignment.feedback, late=late,
                               seconds=time.monotonic() - started,
                               isolation_reason=isolation_reason, upload_problem=problem)
    except Exception as error:  # noqa: BLE001 - whatever it was, the student gets a result
        traceback.print_exc()
        results = failure_results(f"an internal error ({type(error).__name__})")
    write_atomic(results_path, json.dumps(results, indent=2))
    print(f"rlcourse: {results_path}: {results['score']} points in "
          f"{time.monotonic() - started:.1f} s", file=sys.stderr)
    return results


def lock_hidden_files(course_root: Path) -> list[Path]:
    """Make the hidden folders (`HIDDEN`) of the unpacked course readable by root alone: owned
    by `HIDDEN_OWNER`, folders 0700 and files 0600, links never followed; return the folders
    locked. `setup.sh` runs it as root once, before anything is graded. Root's own grading
    process reads them through its capabilities; no worker keeps those
    (rlcourse.worker.confine), and no worker is their owner. (Not root: only the modes change.)"""
    locked = []
    for kind in HIDDEN:
        folder = Path(course_root) / kind
        if not folder.is_dir() or folder.is_symlink():
            continue
        for path in [folder, *sorted(folder.rglob("*"))]:
            if path.is_symlink():
                continue
            if os.geteuid() == 0:
                os.chown(path, HIDDEN_OWNER, HIDDEN_OWNER, follow_symlinks=False)
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
        locked.append(folder)
    return locked


def warm(assignment_name: str, *, course_root: Path) -> None:
    """Fill JAX's compilation cache with the reference's programs (setup.sh, once per image), so
    each upload does not pay for it."""
    from rlcourse.grading.pipeline import Grader

    Grader(Course(Path(course_root).resolve()).assignment(assignment_name), warm_cache=True,
           workers=False).close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlcourse.batch.gradescope",
                                     description="What Gradescope's autograder runs (see run_autograder).")
    parser.add_argument("action", choices=("run", "warm", "lock"))
    parser.add_argument("assignment")
    parser.add_argument("--autograder", type=Path, default=Path("/autograder"),
                        help="Gradescope's autograder folder (default: /autograder)")
    parser.add_argument("--course", type=Path, default=None,
                        help="the unpacked zip, for warm and lock (default: AUTOGRADER/source)")
    options = parser.parse_args(argv)
    if options.action == "lock":
        for folder in lock_hidden_files(options.course or options.autograder / "source"):
            print(f"rlcourse: {folder}: root's alone (uid {HIDDEN_OWNER}, 0700/0600)", file=sys.stderr)
        return 0
    if options.action == "warm":
        warm(options.assignment, course_root=options.course or options.autograder / "source")
        return 0
    run(options.assignment, autograder=options.autograder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
