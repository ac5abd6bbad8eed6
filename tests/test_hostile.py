"""The hostile bank (tests/hostile/<assignment>/): submissions that attack the grader, each graded
in the normal path (`rlcourse autograde`, the real CLI) in a class that also holds honest students,
under bubblewrap and under the rlimits fallback: one batch per isolation level, every attack in it.

An entry has the bank's format (rlcourse.course.bank: CELLS / EDITS / LOSES) plus optional fields:

* `NEEDS`: the defences its outcome relies on (see `defences`). An entry whose defence this
  machine lacks at that level is left out of the batch, and its test is skipped saying so:
  docs/threat-model.md states what such an attack achieves there;
* `LISTENER_PORT`: a TCP port on 127.0.0.1 the test listens on while grading (connections seen
  are recorded, and must be none);
* `LEFTOVER_MARKER`: an argument of processes the entry starts, none of which may outlive the run;
* `FORBIDDEN_IN_REPORT`: strings (names from the instructor's code) that must not appear in the
  entry's own report or feedback page;
* `WITH_GRADING_SERVICE`: a warm grading service (`rlcourse serve`) runs on the course while the
  batch is graded, and the entry's cells are `cells(sockets=[its socket], victims=[the honest
  student's notebook])`: the attacker is told where to knock.

For each isolation level the test checks: the grader exits 0 and grades every submission; each
entry loses exactly its items with their tags; the honest students get 42/42 in `nbgrader
export`, one graded before the run (recorded, then never touched) and one after every hostile
entry, and every other total in the gradebook is the one of the student's own report; no file of
the course (a copy of graders/ solutions/ source/ release/, the course the grader runs in) nor
of the class directory changed, apart from the outputs the grader writes for the hostile
students, and nothing the entries write appeared in the engine (rlcourse/: compared by the
entries' own marks, so that other edits of a working tree during the run do not count); no feedback page or report contains a line (>= 30 characters)
of the hidden graders or solutions, unless the student's own notebook has it too; nothing the
attacks started is left running.

So that both batches stay within a few minutes, the course copy lowers three of ps1's limits (see
`TEST_LIMITS`): the endless loops cost seconds, not minutes, and the memory bomb fills 2.5 GB, not 6.
"""
import contextlib
import csv
import dataclasses
import hashlib
import json
import os
import stat
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.solutions import load_course_module
from rlcourse.worker.sandbox import bwrap_status, confinement
from course_copy import copy_course

pytestmark = [pytest.mark.slow, pytest.mark.nbgrader, pytest.mark.serial]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
ENGINE = ROOT / "rlcourse"
HOSTILE = ROOT / "tests" / "hostile" / "ps1"
HONEST = ROOT / "demo" / "submitted" / "ada" / "ps1" / "ps1.ipynb"
ENTRIES = load_entries(HOSTILE)
EXTRAS = {entry.name: load_course_module(entry.path, f"rlcourse_hostile.ps1.{entry.name}")
          for entry in ENTRIES}
PLANTED = "_planted_by_hostile_student.txt"
COURSE_PARTS = ("graders", "solutions", "source", "release", "secret-outside-sandbox.txt")
ATTACK_TEXT = ("planted", "changed by a student", "overwritten by another student")
"""What the entries write wherever they can: a file named or containing the first, or a line
with one of the others appended to an existing file."""
SECRET = "ROOT-ONLY-SECRET-4d1f9c outside every sandbox"
"""In `secret-outside-sandbox.txt` (mode 0600) of the course copy: it must appear in no output."""
TEST_LIMITS = {"cell_seconds": 15.0, "call_seconds": 30.0, "memory_bytes": 5 << 29}
"""ps1's limits in the course copy (ps1 itself: 120 s per cell, 20 s per call, 6 GB). The call
limit leaves the memory bomb room: a worker holds about 1.5 GB of address space before the bomb
starts, and touching the last gigabyte took 8 to 16 s on this project's 2-core VMs (page faults
there cost about 50 us each), which a 10 s call limit sometimes cut short."""
MODES = [
    pytest.param("bwrap", marks=pytest.mark.skipif(
        not bwrap_status()[0], reason=f"bubblewrap cannot start here: {bwrap_status()[1]}")),
    "rlimits",
]


def defences(mode: str) -> set[str]:
    """The defences a fork-template worker has at this isolation level on this machine:

    * private_files: the course, the class directory, the engine's files and other students'
      folders can be neither read nor written (bubblewrap's mounts, or Landlock);
    * no_tcp: no TCP connection or listening socket (bubblewrap's network namespace, or
      Landlock ABI 4);
    * scoped_signals: no signal to a process outside the worker (Landlock ABI 6);
    * process_cap: a pids cgroup per worker caps its processes and lets the grader kill them all;
    * private_mounts: each worker has a private, read-only view of the mounts and a size-capped
      tmpfs as its scratch folder (rlcourse.worker.confine.private_mounts).
    """
    from rlcourse.worker.privileges import workers_may_mount

    machine = confinement()
    found = {"process_cap"} if machine["pids_cgroup"] else set()
    if workers_may_mount(mode):
        found.add("private_mounts")
    if mode == "bwrap" or machine["landlock"] >= 1:
        found.add("private_files")
    if mode == "bwrap" or machine["landlock"] >= 4:
        found.add("no_tcp")
    if machine["landlock"] >= 6:
        found.add("scoped_signals")
    return found


def missing_defences(entry, mode) -> set[str]:
    return set(getattr(EXTRAS[entry.name], "NEEDS", set())) - defences(mode)


DEFENDED_BY_THE_ENGINE = {
    "deep_recursion", "exits_the_worker", "hangs_at_import", "huge_integers",
    "monkeypatches_libraries", "monkeypatches_worker_modules", "prints_fake_report_and_framing",
    "shadows_given_train", "fakes_the_loss_inside_train", "forges_gradients_through_jax",
    "forges_old_logp_gradient", "rebinds_its_own_values", "sends_observations_off_the_cells",
    "forges_a_hang"}
"""Entries whose defence is the grader's own and the same at every isolation level (a crashed
or vanished worker is replaced, a cell's wall clock, the reply decoder, the graders living in
another process, given code run again, the graders running the given training loop and
checking records against the notebook's contract themselves, the worker's modules and JAX's
functions taken before any cell runs): graded at the first level this machine has (bubblewrap
where it starts) and not again at the next, to save a batch's worth of ps1 gradings. The
entries that read, write, connect, signal, fork or fill memory or disk, and the hang inside a
graded function (the kill of a worker that ignores every signal), are graded at every level."""
assert DEFENDED_BY_THE_ENGINE <= set(EXTRAS), DEFENDED_BY_THE_ENGINE - set(EXTRAS)
FIRST_MODE = "bwrap" if bwrap_status()[0] else "rlimits"


def graded_at(entry, mode) -> bool:
    return entry.name not in DEFENDED_BY_THE_ENGINE or mode == FIRST_MODE


def env(course):
    # PYTHONDONTWRITEBYTECODE: the grader writes no __pycache__, so any change under rlcourse/
    # comes from a worker.
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", RLCOURSE_ROOT=str(course),
                PYTHONDONTWRITEBYTECODE="1")


def snapshot(*folders, skip=lambda path: False) -> dict[str, tuple]:
    """Every file's content, mode, owner, times and xattrs, and every folder's mode and owner
    (its times move whenever the grader writes in it), under `folders` and the folders
    themselves, without following links."""
    found = {}
    for folder in folders:
        for path in [Path(folder), *sorted(Path(folder).rglob("*"))]:
            if skip(path) or path.is_symlink():
                continue
            info = path.lstat()
            xattrs = tuple(sorted(os.listxattr(path, follow_symlinks=False)))
            if path.is_dir():
                found[str(path)] = ("folder", info.st_mode, info.st_uid, info.st_gid, xattrs)
            elif path.is_file():
                found[str(path)] = (hashlib.sha256(path.read_bytes()).hexdigest(), info.st_mode,
                                    info.st_uid, info.st_gid, info.st_mtime_ns, xattrs)
    return found


def gradebook_metadata(class_dir: Path) -> tuple:
    """The gradebook's mode, owner and xattrs (its content and times are the grader's to change)."""
    info = (class_dir / "gradebook.db").lstat()
    return info.st_mode, info.st_uid, info.st_gid, tuple(os.listxattr(class_dir / "gradebook.db"))



GRADER_WRITES = ("gradebook.db", "audit.db", ".rlcourse-autograde.lock")
"""What autograde itself writes in the class directory on every run: the gradebook, the audit log
of the changes it made (issue 33) and its lock. The gradebook's metadata is checked apart, and the
audit log must be a regular file of the grader's own."""


def course_snapshot(course: Path) -> dict[str, tuple]:
    """The course copy's hidden and released files, the secret, and the compilation cache's
    folder itself (its entries are the trusted warm-up's to write)."""
    found = snapshot(*(course / name for name in COURSE_PARTS))
    cache = course / ".rlcourse-cache"
    if cache.is_dir():
        found.update(snapshot(cache, skip=lambda path: path != cache))
    return found


def course_copy(folder: Path) -> Path:
    """ps1's course (tests/course_copy.py, with the checkout's compilation cache and its warm-up
    records), a secret only root may read, and the lowered limits of TEST_LIMITS."""
    course = copy_course(folder / "course", "ps1", cache=True)
    secret = course / "secret-outside-sandbox.txt"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    spec = course / "graders" / "ps1" / "assignment.toml"
    text = spec.read_text()
    assert "[limits]" in text
    kept = [line for line in text.splitlines() if line.split("=")[0].strip() not in TEST_LIMITS]
    lowered = [f"{key} = {value!r}" for key, value in TEST_LIMITS.items()]
    spec.write_text("\n".join(kept).replace("[limits]", "\n".join(["[limits]", *lowered])) + "\n")
    return course


class Listener:
    """A TCP port on 127.0.0.1 that records who connects (the socket entries' target)."""

    def __init__(self, port):
        self.connections = 0
        self._server = socket.create_server(("127.0.0.1", port))
        self._server.settimeout(0.2)
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop:
            try:
                connection, _ = self._server.accept()
                self.connections += 1
                connection.close()
            except OSError:
                continue

    def close(self):
        self._stop = True
        self._thread.join()
        self._server.close()


def service_socket(course: Path) -> Path:
    """Where `rlcourse serve` listens for a course by default (rlcourse.batch.service)."""
    return course / ".rlcourse-cache" / "service" / "grade.sock"


def told_where(entry, course: Path, class_dir: Path):
    """The entry as graded: one that attacks the grading service is told its socket and the
    honest student's notebook (the strongest attacker's case)."""
    extras = EXTRAS[entry.name]
    if not getattr(extras, "WITH_GRADING_SERVICE", False):
        return entry
    victim = class_dir / "submitted" / "ada" / "ps1" / "ps1.ipynb"
    return dataclasses.replace(entry, cells=extras.cells(sockets=[str(service_socket(course))],
                                                         victims=[str(victim)]))


class GradingService:
    """`rlcourse serve ps1` on the course while the batch is graded (WITH_GRADING_SERVICE)."""

    def __init__(self, course: Path):
        self.course = course

    def __enter__(self):
        socket_path = service_socket(self.course)
        self.process = subprocess.Popen([str(BIN / "rlcourse"), "serve", "ps1"], cwd=self.course,
                                        env=dict(env(self.course), RLCOURSE_SERVICE=str(socket_path)),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while not socket_path.exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the grading service did not start: {self.stop()}")
            time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read()[-2000:]


def marked_by_an_attack(folder: Path) -> list[str]:
    """Files under `folder` that an entry planted or appended to (see ATTACK_TEXT)."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and (ATTACK_TEXT[0] in path.name
                               or any(text in path.read_text(errors="replace") for text in ATTACK_TEXT[1:])):
            found.append(str(path))
    return found


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"sleep") and marker.encode() in argv:
                found.append(int(entry.name))
    return found


def hidden_lines() -> dict[str, str]:
    lines = {}
    for path in [*sorted((ROOT / "graders" / "ps1").glob("*.py")),
                 *sorted((ROOT / "solutions" / "ps1").glob("*.py"))]:
        for line in path.read_text().splitlines():
            if len(line.strip()) >= 30:
                lines.setdefault(line.strip(), path.name)
    return lines


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def cell_text(notebook_text: str) -> list[str]:
    try:
        return list(strings(json.loads(notebook_text)))
    except ValueError:
        return [notebook_text]


def readable_text(path: Path) -> str:
    """A file's text as a reader sees it: JSON strings unescaped, HTML entities decoded."""
    import html

    text = path.read_text(errors="replace")
    if path.suffix in (".json", ".ipynb"):
        return "\n".join(cell_text(text))
    return html.unescape(text) if path.suffix in (".html", ".htm") else text


def nbgrader_export(class_dir, course) -> dict[str, float]:
    subprocess.run([str(BIN / "nbgrader"), "export"], cwd=class_dir, check=True, capture_output=True,
                   env=env(course))
    with open(Path(class_dir) / "grades.csv") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}


@pytest.fixture(scope="module")
def shared_course(tmp_path_factory):
    """The course copy both isolation levels grade in: the reference run that measures its
    limits (and warms the compilation cache, if the checkout has none yet) is paid once. Each level snapshots the copy after its own honest first run, so what the other
    level's batch did to it never counts against this one."""
    return course_copy(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory, shared_course):
    """One class per isolation level, graded in one `rlcourse autograde` run: the honest `ada`
    first (alone), then every hostile entry this machine defends at that level and `zoe`."""
    mode = request.param
    entries = [entry for entry in ENTRIES if not missing_defences(entry, mode) and graded_at(entry, mode)]
    course = shared_course
    class_dir = tmp_path_factory.mktemp(f"class-{mode}")
    base = reference_student(ROOT / "source" / "ps1" / "ps1.ipynb", ROOT / "release" / "ps1" / "ps1.ipynb")
    notebooks = {"ada": HONEST.read_bytes(), "zoe": HONEST.read_bytes()}
    notebooks.update({entry.name: build_submission(told_where(entry, course, class_dir), base)
                      for entry in entries})
    for student, content in notebooks.items():
        folder = class_dir / "submitted" / student / "ps1"
        folder.mkdir(parents=True)
        (folder / "ps1.ipynb").write_bytes(content)

    def autograde(*args):
        return subprocess.run([str(BIN / "rlcourse"), "autograde", "ps1", "--course-dir", str(class_dir),
                               "--isolation", mode, *args], cwd=course, capture_output=True, text=True,
                              timeout=1200, env=env(course))

    first = autograde("--student", "ada")  # graded and recorded before any attack
    assert first.returncode == 0, first.stderr[-3000:]
    course_files = course_snapshot(course)
    class_files = snapshot(class_dir, skip=lambda p: p.name in GRADER_WRITES)
    class_files["gradebook.db"] = gradebook_metadata(class_dir)
    listeners = {entry.name: Listener(EXTRAS[entry.name].LISTENER_PORT)
                 for entry in entries if hasattr(EXTRAS[entry.name], "LISTENER_PORT")}
    service = (GradingService(course) if any(getattr(EXTRAS[entry.name], "WITH_GRADING_SERVICE", False)
                                            for entry in entries) else contextlib.nullcontext())
    started = time.monotonic()
    try:
        with service:
            run = autograde()
    finally:
        for listener in listeners.values():
            listener.close()
    seconds = time.monotonic() - started
    leftovers = {}
    for entry in entries:
        marker = getattr(EXTRAS[entry.name], "LEFTOVER_MARKER", None)
        if marker:
            leftovers[entry.name] = processes_with(marker)
            for pid in leftovers[entry.name]:  # started by this test's run: clean up, then report
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    planted = [path for path in (ENGINE / "worker" / PLANTED, Path.home() / PLANTED, Path("/tmp") / PLANTED)
               if path.exists()]
    for path in planted:
        path.unlink()
    print(f"\n[{mode}] autograde of {len(notebooks) - 1} submissions took {seconds:.0f} s")
    return dict(mode=mode, entries=entries, course=course, class_dir=class_dir, run=run,
                seconds=seconds, course_files=course_files, class_files=class_files, leftovers=leftovers, planted=planted, notebooks=notebooks,
                listeners={name: listener.connections for name, listener in listeners.items()})


def ledger(graded, student) -> dict:
    path = graded["class_dir"] / "autograded" / student / "ps1" / "rlcourse-report.json"
    return json.loads(path.read_text())["report"]


def test_the_grader_survives_the_whole_batch(graded):
    run = graded["run"]
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    assert f"{len(graded['entries']) + 1} graded" in run.stdout, run.stdout[-2000:]


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.name for entry in ENTRIES])
def test_entry_loses_exactly_its_items(graded, entry):
    missing = missing_defences(entry, graded["mode"])
    if missing:
        pytest.skip(f"not defended here under {graded['mode']}: {', '.join(sorted(missing))} "
                    "missing (docs/threat-model.md)")
    if not graded_at(entry, graded["mode"]):
        pytest.skip(f"defended by the engine alike at every level: graded under {FIRST_MODE} only")
    report = ledger(graded, entry.name)
    lost = {item["id"]: item["diagnosis"] for item in report["items"] if not item["passed"]}
    details = {item["id"]: item["message"][:300] for item in report["items"] if not item["passed"]}
    assert lost == entry.loses, (details, report["errors"][:5])
    assert report["isolation"] == graded["mode"]


def test_honest_students_keep_full_marks_and_no_other_grade_moves(graded):
    totals = nbgrader_export(graded["class_dir"], graded["course"])
    assert totals["ada"] == 42.0 and totals["zoe"] == 42.0
    for entry in graded["entries"]:
        assert totals[entry.name] == ledger(graded, entry.name)["score"], entry.name


def test_no_file_outside_the_scratch_directories_changed(graded):
    course = graded["course"]
    now = course_snapshot(course)
    assert now == graded["course_files"], [path for path in now if now[path] != graded["course_files"].get(path)]
    assert not graded["planted"] and not marked_by_an_attack(ENGINE), graded["planted"]
    hostile = {entry.name for entry in graded["entries"]} | {"zoe"}
    now = snapshot(graded["class_dir"], skip=lambda p: p.name in GRADER_WRITES)
    now["gradebook.db"] = gradebook_metadata(graded["class_dir"])
    audit = (graded["class_dir"] / "audit.db").lstat()
    assert stat.S_ISREG(audit.st_mode) and audit.st_uid == os.getuid() and not audit.st_mode & 0o022
    changed = {path for path, before in graded["class_files"].items() if now.get(path) != before}
    changed = {p for p in changed if not p.startswith(str(graded["class_dir"] / "reports"))}
    new = {path for path in set(now) - set(graded["class_files"])
           if not (Path(path).relative_to(graded["class_dir"]).parts[0] in ("autograded", "feedback")
                   and Path(path).relative_to(graded["class_dir"]).parts[1] in hostile)
           and Path(path).relative_to(graded["class_dir"]).parts[0] not in ("reports", "exports")
           and Path(path).name != "grades.csv"}
    assert not changed and not new, (sorted(changed), sorted(new))


def test_no_hidden_line_reaches_feedback_or_reports(graded):
    class_dir = graded["class_dir"]
    hidden = hidden_lines()
    leaks = {}
    for path in [*class_dir.glob("feedback/*/ps1/*.html"), *class_dir.glob("autograded/*/ps1/*"),
                 *class_dir.glob("reports/ps1/*")]:
        if not path.is_file():
            continue
        student = path.relative_to(class_dir).parts[1] if path.parts[-3] != "reports" else None
        text = readable_text(path)
        if path.name == "similarity.html":
            # The staff's similarity page quotes the class's own code, side by side: a line any
            # graded student wrote is theirs, not the graders'.
            own = "\n".join(line for notebook in graded["notebooks"].values()
                             for line in cell_text(notebook.decode(errors="replace")))
        else:
            own = "\n".join(cell_text(graded["notebooks"].get(student, b"").decode()))
        found = sorted(line for line in hidden if line in text and line not in own)
        if found:
            leaks[str(path.relative_to(class_dir))] = found[:3]
    assert not leaks, leaks


def test_nothing_the_attacks_started_outlives_the_run(graded):
    if not graded["leftovers"]:
        pytest.skip("no entry that leaves processes behind was graded here")
    assert all(not pids for pids in graded["leftovers"].values()), graded["leftovers"]


def test_no_tcp_connection_leaves_a_worker(graded):
    if not graded["listeners"]:
        pytest.skip("no entry that opens sockets was graded here")
    assert all(count == 0 for count in graded["listeners"].values()), graded["listeners"]


@pytest.mark.parametrize("entry", [entry for entry in ENTRIES
                                   if getattr(EXTRAS[entry.name], "FORBIDDEN_IN_REPORT", ())],
                         ids=lambda entry: entry.name)
def test_entry_reports_nothing_of_the_instructor_s_code(graded, entry):
    if entry not in graded["entries"]:
        pytest.skip(f"not graded under {graded['mode']}")
    class_dir = graded["class_dir"]
    texts = [readable_text(path) for path in [*class_dir.glob(f"autograded/{entry.name}/ps1/*"),
                                              *class_dir.glob(f"feedback/{entry.name}/ps1/*.html")]
             if path.is_file()]
    assert texts, "the entry's report is missing"
    found = [word for word in EXTRAS[entry.name].FORBIDDEN_IN_REPORT if any(word in text for text in texts)]
    assert not found, (found, ledger(graded, entry.name)["errors"][:3])


def test_no_secret_from_outside_the_sandbox_reaches_any_output(graded):
    class_dir = graded["class_dir"]
    found = [str(path.relative_to(class_dir)) for path in class_dir.rglob("*")
             if path.is_file() and not path.is_symlink() and SECRET[:24] in path.read_text(errors="replace")]
    assert not found
    assert SECRET[:24] not in graded["run"].stdout + graded["run"].stderr
