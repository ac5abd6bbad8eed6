"""submit.py: the stdlib client a student without rlcourse downloads from `rlcourse web` at
/submit.py. It is rlcourse/web/client.py byte for byte, and runs under a bare `python3 -I`
(Debian's interpreter, isolated: no rlcourse, no virtual environment) against a real server.

Nothing is graded: `--no-wait` stops once the upload is accepted, and the server (with the
grading child it starts) is stopped at the end.
"""
import hashlib
import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

import pytest
from webserver import DEMO, Server, copy_course, release, tokens_for

from rlcourse.web import client

ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"
PYTHON = shutil.which("python3", path="/usr/bin:/bin")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("submit-script")
    course, class_dir = copy_course(base / "course"), base / "class"
    tokens = tokens_for(class_dir, ["ada"])
    release(class_dir, "ps1")
    server = Server(course, class_dir)
    yield server, tokens
    server.kill()  # with the grading child the accepted upload started: nothing awaits it


@pytest.fixture(scope="module")
def script(served, tmp_path_factory) -> Path:
    """submit.py as a student gets it: downloaded from the server, into an empty folder."""
    server, _ = served
    with urllib.request.urlopen(server.url + "/submit.py", timeout=60) as response:
        assert response.headers["Content-Disposition"] == 'attachment; filename="submit.py"'
        content = response.read()
    path = tmp_path_factory.mktemp("student") / "submit.py"
    path.write_bytes(content)
    return path


def bare_python(*args, cwd: Path) -> subprocess.CompletedProcess:
    if PYTHON is None:
        pytest.skip("no system python3 in /usr/bin")
    return subprocess.run([PYTHON, "-I", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})


def test_the_served_script_is_the_client_itself(script):
    assert script.read_bytes() == Path(client.__file__).read_bytes()


def test_a_bare_python_uploads_with_it_and_the_server_accepts(served, script):
    server, tokens = served
    assert bare_python("-c", "import rlcourse", cwd=script.parent).returncode != 0  # not importable there
    done = bare_python(script, "ps1", ADA, "--server", server.url, "--token", tokens["ada"], "--no-wait",
                       "--json", cwd=script.parent)
    assert done.returncode == 0, done.stderr
    accepted = json.loads(done.stdout)
    assert (accepted["student"], accepted["assignment"]) == ("ada", "ps1")
    assert accepted["status"] in ("queued", "running")
    assert accepted["sha256"] == hashlib.sha256(ADA.read_bytes()).hexdigest()
    listed = server.api("/api/submissions", tokens["ada"])[1]
    assert [entry["id"] for entry in listed] == [accepted["id"]]
    kept = list((server.class_dir / "web" / "history" / "ada" / "ps1").glob("*/ps1.ipynb"))
    assert [path.read_bytes() for path in kept] == [ADA.read_bytes()]


def test_a_bad_token_is_one_line_and_status_2(served, script):
    server, _ = served
    done = bare_python(script, "ps1", ADA, "--server", server.url, "--token", "nope", cwd=script.parent)
    assert done.returncode == 2 and done.stderr.startswith("rlcourse submit: refused (401)")
    assert "Traceback" not in done.stderr
