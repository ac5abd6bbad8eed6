"""Feedback that cannot be gamed, on a real `rlcourse web` (issue 28, item 3): two students hand in
notebooks that differ only in a prediction and a concept check's answer. Before the due date
everything the service shows them of their grades is the same (the API's view, the status page,
the feedback page's totals and items); the gradebook holds different grades; once the due date
has passed, the difference shows.

Two real gradings in the service's warm grading process: the first pays the process's start and
the course copy's reference run."""
import datetime
import re

import nbformat
import pytest

from webserver import DEMO, Server, copy_course, tokens_for, wait_for

pytestmark = pytest.mark.slow

ADA = DEMO / "ada" / "ps1" / "ps1.ipynb"  # the reference: every item passes


def with_answers(target, *, concept: str, prediction: int):
    """ada's notebook with Q1's letter and the flip-horizon prediction replaced, nothing else."""
    notebook = nbformat.read(ADA, as_version=4)
    for cell in notebook.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id == "concept_checks":
            cell.source = cell.source.replace('Q1_ANSWER = "b"', f'Q1_ANSWER = "{concept}"')
        elif grade_id == "predict_flip_horizon":
            cell.source = re.sub(r"PREDICTED_FLIP_HORIZON = \d+", f"PREDICTED_FLIP_HORIZON = {prediction}",
                                 cell.source)
    nbformat.write(notebook, target)
    return target


def as_the_student_sees_it(view: dict) -> dict:
    """The API's view without what names the student or their notebook (id, times, hash, their
    own parameters)."""
    report = dict(view["report"], parameters=None)
    return {key: value for key, value in dict(view, report=report).items()
            if key not in ("id", "student", "submitted", "sha256", "graded_at", "lateness", "deadline")}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from rlcourse.record.gradebook import open_gradebook

    base = tmp_path_factory.mktemp("sealed")
    course = copy_course(base / "course")
    class_dir = base / "class"
    tokens = tokens_for(class_dir, ["kim", "lee"])
    tomorrow = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) + datetime.timedelta(days=1)
    with open_gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=tomorrow)
    right = with_answers(base / "right.ipynb", concept="b", prediction=7)
    wrong = with_answers(base / "wrong.ipynb", concept="a", prediction=3)
    server = Server(course, class_dir, graders=1)
    try:
        views = {}
        for student, notebook in (("kim", right), ("lee", wrong)):
            status, body, _ = server.upload(tokens[student], notebook)
            assert status == 202, body
            views[student] = wait_for(server, tokens[student], body["id"])
        yield server, tokens, views, class_dir, course
    finally:
        server.stop()


def gradebook_score(class_dir, student):
    from rlcourse.record.gradebook import open_gradebook

    with open_gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        return float(gradebook.find_submission("ps1", student).score)


@pytest.mark.hostile("web-probing-sealed-answers")
def test_before_the_due_date_both_students_see_the_same(graded):
    server, tokens, views, class_dir, _ = graded
    kim, lee = (as_the_student_sees_it(views[student]) for student in ("kim", "lee"))
    assert kim["status"] == lee["status"] == "graded"
    assert kim == lee
    assert kim["report"]["sealed_points"] == 7.0 and kim["report"]["pending"] == 4.0
    assert {item["id"] for item in kim["report"]["items"] if item["sealed"]} >= {
        "concepts.q1", "horizon.prediction"}
    pages = {student: server.api(f"/submissions/{views[student]['id']}/feedback",
                                 cookie=server.login(tokens[student]))[1] for student in ("kim", "lee")}
    for part in ('id="score">', 'id="sealed-total">', 'id="items-table">'):
        shown = [page[page.index(part):].split("</table>" if "table" in part else "</div>")[0]
                 for page in pages.values()]
        assert shown[0] == shown[1], part
    assert "concept_reward_to_go_biased" not in pages["lee"]


def test_the_gradebook_holds_different_grades(graded):
    _, _, _, class_dir, _ = graded
    # Q1 (1 point) and the flip-horizon prediction (1 point) wrong: 2 points apart
    assert gradebook_score(class_dir, "kim") - gradebook_score(class_dir, "lee") == 2.0


def test_after_the_due_date_the_difference_shows(graded):
    from rlcourse.record.gradebook import open_gradebook

    server, tokens, views, class_dir, course = graded
    server.stop()
    yesterday = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None) - datetime.timedelta(days=1)
    with open_gradebook(f"sqlite:///{class_dir / 'gradebook.db'}") as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=yesterday)
    server.start()  # a fresh service reads the due date at once
    after = {student: server.api(f"/api/submissions/{views[student]['id']}", tokens[student])[1]
             for student in ("kim", "lee")}
    assert as_the_student_sees_it(after["kim"]) != as_the_student_sees_it(after["lee"])
    lee = {item["id"]: item for item in after["lee"]["report"]["items"]}
    assert lee["concepts.q1"]["diagnosis"] == "concept_reward_to_go_biased"
    assert after["kim"]["report"]["score"] - after["lee"]["report"]["score"] == 2.0
    assert after["kim"]["report"]["max_score"] == 46.0 and after["kim"]["report"]["sealed_points"] == 0.0
