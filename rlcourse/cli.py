"""The `rlcourse` command line: a thin layer over the library functions it names.

Over 300 lines: every command's parser is here, so the file reads as the command reference."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rlcourse import engine_version
from rlcourse.course.directory import Course, CourseError


def _grade(options) -> int:
    from rlcourse.batch.service import grade
    from rlcourse.explain.terminal import print_report
    from rlcourse.grading.pipeline import NotGraded
    from rlcourse.record.grades import ungraded

    assignment = Course.find().assignment(options.assignment)
    students = _graded_as(assignment, options)
    try:
        reports = grade(assignment, options.paths, use_service=not options.no_service,
                        strategy=options.strategy, isolation=options.isolation, students=students)
    except NotGraded as error:
        print(f"rlcourse: not graded (the engine or the graders failed, not the notebook): "
              f"{error}", file=sys.stderr)
        return 1
    # The total on the gradebook's basis: the written answers, which no TA has marked for a
    # notebook graded here, are pending (rlcourse.grading.grade).
    grades = [ungraded(assignment, report, submitted=path) for report, path in zip(reports, options.paths)]
    if options.json:
        payload = [grade.to_json() for grade in grades]
        print(json.dumps(payload[0] if len(payload) == 1 else payload, indent=2))
    else:
        for grade in grades:
            print_report(grade, diagnoses_dir=assignment.grader_dir)
    return 0


def _graded_as(assignment, options) -> list[str | None]:
    """Whose notebook each path is, for an assignment with variants: `--student` (once for every
    path, or once per path), else the id the released notebook itself would read from the
    environment, else none (the defaults, which the report then says). Said on stderr."""
    from rlcourse.course.variants import student_from_environment

    count = len(options.paths)
    if options.student:
        if len(options.student) not in (1, count):
            raise CourseError(f"--student given {len(options.student)} times for {count} notebooks: "
                              "give it once (every notebook is that student's) or once per notebook")
        return options.student * count if len(options.student) == 1 else list(options.student)
    if not assignment.variants.enabled:
        return [None] * count
    found = student_from_environment()
    if found:
        print(f"rlcourse: grading as student {found[0]!r} (from ${found[1]}; --student ID to "
              "grade as someone else)", file=sys.stderr)
        return [found[0]] * count
    print(f"rlcourse: {assignment.name} gives each student their own parameters and no student id "
          "was given (--student ID): grading with the defaults", file=sys.stderr)
    return [None] * count


def _check(options) -> int:
    """Every check of each assignment; one line per problem, exit status 1 if any."""
    from rlcourse.batch.check import assignment_problem, check

    course = Course.find()
    failed = False
    for name in options.assignment or course.assignment_names():
        unreadable = assignment_problem(course, name)
        try:
            problems = [unreadable] if unreadable else check(
                course.assignment(name), full=not options.quick,
                warn=lambda line: print(f"rlcourse check: warning: {line}", file=sys.stderr))
        except CourseError as error:  # a release that cannot be read: this assignment's problem
            problems = [str(error)]
        for problem in problems:
            print(f"rlcourse check: {problem}", file=sys.stderr)
        print(f"{name}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
        failed = failed or bool(problems)
    return 1 if failed else 0


def _new(options) -> int:
    from rlcourse.course.scaffold import new_assignment

    course = Course.find()
    for path in new_assignment(course, options.assignment, framework=options.framework):
        print(path.relative_to(course.root))
    print(f"next: `rlcourse check {options.assignment}`, then make it your own "
          "(docs/adding-an-assignment.md)")
    return 0


def _serve(options) -> int:
    from rlcourse.batch.service import run_service

    return run_service(Course.find(), assignments=options.assignment or None,
                       strategy=options.strategy, isolation=options.isolation)


def _class_dir(options):
    from rlcourse.course.class_directory import ClassDirectory

    return ClassDirectory((options.course_dir or Course.find().root).resolve())


def _scheduler(options):
    """--scheduler, --dask-certs and --insecure as one checked scheduler (None without
    --scheduler); an unsafe one stops the command here (rlcourse.batch.dask_security)."""
    from rlcourse.batch.dask_security import Scheduler, UnsafeScheduler

    if not options.scheduler:
        if options.dask_certs or options.insecure:
            raise UnsafeScheduler("--dask-certs and --insecure are for --scheduler ADDRESS")
        return None
    return Scheduler.checked(options.scheduler, certificates=options.dask_certs,
                             insecure=options.insecure)


def _dask_certs(options) -> int:
    from rlcourse.batch.dask_security import make_certificates

    try:
        certificates = make_certificates(options.folder, hosts=options.host or (), days=options.days)
    except FileExistsError as error:
        print(f"rlcourse: {error}", file=sys.stderr)
        return 2
    print(f"wrote the cluster's CA and the scheduler's, workers' and client's certificates in "
          f"{certificates.folder} (keys: mode 600; copy each machine only what its role needs)")
    host = (options.host or ["HOST"])[0]
    for line in certificates.commands(host):
        print(f"  {line}")
    return 0


def _autograde(options) -> int:
    from rlcourse.batch.autograde import autograde, tally
    from rlcourse.course.lateness import LatePolicyError
    from rlcourse.explain.terminal import print_summary
    from rlcourse.report.class_outputs import write_class_outputs

    assignment = Course.find().assignment(options.assignment)
    class_dir = _class_dir(options)
    scheduler = _scheduler(options)
    if options.dry_run:
        return _autograde_preview(options, assignment, class_dir, scheduler)
    try:
        outcomes = autograde(assignment, class_dir=class_dir, students=options.student or None,
                             force=options.force, strategy=options.strategy,
                             isolation=options.isolation, workers=options.workers,
                             backend=options.backend, scheduler=scheduler)
    except LatePolicyError as error:
        print(f"rlcourse: stopped, nothing more was recorded: {error}", file=sys.stderr)
        return 2
    print_summary([(outcome.student, outcome.report, outcome.grade) for outcome in outcomes])
    written = write_class_outputs(assignment, class_dir)
    counts = tally(outcomes)
    print(", ".join(f"{count} {status}" for status, count in sorted(counts.items())) or "no submissions")
    for label, path in written.items():
        print(f"{label}: {path}")
    _push_after_grading(assignment, class_dir, options.student or None)
    if not options.no_similarity:
        from rlcourse.report.similarity import write_similarity_report

        try:  # the grades are recorded by now: a failing report must not look like a failed run
            comparison, path = write_similarity_report(assignment, class_dir)
            print(f"similarity: {path} ({comparison.flagged} of {len(comparison.scores)} "
                  "pairs flagged)")
        except Exception as error:  # noqa: BLE001
            print(f"rlcourse: the similarity report failed ({error!r}); the grades are recorded. "
                  f"Run `rlcourse similarity {assignment.name}` to retry.", file=sys.stderr)
    return 1 if counts.get("not graded") else 0


def _push_after_grading(assignment, class_dir, students) -> None:
    """The grades just recorded to the LMS, when the class's lms.toml says `push_after_grading`.
    The grades are recorded whatever happens here."""
    from rlcourse.batch import lms

    try:
        push = lms.push_after_grading(assignment, class_dir=class_dir, students=students)
    except Exception as error:  # noqa: BLE001 - LmsError, or the network's: the grades stay recorded
        print(f"rlcourse: the grades are recorded, but not sent to the LMS ({error}); "
              f"`rlcourse lms push {assignment.name}` sends them", file=sys.stderr)
        return
    if push is not None:
        print("lms: " + "\nlms: ".join(lms.describe_push(assignment.name, push)))


def _autograde_preview(options, assignment, class_dir, scheduler) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlcourse.batch.preview import preview_autograde
    from rlcourse.course.lateness import LatePolicyError
    from rlcourse.explain.terminal import safe

    try:
        preview = preview_autograde(assignment, class_dir=class_dir, students=options.student or None,
                                    force=options.force, strategy=options.strategy,
                                    isolation=options.isolation, workers=options.workers,
                                    backend=options.backend, scheduler=scheduler)
    except LatePolicyError as error:
        print(f"rlcourse: stopped: {error}", file=sys.stderr)
        return 2

    def shown(value):
        return "-" if value is None else f"{value:g}"

    table = Table(title=f"{assignment.name}: what `rlcourse autograde` would change (dry run: nothing written)")
    for column in ("student", "item", "now", "would be"):
        table.add_column(column)
    for difference in preview.differences:
        table.add_row(safe(difference.student), safe(difference.item), shown(difference.now), shown(difference.then))
    for student, (now, then) in sorted(preview.totals.items()):
        if preview.direction(student) != "unchanged":
            table.add_row(safe(student), "[bold]total[/bold]", shown(now), shown(then))
    if preview.differences or any(preview.direction(student) != "unchanged" for student in preview.totals):
        Console().print(table)
    else:
        print(f"{assignment.name}: no grade would change (dry run: nothing written)")
    summary = preview.summary()
    print(", ".join(f"{count} {direction}" for direction, count in summary.items())
          + " (each student's total after any late penalty)")
    return 1 if "not graded" in preview.statuses.values() else 0


def _extension(options) -> int:
    from rlcourse.batch.extensions import grant_extension

    granted = grant_extension(Course.find().assignment(options.assignment), options.student,
                              class_dir=_class_dir(options), minutes=options.minutes,
                              hours=options.hours, days=options.days, weeks=options.weeks,
                              remove=options.remove)
    print(granted.describe())
    return 0


def _audit(options) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlcourse.batch.audit import audit_trail
    from rlcourse.explain.terminal import safe

    entries = audit_trail(Course.find().assignment(options.assignment), class_dir=_class_dir(options),
                          student=options.student,
                          log=lambda message: print(f"rlcourse: {message}", file=sys.stderr))
    if options.json:
        print(json.dumps([entry.to_json() for entry in entries], indent=1))
        return 0
    table = Table(title=f"{options.assignment}: every change to a grade ({len(entries)})")
    for column in ("at (UTC)", "student", "item", "old", "new", "cause", "by"):
        table.add_column(column)
    for entry in entries:
        table.add_row(*(safe(str(value)) for value in (
            entry.at, entry.student, entry.item, "" if entry.old is None else f"{entry.old:g}",
            "" if entry.new is None else f"{entry.new:g}", entry.cause.describe(), entry.by)))
    Console().print(table)
    return 0


def _override(options) -> int:
    from rlcourse.batch.overrides import override_score

    if (options.score is None) == (not options.remove):
        print("rlcourse: give the new SCORE, or --remove to give the cell back its automatic score",
              file=sys.stderr)
        return 2
    page = override_score(Course.find().assignment(options.assignment), options.student, options.cell,
                          options.score, class_dir=_class_dir(options), comment=options.comment,
                          log=lambda message: print(f"rlcourse: {message}", file=sys.stderr))
    print(f"{options.student} {options.cell}: "
          + ("automatic score restored" if options.remove else f"{options.score:g} (set by staff)")
          + (f"; feedback page: {page}" if page is not None else ""))
    return 0


def _requests_list(options) -> int:
    from rich.console import Console
    from rich.table import Table

    from rlcourse.batch.regrade_requests import list_requests
    from rlcourse.explain.terminal import safe

    found = list_requests(_class_dir(options), assignment=options.assignment, open_only=options.open)
    if options.json:
        print(json.dumps([request.to_json(staff=True) for request in found], indent=1))
        return 0
    table = Table(title=f"regrade requests ({len(found)}), open first")
    for column in ("#", "state", "student", "assignment", "cell (item)", "automatic", "held", "new", "thread"):
        table.add_column(column)
    for request in found:
        thread = "\n".join(f"{message.role} {message.author}: {message.text}" for message in request.messages)
        table.add_row(*(safe(str(value)) for value in (
            request.id, request.state, request.student, request.assignment,
            request.cell + (f" ({request.item})" if request.item != request.cell else ""),
            "" if request.automatic is None else f"{request.automatic:g}",
            "" if request.before is None else f"{request.before:g}",
            "" if request.score is None else f"{request.score:g}", thread)))
    Console().print(table)
    return 0


def _requests_answer(options) -> int:
    from rlcourse.batch.regrade_requests import answer_request
    from rlcourse.record.audit import os_user
    from rlcourse.record.requests import RequestRefused

    accept = options.requests_command == "accept"
    try:
        done = answer_request(Course.find(), options.request, class_dir=_class_dir(options), accept=accept,
                              by=os_user(), text=options.comment if accept else options.reason,
                              score=options.score if accept else None,
                              log=lambda message: print(f"rlcourse: {message}", file=sys.stderr))
    except RequestRefused as refused:
        print(f"rlcourse: refused ({refused.status}): {refused}", file=sys.stderr)
        return 2
    print(f"#{done.id} {done.student} {done.assignment} {done.cell}: {done.state}"
          + (f", now {done.score:g} / {done.max_score:g}" if accept else ""))
    return 0


def _rubric_import(options) -> int:
    from rlcourse.batch.rubric_import import import_marks

    assignment = Course.find().assignment(options.assignment)
    done = import_marks(assignment, _class_dir(options), options.csv,
                        log=lambda message: print(f"rlcourse: {message}", file=sys.stderr))
    for student, question, score in done.marked:
        print(f"{student} {question}: {score:g}")
    print(f"{len(done.marked)} answer(s) marked, {done.blank} row(s) left blank, {done.unchanged} "
          f"unchanged; {len(done.pages)} feedback page(s) updated")
    if done.sheet is not None:
        print(f"freshest marking sheet: {done.sheet}")
    return 0


def _rubric_sheet(options) -> int:
    from rlcourse.report.rubric_sheet import write_marking_sheet

    assignment = Course.find().assignment(options.assignment)
    files = write_marking_sheet(assignment, _class_dir(options))
    if files is None:
        print(f"{assignment.name} has no manually graded answer")
    else:
        print(f"rubric sheet: {files.html}\nmarking CSV to fill: {files.csv}")
    return 0


def _export(options) -> int:
    from rlcourse.report.export import export

    assignment = Course.find().assignment(options.assignment)
    print(export(assignment, class_dir=_class_dir(options), format=options.format))
    return 0


def _similarity(options) -> int:
    from rlcourse.report.similarity import DEFAULT_THRESHOLD, write_json, write_similarity_report

    threshold = DEFAULT_THRESHOLD if options.threshold is None else options.threshold
    if not 0 <= threshold <= 1:
        raise CourseError(f"--threshold {threshold} is not between 0 and 1")
    assignment = Course.find().assignment(options.assignment)
    comparison, path = write_similarity_report(assignment, _class_dir(options), threshold,
                                               ignore_reference=options.ignore_reference)
    if options.json:
        write_json(comparison, sys.stdout)
    else:
        print(f"{len(comparison.students)} submissions, {len(comparison.scores)} pairs, "
              f"{comparison.flagged} at or above {comparison.threshold:.2f}: {path}")
    return 0


def _gradescope(options) -> int:
    from rlcourse.batch.gradescope import build_autograder

    assignment = Course.find().assignment(options.assignment)
    print(build_autograder(assignment, out=options.out))
    return 0


def _lms(options) -> int:
    from rlcourse.batch import lms

    class_dir = _class_dir(options)
    if options.lms_command == "keys":
        path = lms.make_keys(class_dir)
        print(f"the tool's private key: {path} (mode 600; never copy it into the release)")
        print("its public key, for an LMS that takes a key rather than a URL (`rlcourse web` serves "
              "it at /lti/jwks):")
        print(json.dumps(lms.tool_jwk(class_dir), indent=1))
        return 0
    if options.lms_command == "roster":
        synced = lms.sync_roster(class_dir)
        print(f"added to the gradebook: {', '.join(synced.added) or 'nobody'}")
        print(f"in the LMS and the gradebook: {len(synced.known)}; staff: {synced.staff}")
        print(f"in the gradebook, not in the LMS: {', '.join(synced.lms_missing) or 'nobody'}")
        if synced.unmapped:
            print(f"in the LMS without a student id ({lms.registration_of(class_dir).student_id}), "
                  f"not mapped: LMS user {', '.join(synced.unmapped)}")
        return 0
    push = lms.push_grades(Course.find().assignment(options.assignment), class_dir=class_dir)
    print("\n".join(lms.describe_push(options.assignment, push)))
    return 1 if push.failed else 0


def _web(options) -> int:
    """`rlcourse web`; as a JupyterHub service with --jupyterhub, or when the hub's service
    environment is set, on the address the hub gave it ($JUPYTERHUB_SERVICE_URL) unless told."""
    import os
    import urllib.parse

    from rlcourse.batch.backends import default_workers
    from rlcourse.web.app import run_web
    from rlcourse.web.hub import HubLogin, running_under_hub
    from rlcourse.web.service import WebService

    hub = HubLogin(staff_group=options.staff_group) if options.jupyterhub or running_under_hub() else None
    host, port = options.host, options.port
    given = urllib.parse.urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", "")) if hub else None
    if given and given.hostname and port is None:
        host, port = given.hostname, given.port or 80
    service = WebService(Course.find(), _class_dir(options), scheduler=_scheduler(options),
                         graders=options.graders or default_workers(), warm=not options.no_warm)
    try:
        return run_web(service, host=host, port=8000 if port is None else port, hub=hub)
    except KeyboardInterrupt:  # Ctrl-C, or the hub stopping its service: a normal end
        return 0


def _tokens(options) -> int:
    """`student,token` CSV lines on stdout: each token is shown this once."""
    from rlcourse.web.tokens import issue_tokens

    issued = issue_tokens(_class_dir(options), students=options.student, staff=options.staff,
                          revoke=options.revoke)
    for user, token in issued:
        print(f"{user},{token}")
    for user in options.revoke or []:
        print(f"rlcourse: revoked the token of {user}", file=sys.stderr)
    return 0


def _hub_config(options) -> int:
    """`rlcourse hub config`: the jupyterhub_config.py that serves this course (rlcourse.web.hub_config)."""
    from rlcourse.web.hub_config import course_id_of, write_hub_config

    course = Course.find()
    written = write_hub_config(course_root=course.root, class_dir=_class_dir(options).root,
                               output=options.output, course_id=options.course_id or course_id_of(course.root),
                               exchange=options.exchange, service_port=options.service_port)
    print(f"wrote {written}; start the hub with: jupyterhub -f {written}")
    return 0


def _submit(options) -> int:
    from rlcourse.web.client import main

    return main(options)


def _regrade(options) -> int:
    from rlcourse.web.client import regrade_main

    return regrade_main(options)


def _regrades(options) -> int:
    from rlcourse.web.client import regrades_main

    return regrades_main(options)


def _demo(options) -> int:
    from rlcourse.demo import run_demo

    return run_demo(Course.find(), strategy=options.strategy, isolation=options.isolation,
                    workers=options.workers)


def _doctor(options) -> int:
    """Which isolation level grading would use and why, and what else confines each worker."""
    from rlcourse.worker.doctor import findings

    print("\n".join(findings(options.isolation)))
    return 0


class _PrintVersion(argparse.Action):
    """`rlcourse --version`: the version is looked up only when asked for (reading the package's
    metadata costs tens of milliseconds, which every other command would pay at start)."""

    def __init__(self, option_strings, dest, help=None):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"rlcourse {engine_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rlcourse", description="Grade reinforcement-learning notebooks with hidden, exact graders.")
    parser.add_argument("--version", action=_PrintVersion, help="print the installed engine's version and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    grade = commands.add_parser("grade", help="grade notebooks of one assignment and print reports")
    grade.add_argument("assignment", help="assignment name, e.g. ps1")
    grade.add_argument("paths", nargs="+", type=Path, help="submitted .ipynb files")
    grade.add_argument("--json", action="store_true",
                       help="print one JSON object (a list for several notebooks) instead of tables")
    grade.add_argument("--no-service", action="store_true",
                       help="grade in this process even if `rlcourse serve` is running")
    grade.add_argument("--student", action="append", metavar="ID",
                       help="whose notebook it is: graded with that student's own parameters "
                            "([variants]); once for all notebooks or once per notebook (default: "
                            "$JUPYTERHUB_USER or $RLCOURSE_STUDENT, as the notebook reads it)")
    grade.set_defaults(run=_grade)

    check = commands.add_parser(
        "check", help="find an assignment's authoring mistakes before any student is graded")
    check.add_argument("assignment", nargs="*", help="assignments to check (default: every one)")
    check.add_argument("--quick", action="store_true",
                       help="only the checks grading runs first (not the release, bank, oracle "
                            "and reference run)")
    check.set_defaults(run=_check)

    new = commands.add_parser(
        "new", help="scaffold an assignment that passes `rlcourse check` at once")
    new.add_argument("assignment", help="its name, e.g. ps9")
    new.add_argument("--framework", choices=("numpy", "jax", "torch"), required=True,
                     help="the array library the students' functions use")
    new.set_defaults(run=_new)

    serve = commands.add_parser(
        "serve", help="keep graders warm so `rlcourse grade` answers in seconds (until Ctrl-C)")
    serve.add_argument("assignment", nargs="*",
                       help="assignments to keep warm (default: every assignment of the course)")
    serve.set_defaults(run=_serve)

    autograde = commands.add_parser(
        "autograde", help="grade submitted/<student>/<assignment>/ into nbgrader's gradebook")
    autograde.add_argument("assignment", help="assignment name, e.g. ps1")
    autograde.add_argument("--student", action="append", metavar="ID",
                           help="grade only this student (repeatable)")
    autograde.add_argument("--force", action="store_true",
                           help="grade again even submissions already graded and unchanged")
    autograde.add_argument("--backend", choices=("local", "dask"), default="local",
                           help="grading processes on this machine (default), or Dask workers")
    autograde.add_argument("--scheduler", metavar="ADDRESS",
                           help="a Dask scheduler to send submissions to, e.g. tls://HOST:8786 with "
                                "--dask-certs (implies --backend dask; without it, dask starts a "
                                "LocalCluster)")
    autograde.add_argument("--dry-run", action="store_true",
                           help="grade into a scratch copy and print whose grades would change, item "
                                "by item, with how many go up, down or stay; nothing is written")
    autograde.add_argument("--no-similarity", action="store_true",
                           help="skip the similarity report (default: written at the end; it "
                                "costs seconds where grading the class costs minutes)")
    autograde.set_defaults(run=_autograde)

    export = commands.add_parser("export", help="export grades for Gradescope or an LMS")
    export.add_argument("assignment", help="assignment name, e.g. ps1")
    export.add_argument("--format", choices=("gradescope", "csv"), required=True,
                        help="Gradescope's results.json per student, or one CSV for an LMS")
    export.set_defaults(run=_export)

    similarity = commands.add_parser(
        "similarity", help="compare every pair of submissions' own code; write a staff-only page")
    similarity.add_argument("assignment", help="assignment name, e.g. ps1")
    similarity.add_argument("--json", action="store_true",
                            help="print every pair's score as one JSON object, highest first")
    similarity.add_argument("--threshold", type=float, default=None, metavar="X",
                            help="flag pairs scoring at least X (0..1; default calibrated: docs/instructors/similarity.md)")
    similarity.add_argument("--ignore-reference", action="store_true",
                            help="the class had the reference solution: code matching it is not evidence")
    similarity.set_defaults(run=_similarity)

    gradescope = commands.add_parser(
        "gradescope", help="build autograder.zip: what Gradescope runs on every upload")
    gradescope.add_argument("assignment", help="assignment name, e.g. ps1")
    gradescope.add_argument("--out", type=Path, default=Path("."), metavar="DIR",
                            help="folder to write autograder.zip in (default: here)")
    gradescope.set_defaults(run=_gradescope)

    web = commands.add_parser(
        "web", help="serve the course to students: submissions graded as they arrive (until Ctrl-C)")
    web.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    web.add_argument("--port", type=int, default=None,
                     help="port (default 8000; as a hub service, the one $JUPYTERHUB_SERVICE_URL names)")
    web.add_argument("--jupyterhub", action="store_true",
                     help="run as a JupyterHub service: students sign in through the hub, as their hub "
                          "user name (the default when $JUPYTERHUB_API_TOKEN and "
                          "$JUPYTERHUB_SERVICE_PREFIX are set)")
    web.add_argument("--staff-group", default="rlcourse-staff", metavar="GROUP",
                     help="under JupyterHub: the hub group whose members are staff, besides the hub's "
                          "admins (default: rlcourse-staff)")
    web.add_argument("--graders", type=int, default=None,
                     help="gradings side by side (default: one per core; with --scheduler, as many "
                          "as the cluster has workers is sensible); each grading process stays warm")
    web.add_argument("--scheduler", default=None,
                     help="a Dask scheduler's address, e.g. tls://HOST:8786 with --dask-certs: "
                          "gradings run on its workers")
    web.add_argument("--no-warm", action="store_true",
                     help="do not make the open assignments ready for grading at start (by default "
                          "each grading process prepares them before the first submission arrives)")
    web.set_defaults(run=_web)
    for sub in (autograde, web):
        sub.add_argument("--dask-certs", type=Path, default=None, metavar="DIR",
                         help="the folder `rlcourse dask certs` wrote: connect to a tls:// "
                              "scheduler with its client certificate")
        sub.add_argument("--insecure", action="store_true",
                         help="accept a plain tcp:// scheduler beyond the loopback (whoever reaches "
                              "it runs code as the grader: only on a network only staff can reach)")

    dask = commands.add_parser("dask", help="a Dask cluster to grade on, safely")
    dask_commands = dask.add_subparsers(dest="dask_command", required=True)
    certs = dask_commands.add_parser(
        "certs", help="write a CA and the scheduler's, workers' and client's TLS certificates, "
                      "and print the commands that start a cluster on them")
    certs.add_argument("folder", type=Path, metavar="DIR", help="a new or empty folder (made 0700)")
    certs.add_argument("--host", action="append", metavar="NAME",
                       help="a name or address the scheduler and workers are reached by "
                            "(repeatable; recorded in the certificates, shown in the commands)")
    certs.add_argument("--days", type=int, default=365, help="how long they are valid (default: 365)")
    certs.set_defaults(run=_dask_certs)

    students = commands.add_parser("students", help="the students' access to `rlcourse web`")
    students_commands = students.add_subparsers(dest="students_command", required=True)
    tokens = students_commands.add_parser(
        "tokens", help="print new `student,token` CSV lines (default: every student in the gradebook)")
    tokens.add_argument("--student", action="append", metavar="ID",
                        help="issue for this student only (repeatable; added to the gradebook if new)")
    tokens.add_argument("--staff", action="append", metavar="NAME",
                        help="issue a staff token (sees every submission and the class view)")
    tokens.add_argument("--revoke", action="append", metavar="ID",
                        help="revoke this user's token and end their sessions")
    tokens.set_defaults(run=_tokens)

    submit = commands.add_parser(
        "submit", help="submit a notebook to `rlcourse web`, wait, and print the feedback you may see")
    from rlcourse.web.client import add_arguments

    add_arguments(submit)  # the same arguments as submit.py (rlcourse.web.client)
    submit.set_defaults(run=_submit)

    from rlcourse.web.client import add_regrade_arguments

    regrade = commands.add_parser(
        "regrade", help="ask `rlcourse web` for an item or written answer of your grade to be regraded, "
                        "with a reason (as `python3 submit.py regrade`)")
    add_regrade_arguments(regrade)
    regrade.set_defaults(run=_regrade)
    regrades = commands.add_parser(
        "regrades", help="your regrade requests on `rlcourse web`, with each thread and outcome")
    add_regrade_arguments(regrades, listing=True)
    regrades.set_defaults(run=_regrades)

    hub = commands.add_parser("hub", help="the course on JupyterHub")
    hub_commands = hub.add_subparsers(dest="hub_command", required=True)
    hub_config = hub_commands.add_parser(
        "config", help="write a jupyterhub_config.py: rlcourse web as the hub's service, the scopes and "
                       "environment the notebooks' submit cell needs, nbgrader's exchange shared")
    hub_config.add_argument("--course-dir", type=Path, default=None, metavar="DIR",
                            help="the class directory the service keeps (default: the course directory)")
    hub_config.add_argument("--output", type=Path, default=Path("jupyterhub_config.py"), metavar="FILE",
                            help="the file to write (default: ./jupyterhub_config.py); the kernels' client "
                                 "and the users' nbgrader configuration go beside it")
    hub_config.add_argument("--exchange", type=Path, default=None, metavar="DIR",
                            help="nbgrader's exchange, shared by every user (default: DIR/exchange of "
                                 "--course-dir)")
    hub_config.add_argument("--course-id", default=None, metavar="ID",
                            help="nbgrader's course id (default: the course's nbgrader_config.py)")
    hub_config.add_argument("--service-port", type=int, default=10101, metavar="PORT",
                            help="where rlcourse web listens on the loopback (default: 10101)")
    hub_config.set_defaults(run=_hub_config)

    rubric = commands.add_parser("rubric", help="the answers a TA marks by hand: the sheet, the marks")
    rubric_commands = rubric.add_subparsers(dest="rubric_command", required=True)
    rubric_import = rubric_commands.add_parser(
        "import", help="set manual scores and comments in the gradebook from a TA's CSV "
                       "(student, question, criteria met as 1;3, comment)")
    rubric_import.add_argument("assignment", help="assignment name, e.g. ps1")
    rubric_import.add_argument("csv", type=Path, help="the marking sheet's CSV, filled in by a TA")
    rubric_import.set_defaults(run=_rubric_import)
    rubric_sheet = rubric_commands.add_parser(
        "sheet", help="write reports/<assignment>/rubric.html and the freshest marking CSV, never "
        "overwriting one (autograde does too)")
    rubric_sheet.add_argument("assignment", help="assignment name, e.g. ps1")
    rubric_sheet.set_defaults(run=_rubric_sheet)

    extension = commands.add_parser(
        "extension", help="give a student more time on an assignment, in nbgrader's gradebook "
                          "(before or after grading; the next autograde applies it)")
    extension.add_argument("assignment", help="assignment name, e.g. ps1")
    extension.add_argument("student", help="the student's id in the gradebook")
    for unit in ("minutes", "hours", "days", "weeks"):
        extension.add_argument(f"--{unit}", type=float, default=0, metavar="N",
                               help=f"the extension's length in {unit} (added together; it "
                                    "replaces an earlier extension, as nbgrader's do)")
    extension.add_argument("--remove", action="store_true", help="take the student's extension away")
    extension.set_defaults(run=_extension)

    audit = commands.add_parser(
        "audit", help="every change to an assignment's grades: who, when, why, and the value before")
    audit.add_argument("assignment", help="assignment name, e.g. ps1")
    audit.add_argument("--student", metavar="ID", help="only this student's changes")
    audit.add_argument("--json", action="store_true",
                       help="print a JSON list of entries (student, assignment, item, old, new, cause, by, at)")
    audit.set_defaults(run=_audit)

    lms_parser = commands.add_parser(
        "lms", help="grades to the LMS and its roster in, over LTI 1.3 Advantage (the class's lms.toml)")
    lms_commands = lms_parser.add_subparsers(dest="lms_command", required=True)
    lms_keys = lms_commands.add_parser(
        "keys", help="make the tool's key pair once, in the class directory's lms/ (private key mode 600)")
    lms_keys.set_defaults(run=_lms)
    lms_roster = lms_commands.add_parser(
        "roster", help="read the LMS's members (Names and Roles), add its students to the gradebook, "
                       "and say who is missing on either side")
    lms_roster.set_defaults(run=_lms)
    lms_push = lms_commands.add_parser(
        "push", help="post each roster student's grade of record to the assignment's line item "
                     "(Assignment and Grade Services): ids and scores only")
    lms_push.add_argument("assignment", help="assignment name, e.g. ps1")
    lms_push.set_defaults(run=_lms)

    override = commands.add_parser(
        "override", help="set a TA's score for an autograded cell (the automatic one is kept beside "
                         "it), with the reason in the audit log and on the student's page")
    override.add_argument("assignment", help="assignment name, e.g. ps1")
    override.add_argument("student", help="the student's id in the gradebook")
    override.add_argument("cell", help="the autograded cell's grade_id, e.g. test_policy_loss")
    override.add_argument("score", type=float, nargs="?", help="the cell's new score (omit with --remove)")
    override.add_argument("--comment", default="",
                          help="why, in words the student reads on the feedback page")
    override.add_argument("--remove", action="store_true",
                          help="take the override away: the cell counts its automatic score again")
    override.set_defaults(run=_override)

    requests = commands.add_parser(
        "regrade-requests", help="the students' regrade requests (staff): list them, accept or decline one")
    requests_commands = requests.add_subparsers(dest="requests_command", required=True)
    requests_list = requests_commands.add_parser("list", help="every request, open ones first, with its thread")
    requests_list.add_argument("assignment", nargs="?", help="only this assignment's requests, e.g. ps1")
    requests_list.add_argument("--open", action="store_true", help="only the requests waiting for an answer")
    requests_list.add_argument("--json", action="store_true",
                               help="print a JSON list of requests as the service's staff API returns them")
    requests_list.set_defaults(run=_requests_list)
    requests_accept = requests_commands.add_parser(
        "accept", help="accept a request: set the cell's new score (as `rlcourse override` does) with a "
                       "comment the student reads; in the audit log as regrade_request")
    requests_accept.add_argument("request", type=int, help="the request's number (#N in the list)")
    requests_accept.add_argument("score", type=float, help="the cell's new score")
    requests_accept.add_argument("--comment", required=True, help="why, in words the student reads")
    requests_accept.set_defaults(run=_requests_answer)
    requests_decline = requests_commands.add_parser(
        "decline", help="decline a request with a reason the student reads (no grade changes)")
    requests_decline.add_argument("request", type=int, help="the request's number (#N in the list)")
    requests_decline.add_argument("--reason", required=True, help="why not, in words the student reads")
    requests_decline.set_defaults(run=_requests_answer)

    for sub in (autograde, export, similarity, web, tokens, rubric_import, rubric_sheet, extension, audit,
                override, requests_list, requests_accept, requests_decline, lms_keys, lms_roster, lms_push):
        sub.add_argument("--course-dir", type=Path,
                         help="the class's nbgrader course directory (default: this course)")

    demo = commands.add_parser("demo", help="autograde the bundled demo class and show every output")
    demo.set_defaults(run=_demo)

    doctor = commands.add_parser("doctor", help="say which isolation level grading would use, and why")
    doctor.set_defaults(run=_doctor)

    for sub in (grade, serve, autograde, demo):
        sub.add_argument("--strategy", choices=("fork", "spawn"), default="fork",
                         help="start workers by forking a warm template (default) or afresh")
    for sub in (autograde, demo):
        sub.add_argument("--workers", type=int, default=None, metavar="N",
                         help="grade N submissions at once, each grading process with its own "
                              "sandboxed workers (default: every core; 1 grades in this process)")
    for sub in (grade, serve, autograde, demo, doctor):
        sub.add_argument("--isolation", choices=("auto", "bwrap", "rlimits"), default=None,
                         help="bwrap sandbox, plain resource limits, or the best available "
                              "(default; also $RLCOURSE_ISOLATION)")
    return parser


def main(argv=None) -> int:
    options = build_parser().parse_args(argv)
    try:
        return options.run(options)
    except CourseError as error:
        print(f"rlcourse: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
