"""The quick starts of the students' and the instructors' pages, executed as written: every
fenced block titled "(run by tests/docs/test_quickstarts.py)" on docs/students/index.md and
docs/instructors/index.md runs with bash, line by line with `set -e`, in a copied course (so the
commands a reader copies cannot go stale).

The student's block downloads submit.py from a real `rlcourse web` and uploads ada's notebook
with it (`--no-wait`: the upload is accepted, nothing is waited for); the instructor's checks
ps1, grades the demo's alan and exports the grades (one real `rlcourse autograde`)."""
import csv
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "web"))  # the web tests' server helpers
from webserver import DEMO, Server, copy_course, release, tokens_for  # noqa: E402

MARK = "(run by tests/docs/test_quickstarts.py)"
BIN = Path(sys.executable).parent


def quick_start(page: str) -> str:
    """The commands of the page's marked fenced blocks, in order."""
    text = (ROOT / "docs" / page).read_text()
    blocks = re.findall(r'^( *)```sh title="[^"]*' + re.escape(MARK) + r'"\n(.*?)^\1```', text,
                        flags=re.MULTILINE | re.DOTALL)
    assert blocks, f"{page} has no block marked {MARK}"
    return "".join(textwrap.dedent(commands) for _, commands in blocks)


def run_shell(commands: str, *, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-euo", "pipefail", "-c", commands], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)


def test_the_marked_blocks_are_found_and_hold_commands():
    assert "submit.py" in quick_start("students/index.md")
    assert "rlcourse autograde" in quick_start("instructors/index.md")


@pytest.mark.slow
def test_the_students_quick_start_submits_to_a_real_service(tmp_path):
    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    tokens = tokens_for(class_dir, ["ada"])
    release(class_dir, "ps1")
    server = Server(course, class_dir)
    try:
        student = tmp_path / "ada"
        student.mkdir()
        shutil.copy(DEMO / "ada" / "ps1" / "ps1.ipynb", student / "ps1.ipynb")
        # The student's machine: Debian's python3 and curl, nothing of rlcourse.
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": str(student),
               "SERVER": server.url, "TOKEN": tokens["ada"]}
        done = run_shell(quick_start("students/index.md"), cwd=student, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        status, listed, _ = server.api("/api/submissions", tokens["ada"])
        assert status == 200 and [entry["assignment"] for entry in listed] == ["ps1"]
    finally:
        server.kill()  # with the grading child the accepted upload started


@pytest.mark.slow
def test_the_instructors_quick_start_grades_and_exports(tmp_path):
    course = copy_course(tmp_path / "course")
    shutil.copytree(DEMO / "alan", course / "demo" / "submitted" / "alan")
    env = {key: value for key, value in os.environ.items()
           if key != "RLCOURSE_ROOT" and not key.startswith("JUPYTERHUB_")}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    done = run_shell(quick_start("instructors/index.md"), cwd=course, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (course / "feedback" / "alan" / "ps1" / "ps1.html").is_file()
    rows = list(csv.DictReader((course / "exports" / "ps1" / "ps1-grades.csv").open()))
    assert [row["student_id"] for row in rows] == ["alan"]
