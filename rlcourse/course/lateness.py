"""When a submission came in, when it was due, and what lateness costs: nbgrader's own model.

nbgrader keeps all of it in the gradebook: the assignment's `duedate`, each student's
`extension` (`Gradebook.grant_extension`), each submission's `timestamp` (read from the
`timestamp.txt` that `nbgrader submit` writes and `nbgrader collect` copies), and each submitted
notebook's `late_submission_penalty`, set by the course's `LateSubmissionPlugin`
(`c.AssignLatePenalties.plugin_class`, or the stock plugin's `penalty_method`). `nbgrader
export` then reports `raw_score`, `late_submission_penalty` and `score`. rlcourse writes the
same columns through the same API, so a course's existing late policy and exports keep working.

`PerHourPenalty` is an example of a course's own plugin: a share of the score per started hour
late, with a cap. Any `LateSubmissionPlugin` subclass is used the same way.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import math
from pathlib import Path

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

TIMESTAMP_FILE = "timestamp.txt"
SECRET_FILE = "submission_secret.txt"
EXCHANGE_FILES = (TIMESTAMP_FILE, SECRET_FILE)
"""What `nbgrader collect` leaves beside a submission and `nbgrader release_feedback` reads
beside each feedback page: the submission time and the secret its feedback file is named by."""


class LatePolicyError(Exception):
    """The course's late-submission plugin could not be loaded or raised: no grade is written."""


class PerHourPenalty(LateSubmissionPlugin):
    """Take `fraction_per_hour` of the score for each started hour late, at most `max_fraction`.

    In `nbgrader_config.py`::

        c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"
        c.PerHourPenalty.fraction_per_hour = 0.1   # 10% of the score per started hour
        c.PerHourPenalty.max_fraction = 0.5        # never more than half of it
    """

    fraction_per_hour = Float(0.1, help="Share of the score taken per started hour late.").tag(config=True)
    max_fraction = Float(0.5, help="The largest share of the score lateness can take.").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        if total_seconds_late <= 0:
            return None
        hours = math.ceil(total_seconds_late / 3600.0)
        return round(score * min(self.max_fraction, hours * self.fraction_per_hour), 6)


# --- timestamps ----------------------------------------------------------------------------------
def read_timestamp(folder: Path) -> tuple[datetime.datetime | None, str | None]:
    """The submission time in `folder/timestamp.txt` (naive UTC, as the gradebook stores it), and
    a warning when the file is missing, empty or unreadable. nbgrader then records no
    timestamp, so the submission counts as on time; the warning says so."""
    from nbgrader.utils import parse_utc

    path = folder / TIMESTAMP_FILE
    if not path.exists():
        return None, (f"no {TIMESTAMP_FILE} in the submission (not collected through the exchange?): "
                      "its time is unknown, so it is treated as on time")
    try:
        text = path.read_text(encoding="utf-8", errors="strict").strip()
    except (OSError, UnicodeDecodeError) as error:
        return None, f"{TIMESTAMP_FILE} could not be read ({error}): the submission is treated as on time"
    if not text:
        return None, f"{TIMESTAMP_FILE} is empty: the submission is treated as on time"
    try:
        return parse_utc(text), None
    except Exception:  # noqa: BLE001 - dateutil raises ValueError, OverflowError, TypeError...
        shown = text if len(text) <= 60 else text[:60] + "…"
        return None, (f"{TIMESTAMP_FILE} holds {shown!r}, not a time: the submission is treated "
                      "as on time; fix the file and run autograde again to apply the late policy")


def iso(moment: datetime.datetime | None) -> str | None:
    return None if moment is None else moment.isoformat(sep=" ") + " UTC"


# --- the course's configuration -----------------------------------------------------------------
def course_config(course_root: Path):
    """The course's nbgrader configuration, loaded as nbgrader's own commands load it: Jupyter's
    config folders, then the course directory's `nbgrader_config.py`, which wins."""
    from jupyter_core.paths import jupyter_config_path
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = Config()
    for folder in [*reversed(jupyter_config_path()), str(course_root)]:
        if (Path(folder) / "nbgrader_config.py").is_file():
            config.merge(PyFileConfigLoader("nbgrader_config.py", path=folder).load_config())
    return config


@contextlib.contextmanager
def course_plugin_importable(course_root: Path, class_path):
    """Make the course's own plugin module importable while nbgrader imports `class_path`.

    nbgrader finds a course's plugin (`c.AssignLatePenalties.plugin_class =
    "late_plugin.OnePointPerHour"`, with `late_plugin.py` beside `nbgrader_config.py`) because
    every nbgrader command puts its working directory, the course directory it is run from, first
    on `sys.path` (`NbGrader.initialize` calls `init_syspath`, `sys.path.insert(0, os.getcwd())`,
    in nbgrader/apps/baseapp.py). rlcourse is not run from there as a rule (`--course-dir`, the
    web service's grading process, a Dask worker), and first on `sys.path` the course directory
    would shadow every installed module: a course made from this template holds a copy of
    `rlcourse/`, which would then be imported instead of the engine.

    So only the plugin's own top-level module is taken from `course_root`, and only when it is
    there (`NAME.py` or `NAME/__init__.py`) and no installed module has that name: the folder is
    appended to the end of `sys.path` for the import alone, and the module is imported afresh
    each time (an edited plugin applies to the next grading, and two classes' plugins of the same
    name in one process are never mixed up). A plugin named after an installed module (a course's
    copy of `rlcourse.course.lateness.PerHourPenalty`) is the installed one."""
    import importlib.machinery
    import sys

    folder = Path(course_root).resolve()
    top = class_path.split(".")[0] if isinstance(class_path, str) else ""
    local = top.isidentifier() and ((folder / f"{top}.py").is_file() or (folder / top / "__init__.py").is_file())
    elsewhere = [entry for entry in sys.path if _resolved(entry) != folder]
    if not local or importlib.machinery.PathFinder.find_spec(top, elsewhere) is not None \
            or top in sys.builtin_module_names:
        yield
        return
    for name in [name for name in sys.modules if name == top or name.startswith(top + ".")]:
        del sys.modules[name]
    added = str(folder) not in sys.path
    if added:
        sys.path.append(str(folder))
    try:
        yield
    finally:
        if added and str(folder) in sys.path:
            sys.path.remove(str(folder))


def _resolved(entry: str) -> Path | None:
    try:
        return Path(entry or ".").resolve()
    except OSError:
        return None


class LatePolicy:
    """The course's late-submission policy: nbgrader's `AssignLatePenalties` preprocessor, built
    from the course configuration, with the plugin it instantiates (a course's own plugin module
    beside its `nbgrader_config.py` included: `course_plugin_importable`)."""

    def __init__(self, course_root: Path):
        from nbgrader.preprocessors import AssignLatePenalties

        try:
            config = course_config(course_root)
            named = config.AssignLatePenalties.get("plugin_class") if "AssignLatePenalties" in config else None
            with course_plugin_importable(course_root, named):
                self.preprocessor = AssignLatePenalties(config=config)
                self.preprocessor.init_plugin()
        except Exception as error:  # noqa: BLE001 - a bad class path or config names the cause
            raise LatePolicyError(f"the late-submission policy could not be loaded: "
                                  f"{type(error).__name__}: {error}") from error
        self.plugin = self.preprocessor.plugin_inst

    @property
    def name(self) -> str:
        plugin = type(self.plugin)
        if plugin is LateSubmissionPlugin:
            return f"nbgrader LateSubmissionPlugin (penalty_method={self.plugin.penalty_method!r})"
        return f"{plugin.__module__}.{plugin.__qualname__}"

    def check(self) -> None:
        """Ask the plugin once, before any grade is written, so a plugin that fails stops the run
        while the gradebook is untouched."""
        self.penalty("rlcourse-policy-check", score=1.0, seconds_late=3600.0, cap=1.0)

    def penalty(self, student: str, *, score: float, seconds_late: float, cap: float) -> float | None:
        """What the plugin charges, kept between 0 and the score as `AssignLatePenalties` keeps it."""
        if seconds_late <= 0:
            return None
        try:
            charged = self.plugin.late_submission_penalty(student, score, seconds_late)
        except Exception as error:  # noqa: BLE001 - any failure of the course's code stops the run
            raise LatePolicyError(f"the late-submission plugin {self.name} failed for {student}: "
                                  f"{type(error).__name__}: {error}") from error
        if charged is None:
            return None
        try:
            charged = float(charged)
        except (TypeError, ValueError) as error:
            raise LatePolicyError(f"the late-submission plugin {self.name} returned {charged!r} for "
                                  f"{student}, not a number") from error
        if math.isnan(charged):
            raise LatePolicyError(f"the late-submission plugin {self.name} returned NaN for {student}")
        return min(max(charged, 0.0), max(cap, 0.0))


# --- what the gradebook says ---------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Timing:
    """One submission's time against its deadline, and what lateness cost, from the gradebook."""

    timestamp: datetime.datetime | None
    duedate: datetime.datetime | None
    """The assignment's due date, without extension."""
    extension: datetime.timedelta | None
    seconds_late: float
    penalty: float
    """Points taken off (0 when on time, or when the policy charges nothing)."""
    raw_score: float | None = None
    """The score before the penalty, as nbgrader computes it (automatic and manual grades)."""
    max_score: float | None = None
    warning: str | None = None

    @property
    def deadline(self) -> datetime.datetime | None:
        """The due date with this student's extension."""
        if self.duedate is None:
            return None
        return self.duedate + (self.extension or datetime.timedelta(0))

    @property
    def late(self) -> bool:
        return self.seconds_late > 0

    @property
    def score(self) -> float | None:
        """The final score, as `nbgrader export` computes it: raw score minus penalty, at least 0."""
        return None if self.raw_score is None else max(0.0, self.raw_score - self.penalty)

    def describe(self) -> str:
        """One line for people: when it came in and what lateness cost."""
        if self.timestamp is None:
            return self.warning or "submission time unknown: treated as on time"
        when = f"submitted {iso(self.timestamp)}"
        if self.deadline is None:
            return when + " (no due date)"
        extension = f", with an extension of {format_duration(self.extension.total_seconds())}" \
            if self.extension else ""
        if not self.late:
            return f"{when}, on time (due {iso(self.deadline)}{extension})"
        cost = f": late penalty {self.penalty:g} points" if self.penalty else ": no late penalty"
        return f"{when}, {format_duration(self.seconds_late)} late (due {iso(self.deadline)}{extension}){cost}"

    def to_json(self) -> dict:
        return {"timestamp": iso(self.timestamp), "duedate": iso(self.duedate),
                "extension_seconds": None if self.extension is None else self.extension.total_seconds(),
                "deadline": iso(self.deadline), "seconds_late": self.seconds_late,
                "penalty": self.penalty, "raw_score": self.raw_score, "score": self.score,
                "max_score": self.max_score, "warning": self.warning}


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours else "",
             f"{minutes} min" if minutes else "", f"{seconds} s" if seconds and not days else ""]
    return " ".join(part for part in parts if part) or "0 s"


def timing_of(submission, *, notebook_id: str | None = None, warning: str | None = None) -> Timing:
    """A gradebook `SubmittedAssignment` as a `Timing`."""
    return Timing(timestamp=submission.timestamp, duedate=submission.assignment.duedate,
                  extension=submission.extension, seconds_late=float(submission.total_seconds_late),
                  penalty=float(submission.late_submission_penalty or 0.0),
                  raw_score=float(submission.score), max_score=float(submission.max_score),
                  warning=warning)


def gradebook_timings(db_url: str, assignment_name: str) -> dict[str, Timing]:
    """student -> Timing for every submission of the assignment in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    timings = {}
    with Gradebook(db_url) as gradebook:
        try:
            submissions = gradebook.assignment_submissions(assignment_name)
        except MissingEntry:
            return {}
        for submission in submissions:
            timings[submission.student.id] = timing_of(submission)
    return timings
