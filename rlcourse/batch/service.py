"""A warm grading service: `rlcourse serve` keeps graders ready, so `rlcourse grade` answers fast.

Why: a cold `rlcourse grade` pays, before any student cell runs, for starting Python, importing
pytest and the graders, and a fork template importing JAX or torch (about 1.7 s of ps1's 4.7 s).
Near a deadline, a student or TA who wants feedback now is waiting on that. `rlcourse serve`
pays those costs once and keeps, per assignment, a `Grader` whose template forks a fresh
sandboxed worker for every notebook, exactly as `rlcourse autograde` does: the service changes
when the fixed costs are paid, never how a submission is isolated or judged.

`rlcourse grade` asks the service first and grades in its own process when there is none, or
when the service cannot finish (it stopped, or its graders are out of date). Either way the
command prints the same report.

The socket is `<course>/.rlcourse-cache/service/grade.sock` (or `$RLCOURSE_SERVICE`), in a
directory only its owner may enter. No grading worker may ask it for anything (a worker that
could would grade any notebook the service can read and see its report: issue 29), and none
can reach it: under bubblewrap the course is not in the sandbox; under the rlimits fallback a
root grader's workers see the course's `.rlcourse-cache` covered by an empty folder (their
private mounts, rlcourse.worker.confine), and a worker that is `nobody` cannot enter the
service's folder. Where a worker could still connect (Landlock does not govern `connect()` to
a socket that has a path), what it cannot do is prove itself: every request must carry the
service's key, 32 random bytes written beside the socket (`grade.sock.key`, mode 0600) each time
the service starts, which only the staff's own commands can read (Landlock denies it to every
worker, and the socket may not lie where workers can read: `refuse_visible_socket`). The
service also answers only processes of its own user (or root), checked with SO_PEERCRED, and
never a process in a grading worker's cgroup (`rlcourse-worker-*`). It reads the notebooks whose
paths it is sent, with its own permissions, which are the caller's.

Graders that change while it runs: pytest keeps imported grader modules for the life of a
process, so a service cannot pick up edited graders in place. Before each notebook it compares
the fingerprint of the assignment's graders and release, and of the engine's own code, with the
one it started with; when they differ it answers `stale`, the caller grades the notebook
itself, and the service restarts (re-executes itself) to load the new graders.

Protocol, one request per connection, JSON lines:
    request   {"key": "<the service's key>", "assignment": "ps1", "paths": ["/abs/ps1.ipynb", ...],
               "students": ["ada", null, ...], "strategy": "fork", "isolation": null}
              (`students`, one per path: whose parameters each is graded with; null or
              absent: the defaults)
    replies   {"report": {...}} per notebook in order, then {"done": true};
              or {"stale": reason} / {"error": reason}, after which the caller grades the
              remaining notebooks itself.

Nearly 400 lines: the client and the server of one small protocol, and who may use it, read
together.
"""
from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import socket
import socketserver
import stat
import struct
import sys
import threading
from pathlib import Path

from rlcourse.course.directory import Course
from rlcourse.batch.faults import crash_point

SOCKET_VARIABLE = "RLCOURSE_SERVICE"
MAX_REQUEST_BYTES = 1 << 20
WORKER_CGROUP = "rlcourse-worker-"
NO_KEY = "the request does not carry the service's key, which only its own user's commands can read"


def socket_path(course: Course) -> Path:
    override = os.environ.get(SOCKET_VARIABLE)
    return Path(override) if override else course.cache_dir / "service" / "grade.sock"


def key_path(socket: Path) -> Path:
    """The service's key, beside its socket: what a caller proves it is not a worker with."""
    return socket.with_name(socket.name + ".key")


def read_key(socket: Path) -> str | None:
    """The running service's key, or None where this process cannot read it."""
    try:
        return key_path(socket).read_text().strip() or None
    except OSError:
        return None


# --- the client side (rlcourse grade) ------------------------------------------------------------
def ask_service(course: Course, assignment: str, paths: list[Path], *, strategy: str,
                isolation: str | None, students: list[str | None] | None = None,
                log=None) -> list[dict]:
    """Reports (as JSON data) for as many of `paths`, in order, as a running service graded;
    an empty list when no service answers. The caller grades whatever is left."""
    log = log or (lambda message: print(message, file=sys.stderr))
    where = socket_path(course)
    if not where.exists():
        return []
    key = read_key(where)
    if key is None:
        log(f"cannot read the grading service's key ({key_path(where)}); grading here instead")
        return []
    reports: list[dict] = []
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(where))
            request = dict(key=key, assignment=assignment, paths=[str(Path(p).resolve()) for p in paths],
                           students=list(students or [None] * len(paths)),
                           strategy=strategy, isolation=isolation)
            connection.sendall(json.dumps(request).encode() + b"\n")
            for line in connection.makefile("rb"):
                reply = json.loads(line)
                if "report" in reply:
                    reports.append(reply["report"])
                elif reply.get("done"):
                    log(f"graded by the running service ({where})")
                    return reports
                else:
                    log(f"the grading service could not finish ({reply.get('stale') or reply.get('error')}); "
                        "grading here instead")
                    return reports
    except (OSError, ValueError) as error:
        if reports or not isinstance(error, (FileNotFoundError, ConnectionRefusedError)):
            log(f"the grading service stopped answering ({type(error).__name__}); grading here instead")
        return reports
    log("the grading service closed the connection early; grading here instead")
    return reports


def grade(assignment, paths: list[Path], *, use_service: bool = True, strategy: str = "fork",
          isolation: str | None = None, students: list[str | None] | None = None) -> list:
    """Reports for `paths`, in order (`rlcourse grade`): as many as a running service grades,
    the rest graded in this process, so a service that dies mid-request costs nothing. The
    assignment's quick checks run first: an author's mistake stops here, before any notebook is
    graded. Raises NotGraded when the engine or the graders fail.

    `students`: whose notebook each path is (one per path), so that an assignment with variants
    grades it with that student's own values; None for a path graded with the defaults, and
    its report then says so (rlcourse.course.variants.defaults_note)."""
    from rlcourse.batch.check import preflight
    from rlcourse.course.variants import defaults_note
    from rlcourse.grading.report import Report

    students = list(students) if students is not None else [None] * len(paths)
    if len(students) != len(paths):
        raise ValueError(f"{len(students)} student ids for {len(paths)} notebooks")
    preflight(assignment)
    reports = []
    if use_service:
        served = ask_service(assignment.course, assignment.name, paths, strategy=strategy,
                             isolation=isolation, students=students)
        reports = [Report.from_json(data) for data in served]
    if len(reports) < len(paths):
        from rlcourse.grading.pipeline import grade_notebooks

        reports += grade_notebooks(assignment, paths[len(reports):], strategy=strategy,
                                   isolation=isolation, students=students[len(reports):])
    if assignment.variants.enabled:
        for report, student in zip(reports, students):
            if not student and report.unreadable_reason is None:  # nothing was judged by them
                report.errors.append(defaults_note(assignment.variants))
    return reports


# --- the server side (rlcourse serve) ------------------------------------------------------------
class _Served:
    """One assignment's warm Grader for one (strategy, isolation), and the fingerprint it was
    built from."""

    def __init__(self, assignment, strategy: str, isolation: str | None, log):
        from rlcourse.batch.check import preflight
        from rlcourse.grading.pipeline import Grader

        preflight(assignment)  # an author's mistake stops here, before any notebook is graded
        self.assignment = assignment
        self.fingerprint = self._current_fingerprint()
        self.grader = Grader(assignment, strategy=strategy, isolation=isolation, log=log)
        # Collecting imports the grader modules (kept for the life of the process), so the
        # first notebook does not pay for it: about a second of the first answer.
        self.grader.catalogue()

    def _current_fingerprint(self) -> str:
        from rlcourse.batch.backends import assignment_fingerprint

        return assignment_fingerprint(self.assignment) + engine_fingerprint()

    def stale(self) -> bool:
        """The graders, release or engine on disk differ from those this Grader loaded."""
        return self._current_fingerprint() != self.fingerprint


class GradingService:
    """Warm graders of one course, served on a UNIX socket until stopped."""

    def __init__(self, course: Course, *, assignments: list[str] | None = None,
                 strategy: str = "fork", isolation: str | None = None, log=None):
        self.course = course
        self.log = log or (lambda message: print(message, file=sys.stderr, flush=True))
        self.path = socket_path(course)
        self.restart_reason: str | None = None
        self._served: dict[tuple, _Served] = {}
        # One notebook at a time, whatever the assignment: pytest is not thread-safe. Requests
        # that arrive meanwhile wait their turn on their own connections.
        self._grading = threading.Lock()
        self._server = None
        self._key = secrets.token_hex(32)
        self._prepare_socket_path()  # before the graders start: a bad path fails at once
        for name in assignments if assignments is not None else course.assignment_names():
            with self._grading:
                self._grader_for(name, strategy, isolation)

    # --- lifecycle ------------------------------------------------------------------------------
    def _prepare_socket_path(self) -> None:
        if len(str(self.path).encode()) >= 108:
            raise OSError(f"socket path too long for AF_UNIX: {self.path} (set ${SOCKET_VARIABLE})")
        refuse_visible_socket(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.path == self.course.cache_dir / "service" / "grade.sock":
            os.chmod(self.path.parent, 0o700)  # ours; a folder named in $RLCOURSE_SERVICE is left as it is
        _remove_stale_socket(self.path)

    def _write_key(self) -> None:
        """A new key for this run of the service, readable by its own user only (a key left by
        a service that died is replaced: the socket beside it was dead too)."""
        path = key_path(self.path)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(self._key + "\n")

    def serve(self) -> str | None:
        """Serve until interrupted or until the graders change; returns why it stopped early
        (the caller restarts), or None."""
        service = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                service._handle(self.connection, self.rfile, self.wfile)

        previous = os.umask(0o177)
        try:
            self._write_key()
            self._server = socketserver.ThreadingUnixStreamServer(str(self.path), Handler)
        finally:
            os.umask(previous)
        self._server.daemon_threads = True
        names = ", ".join(sorted({key[0] for key in self._served})) or "none yet"
        self.log(f"rlcourse serve: warm graders for {names}; listening on {self.path}")
        try:
            self._server.serve_forever(poll_interval=0.5)
        finally:
            self._server.server_close()
            for path in (self.path, key_path(self.path)):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            self.close()
        return self.restart_reason

    def stop(self, reason: str | None = None) -> None:
        self.restart_reason = self.restart_reason or reason
        if self._server is not None:
            threading.Thread(target=self._server.shutdown, daemon=True).start()

    def close(self) -> None:
        with self._grading:
            for served in self._served.values():
                served.grader.close()
            self._served.clear()

    # --- one request ----------------------------------------------------------------------------
    def _handle(self, connection, rfile, wfile) -> None:
        def send(message: dict) -> None:
            wfile.write(json.dumps(message).encode() + b"\n")
            wfile.flush()

        refusal = _refuse_peer(connection)
        if refusal:
            self.log(f"refused a connection: {refusal}")
            return send({"error": refusal})
        try:
            request = json.loads(rfile.readline(MAX_REQUEST_BYTES))
            if not hmac.compare_digest(str(request.get("key", "")).encode(), self._key.encode()):
                self.log("refused a connection: the request did not carry the service's key")
                return send({"error": NO_KEY})
            name, paths = str(request["assignment"]), [Path(p) for p in request["paths"]]
            strategy, isolation = str(request.get("strategy", "fork")), request.get("isolation")
            students = [str(s) if s else None for s in request.get("students") or [None] * len(paths)]
            if len(students) != len(paths):
                raise ValueError(f"{len(students)} students for {len(paths)} paths")
        except Exception as error:  # noqa: BLE001 - any bad request is answered, never fatal
            return send({"error": f"bad request: {type(error).__name__}: {error}"})
        for path, student in zip(paths, students):
            with self._grading:
                if self.restart_reason:
                    return send({"stale": self.restart_reason})
                try:
                    served = self._grader_for(name, strategy, isolation)
                    if served.stale():
                        reason = (f"{name}'s graders or release, or the rlcourse engine, changed "
                                  "since the service started")
                        self.log(f"{reason}: restarting to load them")
                        self.stop(reason)
                        return send({"stale": reason})
                    crash_point("serving", path.name)
                    report = served.grader.grade(path, student=student)
                except Exception as error:  # noqa: BLE001 - the caller grades it and sees why
                    return send({"error": f"{type(error).__name__}: {error}"})
            send({"report": report.to_json()})
        send({"done": True})

    def _grader_for(self, name: str, strategy: str, isolation: str | None) -> _Served:
        key = (name, strategy, isolation)
        if key not in self._served:
            self._served[key] = _Served(self.course.assignment(name), strategy, isolation, self.log)
        return self._served[key]


def engine_fingerprint() -> str:
    """The engine's own code: an upgraded or edited rlcourse makes a running service stale too."""
    import hashlib

    from rlcourse.course.files import digest_files, files_under

    package = Path(__file__).resolve().parents[1]
    return digest_files(hashlib.sha256(), files_under(package, (".py", ".toml")),
                        relative_to=package).hexdigest()


def _refuse_peer(connection) -> str | None:
    """Why a connecting process may not use the service (None: it may)."""
    pid, uid, _ = struct.unpack("3i", connection.getsockopt(
        socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid not in (os.getuid(), 0):
        return f"uid {uid} is not the service's user"
    try:
        cgroups = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return "the connecting process cannot be identified"
    if WORKER_CGROUP in cgroups:
        return "a grading worker may not ask for grades"
    return None


def refuse_visible_socket(path: Path) -> None:
    """Refuse a socket (and so its key) where grading workers may read: inside the folders the
    sandbox binds and Landlock lets them read (the Python installation, the environment, the
    engine, /usr...)."""
    from rlcourse.worker.sandbox import readable_by_workers

    if readable_by_workers(path):
        raise OSError(f"{path} lies where grading workers can read (the installation, the "
                      f"environment or the engine); choose another path for ${SOCKET_VARIABLE}")


def _remove_stale_socket(path: Path) -> None:
    """A socket file left by a service that died; refuses to replace a live one, or anything
    that is not a socket."""
    if not path.exists():
        return
    if not stat.S_ISSOCK(path.stat().st_mode):
        raise OSError(f"{path} exists and is not a socket; choose another path")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()
            return
    raise OSError(f"a grading service is already listening on {path}")


def run_service(course: Course, *, assignments: list[str] | None, strategy: str,
                isolation: str | None) -> int:
    """`rlcourse serve`: serve until Ctrl-C or SIGTERM; re-execute itself when graders change."""
    import signal

    from rlcourse.batch.check import preflight

    for name in assignments or course.assignment_names():
        preflight(course.assignment(name))  # a CourseError: one line, and nothing is served
    try:
        service = GradingService(course, assignments=assignments, strategy=strategy, isolation=isolation)
    except OSError as error:
        print(f"rlcourse serve: {error}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda *_: service.stop())
    try:
        reason = service.serve()
    except KeyboardInterrupt:
        return 0
    if reason:
        sys.stderr.flush()
        # -P: `-m` would put the working directory (the course, which may hold its own copy of
        # rlcourse/) first on sys.path; the service must come back as the installed engine.
        os.execv(sys.executable, [sys.executable, "-P", "-m", "rlcourse.cli", *sys.argv[1:]])
    return 0
