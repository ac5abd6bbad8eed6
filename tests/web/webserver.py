"""Helpers for the web tests: a real `rlcourse web` on the loopback, a copy of the course's ps1 (so a test
may set its [web] and [feedback] tables), an empty class directory, the real command line."""
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import course_copy

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEMO = ROOT / "demo" / "submitted"


def copy_course(target: Path, *, toml_extra: str = "") -> Path:
    """ps1 in a folder of its own, with the course's warm JAX cache (tests/course_copy.py)."""
    return course_copy.copy_course(target, cache=True, toml_extra=toml_extra)


def add_assignment(course: Path, name: str, *, toml_extra: str = "") -> None:
    """Another assignment of the checkout's course (graders, release, source, solutions) into a
    course copy: enough to be refused or matched against, not graded (no compiled programs)."""
    import shutil

    for folder in ("graders", "release", "source", "solutions"):
        shutil.copytree(ROOT / folder / name, course / folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    if toml_extra:
        spec = course / "graders" / name / "assignment.toml"
        spec.write_text(spec.read_text() + "\n" + toml_extra)


def release(class_dir: Path, *names: str, duedate=None) -> None:
    """What the instructor does to give assignments to a class: their rows in its gradebook, as
    `nbgrader db assignment add NAME --duedate=...` writes them (nbgrader's API)."""
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import nbgrader_on_path

    nbgrader_on_path()
    class_dir.mkdir(parents=True, exist_ok=True)
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        for name in names:
            gradebook.update_or_create_assignment(name, duedate=duedate)


def gradebook_dump(class_dir: Path) -> list[str]:
    """Every row of the class's gradebook, as SQL: equal before and after means untouched."""
    import sqlite3

    with sqlite3.connect(class_dir / "gradebook.db") as db:
        return list(db.iterdump())


def environment() -> dict:
    env = {key: value for key, value in os.environ.items()  # never a hub's service settings
           if key != "RLCOURSE_ROOT" and not key.startswith("JUPYTERHUB_")}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    return env


def rlcourse(course: Path, *args, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(BIN / "rlcourse"), *map(str, args)], cwd=course, capture_output=True,
                          text=True, timeout=timeout, env=environment())
    if check:
        assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


def issue(course: Path, class_dir: Path, *args) -> dict[str, str]:
    """`rlcourse students tokens ARGS`, the real command line: user -> token."""
    done = rlcourse(course, "students", "tokens", "--course-dir", class_dir, *args)
    return dict(line.split(",", 1) for line in done.stdout.splitlines())


def tokens_for(class_dir: Path, students: list[str], staff: list[str] = ()) -> dict[str, str]:
    """The same, in this process (the command line's start costs seconds on a loaded machine)."""
    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.web.tokens import issue_tokens

    return dict(issue_tokens(ClassDirectory(class_dir), students=students, staff=list(staff)))


class Server:
    """`rlcourse web --port 0` in its own process group (so a test can kill it and its grading
    child at once, as a crash would)."""

    def __init__(self, course: Path, class_dir: Path, *, graders: int = 1, extra_env: dict | None = None,
                 args=(), warm: bool = False):
        """`warm`: as `rlcourse web` starts by default, making the open assignments ready at
        start; off unless a test is about it (most never grade, and it would cost them a
        grading process each)."""
        self.course, self.class_dir = course, class_dir
        self.extra_env = dict(extra_env or {})
        self.args = ["--graders", str(graders), *(() if warm else ("--no-warm",)), *args]
        self.log = class_dir.parent / f"{class_dir.name}-web.log"
        self.start()

    def start(self) -> None:
        self.process = subprocess.Popen(
            [str(BIN / "rlcourse"), "web", "--port", "0", "--course-dir", str(self.class_dir), *self.args],
            cwd=self.course, env=dict(environment(), **self.extra_env), stdout=subprocess.PIPE, stderr=open(self.log, "a"),
            text=True, start_new_session=True)
        line = self.process.stdout.readline()
        assert " on http://" in line, f"the server did not start: {line!r}\n{self.log.read_text()}"
        self.url = line.split(" on ")[1].split()[0].rstrip("/")

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()

    def api(self, path: str, token: str | None = None, *, data: bytes | None = None,
            content_type: str | None = None, cookie: str | None = None, form: dict | None = None):
        """(status, body as JSON or text, headers) of one request."""
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if cookie:
            headers["Cookie"] = cookie
        if form is not None:
            data = urllib.parse.urlencode(form).encode()
            content_type = "application/x-www-form-urlencoded"
        if content_type:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(self.url + path, data=data, headers=headers,
                                         method="POST" if data is not None else "GET")
        opener = urllib.request.build_opener(NoRedirect)
        try:
            with opener.open(request, timeout=60) as response:
                status, body, got = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, body, got = error.code, error.read(), error.headers
        try:
            return status, json.loads(body), got
        except ValueError:
            return status, body.decode(), got

    def upload(self, token: str, notebook: Path, assignment: str = "ps1"):
        from rlcourse.web.client import multipart

        body, content_type = multipart({"assignment": assignment}, "notebook", notebook.name,
                                       notebook.read_bytes())
        return self.api("/api/submissions", token, data=body, content_type=content_type)

    def login(self, token: str) -> str:
        """A browser session's cookie header, through the login form."""
        status, page, headers = self.api("/login")
        nonce = page.split('name="csrf" value="')[1].split('"')[0]
        login_cookie = headers["set-cookie"].split(";")[0]
        status, _, headers = self.api("/login", cookie=login_cookie, form={"csrf": nonce, "token": token})
        assert status == 303 and headers["location"] == "/", status
        cookies = [value for key, value in headers.items() if key.lower() == "set-cookie"]
        session = next(value for value in cookies if value.startswith("rlcourse_session="))
        return session


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def wait_for(server, token: str, submission_id: int, states=("graded", "failed"), timeout: float = 900) -> dict:
    """The submission's view once its state is one of `states` (polled every half second)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        view = server.api(f"/api/submissions/{submission_id}", token)[1]
        if view["status"] in states:
            return view
        time.sleep(0.5)
    raise AssertionError(f"#{submission_id} still {view['status']} after {timeout} s")
