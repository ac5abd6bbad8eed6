"""`rlcourse web` without grading anything: tokens (hashed, replaced, revoked), refusals before
anything is stored (bad token, not a notebook, too late), the login form and its CSRF token, and
the [web] table's checks. Each test starts a real server on a free loopback port (a few seconds)."""
import datetime
import re
import sqlite3

import pytest

from rlcourse.course.config import AssignmentConfig, CourseError
from webserver import DEMO, Server, copy_course, issue, release, rlcourse, tokens_for


@pytest.fixture
def web_course(tmp_path):
    return copy_course(tmp_path / "course")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """One server for the module: tests that replace or revoke tokens use carol's and dave's."""
    base = tmp_path_factory.mktemp("web")
    course, class_dir = copy_course(base / "course"), base / "class"
    tokens = tokens_for(class_dir, ["ada", "alan", "carol", "dave"], staff=["prof"])
    release(class_dir, "ps1")
    server = Server(course, class_dir)
    yield server, tokens
    server.stop()


@pytest.mark.slow  # two starts of the command line: 5 s idle, 27 s on the loaded 2-core machine
def test_tokens_are_printed_once_and_kept_only_as_hashes(tmp_path, web_course):
    import hashlib

    class_dir = tmp_path / "class"
    first = issue(web_course, class_dir, "--student", "ada", "--student", "alan")
    assert sorted(first) == ["ada", "alan"] and len(set(first.values())) == 2
    stored = (class_dir / "web.db").read_bytes()
    for token in first.values():
        assert token.encode() not in stored
        assert hashlib.sha256(token.encode()).hexdigest().encode() in stored
    # Without --student: every student of the gradebook (ada and alan were added to it).
    again = issue(web_course, class_dir)
    assert sorted(again) == ["ada", "alan"] and not set(again.values()) & set(first.values())


@pytest.mark.hostile("web-revoked-token")
def test_a_replaced_or_revoked_token_is_refused(served):
    server, tokens = served
    assert server.api("/api/whoami", tokens["carol"])[1] == {"user": "carol", "staff": False}
    assert server.api("/api/whoami", tokens["prof"])[1] == {"user": "prof", "staff": True}
    new = issue(server.course, server.class_dir, "--student", "carol")["carol"]
    assert server.api("/api/whoami", tokens["carol"])[0] == 401
    assert server.api("/api/whoami", new)[0] == 200
    cookie = server.login(tokens["dave"])
    assert server.api("/", cookie=cookie)[0] == 200
    rlcourse(server.course, "students", "tokens", "--course-dir", server.class_dir, "--revoke", "dave")
    assert server.api("/api/whoami", tokens["dave"])[0] == 401
    assert server.api("/", cookie=cookie)[0] == 303  # the session ended with its token


@pytest.mark.hostile("web-bad-token")
def test_the_client_refuses_a_bad_token_and_a_file_that_is_not_a_notebook(served):
    server, tokens = served
    bad = rlcourse(server.course, "submit", "ps1", DEMO / "ada" / "ps1" / "ps1.ipynb", "--server", server.url,
                   "--token", "not-a-token", check=False)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "refused (401)" in bad.stderr and bad.stdout == ""
    # edsger's demo notebook is truncated JSON.
    broken = rlcourse(server.course, "submit", "ps1", DEMO / "edsger" / "ps1" / "ps1.ipynb", "--server",
                      server.url, "--token", tokens["ada"], check=False)
    assert broken.returncode == 2 and "refused (422): not a notebook that can be graded" in broken.stderr
    assert broken.stderr.strip().count("\n") == 0
    assert server.api("/api/submissions", tokens["ada"])[1] == []
    assert not (server.class_dir / "submitted").exists()


@pytest.mark.hostile("web-upload-over-the-cap")
def test_an_upload_over_the_cap_is_refused_with_a_message(served, tmp_path):
    from rlcourse.web.intake import MAX_UPLOAD_BYTES

    server, tokens = served
    big = tmp_path / "ps1.ipynb"
    big.write_bytes(b" " * (MAX_UPLOAD_BYTES + 200_000))  # just over: read, then refused
    status, body, _ = server.upload(tokens["ada"], big)
    assert status == 413 and "over 20 MB, the most a submission may be" in body["error"]


@pytest.mark.hostile("web-csrf-and-no-session")
def test_pages_need_a_session_and_forms_need_its_csrf_token(served, tmp_path):
    server, tokens = served
    assert server.api("/")[0] == 303 and server.api("/staff")[0] == 303
    status, page, _ = server.api("/login")
    assert status == 200 and "script" not in page.lower()
    nonce = page.split('name="csrf" value="')[1].split('"')[0]
    # a form posted without the login page's cookie (another site's form) is refused
    status, _, headers = server.api("/login", form={"csrf": nonce, "token": tokens["ada"]})
    assert status == 303 and "expired" in headers["location"]
    cookie = server.login(tokens["ada"])
    status, home, headers = server.api("/", cookie=cookie)
    assert status == 200 and 'id="user">ada<' in home
    assert "script-src" not in headers["content-security-policy"]
    assert "form-action 'self'" in headers["content-security-policy"]
    from rlcourse.web.client import multipart

    body, content_type = multipart({"csrf": "forged"}, "notebook", "ps1.ipynb",
                                   (DEMO / "ada" / "ps1" / "ps1.ipynb").read_bytes())
    status, _, _ = server.api("/assignments/ps1/submit", cookie=cookie, data=body, content_type=content_type)
    assert status == 403 and server.api("/api/submissions", tokens["ada"])[1] == []
    assert server.api("/staff", cookie=cookie)[0] == 403
    assert server.api("/staff", cookie=server.login(tokens["prof"]))[0] == 200
    assert server.api("/submissions/1", cookie=cookie)[0] == 404
    assert server.api("/api/submissions/1", tokens["ada"])[0] == 404


@pytest.mark.hostile("web-session-cookie")
def test_the_session_cookie_is_httponly_and_samesite_strict(served):
    server, tokens = served
    status, page, headers = server.api("/login")
    nonce = page.split('name="csrf" value="')[1].split('"')[0]
    _, _, headers = server.api("/login", cookie=headers["set-cookie"].split(";")[0],
                               form={"csrf": nonce, "token": tokens["ada"]})
    session = next(value for key, value in headers.items()
                   if key.lower() == "set-cookie" and value.startswith("rlcourse_session="))
    assert "HttpOnly" in session and "SameSite=strict" in session


@pytest.mark.hostile("web-late-submission")
def test_a_late_submission_is_refused_when_the_assignment_says_so(tmp_path):
    from nbgrader.api import Gradebook

    course = copy_course(tmp_path / "course", toml_extra="[web]\naccept_late = false\n")
    class_dir = tmp_path / "class"
    tokens = tokens_for(class_dir, ["ada"])
    yesterday = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(days=1)
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=yesterday)
    server = Server(course, class_dir)
    try:
        late = rlcourse(course, "submit", "ps1", DEMO / "ada" / "ps1" / "ps1.ipynb", "--server", server.url,
                        "--token", tokens["ada"], check=False)
    finally:
        server.stop()
    assert late.returncode == 2 and "this course does not accept late submissions" in late.stderr
    with sqlite3.connect(class_dir / "web.db") as db:
        assert db.execute("select count(*) from submissions").fetchone() == (0,)


@pytest.mark.parametrize("table, message", [
    ({"submissions_per_window": 0}, "submissions_per_window = 0; it must be a positive whole number"),
    ({"window_minutes": "60"}, "window_minutes = '60'; it must be a positive whole number"),
    ({"accept_late": 1}, "accept_late = 1; it must be true or false"),
    ({"per_hour": 3}, "unknown key 'per_hour'"),
    ({"history_megabytes": 0}, "history_megabytes = 0; it must be a positive whole number"),
    ({"history_megabytes": 1.5}, "history_megabytes = 1.5; it must be a positive whole number"),
    ({"opens": "2026-03-01"}, "opens = '2026-03-01'; it must be a TOML date-time such as 2026-03-02T17:00:00Z"),
    ({"closes": datetime.date(2026, 3, 1)}, "closes = datetime.date(2026, 3, 1); it must be a TOML date-time"),
    ({"opens": datetime.datetime(2026, 3, 2, tzinfo=datetime.timezone.utc),
      "closes": datetime.datetime(2026, 3, 2, 0, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=1)))},
     "opens = 2026-03-02 00:00:00+00:00 is not before closes = 2026-03-02 00:30:00+01:00"),
])
def test_the_web_table_is_checked(table, message):
    data = {"notebook": "ps1.ipynb", "framework": "jax", "web": table}
    with pytest.raises(CourseError, match=re.escape(message)):
        AssignmentConfig.from_table(data, where="assignment.toml")
    assert AssignmentConfig.from_table({"notebook": "ps1.ipynb", "framework": "jax"},
                                       where="x").web.submissions_per_window == 10
    assert AssignmentConfig.from_table({"notebook": "ps1.ipynb", "framework": "jax"},
                                       where="x").web.history_megabytes == 200


def test_opens_and_closes_are_read_as_utc():
    import tomllib

    table = tomllib.loads("opens = 2026-03-01T09:00:00+01:00\ncloses = 2026-03-09T17:00:00\n")
    policy = AssignmentConfig.from_table({"notebook": "ps1.ipynb", "framework": "jax", "web": table}, where="x").web
    assert (policy.opens, policy.closes) == (datetime.datetime(2026, 3, 1, 8), datetime.datetime(2026, 3, 9, 17))


def test_the_home_page_shows_the_students_id_and_own_parameters(served):
    """Issue 30: a student checks that their notebook's parameter cell printed their own values
    (it prints the defaults when Jupyter ran without their id) against the service's page."""
    from rlcourse.course.directory import Course

    server, tokens = served
    ps1 = Course(server.course).assignment("ps1")
    own = ps1.parameters("ada")
    assert own != ps1.variants.defaults
    _, home, _ = server.api("/", cookie=server.login(tokens["ada"]))
    shown = home.split('id="parameters-ps1">')[1].split("</p>")[0]
    assert "<b>ada</b>" in shown
    assert [f"<code>{name} = {value}</code>" in shown for name, value in own.items()] == [True] * len(own)
    _, staff_home, _ = server.api("/", cookie=server.login(tokens["prof"]))
    assert 'id="parameters-' not in staff_home
