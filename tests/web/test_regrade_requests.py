"""Regrade requests on a real `rlcourse web` (issue 33, item 2): a student opens one on an item
of their grade of record; a second on the same cell is refused; another student can neither see
nor answer it; the staff accept it, and the gradebook, the audit log and the student's feedback
page show the new score; outside the window the API refuses with the dates and the page shows
no form. Then the same in a real browser: the form on the feedback page and the staff's queue.

The class is recorded by the real `autograde` with reports made in advance (tests/marking.py):
no student code runs. The due date is yesterday and `[regrades] opens = "due"`; alan has an
extension of two days, so his window has not opened yet."""
import datetime
import json
import shutil

import pytest
from marking import ScoredReports, make_course, new_class
from webserver import Server, rlcourse, tokens_for

CELL = ScoredReports.CELL
WHY = "My loop computes the discounted return; the test expects gamma applied once per step."


@pytest.fixture
def service(tmp_path):
    from rlcourse.batch.autograde import autograde
    from rlcourse.record.gradebook import open_gradebook

    assignment = make_course(tmp_path)
    with open(assignment.grader_dir / "assignment.toml", "a") as toml:
        toml.write('\n[regrades]\nopens = "due"\ndays = 7\n')
    class_dir = new_class(tmp_path / "class", {"ada": "An answer.", "alan": "Another."})
    autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports({"ada": 1.0, "alan": 0.5}),
              log=lambda message: None)
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=now - datetime.timedelta(days=1))
        gradebook.find_submission("ps1", "alan").extension = datetime.timedelta(days=2)
        gradebook.db.commit()
    tokens = tokens_for(class_dir.root, ["ada", "alan"], staff=["prof"])
    server = Server(assignment.course.root, class_dir.root)
    try:
        yield server, tokens, class_dir
    finally:
        server.stop()


def post_json(server, path, token, body):
    return server.api(path, token, data=json.dumps(body).encode(), content_type="application/json")


def test_open_answered_in_the_gradebook_and_on_the_page_and_refused_where_it_must_be(service):
    from nbgrader.api import Gradebook

    from rlcourse.record.audit import AuditLog

    server, tokens, class_dir = service
    status, opened, _ = post_json(server, "/api/regrades", tokens["ada"],
                                  {"assignment": "ps1", "item": "returns", "reason": WHY})
    assert status == 201, opened
    assert (opened["state"], opened["cell"], opened["item"], opened["before"]) == ("open", CELL, "returns", 1.0)
    # A second open request on the same cell, by item or by cell, is refused.
    status, body, _ = post_json(server, "/api/regrades", tokens["ada"],
                                {"assignment": "ps1", "item": CELL, "reason": "Once more."})
    assert status == 409 and "already open" in body["error"]
    # alan neither sees nor answers ada's request; his own window opens with his extension.
    assert server.api("/api/regrades", tokens["alan"])[1] == []
    assert server.api(f"/api/regrades/{opened['id']}", tokens["alan"])[0] == 404
    assert post_json(server, f"/api/regrades/{opened['id']}/accept", tokens["alan"],
                     {"score": 2.0, "comment": "Mine now."})[0] == 404
    assert post_json(server, f"/api/regrades/{opened['id']}/reply", tokens["alan"], {"text": "Hi"})[0] == 404
    status, body, _ = post_json(server, "/api/regrades", tokens["alan"],
                                {"assignment": "ps1", "item": "returns", "reason": "Me too."})
    assert status == 403 and "open once its outcome is shown" in body["error"]
    alan_deadline = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)).date().isoformat()
    assert f"from {alan_deadline}" in body["error"]  # the dates are said
    alan_page = server.api("/exchange/alan/ps1/feedback", cookie=server.login(tokens["alan"]))[1]
    assert 'class="regrade-form"' not in alan_page and "regrade-closed" in alan_page
    # No token, no request; a page's form without the session's CSRF token is refused.
    assert post_json(server, "/api/regrades", None, {"assignment": "ps1", "item": "returns", "reason": "x"})[0] == 401
    assert server.api("/regrades", cookie=server.login(tokens["alan"]),
                      form={"assignment": "ps1", "item": "returns", "reason": "x"})[0] == 403
    assert server.api(f"/staff/regrades/{opened['id']}/accept", cookie=server.login(tokens["prof"]),
                      form={"score": "2", "comment": "x", "csrf": "forged"})[0] == 403
    # ada's page: the thread, and no form for the cell already asked about.
    ada_cookie = server.login(tokens["ada"])
    page = server.api("/exchange/ada/ps1/feedback", cookie=ada_cookie)[1]
    assert f'data-request="{opened["id"]}"' in page and "discounted return" in page
    assert f'data-cell="{CELL}"><input' not in page

    status, replied, _ = post_json(server, f"/api/regrades/{opened['id']}/reply", tokens["ada"],
                                   {"text": "See the loop in cell 13."})
    assert status == 200 and [message["text"] for message in replied["messages"]] == [WHY, "See the loop in cell 13."]
    status, accepted, _ = post_json(server, f"/api/regrades/{opened['id']}/accept", tokens["prof"],
                                    {"score": 1.5, "comment": "Right: the test applied gamma twice."})
    assert status == 200 and (accepted["state"], accepted["score"], accepted["answered_by"]) == ("accepted", 1.5,
                                                                                                 "prof")
    assert post_json(server, f"/api/regrades/{opened['id']}/decline", tokens["prof"],
                     {"reason": "Changed my mind."})[0] == 409  # answered once
    with Gradebook(class_dir.db_url) as gradebook:
        grade = gradebook.find_grade(CELL, "ps1", "ps1", "ada")
        assert (grade.auto_score, grade.manual_score) == (1.0, 1.5)
    with AuditLog(class_dir.root) as log:
        entry = [entry for entry in log.entries("ps1", student="ada") if entry.item == CELL][-1]
    assert (entry.old, entry.new, entry.by, entry.cause.kind) == (1.0, 1.5, "prof", "regrade_request")
    assert entry.cause.detail["request"] == opened["id"]
    page = server.api("/exchange/ada/ps1/feedback", cookie=ada_cookie)[1]
    assert 'id="score">1.5 <small>' in page  # the grade of record shows the changed score
    assert "Accepted: the score is now 1.5" in page and "the test applied gamma twice" in page
    assert ">prof<" not in page and "(prof)" not in page  # who answered is the staff's
    mine = server.api("/api/regrades", tokens["ada"])[1]
    assert [(found["id"], found["state"]) for found in mine] == [(opened["id"], "accepted")]
    assert "answered_by" not in mine[0]
    # The terminal's client: the listing with the outcome; a refusal says why, exit status 2.
    listed = rlcourse(class_dir.root.parent / "course", "regrades", "--server", server.url, "--token", tokens["ada"])
    assert f"#{opened['id']} ps1 {CELL} (returns): accepted" in listed.stdout and "now 1.5 / " in listed.stdout
    refused = rlcourse(class_dir.root.parent / "course", "regrade", "ps1", "returns", "--reason", "Please.",
                       "--server", server.url, "--token", tokens["alan"], check=False)
    assert refused.returncode == 2 and "refused (403)" in refused.stderr
    # The staff's queue lists it with the automatic score beside; a student gets "not found".
    queue = server.api("/staff/regrades?assignment=ps1&item=returns", cookie=server.login(tokens["prof"]))[1]
    assert f'data-request="{opened["id"]}"' in queue and 'class="automatic">1<' in queue
    assert server.api("/staff/regrades", cookie=ada_cookie)[0] == 404


@pytest.mark.browser
def test_the_form_on_the_feedback_page_and_the_staff_queue_in_a_real_browser(service):
    """Headless Chromium: ada signs in, writes her reason in the form under her feedback, and
    sees her request; prof accepts it from the queue with a score and a comment; ada's page
    then shows the outcome and the new total."""
    if shutil.which("chromium") is None:
        pytest.skip("Debian's chromium is not on PATH (apt-get install chromium; .ci/run does)")
    from browser import Browser

    server, tokens, class_dir = service
    browser = Browser(class_dir.root.parent / "profile")

    def signed_in(token):
        tab = browser.tab(server.url + "/login")
        tab.eval(f"document.getElementById('token').value = {json.dumps(token)};"
                 "document.getElementById('sign-in').click()")
        tab.wait("location.pathname === '/' && document.getElementById('user') !== null")
        return tab

    try:
        ada = signed_in(tokens["ada"])
        ada.go(server.url + "/exchange/ada/ps1/feedback")
        form = f'form.regrade-form[data-cell="{CELL}"]'
        ada.eval(f"document.querySelector('{form} textarea').value = {json.dumps(WHY)};"
                 f"document.querySelector('{form} button').click()")
        ada.wait("location.pathname === '/regrades' && document.getElementById('notice') !== null")
        assert "sent to the staff" in ada.text() and "discounted return" in ada.text()

        prof = signed_in(tokens["prof"])
        prof.go(server.url + "/staff/regrades")
        assert "Automatic score 1" in prof.text() and "ada" in prof.text()
        prof.eval("document.querySelector('form.accept input[name=score]').value = '2';"
                  "document.querySelector('form.accept textarea').value = 'Fair: full marks for this cell.';"
                  "document.querySelector('form.accept button').click()")
        prof.wait("document.getElementById('notice') !== null")
        assert f"accepted: {CELL} is now 2" in prof.text()

        ada.go(server.url + "/exchange/ada/ps1/feedback")
        assert "Accepted: the score is now 2" in ada.text() and "Fair: full marks" in ada.text()
        assert ada.eval("document.getElementById('score').innerText").startswith("2")
    finally:
        browser.close()
