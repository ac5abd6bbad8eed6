"""`rlcourse web` in a course folder made the way courses are made from this template: it holds its
own copy of `rlcourse/`, and its class a late-submission plugin of its own (`late_plugin.py`
beside the class's `nbgrader_config.py`). One server and one student's history, in order:

1. the class's late policy cannot load, so every grading child fails on the service's side:
   the submission ends `failed`, says so honestly, and does not count against a limit of one
   grading per hour;
2. the policy is fixed: the student's next upload is accepted (that limit) and graded by the
   installed engine, not the course's copy, with the course's plugin's penalty in the gradebook;
3. a notebook that arrived through nbgrader's exchange, graded by `rlcourse autograde` (the same
   plugin), shows on its student's page with its grade and feedback;
4. the staff retry the failed grading (which never becomes the counting one), regrade the
   assignment, download a notebook and export the class; a student gets "not found" for each.

Real gradings: the first in a fresh course copy pays the reference run (a minute or more).
"""
import csv
import datetime
import io
import json
import shutil
import sqlite3
import time
import urllib.request
import zipfile

import pytest

from webserver import DEMO, ROOT, Server, copy_course, release, rlcourse, tokens_for, wait_for

pytestmark = pytest.mark.slow

ALAN = DEMO / "alan" / "ps1" / "ps1.ipynb"   # clip_without_min: 34 of 42 autograded points (of 46)
ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"     # the reference: 42 of 42 autograded points (of 46)
PENALTY = 3.5
LATE_PLUGIN = ("from nbgrader.plugins import LateSubmissionPlugin\n"
               "class FlatPenalty(LateSubmissionPlugin):\n"
               "    def late_submission_penalty(self, student_id, score, total_seconds_late):\n"
               f"        return {PENALTY!r} if total_seconds_late > 0 else None\n")


def gradebook_submission(class_dir, student):
    """(raw score, late penalty) of `student`'s ps1 in the class's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        submission = gradebook.find_submission("ps1", student)
        return submission.score, submission.late_submission_penalty


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("course-copy")
    course = copy_course(base / "course", toml_extra="[web]\nsubmissions_per_window = 1\n")
    shutil.copytree(ROOT / "rlcourse", course / "rlcourse", ignore=shutil.ignore_patterns("__pycache__"))
    class_dir = base / "class"
    tokens = tokens_for(class_dir, ["ada", "grace"], staff=["prof"])
    yesterday = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(days=1)
    release(class_dir, "ps1", duedate=yesterday)
    (class_dir / "late_plugin.py").write_text(LATE_PLUGIN)
    (class_dir / "nbgrader_config.py").write_text(
        'c = get_config()\nc.AssignLatePenalties.plugin_class = "no_such_module.Plugin"\n')
    server = Server(course, class_dir)
    yield server, tokens
    server.stop()


@pytest.fixture(scope="module")
def history(served):
    """ada's failed submission (#1, alan's notebook), then, the policy fixed, her graded one."""
    server, tokens = served
    status, first, _ = server.upload(tokens["ada"], ALAN)
    assert status == 202, first
    failed = wait_for(server, tokens["ada"], first["id"], ("graded", "failed"), timeout=600)
    (server.class_dir / "nbgrader_config.py").write_text(
        'c = get_config()\nc.AssignLatePenalties.plugin_class = "late_plugin.FlatPenalty"\n')
    started = time.monotonic()
    again = server.upload(tokens["ada"], ADA)
    graded = wait_for(server, tokens["ada"], again[1]["id"], ("graded", "failed")) if again[0] == 202 else None
    print(f"graded in the course copy in {time.monotonic() - started:.0f} s")
    return failed, again, graded


def test_a_failure_on_the_services_side_says_so_and_is_not_counted(served, history):
    """Tried three times (three grading children that stop before writing a grade), kept as
    failed with the reason for the staff; the student is told it was the service's failure,
    and it does not use up the one grading per hour."""
    server, tokens = served
    failed, (status, body, _), _ = history
    assert failed["status"] == "failed" and "report" not in failed
    assert "could not grade it" in failed["error"] and "not counted" in failed["error"]
    assert status == 202, body  # one grading per hour, and the failure was not one
    page = server.api(f"/submissions/{failed['id']}", cookie=server.login(tokens["ada"]))[1]
    assert "not counted against your limit" in page
    with sqlite3.connect(server.class_dir / "web.db") as db:
        attempts, error = db.execute("select attempts, error from submissions where id = ?",
                                     (failed["id"],)).fetchone()
    assert attempts == 3 and "late-submission policy could not be loaded" in error
    assert len(list((server.class_dir / "web" / "history" / "ada" / "ps1").iterdir())) == 2  # both kept
    status, page, _ = server.api("/staff", cookie=server.login(tokens["prof"]))
    assert "failed: " in page and "late-submission policy could not be loaded" in page


def test_the_copy_is_graded_by_the_installed_engine_with_the_courses_late_plugin(served, history):
    server, _ = served
    _, _, graded = history
    log = server.log.read_text()
    assert graded["status"] == "graded", log[-3000:]
    # the grade of record: 42 before the penalty, as the gradebook holds it, and the final score
    assert graded["report"]["raw_score"] == 42.0 and graded["report"]["late_penalty"] == PENALTY
    assert graded["report"]["score"] == 42.0 - PENALTY
    assert "ModuleNotFoundError" not in log
    assert gradebook_submission(server.class_dir, "ada") == (42.0, PENALTY)
    assert graded["lateness"]["late"] and graded["lateness"]["penalty"] == PENALTY


def test_work_through_the_exchange_is_graded_by_autograde_and_shown_with_its_feedback(served, history):
    """grace's notebook, collected from nbgrader's exchange (a late timestamp.txt), graded by the
    command line with the class's own plugin, never uploaded to the service."""
    server, tokens = served
    folder = server.class_dir / "submitted" / "grace" / "ps1"
    folder.mkdir(parents=True)
    shutil.copy(ALAN, folder / "ps1.ipynb")
    stamp = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=2)
    (folder / "timestamp.txt").write_text(stamp.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
    rlcourse(server.course, "autograde", "ps1", "--student", "grace", "--course-dir", server.class_dir)
    assert gradebook_submission(server.class_dir, "grace") == (34.0, PENALTY)
    grace = server.login(tokens["grace"])
    status, home, _ = server.api("/", cookie=grace)
    assert status == 200 and "through nbgrader" in home and "No submission yet" not in home
    # the grade of record: 34 autograded points less the plugin's penalty, out of 46
    assert f"{34 - PENALTY:g} / 46" in home and f"late penalty {PENALTY:g}" in home
    link = "/exchange/grace/ps1/feedback"
    assert f'href="{link}"' in home
    status, page, _ = server.api(link, cookie=grace)
    assert status == 200 and "clip_without_min" in page
    assert server.api(link, cookie=server.login(tokens["ada"]))[0] == 404


@pytest.mark.hostile("web-student-calls-staff-downloads")
def test_staff_retry_regrade_download_and_export_and_a_student_gets_not_found(served, history):
    server, tokens = served
    (failed, (_, latest, _), _) = history
    ada, prof = tokens["ada"], tokens["prof"]
    ada_page = server.login(ada)
    csrf = server.api("/", cookie=ada_page)[1].split('name="csrf" value="')[1].split('"')[0]
    for path in (f"/api/submissions/{failed['id']}/retry", f"/api/submissions/{latest['id']}/regrade",
                 "/api/assignments/ps1/regrade"):
        assert server.api(path, ada, data=b"")[0] == 404
    assert server.api(f"/api/submissions/{latest['id']}/notebook", ada)[0] == 404
    assert server.api("/api/assignments/ps1/export?format=csv", ada)[0] == 404
    for path in (f"/staff/submissions/{failed['id']}/retry", "/staff/assignments/ps1/regrade",
                 "/staff/assignments/ps1/export"):
        assert server.api(path, cookie=ada_page, form={"csrf": csrf, "format": "csv"})[0] == 404

    # Retry: the failed grading is graded now; the gradebook still holds the latest submission.
    status, body, _ = server.api(f"/api/submissions/{failed['id']}/retry", prof, data=b"")
    assert status == 202, body
    retried = wait_for(server, prof, failed["id"], ("graded", "failed"))
    assert retried["status"] == "graded" and retried["report"]["raw_score"] == 34.0
    assert gradebook_submission(server.class_dir, "ada") == (42.0, PENALTY)
    assert (server.class_dir / "submitted" / "ada" / "ps1" / "ps1.ipynb").read_bytes() == ADA.read_bytes()

    # Regrade the assignment: every student's counting submission, graded again.
    before = server.api(f"/api/submissions/{latest['id']}", prof)[1]
    status, body, _ = server.api("/api/assignments/ps1/regrade", prof, data=b"")
    assert status == 202 and body["queued"] == [latest["id"]], body
    regraded = wait_for(server, prof, latest["id"], ("graded", "failed"))
    assert regraded["status"] == "graded" and regraded["graded_at"] != before["graded_at"]
    log = server.log.read_text()
    assert f"#{latest['id']} counts for ada" in log  # put back and recorded again after the retry
    assert f"grading #{latest['id']} (ada, ps1) again, for the staff" in log

    # Download any submission's notebook.
    status, notebook, headers = server.api(f"/api/submissions/{failed['id']}/notebook", prof)
    assert status == 200 and json.dumps(notebook) and "attachment" in headers["content-disposition"]
    assert notebook == json.loads(ALAN.read_bytes())

    # Export: the CSV from the page's form, Gradescope's results as a zip from the API.
    prof_page = server.login(prof)
    staff = server.api("/staff", cookie=prof_page)[1]
    csrf = staff.split('name="csrf" value="')[1].split('"')[0]
    assert 'action="/staff/assignments/ps1/export"' in staff
    status, body, headers = server.api("/staff/assignments/ps1/export", cookie=prof_page,
                                       form={"csrf": csrf, "format": "csv"})
    assert status == 200 and "ps1-grades.csv" in headers["content-disposition"]
    rows = {row["student_id"]: row for row in csv.DictReader(io.StringIO(body))}
    assert {student: float(row["score"]) for student, row in rows.items()} == {"ada": 42 - PENALTY,
                                                                            "grace": 34 - PENALTY}
    assert server.api("/staff/assignments/ps1/export", cookie=prof_page,
                      form={"csrf": "forged", "format": "csv"})[0] == 403
    request = urllib.request.Request(server.url + "/api/assignments/ps1/export?format=gradescope",
                                     headers={"Authorization": f"Bearer {prof}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        archive = zipfile.ZipFile(io.BytesIO(response.read()))
    assert sorted(archive.namelist()) == ["ada/results.json", "grace/results.json"]
