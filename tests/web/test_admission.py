"""What `rlcourse web` takes, without grading anything: only assignments released to the class
(in its gradebook) and open (`[web] closes`); never another assignment's notebook; each refusal
names the file the student uploaded and leaves the store, the history and the gradebook as they
were. Browsers get error pages with a way back, the API `{"error": ...}`; the staff's actions are
"not found" for a student. One real server on the loopback for the module."""
import datetime
import json
import shutil

import pytest

from webserver import (DEMO, ROOT, Server, add_assignment, copy_course, gradebook_dump, release,
                       tokens_for)

ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"


def released_cells(path) -> int:
    """The cells nbgrader tracks in a release, counted from its JSON."""
    cells = json.loads(path.read_text())["cells"]
    return len({cell["metadata"]["nbgrader"]["grade_id"] for cell in cells
                if cell["metadata"].get("nbgrader", {}).get("grade_id")})


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """ps1 (due tomorrow) and ps2 (closed since 2020) released to the class; ps3 in the course
    but never released to it."""
    base = tmp_path_factory.mktemp("admission")
    course = copy_course(base / "course")
    add_assignment(course, "ps2", toml_extra="[web]\ncloses = 2020-01-01T00:00:00Z\n")
    add_assignment(course, "ps3")
    class_dir = base / "class"
    tokens = tokens_for(class_dir, ["ada"], staff=["prof"])
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    release(class_dir, "ps1", "ps2", duedate=tomorrow.replace(microsecond=0))
    server = Server(course, class_dir)
    yield server, tokens
    server.stop()


def nothing_kept(server, tokens, gradebook_before) -> bool:
    return (server.api("/api/submissions", tokens["ada"])[1] == []
            and not (server.class_dir / "web" / "history").exists()
            and gradebook_dump(server.class_dir) == gradebook_before)


def test_another_assignments_notebook_is_refused_as_what_it_looks_like(served, tmp_path):
    server, tokens = served
    before = gradebook_dump(server.class_dir)
    notebook = tmp_path / "my_ps2.ipynb"  # ps2 as released: every cell of it, 5 of them named as ps1's
    shutil.copy(ROOT / "release" / "ps2" / "ps2.ipynb", notebook)
    status, body, _ = server.upload(tokens["ada"], notebook, "ps1")
    assert status == 422, body
    whole = released_cells(ROOT / "release" / "ps2" / "ps2.ipynb")
    assert body["error"].startswith(f"my_ps2.ipynb looks like ps2, not ps1: it holds {whole} of the {whole} cells "
                                    "released in ps2 and 5 of ps1's")
    assert nothing_kept(server, tokens, before)


def test_an_unreleased_or_closed_assignment_is_refused_and_the_page_says_why(served, tmp_path):
    server, tokens = served
    before = gradebook_dump(server.class_dir)
    status, body, _ = server.upload(tokens["ada"], ROOT / "release" / "ps3" / "ps3.ipynb", "ps3")
    assert (status, body["error"]) == (404, "ps3 is not released to this class yet (it is not in "
                                            "the class's gradebook)")
    status, body, _ = server.upload(tokens["ada"], ROOT / "release" / "ps2" / "ps2.ipynb", "ps2")
    assert (status, body["error"]) == (403, "ps2 closed at 2020-01-01 00:00:00 UTC")
    assert nothing_kept(server, tokens, before)  # no ps3 row: autograde never created one
    status, home, _ = server.api("/", cookie=server.login(tokens["ada"]))
    assert status == 200
    assert 'action="/assignments/ps1/submit"' in home and 'id="due-ps1">Due ' in home
    assert 'action="/assignments/ps2/submit"' not in home and "Closed: ps2 closed at 2020-01-01" in home
    assert "ps3" not in home
    staff = server.api("/staff", cookie=server.login(tokens["prof"]))[1]
    assert "Closed: ps3 is not released to this class yet" in staff


def test_a_refusal_names_the_uploaded_file(served, tmp_path):
    server, tokens = served
    before = gradebook_dump(server.class_dir)
    notebook = tmp_path / "my_ps1.ipynb"
    notebook.write_bytes(b'{"cells": [], "metadata": {"title": "\xff\xfe"}, "nbformat": 4}')
    status, body, _ = server.upload(tokens["ada"], notebook)
    assert status == 422 and "my_ps1.ipynb is not UTF-8 text" in body["error"], body
    assert "ps1.ipynb is not" not in body["error"].replace("my_ps1.ipynb", "")
    from rlcourse.web.client import multipart  # the page's form: the same sentence, on the page

    cookie = server.login(tokens["ada"])
    csrf = server.api("/", cookie=cookie)[1].split('name="csrf" value="')[1].split('"')[0]
    data, content_type = multipart({"csrf": csrf}, "notebook", "my_ps1.ipynb", notebook.read_bytes())
    status, page, _ = server.api("/assignments/ps1/submit", cookie=cookie, data=data, content_type=content_type)
    assert status == 422 and "Not accepted: not a notebook that can be graded: my_ps1.ipynb is not UTF-8" in page
    assert nothing_kept(server, tokens, before)


def test_a_browser_gets_a_page_with_a_way_back_and_the_api_json(served):
    server, tokens = served
    cookie = server.login(tokens["ada"])
    for path, status, says in (("/no/such/page", 404, "no such page"),
                               ("/submissions/999", 404, "no such submission"),
                               ("/submissions/not-a-number", 404, "no such page"),
                               ("/staff", 403, "for the course staff only")):
        got, page, headers = server.api(path, cookie=cookie)
        assert (got, headers["content-type"]) == (status, "text/html; charset=utf-8"), (path, page)
        assert says in page and '<a href="/">Back to your submissions</a>' in page
        assert "script" not in page.lower()
    got, page, _ = server.api("/no/such/page")  # signed out: the way back is the sign-in page
    assert got == 404 and '<a href="/login">Sign in</a>' in page
    assert server.api("/api/no/such/route", tokens["ada"])[:2] == (404, {"error": "no such page"})
    assert server.api("/api/submissions/999", tokens["ada"])[:2] == (404, {"error": "no such submission"})
    status, body, headers = server.api("/api/whoami")
    assert (status, body) == (401, {"error": "no valid token: ask the course staff for yours"})
    assert headers["www-authenticate"] == "Bearer"


@pytest.mark.hostile("web-student-calls-staff-actions")
def test_the_staff_actions_are_not_found_for_a_student(served):
    server, tokens = served
    ada, prof = tokens["ada"], tokens["prof"]
    cookie = server.login(ada)
    csrf = server.api("/", cookie=cookie)[1].split('name="csrf" value="')[1].split('"')[0]
    for path in ("/api/submissions/1/retry", "/api/submissions/1/regrade", "/api/assignments/ps1/regrade"):
        assert server.api(path, ada, data=b"")[:2] == (404, {"error": "no such page"})
    for path in ("/api/submissions/1/notebook", "/api/assignments/ps1/export?format=csv"):
        assert server.api(path, ada)[:2] == (404, {"error": "no such page"})
    for path in ("/staff/submissions/1/retry", "/staff/submissions/1/regrade",
                 "/staff/assignments/ps1/regrade", "/staff/assignments/ps1/export"):
        status, page, _ = server.api(path, cookie=cookie, form={"csrf": csrf, "format": "csv"})
        assert status == 404 and "no such page" in page, path
    assert server.api("/staff/submissions/1/notebook", cookie=cookie)[0] == 404
    # The staff themselves: a submission that does not exist, an assignment regraded with none.
    assert server.api("/api/submissions/1/retry", prof, data=b"")[:2] == (404, {"error": "no such submission"})
    assert server.api("/api/assignments/ps1/regrade", prof, data=b"")[:2] == (202, {"queued": []})
    status, body, _ = server.api("/api/assignments/ps1/export?format=pdf", prof)
    assert (status, body) == (422, {"error": "format 'pdf': use csv or gradescope"})
