"""rlcourse.web.lti: a student's LTI 1.3 launch from the LMS into a real `rlcourse web`, against a
real platform implementation on the loopback (tests/lti_platform.py, playing Canvas): the OIDC
login initiation, the platform's signed id_token posted back, the session as the student the
roster maps the LMS user to; and each spoilt launch refused with no session given."""
import html
import re

import pytest
import requests
from lti_platform import CLIENT_ID, DEPLOYMENT_ID, INSTRUCTOR, ISSUER, Platform
from webserver import Server, copy_course, release


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The platform, and `rlcourse web` on a class registered with it: the tool's keys made, the
    platform fetching them from the service's /lti/jwks, the roster read (ada is canvas-1, bob
    canvas-2, the teacher canvas-99); canvas-5 enrols after the roster was read."""
    from rlcourse.batch import lms
    from rlcourse.course.class_directory import ClassDirectory

    base = tmp_path_factory.mktemp("lti")
    course, class_dir = copy_course(base / "course"), base / "class"
    release(class_dir, "ps1")
    platform = Platform().start()
    (class_dir / "lms.toml").write_text(platform.registration_toml())
    lms.make_keys(ClassDirectory(class_dir))
    platform.enrol("canvas-1", sis_id="ada")
    platform.enrol("canvas-2", sis_id="bob")
    platform.enrol("canvas-99", sis_id="prof", roles=(INSTRUCTOR,))
    server = Server(course, class_dir)
    platform.trust_tool_keys(key_set_url=server.url + "/lti/jwks")
    lms.sync_roster(ClassDirectory(class_dir), retries=2, backoff=0.01)
    platform.enrol("canvas-5", sis_id="eve")
    yield server, platform
    server.stop()
    platform.stop()


def start_login(browser: requests.Session, server, user_id: str):
    """The LMS's third-party login initiation, then the platform's authorisation endpoint:
    (the form's action, id_token, state) the platform would have the browser post back."""
    started = browser.get(server.url + "/lti/login", allow_redirects=False, params={
        "iss": ISSUER, "login_hint": user_id, "target_link_uri": server.url + "/", "client_id": CLIENT_ID,
        "lti_deployment_id": DEPLOYMENT_ID})
    assert started.status_code == 302, started.text
    page = browser.get(started.headers["location"]).text
    action, id_token, state = (html.unescape(value) for value in re.findall(r'(?:action|value)="([^"]*)"', page))
    return action, id_token, state


def launch(server, platform, user_id: str, **spoil):
    """A whole launch in a fresh browser: (the launch's answer, the browser)."""
    platform.spoil = spoil
    browser = requests.Session()
    try:
        action, id_token, state = start_login(browser, server, user_id)
    finally:
        platform.spoil = {}
    return browser.post(action, data={"id_token": id_token, "state": state}, allow_redirects=False), browser


def refusal(answer) -> str:
    """The sentence of the service's error page."""
    found = re.search(r'id="error"[^>]*>([^<]*)<', answer.text)
    return html.unescape(found.group(1)) if found else ""


def signed_in_as(server, browser) -> str | None:
    home = browser.get(server.url + "/", allow_redirects=False)
    found = re.search(r'id="user">([^<]*)<', home.text) if home.status_code == 200 else None
    return found.group(1) if found else None


def test_the_tools_public_key_is_served_and_nothing_else(served):
    from rlcourse.batch import lms
    from rlcourse.course.class_directory import ClassDirectory

    server, _ = served
    keys = requests.get(server.url + "/lti/jwks").json()
    assert keys == lms.tool_jwks(ClassDirectory(server.class_dir)) and "d" not in keys["keys"][0]


def test_a_students_launch_lands_in_the_service_as_that_student(served):
    server, platform = served
    answer, browser = launch(server, platform, "canvas-2")
    assert answer.status_code == 200 and re.search(r'Signed in as <b id="user">bob<', answer.text)
    assert "rlcourse_session" in browser.cookies
    assert signed_in_as(server, browser) == "bob"


@pytest.mark.parametrize("spoil, why", [
    ({"forge": True}, "Can't decode id_token"),  # signed with another key under the platform's kid
    ({"lifetime": -30}, "expired"),
    ({"aud": "someone-else"}, r"client_id=someone-else\] not found"),
    ({"deployment_id": "9:another-course"}, "deployment ID"),
])
def test_a_spoilt_id_token_is_refused(served, spoil, why):
    server, platform = served
    answer, browser = launch(server, platform, "canvas-1", **spoil)
    assert answer.status_code == 403 and re.search(why, refusal(answer)), refusal(answer)
    assert "rlcourse_session" not in browser.cookies and signed_in_as(server, browser) is None


def test_a_replayed_id_token_is_refused(served):
    server, platform = served
    browser = requests.Session()
    action, id_token, state = start_login(browser, server, "canvas-1")
    first = browser.post(action, data={"id_token": id_token, "state": state}, allow_redirects=False)
    assert first.status_code == 200
    again = requests.Session()
    again.cookies.update({key: value for key, value in browser.cookies.items() if key.startswith("lti1p3")})
    replayed = again.post(action, data={"id_token": id_token, "state": state}, allow_redirects=False)
    assert replayed.status_code == 403 and "Invalid Nonce" in refusal(replayed)
    assert "rlcourse_session" not in again.cookies


def test_a_launch_without_this_browsers_state_is_refused(served):
    server, platform = served
    _, id_token, state = start_login(requests.Session(), server, "canvas-1")
    other = requests.post(server.url + "/lti/launch", data={"id_token": id_token, "state": state},
                          allow_redirects=False)
    assert other.status_code == 403 and "State not found" in refusal(other)


def test_only_the_roster_says_who_someone_is(served):
    server, platform = served
    newcomer, _ = launch(server, platform, "canvas-5")  # enrolled after the roster was read
    assert newcomer.status_code == 403 and "rlcourse lms roster" in refusal(newcomer)
    teacher, browser = launch(server, platform, "canvas-99")
    assert teacher.status_code == 403 and signed_in_as(server, browser) is None


def test_a_login_from_an_unregistered_lms_is_refused(served):
    server, _ = served
    answer = requests.get(server.url + "/lti/login", allow_redirects=False,
                          params={"iss": "https://elsewhere.example", "login_hint": "x", "target_link_uri": "y"})
    assert answer.status_code == 403
