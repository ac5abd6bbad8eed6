"""JupyterLab's "Submit to rlcourse" button (jupyterlab-rlcourse/) against a real `rlcourse web`.

A real JupyterLab server runs as ada's hub server would: the hub's variables set (her service
token as `JUPYTERHUB_API_TOKEN`, `JUPYTERHUB_USER`, `RLCOURSE_SERVICE_URL`) and the server
extension enabled the way `rlcourse hub config` enables it for the users (its configuration
folder on `JUPYTER_CONFIG_PATH`). The handler (`POST /rlcourse/submit`) submits the saved file
as ada and answers with the feedback the policy allows, drawn as the submit cell draws it; it
answers only the server's own user (a request without the server's token, or a browser's
without the XSRF header, is refused), only for notebooks under the server's root, and says why
when nothing was sent (another user's token). In headless Chromium, ada edits her notebook
without saving and presses the button: JupyterLab saves it, the edited file is graded, and the
feedback opens in a dialog.

Slow: two real gradings of alan's ps1 (clip_without_min) before the due date, about a minute
each on a busy 2-core machine, and three servers' starts.
"""
import datetime
import http.cookiejar
import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from webserver import BIN, DEMO, Server, copy_course, environment, tokens_for

from rlcourse.web.hub_config import JUPYTER_CONFIG_FOLDER, write_hub_config

pytestmark = pytest.mark.slow

ALAN = DEMO / "alan" / "ps1" / "ps1.ipynb"   # clip_without_min: 34 of 42 autograded points (of 46)
SEALED = 7.0
"""ps1's points that wait for the due date (tests/web/test_grading.py)."""
LAB_TOKEN = "the-servers-own-token"
BUILT = Path(__file__).resolve().parents[2] / "jupyterlab-rlcourse" / "jupyterlab_rlcourse" / "labextension"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LabServer:
    """`jupyter lab` for a hub user: `hub_token` and `hub_user` as the hub would set them."""

    def __init__(self, base: Path, *, service: str, hub_token: str, hub_user: str, users_config: Path):
        self.home = base / "home"
        self.home.mkdir(parents=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(environment(), JUPYTERHUB_API_TOKEN=hub_token, JUPYTERHUB_USER=hub_user,
                   RLCOURSE_SERVICE_URL=service, JUPYTER_CONFIG_PATH=str(users_config),
                   JUPYTER_CONFIG_DIR=str(base / "jupyter-config"), JUPYTER_RUNTIME_DIR=str(base / "runtime"))
        self.log = base / "lab.log"
        self.process = subprocess.Popen(
            [str(BIN / "jupyter"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={LAB_TOKEN}", f"--notebook-dir={self.home}",
             "--LabApp.expose_app_in_browser=True", "--allow-root"],
            cwd=self.home, env=env, stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={LAB_TOKEN}", timeout=5):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.5)
        raise AssertionError(f"JupyterLab did not start:\n{self.log.read_text()}")

    def submit(self, body, *, token: str | None = LAB_TOKEN, opener=None, headers=None):
        """(status, JSON answer) of the button's request."""
        request = urllib.request.Request(f"{self.url}/rlcourse/submit", data=json.dumps(body).encode(),
                                         method="POST", headers=dict(headers or {}))
        if token:
            request.add_header("Authorization", f"token {token}")
        try:
            with (opener or urllib.request.build_opener()).open(request, timeout=600) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            text = error.read()
            try:
                return error.code, json.loads(text)
            except ValueError:
                return error.code, text.decode()

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The service, ada's and grace's tokens, and the users' configuration `rlcourse hub config` writes."""
    from nbgrader.api import Gradebook

    base = tmp_path_factory.mktemp("lab-button")
    course, class_dir = copy_course(base / "course"), base / "class"
    tokens = tokens_for(class_dir, ["ada", "grace"])
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow)
    hub = base / "hub" / "jupyterhub_config.py"
    write_hub_config(course_root=course, class_dir=class_dir, output=hub, course_id="rlcourse")
    server = Server(course, class_dir)
    yield server, tokens, hub.parent / JUPYTER_CONFIG_FOLDER
    server.stop()


@pytest.fixture(scope="module")
def ada_lab(served, tmp_path_factory):
    server, tokens, users_config = served
    lab = LabServer(tmp_path_factory.mktemp("ada-lab"), service=server.url, hub_token=tokens["ada"],
                    hub_user="ada", users_config=users_config)
    shutil.copy(ALAN, lab.home / "ps1.ipynb")
    yield lab
    lab.stop()


def test_the_handler_submits_the_saved_notebook_as_the_servers_user(served, ada_lab):
    server, tokens, _ = served
    started = time.monotonic()
    status, answer = ada_lab.submit({"path": "ps1.ipynb", "assignment": "ps1"})
    print(f"graded through the button's handler in {time.monotonic() - started:.0f} s")
    assert status == 200 and answer["submitted"] is True, answer
    view = answer["view"]
    assert (view["student"], view["assignment"], view["status"]) == ("ada", "ps1", "graded")
    assert (server.class_dir / "submitted" / "ada" / "ps1" / "ps1.ipynb").read_bytes() == ALAN.read_bytes()
    # what the policy shows before the due date, drawn as the cell draws it
    report = view["report"]
    assert (report["score"], report["max_score"]) == (34.0 - SEALED, 46.0 - SEALED)
    assert f"Score: <b>{34.0 - SEALED:g} / {46.0 - SEALED:g}</b>" in answer["html"]
    assert "misconception: <code>clip_without_min</code>" in answer["html"]
    assert answer["html"].count("answer recorded") == sum(item["score"] is None for item in report["items"])
    assert answer["feedback_url"] == f"/submissions/{view['id']}/feedback"
    assert f'href="{answer["feedback_url"]}"' in answer["html"]
    assert tokens["ada"] not in json.dumps(answer)  # the hub token stays in the server


def test_only_the_servers_user_reaches_the_handler(ada_lab):
    body = {"path": "missing.ipynb", "assignment": "ps1"}  # past the checks: 404, and nothing sent
    assert ada_lab.submit(body, token=None)[0] == 403
    assert ada_lab.submit(body, token="not-the-servers")[0] == 403
    # a browser signed in by its cookie must send the XSRF header too, as Jupyter's own handlers require
    cookies = http.cookiejar.CookieJar()
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    browser.open(f"{ada_lab.url}/lab?token={LAB_TOKEN}", timeout=60).read()
    xsrf = next(cookie.value for cookie in cookies if cookie.name == "_xsrf")
    assert ada_lab.submit(body, token=None, opener=browser)[0] == 403
    assert ada_lab.submit(body, token=None, opener=browser, headers={"X-XSRFToken": xsrf})[0] == 404


def test_only_notebooks_under_the_servers_root_are_sent(ada_lab):
    outside = ada_lab.home.parent / "elsewhere.ipynb"
    shutil.copy(ALAN, outside)
    for path in ("../elsewhere.ipynb", str(outside), "ps1"):
        status, answer = ada_lab.submit({"path": path, "assignment": "ps1"})
        assert status == 404, (path, answer)
    assert ada_lab.submit({"path": "ps1.ipynb"})[0] == 400


def test_a_token_of_another_user_sends_nothing_and_says_why(served, tmp_path):
    server, tokens, users_config = served
    lab = LabServer(tmp_path, service=server.url, hub_token=tokens["grace"], hub_user="ada",
                    users_config=users_config)
    try:
        shutil.copy(ALAN, lab.home / "ps1.ipynb")
        status, answer = lab.submit({"path": "ps1.ipynb", "assignment": "ps1"})
    finally:
        lab.stop()
    assert status == 409 and answer["submitted"] is False
    assert "belongs to 'grace', not to 'ada': nothing was sent" in answer["reason"]
    assert server.api("/api/submissions", tokens["grace"])[1] == []


@pytest.mark.browser
def test_the_button_saves_the_edited_notebook_and_shows_the_feedback(served, ada_lab, tmp_path):
    """ada edits a cell (unsaved) of her draft, a copy of ps1 under another name, and presses Submit
    to rlcourse: JupyterLab's save runs first (the service graded the edited file), the assignment
    is the submit cell's (submit_ps1), and the feedback opens in a dialog."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")
    if not (BUILT / "package.json").is_file():
        pytest.skip("the button's front end is not built (make install builds it where npm is)")
    from browser import Browser

    server, tokens, _ = served
    before = len(server.api("/api/submissions", tokens["ada"])[1])
    # alan's answers, ending as every released ps1 does: with the submit cell (grade id submit_ps1)
    draft = json.loads(ALAN.read_text())
    draft["cells"].append(json.loads((server.course / "release" / "ps1" / "ps1.ipynb").read_text())["cells"][-1])
    (ada_lab.home / "ps1-draft.ipynb").write_text(json.dumps(draft))
    browser = Browser(tmp_path / "profile")
    try:
        tab = browser.tab("about:blank")
        # a laptop's window: narrower, and JupyterLab folds the toolbar's last items into its "..." menu
        tab.send("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 900, "deviceScaleFactor": 1,
                                                        "mobile": False})
        # JupyterLab takes the token into a cookie and drops it from the address: no exact URL to wait for
        tab.send("Page.navigate", {"url": f"{ada_lab.url}/lab/tree/ps1-draft.ipynb?token={LAB_TOKEN}"})
        tab.wait("window.jupyterapp && jupyterapp.shell.currentWidget && jupyterapp.shell.currentWidget.context"
                 " && jupyterapp.shell.currentWidget.context.isReady"
                 " && document.querySelector('.jp-NotebookPanel-toolbar .rlcourse-submit-button') !== null",
                 timeout=240)
        tab.eval("(() => { const first = jupyterapp.shell.currentWidget.content.widgets[0].model.sharedModel;"
                 "  first.setSource(first.getSource() + '\\n\\nEdited in the browser, not saved.'); return true; })()")
        assert tab.eval("jupyterapp.shell.currentWidget.context.model.dirty") is True
        tab.eval("document.querySelector('.jp-NotebookPanel-toolbar .rlcourse-submit-button').click()")
        tab.wait("document.querySelector('.jp-Dialog .rlcourse-feedback-dialog') !== null", timeout=600)
        shown = tab.eval("document.querySelector('.jp-Dialog').innerText")
    finally:
        browser.close()
    views = server.api("/api/submissions", tokens["ada"])[1]
    assert len(views) == before + 1
    report = max(views, key=lambda view: view["id"])
    view = server.api(f"/api/submissions/{report['id']}", tokens["ada"])[1]
    assert view["status"] == "graded", view
    assert f"Score: {view['report']['score']:g} / {view['report']['max_score']:g}" in shown, shown
    assert "clip_without_min" in shown and "Full feedback page" in shown
    sent = json.loads((server.class_dir / "submitted" / "ada" / "ps1" / "ps1.ipynb").read_text())
    assert "Edited in the browser, not saved." in "".join(sent["cells"][0]["source"])
    saved = json.loads((ada_lab.home / "ps1-draft.ipynb").read_text())
    assert sent == saved  # what was graded is the file JupyterLab saved
