"""`rlcourse web --jupyterhub`: a real server, started with the environment JupyterHub gives its
services, signs people in through JupyterHub's own OAuth client code (HubOAuth) talking to a fake
hub API (tests/web/fakehub.py). A hub user is known by their hub name, staff are hub admins and the
staff group, every route and cookie lives under the service's prefix, a sign-in must come back to
the browser that started it, and the API takes hub tokens allowed to use the service.

Nothing is graded (the one upload is accepted, not awaited). A real JupyterHub (with
configurable-http-proxy from npm and spawners) is not started: see docs/instructors/jupyterhub.md.
"""
import urllib.error
import urllib.parse
import urllib.request

import pytest
from fakehub import PREFIX, FakeHub
from webserver import DEMO, NoRedirect, Server, copy_course, release

pytest.importorskip("jupyterhub.services.auth")


@pytest.fixture(scope="module")
def hub_and_server(tmp_path_factory):
    base = tmp_path_factory.mktemp("hub")
    course, class_dir = copy_course(base / "course"), base / "class"
    release(class_dir, "ps1")
    users = {"ada": {}, "prof": {"admin": True}, "tara": {"groups": ["rlcourse-staff"]},
             "bad name!": {}}
    with FakeHub(users) as hub:
        server = Server(course, class_dir, extra_env=hub.service_environment())
        try:
            yield hub, server
        finally:
            server.kill()  # with the grading child the accepted upload started: nothing awaits it


def get(url: str, cookies: dict | None = None, token: str | None = None):
    """(status, Location or body, {cookie: (value, attributes)}) of one GET, redirects not followed."""
    headers = {}
    if cookies:
        headers["Cookie"] = "; ".join(f"{key}={value}" for key, value in cookies.items())
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.build_opener(NoRedirect).open(request, timeout=60)
    except urllib.error.HTTPError as error:
        response = error
    set_cookies = {}
    for header in response.headers.get_all("set-cookie") or []:
        pair, _, attributes = header.partition(";")
        key, _, value = pair.partition("=")
        set_cookies[key.strip()] = (value.strip('"'), attributes.lower())
    body = response.read().decode()
    return response.status, response.headers.get("location") or body, set_cookies


def sign_in(hub: FakeHub, server: Server, user: str) -> dict:
    """The browser's round trip: the service's /login, the hub's authorize page (as `user`), the
    callback; the cookies the browser then holds for the service."""
    origin = server.url[: -len(PREFIX) + 1]
    status, location, _ = get(server.url + "/")
    assert (status, location) == (303, PREFIX + "login")
    status, authorize, cookies = get(origin + location)
    assert status == 302 and authorize.startswith(hub.url + "/hub/api/oauth2/authorize?")
    state_cookie, attributes = cookies["rlcourse_oauth_state"]
    assert f"path={PREFIX}" in attributes and "httponly" in attributes
    hub.signed_in = user
    status, callback, _ = get(authorize)
    assert status == 302 and callback.startswith(PREFIX + "oauth_callback?")
    status, home, cookies = get(origin + callback, {"rlcourse_oauth_state": state_cookie})
    assert (status, home) == (303, PREFIX), home
    session, attributes = cookies["rlcourse_session"]
    assert f"path={PREFIX}" in attributes and "httponly" in attributes and "samesite=strict" in attributes
    return {"rlcourse_session": session}


def test_a_hub_user_is_signed_in_by_their_hub_name(hub_and_server):
    hub, server = hub_and_server
    cookies = sign_in(hub, server, "ada")
    status, page, _ = get(server.url + "/", cookies)
    assert status == 200 and 'id="user">ada<' in page and "(staff)" not in page
    assert f'href="{PREFIX}submit.py"' in page and f'action="{PREFIX}assignments/ps1/submit"' in page
    assert get(server.url + "/staff", cookies)[0] == 403
    assert {"authorize", "token", "user"} <= set(hub.requests)  # HubOAuth did talk to the hub


@pytest.mark.parametrize("user", ["prof", "tara"])
def test_hub_admins_and_the_staff_group_are_staff(hub_and_server, user):
    hub, server = hub_and_server
    cookies = sign_in(hub, server, user)
    status, page, _ = get(server.url + "/staff", cookies)
    assert status == 200 and f'id="user">{user}<' in page and "(staff)" in page


@pytest.mark.hostile("hub-sign-in-from-another-browser")
def test_a_sign_in_must_come_back_to_the_browser_that_started_it(hub_and_server):
    hub, server = hub_and_server
    origin = server.url[: -len(PREFIX) + 1]
    _, authorize, cookies = get(server.url + "/login")
    hub.signed_in = "ada"
    _, callback, _ = get(authorize)
    # Another browser (no state cookie, or another one) cannot use ada's code.
    assert get(origin + callback)[0] == 403
    assert get(origin + callback, {"rlcourse_oauth_state": "forged"})[0] == 403
    status, _, set_cookies = get(origin + callback, {"rlcourse_oauth_state": cookies["rlcourse_oauth_state"][0]})
    assert status == 303 and "rlcourse_session" in set_cookies
    # The same code and state, replayed: the state is spent.
    status, body, _ = get(origin + callback, {"rlcourse_oauth_state": cookies["rlcourse_oauth_state"][0]})
    assert status == 403 and "sign in again" in body


@pytest.mark.hostile("hub-name-not-a-student-id")
def test_a_hub_name_that_is_no_student_id_is_refused(hub_and_server):
    hub, server = hub_and_server
    origin = server.url[: -len(PREFIX) + 1]
    _, authorize, cookies = get(server.url + "/login")
    hub.signed_in = "bad name!"
    _, callback, _ = get(authorize)
    status, body, _ = get(origin + callback, {"rlcourse_oauth_state": cookies["rlcourse_oauth_state"][0]})
    assert status == 403 and "characters other than" in body


@pytest.mark.hostile("hub-token-without-access")
def test_the_api_takes_hub_tokens_allowed_to_use_the_service(hub_and_server):
    hub, server = hub_and_server
    adas = hub.token_for("ada")
    assert server.api("/api/whoami", adas)[1] == {"user": "ada", "staff": False}
    assert server.api("/api/whoami", hub.token_for("prof"))[1] == {"user": "prof", "staff": True}
    assert server.api("/api/whoami", hub.token_for("ada", scopes=["read:users:name!user=ada"]))[0] == 401
    assert server.api("/api/whoami", "not-a-token")[0] == 401
    status, accepted, _ = server.upload(adas, DEMO / "ada" / "ps1" / "ps1.ipynb")
    assert status == 202 and (accepted["student"], accepted["status"]) == ("ada", "queued"), accepted
    assert [row["id"] for row in server.api("/api/submissions", adas)[1]] == [accepted["id"]]
    assert list((server.class_dir / "web" / "history" / "ada" / "ps1").glob("*/ps1.ipynb"))  # kept as ada's
    assert server.api(f"/api/submissions/{accepted['id']}", hub.token_for("tara"))[1]["student"] == "ada"
    assert server.api(f"/api/submissions/{accepted['id']}", hub.token_for("prof"))[0] == 200
