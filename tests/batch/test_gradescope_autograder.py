"""The autograder zip, run as Gradescope runs it: unpacked into a folder that bubblewrap mounts at
/autograder, `run_autograder` grading each upload there, results.json read back.

run_autograder uses this test's own environment (RLCOURSE_PYTHON) rather than one setup.sh
installs per test; `test_setup_sh_installs_a_working_environment` checks setup.sh itself once.
bwrap creates an empty /autograder on the host if there is none (the mount point); nothing is
ever written into it.
"""
import json
import os
import platform
import shutil
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from rlcourse.batch.gradescope import build_autograder
from rlcourse.course.submission import NotebookProblem, load_submission

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "demo" / "submitted"
UPLOADS = ["barbara", "edsger", "grace", "ken"]
"""The demo uploads run through the autograder one by one (each a whole run, about a minute):
unfinished work, a file that is not a notebook, a correct notebook of another style in folders,
the in-kernel cheat. ada's is run by the isolation test and alan's by the feedback-policy test;
linus's is a disguised copy of grace's."""
BEFORE_DUE = {"created_at": "2026-12-01T10:00:00-08:00",
              "assignment": {"due_date": "2026-12-10T23:00:00-08:00", "late_due_date": None}}
AFTER_DUE = dict(BEFORE_DUE, created_at="2026-12-11T09:00:00-08:00")

pytestmark = pytest.mark.slow


def unpack(zip_path: Path, autograder: Path) -> Path:
    """Lay out `autograder` as Gradescope does: the zip's contents in source/, run_autograder
    copied beside it, empty submission/ and results/."""
    with zipfile.ZipFile(zip_path) as archive:
        archive.extractall(autograder / "source")
    for info in zipfile.ZipFile(zip_path).infolist():  # extractall drops the modes
        os.chmod(autograder / "source" / info.filename, (info.external_attr >> 16) & 0o777)
    shutil.copy2(autograder / "source" / "run_autograder", autograder / "run_autograder")
    return autograder


def run_autograder(autograder: Path, files: dict, *, metadata=BEFORE_DUE, environment=(),
                   sandbox=(), pass_fds=()) -> dict:
    """Put `files` ({relative path: bytes}) in submission/, run run_autograder with `autograder`
    mounted at /autograder (and `sandbox`: more of bwrap's options), and return results.json."""
    for folder in ("submission", "results"):
        shutil.rmtree(autograder / folder, ignore_errors=True)
        (autograder / folder).mkdir()
    for name, data in files.items():
        path = autograder / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (autograder / "submission_metadata.json").write_text(json.dumps(metadata))
    command = ["bwrap", "--dev-bind", "/", "/", "--bind", str(autograder), "/autograder",
               "--chdir", "/autograder", "--setenv", "RLCOURSE_PYTHON", sys.executable]
    for key, value in environment:
        command += ["--setenv", key, value]
    result = subprocess.run([*command, *sandbox, "/autograder/run_autograder"], capture_output=True,
                            text=True, timeout=900, pass_fds=pass_fds)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads((autograder / "results" / "results.json").read_text())


@pytest.fixture(scope="module")
def autograder(ps1, tmp_path_factory):
    """The zip unpacked once; its compilation cache warmed as setup.sh warms it (seeded from
    this course's cache when it has one: the same reference, graders and worker)."""
    folder = tmp_path_factory.mktemp("gradescope")
    root = unpack(build_autograder(ps1, out=folder), folder / "autograder")
    ours = ps1.course.cache_dir
    if ours.is_dir():
        for cache in ours.glob("jax-*"):
            shutil.copytree(cache, root / "source" / ".rlcourse-cache" / cache.name)
    for action in ("lock", "warm"):  # as setup.sh does
        subprocess.run([sys.executable, "-m", "rlcourse.batch.gradescope", action, "ps1",
                        "--course", str(root / "source")], check=True, capture_output=True, timeout=900)
    return root


@pytest.fixture(scope="module")
def reference_reports():
    """`rlcourse grade ps1 ... --json` for every demo notebook these tests upload, in one run."""
    students = sorted({*UPLOADS, "ada", "alan"})
    paths = [DEMO / student / "ps1" / "ps1.ipynb" for student in students]
    result = subprocess.run([str(Path(sys.executable).with_name("rlcourse")), "grade", "ps1", *paths,
                             "--json", "--no-service"], cwd=ROOT, capture_output=True, text=True,
                            check=True, timeout=1800)
    return dict(zip(students, json.loads(result.stdout)))


def item_tests(results: dict) -> list[dict]:
    """The tests of the hidden items (not a message's or a remedy's own test, not the notes, not
    the written answers)."""
    return [test for test in results["tests"] if "." not in test["number"]
            and test["name"] != "Notes on your notebook" and not test["name"].endswith(": written answer")]


def written_tests(results: dict) -> list[dict]:
    return [test for test in results["tests"] if test["name"].endswith(": written answer")]


SEALED = {"concepts.q1", "concepts.q2", "concepts.q3", "concepts.q4", "horizon.prediction",
          "exercises.horizon_change", "exercises.clipping_signs"}
"""ps1's items whose outcome waits for the due date: its concept checks, its prediction and its
two value exercises."""


def hidden_lines_in(results: dict, notebook: Path | None = None) -> list[str]:
    """Lines of 30 characters or more from graders/ps1 and solutions/ps1 that appear anywhere in
    results.json, except lines the student wrote themselves (as tests/explain/test_feedback.py checks)."""
    text = json.dumps(results, ensure_ascii=False).replace("\\n", "\n").replace('\\"', '"')
    own = set()
    try:
        cells = load_submission(notebook).cells if notebook is not None else ()
    except NotebookProblem:  # nothing of it can be quoted back as its own code
        cells = ()
    own = {line.strip() for cell in cells for line in cell.source.splitlines()}
    sources = [*(ROOT / "graders" / "ps1").glob("*.py"), *(ROOT / "solutions" / "ps1").glob("*.py")]
    lines = {line.strip() for path in sources for line in path.read_text().splitlines()
             if len(line.strip()) >= 30}
    return sorted(line for line in lines if line in text and line not in own)


@pytest.mark.parametrize("student", UPLOADS)
def test_each_demo_upload_gets_the_points_and_diagnoses_rlcourse_grade_gives(autograder, reference_reports,
                                                                               student):
    """Same points per item, same diagnoses, the isolation in force, nothing hidden; one upload
    sits in folders, as an unzipped upload does, and one comes after the due date."""
    notebook = DEMO / student / "ps1" / "ps1.ipynb"
    name = "Archive/ps1/ps1.ipynb" if student == "grace" else "ps1.ipynb"
    late = student == "barbara"  # one upload after the due date in Gradescope's metadata
    results = run_autograder(autograder, {name: notebook.read_bytes()}, metadata=AFTER_DUE if late else BEFORE_DUE)
    report = reference_reports[student]
    tests = item_tests(results)
    assert [test["name"].split(":")[0] for test in tests] == [item["id"] for item in report["items"]]
    for test, item in zip(tests, report["items"]):
        assert (test["score"], test["max_score"]) == (item["score"], item["max_score"]), item["id"]
        assert test["tags"] == ([item["diagnosis"]] if item["diagnosis"] else []), item["id"]
        assert test["status"] == ("passed" if item["passed"] else "failed")
        # ps1's policy: everything at once, but the answers a student could try wait for the due
        # date, and so does the total that counts them; an upload after the due date sees all
        sealed = item["id"] in SEALED and not late
        assert test["visibility"] == ("after_due_date" if sealed else "visible"), item["id"]
    assert [(test["score"], test["max_score"]) for test in written_tests(results)] == [(0.0, 2.0), (0.0, 2.0)]
    assert results["score"] == report["score"] and results["extra_data"]["max_score"] == report["max_score"] == 46
    assert results["visibility"] == ("visible" if late else "after_due_date")
    assert results["extra_data"]["isolation"] == report["isolation"]
    assert results["extra_data"]["confinement"] == report["confinement"]
    assert results["extra_data"]["sha256"] == report["sha256"]
    assert 0 < results["execution_time"] < 900
    assert results["extra_data"]["late"] is late
    if report["errors"]:
        assert all(error in results["output"] for error in report["errors"])
    assert hidden_lines_in(results, notebook) == []


def test_the_feedback_policy_decides_visibility_and_the_metadata_the_view(autograder, reference_reports):
    """With `score` before the due date and `full` after, in the zip's assignment.toml: an upload
    before the due date in Gradescope's metadata shows the total and keeps the items for after
    the due date. (An upload after it shows them at once: the same results_json with late=True,
    tests/batch/test_gradescope.py, as is reading the metadata's due dates.)"""
    spec = autograder / "source" / "graders" / "ps1" / "assignment.toml"
    original = spec.read_text()
    spec.write_text(original + '\n[feedback]\nbefore_due = "score"\nafter_due = "full"\n')
    notebook = (DEMO / "alan" / "ps1" / "ps1.ipynb").read_bytes()
    try:
        before = run_autograder(autograder, {"ps1.ipynb": notebook}, metadata=BEFORE_DUE)
    finally:
        spec.write_text(original)
    report = reference_reports["alan"]
    # the total counts the sealed items: it waits for the due date too
    assert before["score"] == report["score"] and before["visibility"] == "after_due_date"
    assert [test["score"] for test in item_tests(before)] == [item["score"] for item in report["items"]]
    assert {test["visibility"] for test in before["tests"]} == {"after_due_date"}
    assert before["extra_data"]["late"] is False


def big_notebook(ps1) -> bytes:
    notebook = json.loads(ps1.release_notebook.read_text())
    cell = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * (50 * 2**20)}]
    return json.dumps(notebook).encode()


def zipped_folder(notebook: bytes) -> bytes:
    import io

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("ps1/ps1.ipynb", notebook)
    return buffer.getvalue()


@pytest.mark.parametrize("case,reason", [
    ("nothing", "the upload is empty"),
    ("two notebooks", "the upload holds 2 notebooks (ps1 (1).ipynb, ps1.ipynb)"),
    ("a zip of a folder", "only the archive ps1.zip"),
    ("50 MB", "ps1.ipynb is 50 MB, more than the 25 MB"),
])
def test_a_malformed_upload_gets_zero_and_a_readable_reason(autograder, ps1, case, reason):
    ada = (DEMO / "ada" / "ps1" / "ps1.ipynb").read_bytes()
    files = {"nothing": {}, "two notebooks": {"ps1.ipynb": ada, "ps1 (1).ipynb": ada},
             "a zip of a folder": {"ps1.zip": zipped_folder(ada)},
             "50 MB": {"ps1.ipynb": big_notebook(ps1)}}[case]
    started = time.monotonic()
    results = run_autograder(autograder, files)
    assert results["score"] == 0
    assert results["output"].startswith("This upload could not be graded: ") and reason in results["output"]
    tests = item_tests(results)
    # 25 hidden items and the two written answers: the gradebook's 46 points
    written = written_tests(results)
    assert len(tests) == 25 and sum(test["max_score"] for test in tests + written) == 46
    assert {test["score"] for test in tests + written} == {0}
    waiting = {test["name"].split(":")[0] for test in tests if test["visibility"] == "after_due_date"}
    assert waiting == SEALED and {t["visibility"] for t in tests} == {"visible", "after_due_date"}
    assert hidden_lines_in(results) == []
    assert time.monotonic() - started < 300


def test_without_user_namespaces_grading_falls_back_to_rlimits_and_says_so(autograder, reference_reports):
    """What the engine does where bubblewrap cannot start (Gradescope's container may forbid user
    namespaces), forced here with RLCOURSE_ISOLATION: the same points, and extra_data names the
    isolation that held."""
    notebook = DEMO / "ada" / "ps1" / "ps1.ipynb"
    results = run_autograder(autograder, {"ps1.ipynb": notebook.read_bytes()},
                             environment=[("RLCOURSE_ISOLATION", "rlimits")])
    report = reference_reports["ada"]
    assert [test["score"] for test in item_tests(results)] == [item["score"] for item in report["items"]]
    assert results["extra_data"]["isolation"] == "rlimits"
    assert "resource limits only" in results["extra_data"]["isolation_reason"]


@pytest.mark.install
def test_setup_sh_installs_a_working_environment(ps1, tmp_path):
    """setup.sh, run as Gradescope runs it but into a fresh virtual environment on this machine
    (SETUP_TARGET): a dependency missing from pyproject.toml or constraints.txt fails here, not
    on a course's first upload. TORCH_INDEX_URL is empty because this machine's pip
    configuration already provides torch's CPU wheel (as for `make install`); on Gradescope it
    defaults to PyTorch's CPU index. Then run_autograder grades with what it installed."""
    root = unpack(build_autograder(ps1, out=tmp_path), tmp_path / "autograder")
    venv = tmp_path / "venv"
    environment = dict(os.environ, SETUP_TARGET=str(venv), TORCH_INDEX_URL="")
    started = time.monotonic()
    result = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=environment,
                            capture_output=True, text=True, timeout=1800)
    print(f"setup.sh took {time.monotonic() - started:.0f} s")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    probe = subprocess.run([str(venv / "bin" / "python"), "-I", "-c",
                            "import rlcourse, jax, torch, nbformat, pytest, matplotlib; "
                            "print(rlcourse.__file__, jax.__version__, torch.__version__)"],
                           capture_output=True, text=True, check=True, timeout=300)
    engine, jax_version, torch_version = probe.stdout.split()
    assert engine.startswith(str(venv)) and jax_version == "0.10.2" and torch_version.startswith("2.13.0")
    assert list((root / "source" / ".rlcourse-cache").glob("jax-*/ps1/given-code/warmed-*"))  # setup warmed it
    notebook = DEMO / "ada" / "ps1" / "ps1.ipynb"
    command = ["bwrap", "--dev-bind", "/", "/", "--bind", str(root), "/autograder", "--chdir", "/autograder",
               "--setenv", "RLCOURSE_PYTHON", str(venv / "bin" / "python"), "/autograder/run_autograder"]
    (root / "submission").mkdir()
    (root / "submission" / "ps1.ipynb").write_bytes(notebook.read_bytes())
    subprocess.run(command, check=True, capture_output=True, timeout=900)
    results = json.loads((root / "results" / "results.json").read_text())
    # ada is the reference: every hidden item, and the written answer awaiting a TA
    assert (results["score"], results["extra_data"]["max_score"], results["extra_data"]["pending"]) == (42, 46, 4)


def without_landlock() -> bytes:
    """A seccomp program (classic BPF, x86_64) that answers Landlock's three system calls with
    ENOSYS, as a kernel without Landlock (older than 5.13, or not enabled at boot) does."""
    load, equal, give = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, enosys = 0x7FFF0000, 0x00050000 | 38  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | ENOSYS
    program = [(load, 0, 0, 4), (equal, 1, 0, 0xC000003E), (give, 0, 0, allow),  # x86_64 only
               (load, 0, 0, 0), (equal, 3, 0, 444), (equal, 2, 0, 445), (equal, 1, 0, 446),
               (give, 0, 0, allow), (give, 0, 0, enosys)]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


PROBE = """
import os

def _probe(path):
    try:
        if os.path.isdir(path):
            return f"listed {len(os.listdir(path))} entries"
        with open(path, "rb") as handle:
            return f"read {len(handle.read())} bytes"
    except OSError as error:
        return f"denied ({type(error).__name__})"

_found = {name: _probe("/autograder/source/" + name) for name in (
    "solutions/ps1/exact.py", "source/ps1/ps1.ipynb", "graders/ps1/assignment.toml", "graders/ps1")}
raise RuntimeError(f"probe as uid {os.getuid()}: " + "; ".join(f"{k}: {v}" for k, v in _found.items()))
"""
"""A cell of the hostile upload: what it could read of the hidden files, in its own error (its
report quotes it back to the student)."""


@pytest.mark.hostile("gradescope-fallback-reads-solutions")
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the seccomp program has x86_64's numbers")
@pytest.mark.parametrize("worker", ["nobody", "uid 0 without capabilities"])
def test_without_namespaces_or_landlock_an_upload_cannot_read_the_hidden_files(autograder, worker):
    """Gradescope's container may have neither user namespaces nor Landlock: the workers then run
    under resource limits as `nobody` or, where nobody cannot start Python, as uid 0 without
    capabilities, and only the hidden files' owner and modes (setup.sh's `lock`) stand between a
    student's cell and the solutions, the instructor's notebook and the graders. Simulated here:
    bwrap's seccomp filter takes Landlock away and rlimits is forced; for `nobody`, /root (0700
    on this machine, where Python lives) is made passable, as Gradescope's /autograder/venv is.
    Before the lock, the zip's files were 0644, and root-owned 0600 files are a uid-0 worker's own."""
    release = json.loads((ROOT / "release" / "ps1" / "ps1.ipynb").read_text())
    release["cells"].append({"cell_type": "code", "execution_count": None, "id": "probe",
                             "metadata": {}, "outputs": [], "source": PROBE})
    sandbox = []
    python_home = Path(sys.base_prefix).resolve()
    if worker == "nobody" and python_home.is_relative_to("/root"):
        sandbox = ["--perms", "0755", "--tmpfs", "/root"]
        for folder in reversed(python_home.parents[:-2]):  # /root/.pyenv, /root/.pyenv/versions
            sandbox += ["--perms", "0755", "--dir", str(folder)]
        sandbox += ["--ro-bind", str(python_home), str(python_home)]
    reading, writing = os.pipe()
    os.write(writing, without_landlock())
    os.close(writing)
    try:
        results = run_autograder(autograder, {"ps1.ipynb": json.dumps(release).encode()},
                                 environment=[("RLCOURSE_ISOLATION", "rlimits")], pass_fds=(reading,),
                                 sandbox=["--seccomp", str(reading), *sandbox])
    finally:
        os.close(reading)
    extra = results["extra_data"]
    assert extra["isolation"] == "rlimits" and extra["confinement"]["landlock"] == 0, extra
    probe = next(line for line in results["output"].splitlines() if "probe as uid" in line)
    assert f"probe as uid {65534 if worker == 'nobody' else 0}:" in probe, probe
    assert probe.count("denied (PermissionError)") == 4, probe
    assert "read " not in probe and "listed " not in probe
