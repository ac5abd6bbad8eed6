"""`rlcourse lms`: the grade of record out to the LMS, and the LMS's roster in, over LTI 1.3 Advantage.

What leaves the course machine is ids and scores only: for each student the LMS's own user id
(from its roster), the final score out of the gradebook's maximum, whether anything still awaits
a TA, and when they submitted. No name, no notebook, no item, no feedback.

The pieces, each from the library that speaks the standard (pylti1p3next, the maintained fork of
pylti1p3; PyJWT and jwcrypto underneath):

- the tool's key pair (`make_keys`), made once into the class directory's `lms/` (0700, the
  private key 0600), never into the release: the LMS checks every token request's signature
  against its public half, served by `rlcourse web` at /lti/jwks;
- a service connector (`connect`) whose OAuth2 access token (client credentials with a signed
  JWT assertion) is kept until a minute before it expires, and whose HTTP session retries 429 and
  5xx answers with exponential backoff, honouring Retry-After;
- the roster (`sync_roster`, Names and Roles): who the LMS's students are, mapped to nbgrader
  student ids by the registration's `student_id` field, kept in `lms/roster.json`, which both
  `push_grades` and the launch (rlcourse.web.lti) read: a user the roster does not map is nobody;
- the push (`push_grades`, Assignment and Grade Services): the assignment's line item, found by
  its tag and resourceId (both the assignment's name) or created, and one score per student of
  the roster the gradebook holds a grade for. A score the platform already holds with the same
  progress is not sent again, so a second push changes nothing.
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import os
import time
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import LMS_FILE, CourseError, LmsRegistration
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic

SCOPES_AGS = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score")
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
RETRIED_STATUSES = (429, 500, 502, 503, 504)
STAFF_ROLES = ("#Instructor", "#TeachingAssistant", "#Administrator", "#ContentDeveloper", "#Mentor")
AWAITING_TA = "PendingManual"
"""`gradingProgress` while a written answer awaits a TA. AGS 2.0: `PendingManual` is "final grade
pending, and it does require human intervention", which is this case; `Pending` is one that does
not. Canvas's Score API ignores `scoreGiven` under `Pending` (and `NotReady`, `Failed`), and
under `PendingManual` keeps the score and marks the submission as needing grading: the automatic
points reach the student's gradebook row while the TA's are awaited."""
TOKEN_MARGIN_SECONDS = 60
"""An access token is asked for again this long before the platform said it expires."""


def lms_dir(class_dir: ClassDirectory) -> Path:
    """The class's LTI secrets and roster: beside the gradebook, never in the release."""
    return class_dir.root / "lms"


def registration_of(class_dir: ClassDirectory) -> LmsRegistration:
    return LmsRegistration.read(class_dir.root / LMS_FILE)


# --- the tool's keys -------------------------------------------------------------------------------
def private_key_path(class_dir: ClassDirectory) -> Path:
    return lms_dir(class_dir) / "tool-private.pem"


def make_keys(class_dir: ClassDirectory) -> Path:
    """A new RSA key pair for the tool, once: the private key 0600 in `lms/`, which is 0700.
    Refused when one exists (a new key breaks the LMS's registration until its JWKS is fetched
    again; delete the file on purpose to rotate)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = private_key_path(class_dir)
    if path.exists():
        raise CourseError(f"{path} exists: the tool already has its key (delete it on purpose to make a new one)")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    return path


def tool_private_key(class_dir: ClassDirectory) -> str:
    path = private_key_path(class_dir)
    if not path.is_file():
        raise CourseError(f"{path} is missing: make the tool's key first (`rlcourse lms keys`)")
    if path.stat().st_mode & 0o077:
        raise CourseError(f"{path} is readable by others (mode {path.stat().st_mode & 0o777:o}); "
                          f"chmod 600 it")
    return path.read_text()


def tool_jwk(class_dir: ClassDirectory) -> dict:
    """The public half of the tool's key as a JWK, its `kid` the key's RFC 7638 thumbprint."""
    from jwcrypto.jwk import JWK

    key = JWK.from_pem(tool_private_key(class_dir).encode())
    public = json.loads(key.export_public())
    return dict(public, kid=key.thumbprint(), alg="RS256", use="sig")


def tool_jwks(class_dir: ClassDirectory) -> dict:
    return {"keys": [tool_jwk(class_dir)]}


# --- talking to the platform -----------------------------------------------------------------------
def http_session(*, retries: int = 5, backoff: float = 0.5):
    """A requests session that retries 429 and 5xx (every method: a score carries its own
    timestamp, so the platform keeps one score however often it arrives), waiting backoff * 2^n
    seconds, or the platform's Retry-After."""
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    session.headers["User-Agent"] = "rlcourse-lms"
    retry = Retry(total=retries, connect=retries, read=retries, status=retries, backoff_factor=backoff,
                  status_forcelist=RETRIED_STATUSES, allowed_methods=None, respect_retry_after_header=True,
                  raise_on_status=False)
    adapter = HTTPAdapter(max_retries=retry)
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    return session


def connect(registration: LmsRegistration, class_dir: ClassDirectory, *, retries: int = 5,
            backoff: float = 0.5):
    """pylti1p3's ServiceConnector for this registration, its access token kept until shortly
    before it expires and asked for again then."""
    from pylti1p3.registration import Registration
    from pylti1p3.service_connector import ServiceConnector

    class CachingConnector(ServiceConnector):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.tokens: dict[str, tuple[str, float]] = {}
            self.tokens_fetched = 0

        def _get_cached_access_token(self, scope_key):
            token, expires = self.tokens.get(scope_key, (None, 0.0))
            return token if time.monotonic() < expires else None

        def _cache_access_token(self, scope_key, access_token, expires_in):
            self.tokens_fetched += 1
            lifetime = float(expires_in or 0) - TOKEN_MARGIN_SECONDS
            self.tokens[scope_key] = (access_token, time.monotonic() + max(lifetime, 0.0))

    class KeyedRegistration(Registration):
        """pylti1p3 derives no `kid` from a PEM; the platform picks the key to check by it."""

        def get_kid(self):
            return kid

    kid = tool_jwk(class_dir)["kid"]
    tool = (KeyedRegistration().set_issuer(registration.issuer).set_client_id(registration.client_id)
            .set_auth_token_url(registration.auth_token_url).set_key_set_url(registration.key_set_url)
            .set_tool_private_key(tool_private_key(class_dir)))
    if registration.auth_audience:
        tool.set_auth_audience(registration.auth_audience)
    return CachingConnector(tool, requests_session=http_session(retries=retries, backoff=backoff))


class LmsError(CourseError):
    """The platform refused or failed after the retries: one line, what and where."""


def _lti_errors():
    from pylti1p3.exception import LtiException, LtiServiceException
    from requests import RequestException

    return (LtiException, LtiServiceException, RequestException)


def _described(error) -> str:
    """pylti1p3's error says the URL and the HTTP status; requests' says what failed."""
    return str(error)


# --- the roster (Names and Roles) ------------------------------------------------------------------
def roster_path(class_dir: ClassDirectory) -> Path:
    return lms_dir(class_dir) / "roster.json"


def is_staff(roles) -> bool:
    return any(str(role).endswith(staff) for role in roles for staff in STAFF_ROLES)


def student_id_of(member: dict, field: str) -> str | None:
    """The nbgrader student id of an LMS member, from the registration's `student_id` field."""
    value = member.get("email" if field == "email_user" else field)
    if field == "email_user" and value:
        value = str(value).partition("@")[0]
    return (str(value).strip() or None) if value else None


def read_roster(class_dir: ClassDirectory) -> dict[str, dict]:
    """LMS user id -> {"student": nbgrader id, "staff": bool}, as the last `rlcourse lms roster`
    wrote it; empty when it never ran."""
    path = roster_path(class_dir)
    return json.loads(path.read_text())["users"] if path.is_file() else {}


@dataclasses.dataclass
class RosterSync:
    added: list[str]
    """Students of the LMS the gradebook did not know, now added."""
    known: list[str]
    """Students of the LMS already in the gradebook."""
    unmapped: list[str]
    """LMS user ids of students without the registration's student id field: not mapped."""
    lms_missing: list[str]
    """Students of the gradebook the LMS does not list (not enrolled there, or dropped)."""
    staff: int


def sync_roster(class_dir: ClassDirectory, *, retries: int = 5, backoff: float = 0.5) -> RosterSync:
    """The LMS's members (NRPS), students mapped to nbgrader ids and added to the gradebook,
    the mapping kept in `lms/roster.json`. Only active members count."""
    from pylti1p3.names_roles import NamesRolesProvisioningService

    from rlcourse.course.class_directory import student_id_problem
    from rlcourse.record.gradebook import open_gradebook

    registration = registration_of(class_dir)
    if not registration.memberships_url:
        raise CourseError(f"{class_dir.root / LMS_FILE}: memberships_url is empty (the course's "
                          "Names and Roles URL)")
    service = NamesRolesProvisioningService(connect(registration, class_dir, retries=retries, backoff=backoff),
                                            {"context_memberships_url": registration.memberships_url})
    try:
        members = service.get_members()
    except _lti_errors() as error:
        raise LmsError(f"the roster could not be read from {registration.memberships_url}: "
                       f"{_described(error)}") from None
    users, students, unmapped, staff = {}, set(), [], 0
    for member in members:
        if member.get("status", "Active") != "Active":
            continue
        roles = member.get("roles", [])
        if is_staff(roles):
            users[str(member["user_id"])] = {"student": None, "staff": True}
            staff += 1
            continue
        student = student_id_of(member, registration.student_id)
        if student is None or student_id_problem(student):
            unmapped.append(str(member["user_id"]))
            continue
        users[str(member["user_id"])] = {"student": student, "staff": False}
        students.add(student)
    with open_gradebook(class_dir.db_url) as gradebook:
        known = {student.id for student in gradebook.students}
        added = sorted(students - known)
        for student in added:
            gradebook.add_student(student)
    lms_dir(class_dir).mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(roster_path(class_dir), json.dumps(
        {"read": datetime.datetime.now(datetime.timezone.utc).isoformat(), "users": users}, indent=1))
    return RosterSync(added=added, known=sorted(students & known), unmapped=sorted(unmapped),
                      lms_missing=sorted(known - students), staff=staff)


# --- grades out (Assignment and Grade Services) ----------------------------------------------------
def sent_path(class_dir: ClassDirectory) -> Path:
    return lms_dir(class_dir) / "sent.json"


@dataclasses.dataclass
class Push:
    sent: list[str]
    unchanged: list[str]
    """The platform already holds this score and progress: nothing sent."""
    failed: dict[str, str]
    """student -> why (after the retries)."""
    skipped: dict[str, str]
    """student or LMS user -> why nothing is sent for them (not in the roster, no grade, staff)."""
    line_item: str = ""


def score_of(grade, user_id: str) -> dict:
    """The AGS score of one grade of record: nbgrader's final score (late penalty taken) out of
    the gradebook's maximum; `FullyGraded` only when no written answer awaits a TA, AWAITING_TA
    while one does."""
    pending = grade.pending > 0
    submitted = grade.timing.timestamp if grade.timing is not None else None
    score = {"userId": user_id, "scoreGiven": grade.score, "scoreMaximum": grade.max_score,
             "activityProgress": "Submitted" if pending else "Completed",
             "gradingProgress": AWAITING_TA if pending else "FullyGraded"}
    if submitted is not None:
        score["submittedAt"] = submitted.replace(tzinfo=datetime.timezone.utc).isoformat()
    return score


def _same(held: dict | None, score: dict, last_sent: dict | None) -> bool:
    """The platform holds this score (its result, which a platform scales to the line item's
    maximum: the fractions are compared) and what was last sent carried the same progress."""
    if held is None or last_sent is None or held.get("resultScore") is None:
        return False
    held_fraction = float(held["resultScore"]) / float(held.get("resultMaximum") or score["scoreMaximum"] or 1)
    fraction = score["scoreGiven"] / (score["scoreMaximum"] or 1)
    return (abs(held_fraction - fraction) < 1e-6
            and all(last_sent.get(key) == score.get(key) for key in
                    ("scoreGiven", "scoreMaximum", "gradingProgress", "activityProgress")))


def push_grades(assignment: Assignment, *, class_dir: ClassDirectory, retries: int = 5,
                backoff: float = 0.5, students: list[str] | None = None) -> Push:
    """Each roster student's grade of record of `assignment` to the LMS's gradebook (only
    `students`' when given: a grading of a few)."""
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.grade import Grade as LtiGrade
    from pylti1p3.lineitem import LineItem

    from rlcourse.record.grades import class_grades

    registration = registration_of(class_dir)
    if not registration.lineitems_url:
        raise CourseError(f"{class_dir.root / LMS_FILE}: lineitems_url is empty (the course's line items URL)")
    roster = read_roster(class_dir)
    if not roster:
        raise CourseError("no LMS roster yet: run `rlcourse lms roster` first (it maps the LMS's "
                          "users to the gradebook's students)")
    grades = class_grades(class_dir, assignment)
    if students is not None:
        roster = {user_id: entry for user_id, entry in roster.items() if entry["student"] in students}
        grades = {student: grade for student, grade in grades.items() if student in students}
    push = Push([], [], {}, {})
    user_of = {}
    for user_id, entry in roster.items():
        if entry["staff"]:
            push.skipped[user_id] = "staff"
        else:
            user_of[entry["student"]] = user_id
    for student in sorted(set(grades) - set(user_of)):
        push.skipped[student] = "not in the LMS's roster"
    for student in sorted(set(user_of) - set(grades)):
        push.skipped[student] = "no grade of record yet"
    students = sorted(set(grades) & set(user_of))
    if not students:
        return push
    maximum = max(grades[student].max_score for student in students)
    connector = connect(registration, class_dir, retries=retries, backoff=backoff)
    ags = AssignmentsGradesService(connector, {"scope": list(SCOPES_AGS), "lineitems": registration.lineitems_url})
    wanted = (LineItem().set_tag(assignment.name).set_resource_id(assignment.name)
              .set_label(assignment.title or assignment.name).set_score_maximum(maximum))
    try:
        line = ags.find_or_create_lineitem(
            wanted, condition=lambda item: item.get("tag") == assignment.name
            and item.get("resourceId") == assignment.name)
        held = {str(result.get("userId")): result for result in ags.get_grades(line)}
    except _lti_errors() as error:
        raise LmsError(f"the line item of {assignment.name} could not be found or made at "
                       f"{registration.lineitems_url}: {_described(error)}") from None
    push.line_item = line.get_id() or ""
    sent_file = sent_path(class_dir)
    sent = json.loads(sent_file.read_text()) if sent_file.is_file() else {}
    record = sent.setdefault(push.line_item, {})
    for student in students:
        user_id = user_of[student]
        score = score_of(grades[student], user_id)
        if _same(held.get(user_id), score, record.get(student)):
            push.unchanged.append(student)
            continue
        timestamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")
        lti = (LtiGrade().set_user_id(user_id).set_score_given(score["scoreGiven"])
               .set_score_maximum(score["scoreMaximum"]).set_activity_progress(score["activityProgress"])
               .set_grading_progress(score["gradingProgress"]).set_timestamp(timestamp))
        if "submittedAt" in score:
            lti.set_submitted_at(score["submittedAt"])
        try:
            ags.put_grade(lti, line)
        except _lti_errors() as error:
            push.failed[student] = _described(error)
            continue
        push.sent.append(student)
        record[student] = score
    write_atomic(sent_file, json.dumps(sent, indent=1, sort_keys=True))
    return push


def push_after_grading(assignment: Assignment, *, class_dir: ClassDirectory,
                       students: list[str] | None = None, retries: int = 5,
                       backoff: float = 0.5) -> Push | None:
    """`push_grades` for the students just graded, when the class's registration asks for it
    (`push_after_grading = true`); None when it does not (or the class has no lms.toml). The
    grading is recorded either way: a failure here is the caller's to report, and the next push
    (this one's or `rlcourse lms push`) sends what is missing."""
    if not (class_dir.root / LMS_FILE).is_file() or not registration_of(class_dir).push_after_grading:
        return None
    return push_grades(assignment, class_dir=class_dir, students=students, retries=retries, backoff=backoff)


def describe_push(name: str, push: Push) -> list[str]:
    """What a push did, as lines for a terminal or a log: each failure and skip, then the counts."""
    return ([f"failed: {student}: {why}" for student, why in push.failed.items()]
            + [f"skipped: {who}: {why}" for who, why in push.skipped.items()]
            + [f"{name} to {push.line_item or 'the LMS'}: {len(push.sent)} sent, {len(push.unchanged)} "
               f"unchanged, {len(push.failed)} failed, {len(push.skipped)} skipped"])
