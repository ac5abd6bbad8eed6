"""`rlcourse web` under a real JupyterHub: `jupyterhub` (DummyAuthenticator) with its real
configurable-http-proxy (npm, installed by `make install` from tests/web/hub-proxy/ into
.venv/hub-proxy), and rlcourse web as a managed hub service configured as docs/instructors/jupyterhub.md says. A hub
user signs in on the hub's own login page and lands on the service's page as themselves; a hub
admin sees the class view; a student's upload through the page's form (with its CSRF token,
through the proxy, under the prefix) is checked and answered. The upload is not a notebook, so
nothing is graded: tests/web/test_jupyterhub.py covers accepted uploads.

Slow: the hub, its proxy and the service start in about 25 s on the loaded machine.
"""
import http.cookiejar
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from webserver import BIN, copy_course, environment, release

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


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    pytest.importorskip("jupyterhub")
    if not PROXY.is_file() or subprocess.run([str(PROXY), "--version"], capture_output=True).returncode:
        pytest.skip("configurable-http-proxy is not installed in .venv/hub-proxy (make install)")
    base = tmp_path_factory.mktemp("realhub")
    course, class_dir = copy_course(base / "course"), base / "class"
    release(class_dir, "ps1")
    public, hub_port, api, service = free_port(), free_port(), free_port(), free_port()
    config = base / "jupyterhub_config.py"
    config.write_text(f"""
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
c.JupyterHub.services = [{{
    "name": "rlcourse", "url": "http://127.0.0.1:{service}",
    "command": [{str(BIN / 'rlcourse')!r}, "web", "--course-dir", {str(class_dir)!r}],
    "cwd": {str(course)!r}, "oauth_no_confirm": True,
}}]
c.JupyterHub.load_roles = [{{"name": "user", "scopes": ["self", "access:services!service=rlcourse"]}}]
""")
    log = base / "jupyterhub.log"
    process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(config)], cwd=base, env=environment(),
                               stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{public}"
    try:
        wait_until(lambda: urllib.request.urlopen(url + "/hub/api/", timeout=5), "the hub")
        wait_until(lambda: urllib.request.urlopen(url + "/services/rlcourse/submit.py", timeout=5),
                   "the rlcourse service behind the proxy")
        yield url, class_dir
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
    url, _ = hub
    _, where, page = browser_signed_in(url, "ada")
    assert where == url + "/services/rlcourse/"
    assert 'id="user">ada<' in page and "(staff)" not in page
    assert 'action="/services/rlcourse/assignments/ps1/submit"' in page


def test_a_hub_admin_sees_the_class_view(hub):
    url, _ = hub
    opener, _, page = browser_signed_in(url, "prof")
    assert "(staff)" in page
    staff = opener.open(url + "/services/rlcourse/staff", timeout=60)
    assert staff.status == 200 and "Class view" in staff.read().decode()


def test_the_page_form_works_through_the_proxy(hub):
    """An upload through the hub's proxy, with the page's CSRF token: checked before anything is
    stored, and the answer is the service's page."""
    from rlcourse.web.client import multipart

    url, class_dir = hub
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
