"""The released notebooks' submit cell (rlcourse.web.notebook_submit) against a real `rlcourse web`:
the saved notebook is sent as the token's user and graded, the feedback the policy allows is
drawn inline (score out of the grade of record's maximum, each item, each misconception, sealed
items as "answer recorded", a link to the full page); a token of someone else, a bad token and an
unreachable service each send nothing and say why; an unsaved notebook is refused. Anywhere but a
hub user's notebook the cell sends nothing, and grading never runs it.

The tests that talk to the service are `slow` (one real grading: alan's ps1, clip_without_min,
before ada's due date; about a minute); the rest take a second.
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from webserver import DEMO, ROOT, Server, copy_course, tokens_for

from rlcourse.web import notebook_submit
from rlcourse.web.notebook_submit import NotSubmitted, feedback_html, hub_session, save_notebook, submit_saved_notebook

ALAN = DEMO / "alan" / "ps1" / "ps1.ipynb"   # clip_without_min: 34 of 42 autograded points (of 46)
SEALED = 7.0
"""ps1's points that wait for the due date (tests/web/test_grading.py)."""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from nbgrader.api import Gradebook

    base = tmp_path_factory.mktemp("notebook-submit")
    course, class_dir = copy_course(base / "course"), base / "class"
    tokens = tokens_for(class_dir, ["ada", "grace"])
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow)
    server = Server(course, class_dir)
    yield server, tokens
    server.stop()


@pytest.fixture(scope="module")
def graded(served, tmp_path_factory):
    """ada's cell sends alan's notebook (saved in her folder) and waits for its grade."""
    server, tokens = served
    notebook = tmp_path_factory.mktemp("ada-home") / "ps1.ipynb"
    shutil.copy(ALAN, notebook)
    seen = []
    started = time.monotonic()
    view = submit_saved_notebook(service=server.url, token=tokens["ada"], user="ada", assignment="ps1",
                                 notebook=notebook, on_wait=seen.append)
    print(f"graded through the cell's client in {time.monotonic() - started:.0f} s")
    return view, seen


@pytest.mark.slow
def test_the_saved_notebook_is_graded_as_the_tokens_user(served, graded):
    server, _ = served
    view, seen = graded
    assert (view["student"], view["assignment"], view["status"]) == ("ada", "ps1", "graded")
    assert seen and seen[0]["status"] in ("queued", "running")  # the progress the cell shows
    assert (server.class_dir / "submitted" / "ada" / "ps1" / "ps1.ipynb").read_bytes() == ALAN.read_bytes()


@pytest.mark.slow
def test_the_inline_feedback_is_what_the_policy_shows(graded):
    view, _ = graded
    report = view["report"]
    shown = feedback_html(view, feedback_url=f"/services/rlcourse/submissions/{view['id']}/feedback")
    # the grade of record's basis, before the due date: the sealed points left out of both
    assert (report["score"], report["max_score"]) == (34.0 - SEALED, 46.0 - SEALED)
    assert f"Score: <b>{34.0 - SEALED:g} / {46.0 - SEALED:g}</b>" in shown
    sealed = [item for item in report["items"] if item["score"] is None]
    failed = [item for item in report["items"] if item["passed"] is False]
    assert sealed and failed
    assert shown.count("answer recorded") == len(sealed)
    assert "clip_without_min" in {item["diagnosis"] for item in failed}
    for item in failed:
        assert f"misconception: <code>{item['diagnosis']}</code>" in shown
    assert f'href="/services/rlcourse/submissions/{view["id"]}/feedback"' in shown
    assert "To fix it" not in shown  # remedies wait for the due date, as on the page


def test_html_in_a_message_is_shown_as_text():
    view = {"id": 3, "assignment": "ps1", "status": "graded", "report": {
        "score": 1.0, "max_score": 2.0, "items": [
            {"id": "a", "title": "<b>x</b>", "score": 0.0, "max_score": 1.0, "passed": False,
             "diagnosis": None, "message": "<script>alert(1)</script>"}]}}
    shown = feedback_html(view, feedback_url="/f")
    assert "<script>" not in shown and "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
    assert "&lt;b&gt;x&lt;/b&gt;" in shown


@pytest.mark.slow
def test_a_token_of_someone_else_sends_nothing(served, tmp_path):
    server, tokens = served
    notebook = tmp_path / "ps1.ipynb"
    shutil.copy(ALAN, notebook)
    with pytest.raises(NotSubmitted, match="belongs to 'grace', not to 'ada': nothing was sent"):
        submit_saved_notebook(service=server.url, token=tokens["grace"], user="ada", assignment="ps1",
                              notebook=notebook)
    assert server.api("/api/submissions", tokens["grace"])[1] == []


@pytest.mark.slow
def test_a_bad_token_and_an_unreachable_service_say_why(served, tmp_path):
    server, _ = served
    notebook = tmp_path / "ps1.ipynb"
    shutil.copy(ALAN, notebook)
    with pytest.raises(NotSubmitted, match=r"refused it \(401\)"):
        submit_saved_notebook(service=server.url, token="nope", user="ada", assignment="ps1", notebook=notebook)
    with pytest.raises(NotSubmitted, match="cannot be reached"):
        submit_saved_notebook(service="http://127.0.0.1:9", token="nope", user="ada", assignment="ps1",
                              notebook=notebook)


class TestSaving:
    def test_a_save_that_writes_the_file_lets_it_go(self, tmp_path):
        notebook = tmp_path / "ps1.ipynb"
        notebook.write_text("{}")
        started = time.monotonic()
        save_notebook(notebook, request_save=lambda: notebook.write_text('{"saved": 1}'), seconds=5)
        assert time.monotonic() - started < 5

    def test_no_front_end_saving_it_is_refused_with_the_reason(self, tmp_path):
        notebook = tmp_path / "ps1.ipynb"
        notebook.write_text("{}")
        with pytest.raises(NotSubmitted, match=r"could not be saved from here.*Ctrl-S"):
            save_notebook(notebook, request_save=lambda: None, seconds=0.5)


class TestWhereItRuns:
    HUB = {"JUPYTERHUB_API_TOKEN": "t", "JUPYTERHUB_USER": "ada", "RLCOURSE_SERVICE_URL": "http://s/services/rlcourse/"}

    def test_a_hub_users_notebook(self, tmp_path):
        session = hub_session(dict(self.HUB, JPY_SESSION_NAME=str(tmp_path / "ps1.ipynb")))
        assert session == ("http://s/services/rlcourse", "t", "ada", tmp_path / "ps1.ipynb")

    @pytest.mark.parametrize("missing", ["JUPYTERHUB_API_TOKEN", "JUPYTERHUB_USER", "RLCOURSE_SERVICE_URL",
                                         "JPY_SESSION_NAME"])
    def test_anywhere_else_nothing(self, missing, tmp_path):
        environ = dict(self.HUB, JPY_SESSION_NAME=str(tmp_path / "ps1.ipynb"))
        del environ[missing]
        assert hub_session(environ) is None


def released_cell(assignment: str = "ps1") -> str:
    from rlcourse.course.submission import SUBMIT_CELL_TAG

    cells = json.loads((ROOT / "release" / assignment / f"{assignment}.ipynb").read_text())["cells"]
    tagged = [cell for cell in cells if SUBMIT_CELL_TAG in cell["metadata"].get("tags", [])]
    assert len(tagged) == 1 and tagged[0] is cells[-1]
    assert tagged[0]["metadata"]["nbgrader"]["locked"] is True
    return "".join(tagged[0]["source"])


@pytest.mark.parametrize("assignment", ["ps1", "ps2", "ps3"])
def test_every_release_ends_with_the_locked_submit_cell(assignment):
    assert f'submit_this_notebook("{assignment}")' in released_cell(assignment)


def test_without_the_hubs_client_the_cell_says_what_to_do_instead(tmp_path):
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    done = subprocess.run([python, "-I", "-c", released_cell()], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "course's JupyterHub only" in done.stdout and "rlcourse submit ps1 ps1.ipynb" in done.stdout


@pytest.mark.slow
def test_with_the_client_but_outside_a_hub_notebook_it_sends_nothing(served, tmp_path):
    """The hub's variables in the environment (a terminal on the hub, nbgrader run there) but no
    notebook session: the cell runs in IPython, prints the advice and sends nothing."""
    server, tokens = served
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    from rlcourse.web.hub_config import kernel_files

    for name, content in kernel_files().items():
        (kernel / name).write_bytes(content)
    env = {key: value for key, value in os.environ.items() if key != "JPY_SESSION_NAME"}
    env.update(PYTHONPATH=str(kernel), JUPYTERHUB_API_TOKEN=tokens["grace"], JUPYTERHUB_USER="grace",
               RLCOURSE_SERVICE_URL=server.url)
    script = ("from IPython.core.interactiveshell import InteractiveShell\n"
              f"InteractiveShell.instance().run_cell({released_cell()!r})\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "course's JupyterHub only" in done.stdout, done.stdout
    assert server.api("/api/submissions", tokens["grace"])[1] == []


def test_grading_never_runs_it_nor_expects_it():
    from rlcourse.course.release import Release
    from rlcourse.course.submission import load_submission

    release = Release.read(ROOT / "release" / "ps1" / "ps1.ipynb")
    # its own grade id in each assignment: a notebook of another assignment shares no cell with it
    assert "submit_ps1" in release.order and "submit_ps1" not in release.expected_ids | set(release.given)
    submission = load_submission(ROOT / "release" / "ps1" / "ps1.ipynb", expected_ids=release.expected_ids)
    assert "submit_ps1" not in submission.grade_ids()
    assert not any("submit_this_notebook" in cell.source for cell in submission.cells)
    assert not submission.warnings  # a notebook from before the cell existed is not missing it
    old = load_submission(ALAN, expected_ids=release.expected_ids)
    assert not any("submit" in warning for warning in old.warnings)


def test_the_kernels_client_is_the_package_itself():
    from rlcourse.web import client
    from rlcourse.web.hub_config import kernel_files

    files = kernel_files()
    assert files["rlcourse_submit.py"] == Path(notebook_submit.__file__).read_bytes()
    assert files["rlcourse_client.py"] == Path(client.__file__).read_bytes()


@pytest.mark.slow
def test_the_kernels_copy_needs_only_the_standard_library(served, tmp_path):
    """rlcourse_submit.py and rlcourse_client.py as `rlcourse hub config` writes them, in a bare
    `python3 -I` (no rlcourse, no IPython): importable, and they talk to the real service."""
    from rlcourse.web.hub_config import kernel_files

    server, tokens = served
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 in /usr/bin")
    for name, content in kernel_files().items():
        (tmp_path / name).write_bytes(content)
    script = (f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n"
              "import rlcourse_submit\n"
              "assert rlcourse_submit.client.__name__ == 'rlcourse_client'\n"
              "try:\n"
              f"    rlcourse_submit.submit_saved_notebook(service={server.url!r}, token={tokens['grace']!r}, "
              "user='ada', assignment='ps1', notebook=None)\n"
              "except rlcourse_submit.NotSubmitted as reason:\n"
              "    print(reason)\n")
    done = subprocess.run([python, "-I", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "belongs to 'grace', not to 'ada'" in done.stdout
