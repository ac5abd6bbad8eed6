"""`rlcourse web` under a real JupyterHub: `jupyterhub` (DummyAuthenticator, SimpleLocalProcessSpawner)
with its real configurable-http-proxy (npm, installed by `make install` from tests/web/hub-proxy/
into .venv/hub-proxy), configured by `rlcourse hub config` (plus the test machine's ports, users
and an admin service of the test's own). A hub user signs in on the hub's own login page and
lands on the service's page as themselves; a hub admin sees the class view; a student's upload
through the page's form (with its CSRF token, through the proxy, under the prefix) is checked and
answered (not a notebook, so nothing is graded there).

The submit cell (issue 32): two students, each with their own single-user server (JupyterLab's
jupyter_server, started by the hub), run the released notebook's submit cell in a kernel of their
server through its REST API and websocket, at the same time; the test plays the front end's one
part the cell needs (saving the notebook when the cell asks). Each cell's output holds that
student's score and misconceptions, as the service graded the file it sent, and the gradebook
holds both. A forged user name, the other student's server token and a hub token without the
service's scope are each refused.

In JupyterLab itself (headless Chromium, `browser`): a student edits a cell without saving and
runs the submit cell; JupyterLab saves the notebook when the cell asks, the service grades the
edited notebook, and the feedback is drawn under the cell.

Slow: 90 s alone on the 2-core machine, 180 s beside other grading tests (10 to 25 s the hub, its
proxy and the service; 50 to 110 s the two servers, both submissions and their gradings side by
side; 25 to 60 s JupyterLab in Chromium and its grading).
"""
import asyncio
import datetime
import http.cookiejar
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

import pytest
from webserver import BIN, DEMO, ROOT, copy_course, environment, release, tokens_for

pytestmark = pytest.mark.slow
PROXY = BIN.parent / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"


def free_port() -> int:
    """A port the system picks (released at once: the hub's processes bind it moments later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(check, what: str, timeout: float = 240):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return check()
        except (OSError, urllib.error.URLError):
            time.sleep(0.5)
    raise AssertionError(f"{what} did not come up in {timeout} s")


ADMIN_TOKEN = "e2e-admin-" + "0123456789abcdef" * 2
"""The test's own hub service token: it creates users, starts their servers and reaches them."""


def hub_config(base, course, class_dir) -> tuple:
    """`rlcourse hub config`'s file, as an instructor runs it, and the lines a test on one machine
    adds: free ports, the dummy authenticator, a home folder per user in `base`, and the test's
    admin service."""
    from rlcourse.web.hub_config import write_hub_config

    public, hub_port, api, service = free_port(), free_port(), free_port(), free_port()
    config = write_hub_config(course_root=course, class_dir=class_dir, output=base / "hub" / "jupyterhub_config.py",
                              course_id="rlcourse", service_port=service)
    with open(config, "a") as lines:
        lines.write(f"""
# --- the test's machine -------------------------------------------------------------------------
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {public}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"prof"}}
c.JupyterHub.db_url = "sqlite:///{base}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{base}/cookie_secret"
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{base}/home/{{username}}"
c.Spawner.args = c.Spawner.args + ["--allow-root"]  # the test machine runs as root
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 180
c.JupyterHub.services.append({{"name": "e2e-admin", "api_token": {ADMIN_TOKEN!r}}})
c.JupyterHub.load_roles.append({{"name": "e2e-admin", "services": ["e2e-admin"],
                                 "scopes": ["admin:users", "admin:servers", "tokens", "access:servers"]}})
""")
    return config, f"http://127.0.0.1:{public}"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    pytest.importorskip("jupyterhub")
    if not PROXY.is_file() or subprocess.run([str(PROXY), "--version"], capture_output=True).returncode:
        pytest.skip("configurable-http-proxy is not installed in .venv/hub-proxy (make install)")
    base = tmp_path_factory.mktemp("realhub")
    course, class_dir = copy_course(base / "course"), base / "class"
    release(class_dir, "ps1")
    config, url = hub_config(base, course, class_dir)
    log = base / "jupyterhub.log"
    process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(config)], cwd=base, env=environment(),
                               stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: urllib.request.urlopen(url + "/hub/api/", timeout=5), "the hub")
        wait_until(lambda: urllib.request.urlopen(url + "/services/rlcourse/submit.py", timeout=5),
                   "the rlcourse service behind the proxy")
        yield url, class_dir, base
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the hub stops its proxy and services
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        print(log.read_text()[-2000:])


def browser_signed_in(url: str, user: str):
    """A cookie-keeping browser that signed in on the hub's login page, then opened the service."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    page = opener.open(url + "/hub/login", timeout=60).read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"username": user, "password": "any", "_xsrf": xsrf}).encode()
    landed = opener.open(url + "/hub/login?next=" + urllib.parse.quote("/services/rlcourse/"), data=form,
                         timeout=60)
    return opener, landed.geturl(), landed.read().decode()


def test_a_hub_user_lands_on_the_service_as_themselves(hub):
    url, *_ = hub
    _, where, page = browser_signed_in(url, "ada")
    assert where == url + "/services/rlcourse/"
    assert 'id="user">ada<' in page and "(staff)" not in page
    assert 'action="/services/rlcourse/assignments/ps1/submit"' in page


def test_a_hub_admin_sees_the_class_view(hub):
    url, *_ = hub
    opener, _, page = browser_signed_in(url, "prof")
    assert "(staff)" in page
    staff = opener.open(url + "/services/rlcourse/staff", timeout=60)
    assert staff.status == 200 and "Class view" in staff.read().decode()


def test_the_page_form_works_through_the_proxy(hub):
    """An upload through the hub's proxy, with the page's CSRF token: checked before anything is
    stored, and the answer is the service's page."""
    from rlcourse.web.client import multipart

    url, class_dir, _ = hub
    opener, _, page = browser_signed_in(url, "alan")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    body, content_type = multipart({"csrf": csrf}, "notebook", "ps1.ipynb", b"not a notebook")
    request = urllib.request.Request(url + "/services/rlcourse/assignments/ps1/submit", data=body,
                                     headers={"Content-Type": content_type})
    try:
        opener.open(request, timeout=60)
        raise AssertionError("a file that is not a notebook was accepted")
    except urllib.error.HTTPError as error:
        answer = error.read().decode()
        assert error.code == 422 and "Not accepted" in answer and 'id="user">alan<' in answer, answer
    assert not (class_dir / "web" / "history" / "alan").exists()


# --- the submit cell in each student's own server (issue 32) ------------------------------------
ADA_NOTEBOOK = DEMO / "ada" / "ps1" / "ps1.ipynb"     # the reference: every autograded point
ALAN_NOTEBOOK = DEMO / "alan" / "ps1" / "ps1.ipynb"   # clip_without_min: what grace submits here


def hub_api(url: str, path: str, *, method: str = "GET", body=None, token: str = ADMIN_TOKEN):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read()
    return json.loads(text) if text else None


def with_the_submit_cell(notebook: Path) -> dict:
    """A filled-in ps1 (a demo submission, made before the cell existed) ending with the released
    submit cell, as a student's notebook is once the cell is in the release."""
    content = json.loads(notebook.read_text())
    released = json.loads((ROOT / "release" / "ps1" / "ps1.ipynb").read_text())["cells"][-1]
    assert "rlcourse-submit" in released["metadata"]["tags"]
    content["cells"].append(released)
    return content


def start_server(url: str, base: Path, user: str, notebook: Path) -> str:
    """The user's own single-user server, started by the hub, with their notebook in their home."""
    home = base / "home" / user
    home.mkdir(parents=True, exist_ok=True)
    (home / "ps1.ipynb").write_text(json.dumps(with_the_submit_cell(notebook)))
    try:
        hub_api(url, f"/hub/api/users/{user}", method="POST")
    except urllib.error.HTTPError as error:
        assert error.code == 409, error  # signed in already: the hub has them
    hub_api(url, f"/hub/api/users/{user}/server", method="POST")

    def ready():
        model = hub_api(url, f"/hub/api/users/{user}")
        if not (model.get("servers", {}).get("") or {}).get("ready"):
            raise OSError("not ready")
    wait_until(ready, f"{user}'s server", timeout=180)
    return f"{url}/user/{user}"


class Kernel:
    """A notebook's kernel in a user's server, through the server's REST API and its websocket
    (the Jupyter protocol as JupyterLab speaks it). It also plays the front end's part the cell
    relies on: when the cell displays its save command, the notebook is saved through the
    contents API, as JupyterLab's `docmanager:save` does."""

    def __init__(self, server: str, path: str = "ps1.ipynb"):
        self.server, self.path = server, path
        session = hub_api(server, "/api/sessions", method="POST",
                          body={"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}})
        self.kernel_id, self.session = session["kernel"]["id"], uuid.uuid4().hex
        self.saves = 0

    def save(self) -> None:
        model = hub_api(self.server, f"/api/contents/{self.path}?content=1")
        hub_api(self.server, f"/api/contents/{self.path}", method="PUT",
                body={"type": "notebook", "format": "json", "content": model["content"]})
        self.saves += 1

    async def run_with(self, code: str, env: dict) -> list[dict]:
        """Run `code` with `env` in the kernel's os.environ, restored after."""
        await self.run(f"import os; saved_environ = dict(os.environ); os.environ.update({env!r})")
        try:
            return await self.run(code)
        finally:
            await self.run("os.environ.clear(); os.environ.update(saved_environ)")

    async def run(self, code: str, *, timeout: float = 900) -> list[dict]:
        """Run `code`; every output message of it."""
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        socket_url = self.server.replace("http://", "ws://") + f"/api/kernels/{self.kernel_id}/channels"
        connection = await websocket_connect(HTTPRequest(socket_url, headers={"Authorization": f"token {ADMIN_TOKEN}"}))
        msg_id = uuid.uuid4().hex
        connection.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "e2e", "session": self.session,
                       "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        outputs, replied, idle = [], None, False
        deadline = time.monotonic() + timeout
        while replied is None or not idle:
            raw = await asyncio.wait_for(connection.read_message(), max(1.0, deadline - time.monotonic()))
            assert raw is not None, "the kernel's websocket closed"
            message = json.loads(raw)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["msg_type"]
            if message["channel"] == "shell" and kind == "execute_reply":
                replied = message["content"]
            elif kind == "status":
                idle = message["content"]["execution_state"] == "idle"
            elif kind in ("display_data", "update_display_data", "stream", "error", "execute_result"):
                outputs.append(message)
                if "docmanager:save" in message["content"].get("data", {}).get("application/javascript", ""):
                    await asyncio.get_running_loop().run_in_executor(None, self.save)
        connection.close()
        assert replied["status"] == "ok", replied
        return outputs


def shown(outputs: list[dict]) -> str:
    """What the cell's output area holds at the end: the last HTML of its display, and its text."""
    html = [message["content"]["data"]["text/html"] for message in outputs
            if "text/html" in message["content"].get("data", {})]
    text = "".join(message["content"]["text"] for message in outputs if message["msg_type"] == "stream")
    return (html[-1] if html else "") + text


def left_in_the_notebook(outputs: list[dict]) -> list[dict]:
    """The cell's displays as the notebook keeps them once it ran: each display's last update."""
    displays = {}
    for message in outputs:
        if message["msg_type"] in ("display_data", "update_display_data"):
            key = message["content"].get("transient", {}).get("display_id") or id(message)
            displays[key] = message["content"]["data"]
    return list(displays.values())


@pytest.fixture(scope="module")
def submitted(hub):
    """ada and grace each run the submit cell in their own server, at the same time."""
    url, class_dir, base = hub
    servers = {"ada": start_server(url, base, "ada", ADA_NOTEBOOK),
               "grace": start_server(url, base, "grace", ALAN_NOTEBOOK)}
    kernels = {user: Kernel(server) for user, server in servers.items()}
    cell = "".join(json.loads((ROOT / "release" / "ps1" / "ps1.ipynb").read_text())["cells"][-1]["source"])

    async def both():
        return await asyncio.gather(*(kernel.run(cell) for kernel in kernels.values()))

    started = time.monotonic()
    outputs = dict(zip(kernels, asyncio.run(both())))
    print(f"both cells ran, submitted and showed their feedback in {time.monotonic() - started:.0f} s")
    return url, class_dir, servers, kernels, cell, outputs


def service_view(url: str, class_dir: Path, user: str) -> dict:
    """The user's one submission as the service keeps it (read with an rlcourse staff token)."""
    staff = tokens_for(class_dir, [], staff=[f"staff-{user}"])[f"staff-{user}"]
    rows = [row for row in hub_api(url, "/services/rlcourse/api/submissions", token=staff) if row["student"] == user]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("user", ["ada", "grace"])
def test_the_cell_shows_that_students_score_and_misconceptions(submitted, user):
    url, class_dir, _, kernels, _, outputs = submitted
    output = shown(outputs[user])
    view = service_view(url, class_dir, user)
    assert view["status"] == "graded" and kernels[user].saves == 1  # saved once, before it was sent
    report = view["report"]
    assert f"Score: <b>{report['score']:g} / {report['max_score']:g}</b>" in output, output
    diagnoses = {item["diagnosis"] for item in report["items"] if item["passed"] is False and item["diagnosis"]}
    assert ("clip_without_min" in diagnoses) == (user == "grace")  # alan's notebook, which grace sent
    for diagnosis in diagnoses:
        assert f"misconception: <code>{diagnosis}</code>" in output
    assert f'href="/services/rlcourse/submissions/{view["id"]}/feedback"' in output
    # the save command is gone once it ran: reopened, the notebook would otherwise save itself again
    assert not any("application/javascript" in data for data in left_in_the_notebook(outputs[user]))
    sent = ADA_NOTEBOOK if user == "ada" else ALAN_NOTEBOOK
    kept = class_dir / "submitted" / user / "ps1" / "ps1.ipynb"
    assert json.loads(kept.read_text())["cells"][:-1] == json.loads(sent.read_text())["cells"]


def test_the_submissions_are_in_the_gradebook(submitted):
    from nbgrader.api import Gradebook

    url, class_dir, *_ = submitted
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        for user in ("ada", "grace"):
            view = service_view(url, class_dir, user)
            assert gradebook.find_submission("ps1", user).score == view["report"]["raw_score"]


def test_a_forged_user_name_sends_nothing(submitted):
    """grace's kernel claiming to be ada: her server's token is hers, so the cell refuses."""
    url, class_dir, _, kernels, cell, _ = submitted
    output = shown(asyncio.run(kernels["grace"].run_with(cell, {"JUPYTERHUB_USER": "ada"})))
    assert "Not submitted" in output and "belongs to &#x27;grace&#x27;, not to &#x27;ada&#x27;" in output, output
    assert len(hub_api(url, "/services/rlcourse/api/submissions",
                       token=tokens_for(class_dir, [], staff=["audit"])["audit"])) == 2


def test_the_other_students_token_sees_only_their_own(submitted):
    """ada's server token, as grace's cell would send it, reaches none of grace's submissions and
    submits only as ada; a token of ada's without the service's scope is refused outright."""
    url, class_dir, _, kernels, cell, _ = submitted
    token = asyncio.run(kernels["ada"].run("import os; print(os.environ['JUPYTERHUB_API_TOKEN'])"))
    ada_token = shown(token).strip()
    grace_submission = service_view(url, class_dir, "grace")["id"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        hub_api(url, f"/services/rlcourse/api/submissions/{grace_submission}", token=ada_token)
    assert refused.value.code == 404
    assert [row["student"] for row in hub_api(url, "/services/rlcourse/api/submissions", token=ada_token)] == ["ada"]
    output = shown(asyncio.run(kernels["grace"].run_with(cell, {"JUPYTERHUB_API_TOKEN": ada_token})))
    assert "belongs to &#x27;ada&#x27;, not to &#x27;grace&#x27;" in output, output
    unscoped = hub_api(url, "/hub/api/users/ada/tokens", method="POST", body={"scopes": ["read:users:name!user=ada"]})
    with pytest.raises(urllib.error.HTTPError) as refused:
        hub_api(url, "/services/rlcourse/api/whoami", token=unscoped["token"])
    assert refused.value.code == 401


@pytest.mark.browser
def test_in_jupyterlab_the_cell_saves_the_edited_notebook_and_draws_the_feedback(hub, tmp_path):
    """Headless Chromium signs linus in on the hub's page and opens his ps1 in JupyterLab; he edits
    a cell (unsaved), runs the submit cell, and JupyterLab itself saves the notebook when the cell
    asks: the service graded the edited notebook, and the feedback is drawn under the cell. The
    page's own request reaches the Submit to rlcourse button's handler on his server (the hub
    config enables it; tests/web/test_jupyterlab_rlcourse.py presses the button)."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")
    from browser import Browser

    url, class_dir, base = hub
    start_server(url, base, "linus", ADA_NOTEBOOK)
    browser = Browser(tmp_path / "profile")
    try:
        tab = browser.tab(url + "/hub/login")
        tab.eval("document.getElementById('username_input').value = 'linus';"
                 "document.getElementById('password_input').value = 'any';"
                 "document.querySelector('form').submit()")
        tab.wait("!location.pathname.endsWith('/login') && document.readyState === 'complete'")
        tab.go(url + "/user/linus/lab/tree/ps1.ipynb")
        panel = "window.jupyterapp && jupyterapp.shell.currentWidget"
        tab.wait(f"{panel} && jupyterapp.shell.currentWidget.context.isReady && "
                 "jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.status === 'idle'", timeout=240)
        tab.eval("(() => { const notebook = jupyterapp.shell.currentWidget.content;"
                 "  const first = notebook.widgets[0].model.sharedModel;"
                 "  first.setSource(first.getSource() + '\\n\\nEdited in the browser, not saved.');"
                 "  notebook.activeCellIndex = notebook.widgets.length - 1;"
                 "  jupyterapp.commands.execute('notebook:run-cell'); return true; })()")
        tab.wait("document.querySelector('.jp-OutputArea-output div.rlcourse-feedback') !== null", timeout=600)
        drawn = tab.eval("document.querySelector('div.rlcourse-feedback').innerText")
        # the Submit to rlcourse button's server side, enabled on the users' servers by rlcourse hub
        # config: the page's own request (its cookie and XSRF header) reaches it through the proxy
        tab.eval("(() => { window.rlcourseProbe = null;"
                 "  const xsrf = (document.cookie.match(/(?:^|; )_xsrf=([^;]*)/) || [])[1] || '';"
                 "  fetch('/user/linus/rlcourse/submit', {method: 'POST', headers: {'X-XSRFToken': xsrf},"
                 "    body: JSON.stringify({path: 'missing.ipynb', assignment: 'ps1'})})"
                 "  .then(async r => { window.rlcourseProbe = [r.status, await r.text()]; });"
                 "  return true; })()")
        tab.wait("window.rlcourseProbe !== null")
        probe_status, probe_body = tab.eval("window.rlcourseProbe")
    finally:
        browser.close()
    view = service_view(url, class_dir, "linus")
    report = view["report"]
    assert f"Score: {report['score']:g} / {report['max_score']:g}" in drawn, drawn
    assert "Full feedback page" in drawn
    sent = json.loads((class_dir / "submitted" / "linus" / "ps1" / "ps1.ipynb").read_text())
    assert "Edited in the browser, not saved." in "".join(sent["cells"][0]["source"])
    assert probe_status == 404 and "no notebook 'missing.ipynb'" in json.loads(probe_body)["message"], probe_body
