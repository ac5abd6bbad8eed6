"""A whole course through nbgrader's exchange, with nbgrader's real commands and `rlcourse
autograde`: release, fetch, submit (one student twice, two late, one of them with an extension
granted before anything was graded), collect, grade, release and fetch feedback, export; a
resubmission after grading, collected again with `collect --update`; then `collect
--before-duedate`, and `zip_collect` from an LMS download. Every command here is one
docs/course-walkthrough.md shows.

Each simulated student has a home of their own (HOME), as each real student has their own login:
its `nbgrader_config.py` sets `c.CourseDirectory.student_id` (which `nbgrader submit` and
`fetch_feedback` use instead of the login name, which is the same for all of them here) and
`c.Exchange.cache` inside that home. One home for all of them would not do: nbgrader's cache is
per home, and `fetch_feedback` fetches the feedback of every submission in the cache, whoever
made it (`test_one_cache_for_two_students_hands_each_the_others_page` shows it).

Real time does not pass in a test, so the due date is set after the on-time submissions and
before the late ones: the late students are seconds late, which the per-hour plugin
(rlcourse.course.lateness.PerHourPenalty: 10% of the score per started hour) charges as one hour.
"""
import csv
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.nbgrader]

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO = ROOT / "demo" / "submitted"
COURSE_ID = "rl101"
STUDENTS = ("alice", "bob", "carol", "dave")
FULL, BUGGY = 42.0, 34.0  # ps1 totals of the demo's ada (reference) and alan (clip_without_min)


def env(home: Path | None = None):
    extra = {"HOME": str(home)} if home else {}
    return dict(os.environ, PATH=f"{BIN}:{os.environ.get('PATH', '')}", **extra)


def run(command: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess:
    """One shell command as the walk-through writes it (`nbgrader ...`, `rlcourse ...`)."""
    done = subprocess.run(command, shell=True, cwd=cwd, env=env(home), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


class Course:
    def __init__(self, base: Path):
        self.exchange = base / "exchange"
        self.exchange.mkdir()
        # The exchange must be writable by every student (nbgrader's docs: chmod ugo+rw).
        self.exchange.chmod(0o777)
        self.dir = base / "course"
        (self.dir / "source" / "ps1").mkdir(parents=True)
        shutil.copy(ROOT / "source" / "ps1" / "ps1.ipynb", self.dir / "source" / "ps1")
        (self.dir / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            # as this course's own nbgrader_config.py, so generate_assignment makes the same release
            'c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}\n'
            "c.ClearHiddenTests.enforce_metadata = True\n"
            f"c.Exchange.root = {str(self.exchange)!r}\n"
            'c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"\n'
            "c.PerHourPenalty.fraction_per_hour = 0.1\n"
            "c.PerHourPenalty.max_fraction = 0.5\n")
        self.homes = base / "home"

    def instructor(self, command: str) -> subprocess.CompletedProcess:
        return run(command, self.dir)

    def home(self, student: str) -> Path:
        home = self.homes / student
        if not home.exists():
            home.mkdir(parents=True)
            (home / "nbgrader_config.py").write_text(
                "c = get_config()\n"
                f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
                f"c.CourseDirectory.student_id = {student!r}\n"
                f"c.Exchange.root = {str(self.exchange)!r}\n"
                f"c.Exchange.cache = {str(home / '.nbgrader-cache')!r}\n")
        return home

    def student(self, student: str, command: str) -> subprocess.CompletedProcess:
        home = self.home(student)
        return run(command, home, home)

    def work_on(self, student: str, demo_student: str) -> None:
        """The student edits the fetched notebook into what the demo's `demo_student` wrote."""
        shutil.copy(DEMO / demo_student / "ps1" / "ps1.ipynb", self.home(student) / "ps1" / "ps1.ipynb")

    def rlcourse(self, command: str) -> subprocess.CompletedProcess:
        return run(f"{BIN / 'rlcourse'} {command} --course-dir {self.dir}", ROOT)


def export_rows(course: Course) -> dict[str, dict]:
    course.instructor("nbgrader export")
    with open(course.dir / "grades.csv") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle)}


def fetched_pages(course: Course, student: str) -> dict[str, str]:
    """timestamp folder -> the feedback page `nbgrader fetch_feedback` put in the student's home."""
    folder = course.home(student) / "ps1" / "feedback"
    return {path.parent.name: path.read_text() for path in sorted(folder.glob("*/ps1.html"))}


def grant_extension(course: Course, student: str, length: str) -> subprocess.CompletedProcess:
    """`rlcourse extension ps1 STUDENT --days 2` (or `--remove`), as the walk-through writes it:
    it works before the student has a submission in the gradebook (rlcourse.batch.extensions)."""
    return course.rlcourse(f"extension ps1 {student} {length}")


def submitted_at(course: Course, student: str) -> str:
    return (course.dir / "submitted" / student / "ps1" / "timestamp.txt").read_text().strip()


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """The course run once; each test reads what one stage left."""
    course = Course(tmp_path_factory.mktemp("loop"))
    shown = {}
    course.instructor("nbgrader db student add alice --last-name=Liddell --first-name=Alice")
    for student in ("bob", "carol", "dave"):
        course.instructor(f"nbgrader db student add {student}")
    course.instructor('nbgrader db assignment add ps1 --duedate="2099-01-01 00:00:00 UTC"')
    # Before anything is graded, before the release is even generated here: nbgrader's own
    # Gradebook.grant_extension would raise MissingEntry (dave has no submission yet).
    shown["extension"] = grant_extension(course, "dave", "--days 2").stdout
    course.instructor("nbgrader generate_assignment ps1")
    assert (course.dir / "release" / "ps1" / "ps1.ipynb").read_bytes() == (
        ROOT / "release" / "ps1" / "ps1.ipynb").read_bytes()
    course.instructor("nbgrader release_assignment ps1")
    shown["released"] = course.instructor("nbgrader list").stderr
    for student in STUDENTS:
        course.student(student, "nbgrader fetch_assignment ps1")
    shown["fetched"] = course.student("bob", "nbgrader list").stderr

    course.work_on("alice", "alan")
    course.student("alice", "nbgrader submit ps1")
    time.sleep(1.1)  # submissions are told apart by their timestamp
    course.work_on("alice", "ada")  # she fixed her bug and submitted again: this one counts
    course.student("alice", "nbgrader submit ps1")
    course.work_on("bob", "alan")
    course.student("bob", "nbgrader submit ps1")
    course.work_on("carol", "alan")
    course.student("carol", "nbgrader submit ps1")  # on time, and she will submit again late

    time.sleep(1.1)
    due = utc_now()
    course.instructor(f'nbgrader db assignment add ps1 --duedate="{due}"')
    time.sleep(1.1)

    course.work_on("carol", "ada")
    course.student("carol", "nbgrader submit ps1")  # late: the per-hour plugin takes 10%
    course.work_on("dave", "alan")
    course.student("dave", "nbgrader submit ps1")  # late, but he has an extension
    shown["submitted"] = course.student("carol", "nbgrader list --cached").stderr
    shown["inbound"] = course.instructor("nbgrader list --inbound").stderr

    course.instructor("nbgrader collect ps1")
    shown["autograde"] = course.rlcourse("autograde ps1")
    shown["export"] = export_rows(course)
    shown["release_feedback"] = course.instructor("nbgrader release_feedback ps1")
    for student in STUDENTS:
        shown.setdefault("list_feedback", {})[student] = course.student(
            student, "nbgrader list --cached").stderr
        course.student(student, "nbgrader fetch_feedback ps1")
    shown["gradescope"] = Path(course.rlcourse("export ps1 --format gradescope").stdout.strip())
    shown["csv"] = Path(course.rlcourse("export ps1 --format csv").stdout.strip())
    shown["due"] = due
    return course, shown


class TestExchangeRoundTrip:
    def test_nbgrader_list_shows_each_stage(self, loop):
        course, shown = loop
        assert re.search(rf"{COURSE_ID} ps1\b", shown["released"])
        assert re.search(rf"{COURSE_ID} ps1 .*already downloaded", shown["fetched"])
        submitted = re.findall(rf"{COURSE_ID} carol ps1 (\S+ \S+)", shown["submitted"])
        assert len(submitted) == 2  # both of carol's submissions, from her cache
        inbound = re.findall(rf"{COURSE_ID} (\w+) ps1 ", shown["inbound"])
        assert sorted(inbound) == ["alice", "alice", "bob", "carol", "carol", "dave"]
        alice = shown["list_feedback"]["alice"]  # her first submission has none: it was not graded
        assert alice.count("(feedback ready to be fetched)") == 1
        assert alice.count("(no feedback available)") == 1

    def test_collect_keeps_the_latest_submission_and_autograde_grades_it(self, loop):
        course, shown = loop
        summary = shown["autograde"].stdout
        assert "4 graded" in summary
        alice = json.loads((course.dir / "autograded" / "alice" / "ps1" / "rlcourse-report.json").read_text())
        assert alice["report"]["score"] == FULL  # her second, fixed submission
        assert alice["timing"]["timestamp"].startswith(submitted_at(course, "alice")[:19])

    def test_nbgrader_export_gives_raw_score_penalty_and_final_score(self, loop):
        course, shown = loop
        rows = shown["export"]
        got = {student: (float(row["raw_score"]), float(row["late_submission_penalty"]),
                         float(row["score"])) for student, row in rows.items()}
        assert got == {"alice": (FULL, 0.0, FULL), "bob": (BUGGY, 0.0, BUGGY),
                       "carol": (FULL, 4.2, pytest.approx(FULL - 4.2)),
                       "dave": (BUGGY, 0.0, BUGGY)}
        for student, row in rows.items():
            assert row["timestamp"] and submitted_at(course, student).startswith(row["timestamp"][:19])

    def test_the_summary_shows_who_was_late_and_the_penalty(self, loop):
        _, shown = loop
        lines = {line.split()[1]: line for line in shown["autograde"].stdout.splitlines()
                 if line.startswith("│") and len(line.split()) > 2}
        # the gradebook's totals: ps1's 42 autograded points and its 4 of written answers
        assert "-4.2" in lines["carol"] and "37.8 / 46" in lines["carol"]
        assert "-4.2" not in lines["dave"] and "34 / 46" in lines["dave"]

    def test_each_student_fetches_their_own_page_and_no_one_elses(self, loop):
        course, _ = loop
        for student in STUDENTS:
            pages = fetched_pages(course, student)
            # one page: for the submission that was graded (alice's first one has none)
            assert len(pages) == 1, (student, list(pages))
            (stamp, page), = pages.items()
            assert stamp == submitted_at(course, student)
            assert f'id="student">{student}<' in page
            others = set(STUDENTS) - {student}
            assert not any(f'id="student">{other}<' in page for other in others)

    def test_an_extension_granted_before_grading_is_applied(self, loop):
        course, shown = loop
        assert shown["extension"] == ("dave: ps1 has an extension of 2 d: due 2099-01-03 00:00:00 UTC "
                                      "(the class's due date is 2099-01-01 00:00:00 UTC)\n")
        dave = json.loads((course.dir / "autograded" / "dave" / "ps1" / "rlcourse-report.json").read_text())
        assert dave["timing"]["extension_seconds"] == 2 * 86400 and dave["timing"]["penalty"] == 0.0
        assert dave["timing"]["seconds_late"] == 0.0  # submitted after the due date, before his own

    def test_one_cache_for_two_students_hands_each_the_others_page(self, loop):
        """Why every student has a home of their own: with alice's and bob's submissions in one
        cache (one login used for both), `fetch_feedback` as alice also fetches bob's page."""
        course, _ = loop
        shared = course.homes / "shared-login"
        shared.mkdir()
        (shared / "nbgrader_config.py").write_text(
            (course.home("alice") / "nbgrader_config.py").read_text()
            .replace(str(course.home("alice") / ".nbgrader-cache"), str(shared / ".nbgrader-cache")))
        for student in ("alice", "bob"):
            shutil.copytree(course.home(student) / ".nbgrader-cache", shared / ".nbgrader-cache",
                            dirs_exist_ok=True)
        run("nbgrader fetch_feedback ps1", shared, shared)
        pages = [path.read_text() for path in sorted((shared / "ps1" / "feedback").glob("*/ps1.html"))]
        students = {re.search(r'id="student">(\w+)<', page).group(1) for page in pages}
        assert students == {"alice", "bob"}

    def test_the_fetched_pages_show_lateness_and_penalty(self, loop):
        course, _ = loop
        carol = next(iter(fetched_pages(course, "carol").values()))
        assert 'class="late"' in carol and "<dt>Late penalty</dt><dd>4.2 points</dd>" in carol
        assert 'id="score">37.8 <small>/ 46' in carol
        assert 'id="pending">4 points of written answers await a TA' in carol
        dave = next(iter(fetched_pages(course, "dave").values()))
        assert 'class="on-time"' in dave and "with an extension of 2 d" in dave
        assert "Late penalty" not in dave
        bob = next(iter(fetched_pages(course, "bob").values()))
        assert "clip_without_min" in bob  # ps1's after_due view is the full page

    def test_gradescope_export_has_the_final_score_and_the_lateness(self, loop):
        _, shown = loop
        carol = json.loads((shown["gradescope"] / "carol" / "results.json").read_text())
        assert carol["score"] == pytest.approx(FULL - 4.2)
        assert "late penalty 4.2 points" in carol["output"]
        assert carol["extra_data"]["late"]["penalty"] == 4.2
        dave = json.loads((shown["gradescope"] / "dave" / "results.json").read_text())
        assert dave["score"] == BUGGY and "on time" in dave["output"]
        # a prediction's, a concept check's or a value exercise's test waits for the due date
        assert {test["visibility"] for test in dave["tests"]} == {"visible", "after_due_date"}

    def test_the_lms_csv_has_raw_score_penalty_and_final_score(self, loop):
        _, shown = loop
        rows = {row["student_id"]: row for row in csv.DictReader(open(shown["csv"]))}
        assert (float(rows["carol"]["raw_score"]), float(rows["carol"]["late_submission_penalty"]),
                float(rows["carol"]["score"])) == (FULL, 4.2, pytest.approx(FULL - 4.2))
        assert float(rows["carol"]["seconds_late"]) > 0 and float(rows["dave"]["seconds_late"]) == 0

    def test_an_extension_granted_after_grading_changes_only_the_penalty(self, loop):
        course, _ = loop
        ledger = course.dir / "autograded" / "carol" / "ps1" / "rlcourse-report.json"
        report_before = json.loads(ledger.read_text())["report"]
        grant_extension(course, "carol", "--hours 1")
        again = course.rlcourse("autograde ps1")
        assert "1 late policy updated, 3 unchanged" in again.stdout
        rows = export_rows(course)
        assert (float(rows["carol"]["late_submission_penalty"]), float(rows["carol"]["score"])) == (0.0, FULL)
        assert float(rows["bob"]["score"]) == BUGGY and float(rows["dave"]["late_submission_penalty"]) == 0.0
        assert json.loads(ledger.read_text())["report"] == report_before  # not graded again
        page = (course.dir / "feedback" / "carol" / "ps1" / "ps1.html").read_text()
        assert "Late penalty" not in page and "with an extension of 1 h" in page
        # and running again changes nothing: the penalty is never counted twice
        assert "4 unchanged" in course.rlcourse("autograde ps1").stdout


def test_a_resubmission_after_grading_is_collected_only_with_update(loop):
    """bob submits again after grading (fixed, and late): a second `nbgrader collect ps1` keeps
    the copy it collected before; `nbgrader collect --update ps1` takes the newer one, and
    `rlcourse autograde ps1` grades it alone."""
    course, _ = loop
    graded_before = submitted_at(course, "bob")
    course.work_on("bob", "ada")
    course.student("bob", "nbgrader submit ps1")
    again = course.instructor("nbgrader collect ps1")
    assert "Submission already exists, use --update to update: bob ps1" in again.stderr
    assert submitted_at(course, "bob") == graded_before
    updated = course.instructor("nbgrader collect --update ps1")
    assert re.findall(r"Updating submission: (\w+) ps1", updated.stderr) == ["bob"]
    assert submitted_at(course, "bob") > graded_before
    assert "1 graded, 3 unchanged" in course.rlcourse("autograde ps1").stdout
    bob = export_rows(course)["bob"]
    assert (float(bob["raw_score"]), float(bob["late_submission_penalty"])) == (FULL, 4.2)


def test_collect_before_duedate_grades_the_last_submission_made_in_time(loop):
    """`nbgrader collect --before-duedate`: carol's on-time (buggy) notebook replaces her late one."""
    course, _ = loop
    grant_extension(course, "carol", "--remove")
    course.instructor("nbgrader collect --before-duedate ps1")
    course.rlcourse("autograde ps1")
    rows = export_rows(course)
    assert (float(rows["carol"]["raw_score"]), float(rows["carol"]["late_submission_penalty"])) == (BUGGY, 0.0)
    assert datetime.datetime.fromisoformat(rows["carol"]["timestamp"]) < datetime.datetime.fromisoformat(
        rows["carol"]["duedate"])


def test_zip_collect_from_an_lms_download_feeds_autograde(tmp_path):
    """An LMS's zip of submissions, collected by `nbgrader zip_collect`, the time taken from
    each file name, then graded with the course's late policy."""
    course = Course(tmp_path)
    course.instructor("nbgrader generate_assignment ps1")
    with open(course.dir / "nbgrader_config.py", "a") as config:
        config.write("from nbgrader.plugins import FileNameCollectorPlugin\n"
                     "c.ZipCollectApp.collector_plugin = FileNameCollectorPlugin\n"
                     r"c.FileNameCollectorPlugin.named_regexp = r'.*/(?P<student_id>[a-z]+)_"
                     r"attempt_(?P<timestamp>[0-9T]+)_(?P<file_id>ps1\.ipynb)'" "\n")
    course.instructor('nbgrader db assignment add ps1 --duedate="2026-03-02 17:00:00 UTC"')
    archive = course.dir / "downloaded" / "ps1" / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "lms-download.zip", "w") as bundle:
        bundle.write(DEMO / "ada" / "ps1" / "ps1.ipynb", "frank_attempt_20260302T163000_ps1.ipynb")
        bundle.write(DEMO / "ada" / "ps1" / "ps1.ipynb", "gina_attempt_20260302T194500_ps1.ipynb")
    course.instructor("nbgrader zip_collect ps1")
    assert sorted(p.name for p in (course.dir / "submitted").iterdir()) == ["frank", "gina"]
    graded = course.rlcourse("autograde ps1")
    assert "gina was not in the gradebook: added" in graded.stderr  # as nbgrader autograde adds them
    rows = export_rows(course)
    # gina is 2 h 45 min late: three started hours, 30% of 42
    assert {s: float(r["late_submission_penalty"]) for s, r in rows.items()} == {"frank": 0.0, "gina": 12.6}
