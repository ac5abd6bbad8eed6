"""`rlcourse web` grading real submissions: the client waits and prints what the feedback policy
shows; the upload lands in nbgrader's layout and gradebook with its history kept; one grading
in flight per student; the rolling window's limit; another student sees nothing of it; and a
service killed mid-grading grades the submission after its restart. (A grading that keeps
failing, and the staff's actions: tests/web/test_course_copy.py.)

Real gradings in the service's warm grading process (rlcourse.web.job): the first of each server
pays the process's start and the course copy's reference run, the next only the grading.
"""
import datetime
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rlcourse.course.directory import Course
from webserver import BIN, DEMO, Server, copy_course, environment, release, rlcourse, tokens_for, wait_for

pytestmark = pytest.mark.slow

ALAN = DEMO / "alan" / "ps1" / "ps1.ipynb"   # clip_without_min: 34 of 42 autograded points (of 46)
ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"     # the reference: 42 of 42 autograded points (of 46)
SEALED = 7.0
"""ps1's points that wait for the due date: four concept checks, the flip-horizon prediction and
two value exercises, every one of them right in both notebooks."""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """ada submits alan's notebook with the client before her due date (tomorrow), under a
    policy that shows only the total before it and a limit of one grading per hour."""
    from nbgrader.api import Gradebook

    base = tmp_path_factory.mktemp("web")
    course = copy_course(base / "course", toml_extra='[web]\nsubmissions_per_window = 1\n\n'
                                                     '[feedback]\nbefore_due = "score"\n')
    class_dir = base / "class"
    tokens = tokens_for(class_dir, ["ada", "alan", "grace"], staff=["prof"])
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow)
    server = Server(course, class_dir, graders=2)
    started = time.monotonic()
    client = subprocess.Popen([str(BIN / "rlcourse"), "submit", "ps1", str(ALAN), "--server", server.url,
                               "--token", tokens["ada"], "--json"], cwd=course, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not server.api("/api/submissions", tokens["ada"])[1]:
        assert time.monotonic() - started < 120 and client.poll() is None, client.communicate()
        time.sleep(0.2)
    second = server.upload(tokens["ada"], ADA)  # while the first is queued or running
    stdout, stderr = client.communicate(timeout=900)
    print(f"graded through the client in {time.monotonic() - started:.0f} s")
    yield server, tokens, client.returncode, stdout, stderr, second
    server.stop()


def test_the_client_waits_and_prints_what_the_policy_shows_now(graded):
    _, _, returncode, stdout, stderr, _ = graded
    assert returncode == 0, stderr
    report = json.loads(stdout)
    assert {"assignment", "score", "max_score", "items", "errors"} <= set(report)
    # before the due date: the total only, without the points that wait for it, out of 46 less them
    assert (report["assignment"], report["score"], report["max_score"]) == ("ps1", 34.0 - SEALED, 46.0 - SEALED)
    assert report["items"] == [] and report["level"] == "score" and report["sealed_points"] == SEALED


@pytest.mark.hostile("web-parallel-uploads")
def test_a_second_upload_while_one_is_in_flight_is_refused(graded):
    server, tokens, *_, second = graded
    status, body, _ = second
    assert status == 409 and ("is still queued" in body["error"] or "is still running" in body["error"])
    assert len(server.api("/api/submissions", tokens["ada"])[1]) == 1


def test_the_upload_is_in_nbgraders_layout_its_gradebook_and_the_history(graded):
    from nbgrader.api import Gradebook

    from rlcourse.course.lateness import read_timestamp

    server, *_ = graded
    folder = server.class_dir / "submitted" / "ada" / "ps1"
    assert (folder / "ps1.ipynb").read_bytes() == ALAN.read_bytes()
    stamp, warning = read_timestamp(folder)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    assert warning is None and datetime.timedelta(0) < now - stamp < datetime.timedelta(hours=1)
    kept = list((server.class_dir / "web" / "history" / "ada" / "ps1").glob("*/ps1.ipynb"))
    assert [path.read_bytes() for path in kept] == [ALAN.read_bytes()]
    with Gradebook(f"sqlite:///{server.class_dir / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("ps1", "ada")
        assert (submission.score, submission.timestamp) == (34.0, stamp)
    assert (server.class_dir / "feedback" / "ada" / "ps1" / "ps1.html").is_file()
    # Graded as the signed-in student: with ada's own parameters ([variants]), not the defaults.
    with sqlite3.connect(server.class_dir / "web.db") as db:
        (stored,), = db.execute("SELECT report FROM submissions WHERE student = 'ada'").fetchall()
    assert json.loads(stored)["parameters"] == Course(server.course).assignment("ps1").parameters("ada")
    assert json.loads(stored)["parameters"] != Course(server.course).assignment("ps1").variants.defaults


@pytest.mark.hostile("web-rate-limit")
def test_the_rate_limit_names_the_time_of_the_next_allowed_submission(graded):
    server, tokens, *_ = graded
    first = server.api("/api/submissions", tokens["ada"])[1][0]
    accepted = datetime.datetime.fromisoformat(first["submitted"].removesuffix(" UTC"))
    again = rlcourse(server.course, "submit", "ps1", ADA, "--server", server.url, "--token", tokens["ada"],
                     check=False)
    assert again.returncode == 2 and again.stderr.strip().count("\n") == 0
    next_allowed = (accepted + datetime.timedelta(minutes=60)).replace(microsecond=0)
    assert (f"refused (429): at most 1 submissions of ps1 per 60 min; the next is allowed at "
            f"{next_allowed.isoformat(sep=' ')} UTC") in again.stderr


@pytest.mark.hostile("web-idor-another-students-submission")
def test_another_student_sees_nothing_of_it_and_staff_see_everything(graded):
    server, tokens, *_ = graded
    submission = server.api("/api/submissions", tokens["ada"])[1][0]["id"]
    assert server.api(f"/api/submissions/{submission}", tokens["alan"])[0] == 404
    assert server.api("/api/submissions", tokens["alan"])[1] == []
    alan = server.login(tokens["alan"])
    for path in (f"/submissions/{submission}", f"/submissions/{submission}/feedback"):
        assert server.api(path, cookie=alan)[0] == 404
    status, home, _ = server.api("/", cookie=alan)
    assert status == 200 and "No submission yet" in home and f'"/submissions/{submission}"' not in home
    assert server.api("/staff", cookie=alan)[0] == 403
    assert server.api(f"/api/submissions/{submission}", tokens["prof"])[1]["student"] == "ada"
    status, page, _ = server.api("/staff", cookie=server.login(tokens["prof"]))
    assert status == 200 and "<td>ada</td>" in page and "<b>34</b>mean of 46" in page  # the gradebook's
    assert '<span class="tag">clip_without_min</span>' in page


def test_the_pages_show_the_state_and_the_feedback_at_the_policys_level(graded):
    server, tokens, *_ = graded
    ada = server.login(tokens["ada"])
    submission = server.api("/api/submissions", tokens["ada"])[1][0]["id"]
    status, page, _ = server.api(f"/submissions/{submission}", cookie=ada)
    assert status == 200 and 'data-status="graded"' in page and "Score: 27 / 39" in page
    assert 'id="sealed">7 more points' in page and 'id="pending">4 points' in page
    assert 'http-equiv="refresh"' not in page  # it refreshes only while waiting
    status, feedback, _ = server.api(f"/submissions/{submission}/feedback", cookie=ada)
    assert status == 200 and "Only your total is shown for now" in feedback
    assert "clip_without_min" not in feedback and "ppo_value" not in feedback


def test_two_students_are_graded_side_by_side_by_warm_processes(graded):
    """Runs after the tests that expect alan to have submitted nothing. With `--graders 2`, alan
    and grace submitting at once are graded side by side: one grading process is the fixture's,
    still warm, the other starts now and finds the reference already run (one warm-up in all);
    each records under the class's lock, so the gradebook holds both."""
    from nbgrader.api import Gradebook

    server, tokens, *_ = graded
    started = time.monotonic()
    uploads = {name: server.upload(tokens[name], notebook) for name, notebook in (("alan", ADA), ("grace", ALAN))}
    assert all(status == 202 for status, _, _ in uploads.values())
    done = {name: wait_for(server, tokens[name], view["id"], ("graded", "failed"), timeout=600)
            for name, (_, view, _) in uploads.items()}
    print(f"two gradings side by side, one process warm: {time.monotonic() - started:.1f} s")
    assert {name: view["report"]["score"] for name, view in done.items()} == {"alan": 42.0 - SEALED,
                                                                           "grace": 34.0 - SEALED}
    log = server.log.read_text()
    assert log.count("rlcourse web: grading process") == 2 and log.count("the reference in") == 1
    with Gradebook(f"sqlite:///{server.class_dir / 'gradebook.db'}") as gradebook:
        assert [gradebook.find_submission("ps1", name).score for name in ("ada", "alan", "grace")] == [34, 42, 34]


def test_a_submission_interrupted_by_a_killed_service_is_graded_after_a_restart(tmp_path):
    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    tokens = tokens_for(class_dir, ["grace"])
    release(class_dir, "ps1")
    server = Server(course, class_dir)
    try:
        status, view, _ = server.upload(tokens["grace"], ADA)
        assert status == 202 and view["status"] == "queued" and view["position"] == 1
        wait_for(server, tokens["grace"], view["id"], ("running",), timeout=120)
        server.kill()  # the service and its grading child, as a crash would
        with sqlite3.connect(class_dir / "web.db") as db:
            assert db.execute("select status from submissions").fetchall() == [("running",)]
        server.start()
        started = time.monotonic()
        graded = wait_for(server, tokens["grace"], view["id"], ("graded", "failed"))
        print(f"graded {time.monotonic() - started:.0f} s after the restart")
        assert graded["status"] == "graded" and graded["report"]["score"] == 42.0
        assert "queued again" in server.log.read_text()
    finally:
        server.stop()


def test_with_a_scheduler_the_gradings_run_on_the_dask_cluster(tmp_path):
    """`rlcourse web --scheduler`: the warm grading process sends each submission to a real
    scheduler's worker (a separate process) and records what comes back."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "batch"))
    from test_backends import dask_cluster

    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    tokens = tokens_for(class_dir, ["grace"])
    release(class_dir, "ps1")
    with dask_cluster(tmp_path, 1) as (address, _):
        server = Server(course, class_dir, args=("--scheduler", address))
        try:
            status, view, _ = server.upload(tokens["grace"], ALAN)
            assert status == 202
            graded = wait_for(server, tokens["grace"], view["id"], ("graded", "failed"), timeout=600)
            assert graded["status"] == "graded" and graded["report"]["score"] == 34.0
            assert f"dask: grading on {address} (1 workers)" in server.log.read_text()
        finally:
            server.stop()


@pytest.mark.browser
@pytest.mark.hostile("web-idor-in-a-browser")
def test_a_student_submits_from_the_page_in_a_real_browser_and_another_cannot_open_it(tmp_path):
    """Headless Chromium (Debian's), driven over the DevTools pipe: sign in with the token, pick
    the notebook, watch the status page refresh itself until graded, open the feedback page;
    a second student's browser gets "not found" for both pages."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")
    from browser import Browser

    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    tokens = tokens_for(class_dir, ["ada", "alan"])
    release(class_dir, "ps1")
    server = Server(course, class_dir)
    browser = Browser(tmp_path / "profile")
    try:
        ada = browser.tab(server.url + "/login")
        ada.eval(f"document.getElementById('token').value = {json.dumps(tokens['ada'])};"
                 "document.getElementById('sign-in').click()")
        ada.wait("location.pathname === '/' && document.getElementById('user') !== null")
        ada.choose_file('form[action="/assignments/ps1/submit"] input[type=file]', ALAN)
        ada.eval("document.querySelector('form[action=\"/assignments/ps1/submit\"] button').click()")
        # The status page itself, not only its address: the text is read at once.
        ada.wait("location.pathname.startsWith('/submissions/') && document.getElementById('status') !== null")
        assert "Queued" in ada.text() or "Being graded" in ada.text()
        status_url = ada.eval("location.href")
        alan = browser.tab(server.url + "/login")
        alan.eval(f"document.getElementById('token').value = {json.dumps(tokens['alan'])};"
                  "document.getElementById('sign-in').click()")
        alan.wait("location.pathname === '/'")
        alan.go(status_url)
        assert "no such submission" in alan.text()
        ada.wait("document.getElementById('status').dataset.status === 'graded'", timeout=900)
        assert "Score: 34 / 46" in ada.text()
        # The grading drew the page's figures once, for the nbgrader page, and kept them.
        (kept,) = (class_dir / "autograded" / "ada" / "ps1" / "rlcourse-figures").glob("*.json")
        drawn = kept.stat()
        ada.eval("document.getElementById('feedback-link').click()")
        ada.wait("location.pathname.endsWith('/feedback') && document.readyState === 'complete'")
        assert "clip_without_min" in ada.text()  # the default policy shows everything
        assert ada.eval("document.querySelectorAll('img[src^=\"data:image/png;base64,\"]').length") == 2
        # ... and the service's page showed those, not figures drawn again (a set drawn again
        # is a new file written over the old one; a set read is only touched).
        (read,) = kept.parent.glob("*.json")
        assert (read, read.stat().st_ino) == (kept, drawn.st_ino)
        assert read.stat().st_mtime_ns > drawn.st_mtime_ns
        alan.go(status_url + "/feedback")
        assert "no such submission" in alan.text()
    finally:
        browser.close()
        server.stop()
