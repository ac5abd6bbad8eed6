"""rlcourse.batch.lms: the grade of record to an LTI 1.3 platform (AGS) and its roster in (NRPS),
against a real platform implementation on the loopback (tests/lti_platform.py: lti1p3platform's
token endpoint and token checks, playing Canvas). The class is recorded through the real
`autograde` and gradebook with reports made in advance (tests/marking.py): no student code runs."""
import datetime
import json
import stat

import pytest
from lti_platform import INSTRUCTOR, Platform
from marking import FIRST_ANSWER, ScoredReports, copy_class, make_course, mark_by_hand, new_class

from rlcourse.batch import lms
from rlcourse.course.config import CourseError

DUE = datetime.datetime(2026, 3, 2, 17, 0)
SCORES = {"ada": 4.0, "bob": 4.0, "cy": 2.0, "dan": 1.0}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """ada, bob, cy and dan autograded (returns_to_go: 4, 4, 2, 1 of 4), bob 2 h late; ada's
    and cy's two written answers marked (2 + 2 and 0 + 1 of 2 + 2), bob's and dan's awaiting a TA."""
    from rlcourse.batch.autograde import autograde
    from rlcourse.record.gradebook import open_gradebook

    folder = tmp_path_factory.mktemp("lms")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {student: FIRST_ANSWER for student in SCORES})
    for student in SCORES:
        at = "2026-03-02 19:00:00.000000 UTC" if student == "bob" else "2026-03-02 12:00:00.000000 UTC"
        (class_dir.submitted / student / "ps1" / "timestamp.txt").write_text(at)
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=DUE)
    autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports(SCORES),
              log=lambda message: None)
    mark_both(assignment, class_dir, "ada", "1;2", 2.0)
    mark_both(assignment, class_dir, "cy", "none", 1.0)
    return assignment, class_dir


def mark_both(assignment, class_dir, student, criteria, flip_score):
    """A TA marks `student`'s two written answers: explain_flip_horizon (no rubric) in formgrader
    (as its handler does: manual_score set, no longer needing a grade), then explain_clipping by
    `rlcourse rubric import`, which also settles the late penalty on the new total."""
    from nbgrader.api import Gradebook

    with Gradebook(class_dir.db_url) as gradebook:
        grade = gradebook.find_grade("explain_flip_horizon", "ps1", "ps1", student)
        grade.manual_score, grade.needs_manual_grade = flip_score, False
        gradebook.db.commit()
    mark_by_hand(assignment, class_dir, student, criteria, folder=class_dir.root)


@pytest.fixture
def platform():
    running = Platform().start()
    yield running
    running.stop()


@pytest.fixture
def course(recorded, platform, tmp_path):
    """A copy of the class registered with the platform: the tool's keys made, the platform
    trusting them; Canvas's course has ada, bob, cy, eve (not in the gradebook) and a teacher;
    dan is in the gradebook only."""
    assignment, class_dir = recorded
    class_dir = copy_class(class_dir, tmp_path / "class")
    (class_dir.root / "lms.toml").write_text(platform.registration_toml())
    lms.make_keys(class_dir)
    platform.trust_tool_keys(key_set=lms.tool_jwks(class_dir))
    for number, student in enumerate(("ada", "bob", "cy", "eve"), 1):
        platform.enrol(f"canvas-{number}", sis_id=student)
    platform.enrol("canvas-99", sis_id="prof", roles=(INSTRUCTOR,))
    return assignment, class_dir


def fast(function, *args, **kwargs):
    return function(*args, retries=4, backoff=0.01, **kwargs)


def class_grade(assignment, class_dir, student):
    from rlcourse.record.grades import class_grades

    return class_grades(class_dir, assignment)[student]


def test_the_tools_key_is_made_once_private_and_beside_the_gradebook(recorded, tmp_path):
    _, class_dir = recorded
    class_dir = copy_class(class_dir, tmp_path / "class")
    path = lms.make_keys(class_dir)
    assert path.parent == class_dir.root / "lms"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    key = lms.tool_jwk(class_dir)
    assert key["kty"] == "RSA" and key["kid"] and "d" not in key  # the public half only
    with pytest.raises(CourseError, match="already has its key"):
        lms.make_keys(class_dir)
    path.chmod(0o644)
    with pytest.raises(CourseError, match="readable by others"):
        lms.tool_private_key(class_dir)


def test_the_roster_adds_the_lms_students_and_says_who_is_missing_on_each_side(course, platform):
    from rlcourse.record.gradebook import open_gradebook

    _, class_dir = course
    platform.enrol("canvas-7", roles=())  # no SIS id: nothing to map them by
    platform.enrol("canvas-8", sis_id="gone", status="Inactive")
    synced = fast(lms.sync_roster, class_dir)
    assert synced.added == ["eve"] and synced.known == ["ada", "bob", "cy"]
    assert synced.lms_missing == ["dan"] and synced.unmapped == ["canvas-7"] and synced.staff == 1
    with open_gradebook(class_dir.db_url) as gradebook:
        assert {student.id for student in gradebook.students} == {"ada", "bob", "cy", "dan", "eve"}
    roster = lms.read_roster(class_dir)
    assert roster["canvas-2"] == {"student": "bob", "staff": False}
    assert roster["canvas-99"]["staff"] and "canvas-7" not in roster and "canvas-8" not in roster
    assert fast(lms.sync_roster, class_dir).added == []  # a second sync adds nobody


def test_push_sends_each_grade_of_record_and_a_second_push_changes_nothing(course, platform):
    assignment, class_dir = course
    with pytest.raises(CourseError, match="rlcourse lms roster"):
        fast(lms.push_grades, assignment, class_dir=class_dir)
    fast(lms.sync_roster, class_dir)
    tokens = platform.tokens_issued
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert sorted(push.sent) == ["ada", "bob", "cy"] and not push.failed and not push.unchanged
    assert push.skipped == {"canvas-99": "staff", "dan": "not in the LMS's roster",
                            "eve": "no grade of record yet"}
    [line] = platform.line_items.values()
    grades = {student: class_grade(assignment, class_dir, student) for student in ("ada", "bob", "cy")}
    assert (line["tag"], line["resourceId"], line["scoreMaximum"]) == ("ps1", "ps1", grades["ada"].max_score)
    held = platform.results(line["id"])
    assert set(held) == {"canvas-1", "canvas-2", "canvas-3"}  # eve, dan and the teacher: nothing
    ada, bob, cy = held["canvas-1"], held["canvas-2"], held["canvas-3"]
    # ada: 4 automatic + 2 + 2 written, on time, marked: final
    assert (ada["scoreGiven"], ada["gradingProgress"], ada["activityProgress"]) == (8.0, "FullyGraded", "Completed")
    # bob: 4 automatic, 2 h late (10% per started hour of the course's policy: 0.8 off), written awaiting a TA
    assert grades["bob"].penalty == 0.8 and grades["bob"].pending == 4.0
    # PendingManual, not Pending: Canvas ignores a Pending score, and a TA's mark is what is awaited
    assert (bob["scoreGiven"], bob["gradingProgress"], bob["activityProgress"]) == (3.2, "PendingManual", "Submitted")
    assert bob["submission"]["submittedAt"].startswith("2026-03-02T19:00:00")  # AGS 2.0's place for it
    # cy: 2 automatic, written marked 0 + 1: final
    assert (cy["scoreGiven"], cy["gradingProgress"]) == (3.0, "FullyGraded")
    assert all(score["scoreMaximum"] == grades["ada"].max_score for score in held.values())
    assert set(ada) <= {"userId", "scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress",
                        "timestamp", "submission"}  # ids and scores only: no name, no comment
    assert platform.tokens_issued == tokens + 1  # one access token for the whole push
    posted = len(platform.scores[line["id"]])

    again = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert again.sent == [] and sorted(again.unchanged) == ["ada", "bob", "cy"]
    assert len(platform.line_items) == 1 and len(platform.scores[line["id"]]) == posted
    assert platform.results(line["id"]) == held


def test_a_ta_marking_an_answer_sends_that_student_again_fully_graded(course, platform):
    assignment, class_dir = course
    fast(lms.sync_roster, class_dir)
    fast(lms.push_grades, assignment, class_dir=class_dir)
    mark_both(assignment, class_dir, "bob", "1", 1.0)
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert push.sent == ["bob"] and sorted(push.unchanged) == ["ada", "cy"]
    [line] = platform.line_items.values()
    bob = platform.results(line["id"])["canvas-2"]
    assert (bob["scoreGiven"], bob["gradingProgress"]) == (class_grade(assignment, class_dir, "bob").score,
                                                            "FullyGraded")
    assert bob["scoreGiven"] == pytest.approx(4.8)  # (4 + 1 + 1) less 20% for 2 h late


def test_a_platform_that_fails_for_a_while_is_retried(course, platform):
    assignment, class_dir = course
    fast(lms.sync_roster, class_dir)
    platform.fail_next(429, 503, 502, 503)
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert platform.failed == 4 and sorted(push.sent) == ["ada", "bob", "cy"] and not push.failed
    [line] = platform.line_items.values()
    assert len(platform.line_items) == 1 and set(platform.results(line["id"])) == {"canvas-1", "canvas-2", "canvas-3"}


def test_a_platform_that_keeps_failing_is_reported_not_hidden(course, platform):
    assignment, class_dir = course
    fast(lms.sync_roster, class_dir)
    fast(lms.push_grades, assignment, class_dir=class_dir)
    mark_both(assignment, class_dir, "bob", "1", 1.0)
    platform.members = [member for member in platform.members if member["user_id"] != "canvas-2"]  # bob dropped
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert list(push.failed) == ["bob"] and "422" in push.failed["bob"]
    platform.fail_next(*[503] * 10)
    with pytest.raises(lms.LmsError, match="503|retries"):
        fast(lms.push_grades, assignment, class_dir=class_dir)


def test_an_expired_access_token_is_asked_for_again(course, platform, monkeypatch):
    import time

    assignment, class_dir = course
    monkeypatch.setattr(lms, "TOKEN_MARGIN_SECONDS", 0)
    platform.token_lifetime = 2
    fast(lms.sync_roster, class_dir)
    assert platform.tokens_issued == 1
    time.sleep(2.2)  # the platform refuses that token now (tests/lti_platform.py checks its expiry)
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert platform.tokens_issued == 2 and sorted(push.sent) == ["ada", "bob", "cy"]


def test_the_command_line_prints_sent_failed_skipped(course, platform, monkeypatch, capsys):
    from rlcourse.cli import main

    assignment, class_dir = course
    monkeypatch.chdir(assignment.grader_dir.parents[1])
    assert main(["lms", "roster", "--course-dir", str(class_dir.root)]) == 0
    out = capsys.readouterr().out
    assert "added to the gradebook: eve" in out and "in the gradebook, not in the LMS: dan" in out
    assert main(["lms", "push", "ps1", "--course-dir", str(class_dir.root)]) == 0
    out = capsys.readouterr().out
    assert "3 sent, 0 unchanged, 0 failed, 3 skipped" in out
    assert "dan: not in the LMS's roster" in out
    assert main(["lms", "push", "ps1", "--course-dir", str(class_dir.root)]) == 0
    assert "0 sent, 3 unchanged, 0 failed, 3 skipped" in capsys.readouterr().out
    sent = json.loads((class_dir.root / "lms" / "sent.json").read_text())
    assert len(sent) == 1


def test_a_token_request_signed_with_a_key_the_platform_does_not_trust_is_refused(course, platform):
    from jwcrypto.jwk import JWK
    from lti_platform import rsa_pem

    _, class_dir = course
    other = json.loads(JWK.from_pem(rsa_pem()[1].encode()).export_public())
    stranger = dict(lms.tool_jwk(class_dir), n=other["n"], e=other["e"])  # the tool's kid, another key
    platform.trust_tool_keys(key_set={"keys": [stranger]})
    with pytest.raises(lms.LmsError, match="access token"):
        fast(lms.sync_roster, class_dir)
    assert platform.tokens_issued == 0


def test_lms_keys_on_the_command_line_prints_the_public_key_only(recorded, tmp_path, capsys):
    from rlcourse.cli import main

    _, class_dir = recorded
    class_dir = copy_class(class_dir, tmp_path / "class")
    assert main(["lms", "keys", "--course-dir", str(class_dir.root)]) == 0
    out = capsys.readouterr().out
    private = (class_dir.root / "lms" / "tool-private.pem").read_text()
    assert lms.tool_jwk(class_dir)["kid"] in out and '"d"' not in out and private.splitlines()[1] not in out
    assert main(["lms", "keys", "--course-dir", str(class_dir.root)]) == 2  # never a second key by accident


def test_a_line_item_the_lms_already_has_keeps_its_points_and_gets_fractions_right(course, platform):
    """An instructor made ps1's column worth 100 in the LMS first: the score is sent out of the
    gradebook's maximum, the platform scales it, and a second push still changes nothing."""
    assignment, class_dir = course
    line_id = f"{platform.url}/api/lti/courses/1/line_items/1"
    platform.line_items[line_id] = {"id": line_id, "tag": "ps1", "resourceId": "ps1", "label": "PS1",
                                    "scoreMaximum": 100}
    fast(lms.sync_roster, class_dir)
    push = fast(lms.push_grades, assignment, class_dir=class_dir)
    assert sorted(push.sent) == ["ada", "bob", "cy"] and push.line_item == line_id and len(platform.line_items) == 1
    ada = class_grade(assignment, class_dir, "ada")
    held = platform.results(line_id)["canvas-1"]
    assert (held["scoreGiven"], held["scoreMaximum"]) == (ada.score, ada.max_score)
    assert fast(lms.push_grades, assignment, class_dir=class_dir).sent == []


@pytest.mark.parametrize("field, member, expected", [
    ("lis_person_sourcedid", {"lis_person_sourcedid": " ada "}, "ada"),
    ("email", {"email": "ada@example.edu"}, "ada@example.edu"),
    ("email_user", {"email": "ada@example.edu"}, "ada"),
    ("email_user", {}, None),
    ("lis_person_sourcedid", {"name": "Ada Lovelace"}, None),  # a name alone is never an id
])
def test_the_student_id_is_the_registered_field_of_the_member(field, member, expected):
    assert lms.student_id_of(member, field) == expected


def test_a_class_that_asks_gets_each_grading_pushed_for_the_students_graded_only(course, platform, recorded):
    assignment, class_dir = course
    fast(lms.sync_roster, class_dir)
    assert lms.push_after_grading(assignment, class_dir=class_dir, students=["bob"]) is None  # not asked
    assert lms.push_after_grading(assignment, class_dir=recorded[1], students=["bob"]) is None  # no lms.toml
    registration = class_dir.root / "lms.toml"
    registration.write_text(registration.read_text() + "push_after_grading = true\n")
    push = fast(lms.push_after_grading, assignment, class_dir=class_dir, students=["bob"])
    assert push.sent == ["bob"] and not push.skipped and not push.failed
    [line] = platform.line_items.values()
    assert set(platform.results(line["id"])) == {"canvas-2"}  # ada and cy wait for their own grading
    registration.write_text(registration.read_text().replace("= true", '= "yes"'))
    with pytest.raises(CourseError, match="push_after_grading = 'yes'; it must be true or false"):
        lms.push_after_grading(assignment, class_dir=class_dir, students=["bob"])


def test_autograde_reports_a_push_that_failed_and_keeps_the_grades(course, platform, capsys):
    from rlcourse import cli
    from rlcourse.record.grades import class_grades

    assignment, class_dir = course
    fast(lms.sync_roster, class_dir)
    registration = class_dir.root / "lms.toml"
    registration.write_text(registration.read_text() + "push_after_grading = true\n")
    before = class_grades(class_dir, assignment)
    platform.stop()  # the LMS is down
    cli._push_after_grading(assignment, class_dir, ["ada"])
    error = capsys.readouterr().err
    assert "the grades are recorded, but not sent to the LMS" in error and "rlcourse lms push ps1" in error
    assert class_grades(class_dir, assignment) == before
