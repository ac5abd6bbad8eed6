"""An assignment's `assignment.toml`, read into a typed, frozen model, and the one error every
course mistake raises.

A course author's mistake (a misspelt key, a limit given as a string, a framework the worker
does not know, a notebook name that is not in the release) must stop the engine before it
grades anyone, with one line that names the file, the key and what is allowed: read as a
plain dict, such a mistake became a `TypeError` deep in the worker's limits, or every student's
zero. Every check here raises `CourseError`, which the command line prints as one line.
"""
from __future__ import annotations

import dataclasses
import datetime
import tomllib
from pathlib import Path

import attrs

from rlcourse.course.variants import Variants, VariantsError
from rlcourse.course.visibility import FeedbackPolicy, PolicyError
from rlcourse.worker.limits import Limits
from rlcourse.worker.frameworks import FRAMEWORKS


class CourseError(Exception):
    """The course directory or an assignment's configuration is missing or wrong: the author's
    mistake, never a student's. The command line shows it as one line and grades nothing."""


KEYS = {"title": "a string", "notebook": "a file name ending in .ipynb",
        "framework": f"one of {', '.join(sorted(FRAMEWORKS))}",
        "skip_cells": "a list of grade_ids", "limits": "a table", "feedback": "a table",
        "variants": "a table (rlcourse.course.variants)",
        "web": "a table", "gradescope": "a table", "regrades": "a table"}
"""The keys `assignment.toml` may hold, and what each must be."""
REQUIRED = ("notebook", "framework")


def limit_kinds() -> dict[str, type]:
    """Each limit `[limits]` may set, and its type (whole numbers for bytes and counts)."""
    return {field.name: type(field.default) for field in dataclasses.fields(Limits)}


@attrs.frozen
class WebPolicy:
    """`[web]`: what `rlcourse web` allows each student per assignment. Generous by default: a
    limit is there to keep one student from filling the queue, not to ration feedback."""

    submissions_per_window: int = 10
    """Gradings a student may ask for within any `window_minutes`."""
    window_minutes: int = 60
    """The rolling window `submissions_per_window` counts in, in minutes."""
    accept_late: bool = True
    """Whether a submission after the student's deadline (due date plus extension) is accepted
    (and penalised by the course's late policy) or refused."""
    counts: str = "latest"
    """Which graded submission the gradebook holds: the `latest`, or the `best` (the highest
    score after any late penalty; the newest of equals)."""
    opens: datetime.datetime | None = None
    """When the service starts taking uploads of the assignment (naive UTC); None: as soon as it
    is released to the class."""
    closes: datetime.datetime | None = None
    """When it stops (naive UTC), moved by each student's extension as the due date is; None:
    never (late work is then `accept_late`'s to decide). Unlike `accept_late`, a hard end: the
    day the solutions are discussed, say."""
    history_megabytes: int = 200
    """The most a student's uploads of the assignment that the service keeps (every accepted one,
    in `web/history/<student>/<assignment>/`) may take, in MB: an upload that would pass it is
    refused, saying so. 200 MB holds a hundred or more notebooks with their figures."""

    @classmethod
    def from_table(cls, table: dict, *, where: str) -> "WebPolicy":
        kinds = {"submissions_per_window": int, "window_minutes": int, "accept_late": bool, "counts": str,
                 "opens": datetime.datetime, "closes": datetime.datetime, "history_megabytes": int}
        values = dict(table)
        for key, value in table.items():
            if key not in kinds:
                raise CourseError(f"{where}: unknown key {key!r} (allowed: {', '.join(kinds)})")
            if key == "counts" and value not in ("latest", "best"):
                raise CourseError(f"{where}: counts = {value!r}; it must be \"latest\" or \"best\"")
            if kinds[key] is bool and not isinstance(value, bool):
                raise CourseError(f"{where}: {key} = {value!r}; it must be true or false")
            if kinds[key] is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise CourseError(f"{where}: {key} = {value!r}; it must be a positive whole number")
            if kinds[key] is datetime.datetime:
                values[key] = utc_moment(value, key=key, where=where)
        if values.get("opens") and values.get("closes") and values["opens"] >= values["closes"]:
            raise CourseError(f"{where}: opens = {table['opens']} is not before closes = {table['closes']}")
        return cls(**values)


def utc_moment(value, *, key: str, where: str) -> datetime.datetime:
    """A TOML date-time as naive UTC, the way nbgrader's gradebook keeps times: with an offset
    (`2026-03-02T17:00:00Z`, `...+01:00`) converted, without one taken as UTC. A bare date or a
    quoted string is refused: its moment would be a guess."""
    if not isinstance(value, datetime.datetime):
        raise CourseError(f"{where}: {key} = {value!r}; it must be a TOML date-time such as "
                          "2026-03-02T17:00:00Z (unquoted, with a time; without an offset it is UTC)")
    if value.tzinfo is not None:
        value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return value


REGRADE_OPENINGS = {"feedback": "when the item's outcome is shown to the student: at grading for an item the "
                               "feedback policy shows before the due date, at the student's deadline for a "
                               "sealed one",
                    "due": "at the student's deadline (the due date plus any extension), for every item"}
"""What `[regrades] opens` may say: from when a student may ask for a regrade of an item."""


@attrs.frozen
class RegradePolicy:
    """`[regrades]`: when a student may ask for an item or written answer to be regraded
    (rlcourse.record.requests). The window of each item opens as `opens` says, and never before
    its outcome is visible to the student nor before its score was last set (a TA's mark, a
    regrade); it closes `days` later."""

    enabled: bool = True
    """Whether students may ask at all."""
    opens: str = "feedback"
    """`feedback` or `due` (REGRADE_OPENINGS)."""
    days: int = 7
    """How long the window stays open, in days."""

    @classmethod
    def from_table(cls, table: dict, *, where: str) -> "RegradePolicy":
        kinds = {"enabled": bool, "opens": str, "days": int}
        for key, value in table.items():
            if key not in kinds:
                raise CourseError(f"{where}: unknown key {key!r} (allowed: {', '.join(kinds)})")
            if kinds[key] is bool and not isinstance(value, bool):
                raise CourseError(f"{where}: {key} = {value!r}; it must be true or false")
            if kinds[key] is int and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
                raise CourseError(f"{where}: {key} = {value!r}; it must be a positive whole number of days")
        if "opens" in table and table["opens"] not in REGRADE_OPENINGS:
            raise CourseError(f"{where}: opens = {table['opens']!r}; it must be one of "
                              f"{', '.join(map(repr, REGRADE_OPENINGS))}")
        return cls(**table)


GRADESCOPE_FIELDS = {"sid": "the roster's student id", "email": "the e-mail address",
                     "email_user": "the e-mail address before its @", "id": "Gradescope's user number"}
"""Fields of a user in Gradescope's submission_metadata.json that may name the course's student."""
DEFAULT_STUDENT_FIELDS = ("sid", "email")


@attrs.frozen
class GradescopePolicy:
    """`[gradescope]`: how Gradescope's autograder finds the course's student id of an upload,
    which per-student variants are graded against (rlcourse.batch.gradescope)."""

    student_id: tuple[str, ...] = DEFAULT_STUDENT_FIELDS
    """The fields of the uploader (`users[0]` of submission_metadata.json) tried in order; the
    first present and non-empty one is the student id. Gradescope's `sid` is the Student ID
    column of its roster, which a course usually fills from the same list as nbgrader's."""

    @classmethod
    def from_table(cls, table: dict, *, where: str) -> "GradescopePolicy":
        unknown = sorted(set(table) - {"student_id"})
        if unknown:
            raise CourseError(f"{where}: unknown key {', '.join(map(repr, unknown))} (allowed: student_id)")
        fields = table.get("student_id", list(DEFAULT_STUDENT_FIELDS))
        if not (isinstance(fields, list) and fields and all(field in GRADESCOPE_FIELDS for field in fields)):
            raise CourseError(f"{where}: student_id = {fields!r}; it must be a non-empty list of "
                              f"{', '.join(map(repr, GRADESCOPE_FIELDS))}")
        return cls(student_id=tuple(fields))


def read_toml(path: Path) -> dict:
    """The TOML file at `path` as a table, or a CourseError naming the file and the parse error."""
    try:
        return tomllib.loads(Path(path).read_text())
    except tomllib.TOMLDecodeError as error:
        raise CourseError(f"{path}: not valid TOML ({error})") from None


@attrs.frozen
class AssignmentConfig:
    """What `graders/<name>/assignment.toml` declares, checked."""

    notebook: str
    """File name of the notebook students submit (as in release/<name>/)."""
    framework: str
    """Array library student functions use: one of rlcourse.worker.frameworks.FRAMEWORKS."""
    title: str = ""
    """The assignment's name as pages and reports show it."""
    limits: Limits = Limits()
    """`[limits]`: what one worker may use (rlcourse.worker.limits.Limits)."""
    fixed_limits: frozenset[str] = frozenset()
    """The limits the file sets; the time limits it leaves out are derived from the reference."""
    skip_cells: tuple[str, ...] = ()
    """grade_ids of cells grading does not run (demonstrations no item needs): time saved."""
    feedback: FeedbackPolicy = FeedbackPolicy()
    """`[feedback]`: what a student may see, before and after their deadline."""
    variants: Variants = Variants()
    """Each student's own parameter values ([variants]); off when the table is absent."""
    web: WebPolicy = WebPolicy()
    """`[web]`: what `rlcourse web` allows each student."""
    gradescope: GradescopePolicy = GradescopePolicy()
    """`[gradescope]`: how Gradescope's autograder finds an upload's student id."""
    regrades: RegradePolicy = RegradePolicy()
    """`[regrades]`: the window in which a student may ask for a regrade."""

    @classmethod
    def read(cls, path: Path) -> "AssignmentConfig":
        """The file at `path` as a model, or a CourseError naming the file, key and remedy."""
        path = Path(path)
        return cls.from_table(read_toml(path), where=str(path))

    @classmethod
    def from_table(cls, data: dict, *, where: str) -> "AssignmentConfig":
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise CourseError(f"{where}: unknown key {', '.join(map(repr, unknown))} "
                              f"(allowed: {', '.join(KEYS)})")
        missing = [key for key in REQUIRED if key not in data]
        if missing:
            raise CourseError(f"{where}: {missing[0]!r} is missing; it must be {KEYS[missing[0]]}")
        for key in ("title", "notebook", "framework"):
            if key in data and not isinstance(data[key], str):
                raise CourseError(f"{where}: {key} = {data[key]!r}; it must be {KEYS[key]}")
        if not data["notebook"].endswith(".ipynb") or "/" in data["notebook"]:
            raise CourseError(f"{where}: notebook = {data['notebook']!r}; it must be {KEYS['notebook']}")
        if data["framework"] not in FRAMEWORKS:
            raise CourseError(f"{where}: framework = {data['framework']!r}; it must be "
                              f"{KEYS['framework']}")
        skip = data.get("skip_cells", [])
        if not (isinstance(skip, list) and all(isinstance(cell, str) for cell in skip)):
            raise CourseError(f"{where}: skip_cells must be a list of grade_ids")
        for key in ("limits", "feedback", "web", "gradescope", "regrades"):
            if not isinstance(data.get(key, {}), dict):
                raise CourseError(f"{where}: {key} must be a table ([{key}])")
        limits = read_limits(data.get("limits", {}), where=f"{where} [limits]")
        try:
            feedback = FeedbackPolicy.from_table(data.get("feedback"), where=f"{where} [feedback]")
        except PolicyError as error:
            raise CourseError(str(error)) from None
        try:
            variants = Variants.from_table(data.get("variants"), where=f"{where} [variants]")
        except VariantsError as error:
            raise CourseError(str(error)) from None
        return cls(notebook=data["notebook"], framework=data["framework"],
                   title=data.get("title", ""), limits=limits,
                   fixed_limits=frozenset(data.get("limits", {})), skip_cells=tuple(skip),
                   feedback=feedback, variants=variants,
                   web=WebPolicy.from_table(data.get("web", {}), where=f"{where} [web]"),
                   gradescope=GradescopePolicy.from_table(data.get("gradescope", {}),
                                                          where=f"{where} [gradescope]"),
                   regrades=RegradePolicy.from_table(data.get("regrades", {}), where=f"{where} [regrades]"))


def read_limits(table: dict, *, where: str) -> Limits:
    """`[limits]` as `Limits`: known names only, positive numbers of the right kind."""
    kinds = limit_kinds()
    for key, value in table.items():
        if key not in kinds:
            raise CourseError(f"{where}: unknown limit {key!r} (allowed: {', '.join(kinds)})")
        whole = kinds[key] is int
        allowed = (int,) if whole else (int, float)
        if isinstance(value, bool) or not isinstance(value, allowed) or value <= 0:
            what = "a positive whole number" if whole else "a positive number of seconds"
            raise CourseError(f"{where}: {key} = {value!r}; it must be {what}")
    return Limits(**{key: kinds[key](value) for key, value in table.items()})


def check_release_has_notebook(config: AssignmentConfig, *, release_dir: Path, where: str) -> None:
    """A notebook name that is not in the released folder would make every submission look
    misnamed (each student's zero): refuse it, naming the notebooks the release holds."""
    if release_dir.is_dir() and not (release_dir / config.notebook).is_file():
        present = sorted(path.name for path in release_dir.glob("*.ipynb"))
        raise CourseError(f"{where}: notebook = {config.notebook!r} is not in {release_dir}/ "
                          f"(it holds: {', '.join(present) or 'no notebook'})")


# --- the LMS (LTI 1.3 Advantage): `lms.toml` in the class directory -------------------------------
LMS_FILE = "lms.toml"
"""The class's LMS registration, beside its gradebook: it names one offering of the course in one
LMS, so it belongs to the class directory, never to the course's release."""
STUDENT_ID_FIELDS = {"lis_person_sourcedid": "the SIS id the LMS holds (Canvas's SIS User ID, "
                                              "Moodle's ID number)",
                     "email": "the e-mail address", "email_user": "the e-mail address before its @"}
"""Fields of an LMS member (Names and Roles) that may hold the nbgrader student id."""


@attrs.frozen
class LmsRegistration:
    """`lms.toml`: the tool's registration in one LMS course (what the LMS's administrator gives
    when they add the tool), read by `rlcourse lms` and `rlcourse web`'s LTI launch."""

    issuer: str
    """The platform's issuer (`iss`), e.g. https://canvas.instructure.com."""
    client_id: str
    """The tool's client id in that platform (Canvas: the developer key's number)."""
    deployment_ids: tuple[str, ...]
    """The deployments a launch may come from; any other is refused."""
    auth_login_url: str
    """The platform's OIDC authorisation endpoint, where a login is sent to be signed."""
    auth_token_url: str
    """The platform's OAuth2 token endpoint (client credentials with a signed JWT)."""
    key_set_url: str
    """The platform's JWKS: the public keys an id_token's signature is checked against."""
    lineitems_url: str = ""
    """The course's AGS line items URL (Canvas: https://HOST/api/lti/courses/ID/line_items)."""
    memberships_url: str = ""
    """The course's NRPS context memberships URL (Canvas: .../api/lti/courses/ID/names_and_roles)."""
    student_id: str = "lis_person_sourcedid"
    """Which field of an LMS member is their nbgrader student id (one of STUDENT_ID_FIELDS)."""
    auth_audience: str = ""
    """The `aud` of the token request's JWT when the platform wants other than the token URL
    (Moodle and Canvas take the token URL: leave it empty)."""
    push_after_grading: bool = False
    """Send the grades of record to the LMS after every `rlcourse autograde` (its students) and
    after every submission `rlcourse web` grades (that student), as `rlcourse lms push` does;
    a TA's marks, overrides and answered regrade requests still wait for the next push."""

    @classmethod
    def read(cls, path: Path) -> "LmsRegistration":
        """`path` (a class directory's lms.toml) as a model, or a CourseError saying what is wrong."""
        path = Path(path)
        if not path.is_file():
            raise CourseError(f"{path} is missing: the LMS registration (issuer, client_id, "
                              "deployment_ids, auth_login_url, auth_token_url, key_set_url); see "
                              "docs/instructors/lms.md")
        return cls.from_table(read_toml(path), where=str(path))

    @classmethod
    def from_table(cls, data: dict, *, where: str) -> "LmsRegistration":
        fields = {field.name: field for field in attrs.fields(cls)}
        unknown = sorted(set(data) - set(fields))
        if unknown:
            raise CourseError(f"{where}: unknown key {', '.join(map(repr, unknown))} "
                              f"(allowed: {', '.join(fields)})")
        missing = [name for name, field in fields.items()
                   if field.default is attrs.NOTHING and name not in data]
        if missing:
            raise CourseError(f"{where}: {missing[0]!r} is missing")
        values = dict(data)
        deployments = values.get("deployment_ids")
        if not (isinstance(deployments, list) and deployments and all(isinstance(d, str) and d for d in deployments)):
            raise CourseError(f"{where}: deployment_ids = {deployments!r}; it must be a non-empty list of strings")
        values["deployment_ids"] = tuple(deployments)
        if not isinstance(values.get("push_after_grading", False), bool):
            raise CourseError(f"{where}: push_after_grading = {values['push_after_grading']!r}; "
                              "it must be true or false")
        for name in set(fields) - {"deployment_ids", "push_after_grading"}:
            if name in values and not isinstance(values[name], str):
                raise CourseError(f"{where}: {name} = {values[name]!r}; it must be a string")
        for name in ("issuer", "auth_login_url", "auth_token_url", "key_set_url", "lineitems_url",
                     "memberships_url"):
            value = values.get(name, "")
            if value and not value.startswith(("https://", "http://127.0.0.1", "http://localhost")):
                raise CourseError(f"{where}: {name} = {value!r}; it must be an https:// URL "
                                  "(plain http only on the loopback, for a test platform)")
        if values.get("student_id", "lis_person_sourcedid") not in STUDENT_ID_FIELDS:
            raise CourseError(f"{where}: student_id = {values['student_id']!r}; it must be one of "
                              f"{', '.join(map(repr, STUDENT_ID_FIELDS))}")
        return cls(**values)
