"""A TA opens a hostile written answer in formgrader (issue 29, finding 1), as a TA does: a real
Jupyter server with nbgrader's formgrader on the loopback, in a copy of the course graded through
the real `autograde` (reports made in advance: no student code runs), and the submission's page
in headless Chromium. The answer's script tries to write a file into the course through
Jupyter's contents API with the page's `_xsrf`; it must not run.

The control shows the attack is live in this very server and browser: an autograded notebook
written without rlcourse's sanitiser, with the script in a forged grade_id (formgrader prints it
into an attribute unescaped, and no setting of nbconvert's reaches it), writes its file.
"""
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from marking import QUESTION, record, submit

from course_copy import copy_course
from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.nbgrader]

BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from browser import Browser  # noqa: E402 - tests/web/browser.py, the web tests' DevTools driver


def planting(name: str) -> str:
    """JavaScript that writes `name` at the root of the Jupyter server's files (the course),
    with the TA's session and the page's _xsrf cookie: what a student's script would do."""
    return ("fetch('/api/contents/" + name + "',{method:'PUT',credentials:'same-origin',headers:{"
            "'X-XSRFToken':decodeURIComponent(document.cookie.match(/_xsrf=([^;]+)/)[1]),"
            "'Content-Type':'application/json'},body:JSON.stringify({type:'file',format:'text',"
            "content:'written by a student script'})})")


def hostile_answer(name: str) -> str:
    script = planting(name)
    return (f'Clipping bounds the ratio. <img src=x onerror="{script}">\n\n'
            f"<svg><image href=x onerror=\"{script}\"></image></svg>\n\n"
            f"<details open ontoggle=\"{script}\">more</details>\n\n"
            f"[the ratio](javascript:{script})")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class JupyterServer:
    """`jupyter server` in `root` (so formgrader reads the course's nbgrader_config.py there, as
    a TA starts it), on the loopback, with a token; its own config and runtime folders."""

    def __init__(self, root: Path, scratch: Path):
        self.token, self.port = secrets.token_hex(16), free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith(("JUPYTER", "JPY_"))}
        env.update(PATH=f"{BIN}:{env.get('PATH', '')}", JUPYTER_CONFIG_DIR=str(scratch / "config"),
                   JUPYTER_RUNTIME_DIR=str(scratch / "runtime"), JUPYTER_DATA_DIR=str(scratch / "data"),
                   HOME=str(scratch))
        self.log = open(scratch / "jupyter.log", "w")
        self.process = subprocess.Popen(
            [str(BIN / "jupyter"), "server", "--no-browser", "--ServerApp.ip=127.0.0.1",
             f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5):
                    return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.3)
        raise AssertionError(f"jupyter server did not start:\n{(scratch / 'jupyter.log').read_text()}")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def submission_page(server: JupyterServer, class_dir: ClassDirectory, student: str) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(class_dir.db_url) as gradebook:
        submission_id = gradebook.find_submission_notebook("ps1", "ps1", student).id
    return f"{server.url}/formgrader/submissions/{submission_id}/"


def signed_in_tab(browser: Browser, server: JupyterServer):
    """A tab signed in as a TA signs in: the server's login page, the token as its password
    (the session cookie and the _xsrf cookie the page's scripts send, then)."""
    tab = browser.tab(f"{server.url}/login")
    tab.eval(f"document.querySelector('input[name=password]').value = {server.token!r};"
             "document.querySelector('form').submit()")
    tab.wait("!location.pathname.startsWith('/login') && document.readyState === 'complete'")
    return tab


def forge_grade_id(autograded: Path, script: str) -> None:
    """What an autograded notebook written without rlcourse's sanitiser could hold: the
    student's own nbgrader metadata, with a grade_id that breaks out of formgrader's attribute."""
    notebook = nbformat.read(autograded, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == QUESTION)
    cell.metadata["nbgrader"]["grade_id"] = f'{QUESTION}"><img src=x onerror="{script}"><b x="'
    nbformat.write(notebook, autograded)


@pytest.fixture
def needs_chromium():
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")


@pytest.mark.hostile("formgrader-stored-xss")
def test_a_hostile_written_answer_runs_no_script_in_formgrader(tmp_path, needs_chromium):
    """Does a TA who opens a hostile answer in formgrader run none of its scripts, while the
    same server and browser run the control's?"""
    course = copy_course(tmp_path / "course")
    class_dir = ClassDirectory(course)
    assignment = Course(course).assignment("ps1")
    submit(class_dir, "mallory", hostile_answer("planted-by-mallory.txt"))
    submit(class_dir, "control", "An honest answer, whose autograded notebook is then forged.")
    assert record(assignment, class_dir) == {"mallory": "graded", "control": "graded"}
    forge_grade_id(class_dir.autograded / "control" / "ps1" / "ps1.ipynb", planting("planted-by-control.txt"))

    server = JupyterServer(course, tmp_path)
    browser = Browser(tmp_path / "chromium-profile")
    try:
        tab = signed_in_tab(browser, server)
        tab.go(submission_page(server, class_dir, "control"))
        deadline = time.monotonic() + 20
        while not (course / "planted-by-control.txt").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (course / "planted-by-control.txt").exists(), \
            "the control's script did not run: the test cannot tell a safe page from a broken attack"

        tab.go(submission_page(server, class_dir, "mallory"))
        tab.wait("document.querySelector('#notebook-container') !== null")
        time.sleep(3)  # the control's script had written its file within a second
        assert not (course / "planted-by-mallory.txt").exists(), "the student's script ran in the TA's page"
        text = tab.text()
        assert "Clipping bounds the ratio." in text and "onerror" in text  # the TA reads the answer
        handlers = tab.eval("""Array.from(document.querySelectorAll('#notebook-container *')).flatMap(
            e => Array.from(e.attributes).filter(a => a.name.startsWith('on') ||
                 /^\\s*javascript:/i.test(a.value)).map(a => e.tagName + ' ' + a.name))""")
        assert handlers == []
    finally:
        browser.close()
        server.stop()
    assert not (course / "planted-by-mallory.txt").exists()
    assert sorted(path.name for path in course.glob("planted-*")) == ["planted-by-control.txt"]
