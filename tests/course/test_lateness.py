"""rlcourse.course.lateness: timestamps as nbgrader reads them, the course's late policy through
nbgrader's own AssignLatePenalties/LateSubmissionPlugin, and the penalty in the gradebook."""
import datetime
from pathlib import Path

import pytest

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.record.gradebook import ensure_assignment_in_gradebook, record_in_gradebook
from rlcourse.grading.report import ItemResult, Report
from rlcourse.course.lateness import LatePolicy, LatePolicyError, PerHourPenalty, read_timestamp, timing_of

DUE = datetime.datetime(2026, 3, 2, 17, 0)


def write_config(folder: Path, *lines: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text("c = get_config()\n" + "".join(f"{line}\n" for line in lines))
    return folder


def flat_penalty(points: float) -> str:
    """A course's own plugin module: `points` off for any lateness."""
    return ("from nbgrader.plugins import LateSubmissionPlugin\n"
            "class FlatPenalty(LateSubmissionPlugin):\n"
            "    def late_submission_penalty(self, student_id, score, total_seconds_late):\n"
            f"        return {points!r} if total_seconds_late > 0 else None\n")


class TestReadTimestamp:
    def test_the_exchange_format_is_read_as_naive_utc(self, tmp_path):
        (tmp_path / "timestamp.txt").write_text("2026-03-02 19:30:00.250000 UTC")
        assert read_timestamp(tmp_path) == (datetime.datetime(2026, 3, 2, 19, 30, 0, 250000), None)

    def test_an_offset_is_converted_to_utc(self, tmp_path):
        (tmp_path / "timestamp.txt").write_text("2026-03-02T19:30:00+02:00\n")
        assert read_timestamp(tmp_path)[0] == datetime.datetime(2026, 3, 2, 17, 30)

    @pytest.mark.parametrize("content, says", [
        (None, "no timestamp.txt"), ("", "is empty"), ("next tuesday-ish", "not a time"),
        (b"\xff\xfe", "could not be read")])
    def test_missing_or_garbage_is_on_time_with_a_reason(self, tmp_path, content, says):
        if content is not None:
            path = tmp_path / "timestamp.txt"
            path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
        timestamp, warning = read_timestamp(tmp_path)
        assert timestamp is None and says in warning and "treated as on time" in warning


class TestPerHourPenalty:
    def test_each_started_hour_costs_a_share_of_the_score_up_to_the_cap(self):
        plugin = PerHourPenalty(fraction_per_hour=0.1, max_fraction=0.5)
        assert plugin.late_submission_penalty("s", 30.0, 0) is None
        assert plugin.late_submission_penalty("s", 30.0, 1) == 3.0
        assert plugin.late_submission_penalty("s", 30.0, 3600) == 3.0
        assert plugin.late_submission_penalty("s", 30.0, 3601) == 6.0
        assert plugin.late_submission_penalty("s", 30.0, 10 * 86400) == 15.0


class TestLatePolicy:
    def test_the_stock_plugin_and_its_penalty_method_come_from_the_course_config(self, tmp_path):
        none = LatePolicy(write_config(tmp_path / "none"))
        assert none.penalty("s", score=20.0, seconds_late=60, cap=20.0) is None
        zero = LatePolicy(write_config(tmp_path / "zero", 'c.LateSubmissionPlugin.penalty_method = "zero"'))
        assert zero.penalty("s", score=20.0, seconds_late=60, cap=20.0) == 20.0
        assert zero.penalty("s", score=20.0, seconds_late=0, cap=20.0) is None

    def test_a_custom_plugin_class_and_its_settings(self, tmp_path):
        policy = LatePolicy(write_config(
            tmp_path, 'c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"',
            "c.PerHourPenalty.fraction_per_hour = 0.25"))
        assert isinstance(policy.plugin, PerHourPenalty)
        assert policy.penalty("s", score=20.0, seconds_late=7000, cap=20.0) == 10.0

    def test_a_penalty_is_kept_between_zero_and_the_score(self, tmp_path):
        policy = LatePolicy(write_config(tmp_path))
        policy.plugin.late_submission_penalty = lambda student, score, seconds: 1e9
        assert policy.penalty("s", score=4.0, seconds_late=1, cap=4.0) == 4.0
        policy.plugin.late_submission_penalty = lambda student, score, seconds: -3
        assert policy.penalty("s", score=4.0, seconds_late=1, cap=4.0) == 0.0

    def test_a_plugin_that_raises_names_itself_and_its_message(self, tmp_path):
        folder = write_config(tmp_path / "course", "import sys, os; sys.path.insert(0, os.path.dirname(__file__))",
                              'c.AssignLatePenalties.plugin_class = "brokenpolicy.Broken"')
        (folder / "brokenpolicy.py").write_text(
            "from nbgrader.plugins import LateSubmissionPlugin\n"
            "class Broken(LateSubmissionPlugin):\n"
            "    def late_submission_penalty(self, student_id, score, seconds):\n"
            "        raise RuntimeError('the registrar is closed')\n")
        policy = LatePolicy(folder)
        with pytest.raises(LatePolicyError, match="brokenpolicy.Broken.*the registrar is closed"):
            policy.check()

    def test_a_plugin_module_beside_the_config_loads_as_nbgrader_loads_it(self, tmp_path):
        """Is `late_plugin.py` beside `nbgrader_config.py` found without any `sys.path` line in
        the config (nbgrader runs from the course directory, which it puts on `sys.path`), imported
        afresh for each policy (an edited plugin applies), and `sys.path` left as it was?"""
        import sys

        before = list(sys.path)
        for points in (3.5, 1.25):
            folder = write_config(tmp_path / f"class-{points}",
                                  'c.AssignLatePenalties.plugin_class = "late_plugin.FlatPenalty"')
            (folder / "late_plugin.py").write_text(flat_penalty(points))
            policy = LatePolicy(folder)
            assert policy.name == "late_plugin.FlatPenalty"
            assert policy.penalty("s", score=20.0, seconds_late=60, cap=20.0) == points
        assert sys.path == before

    def test_the_course_directory_never_shadows_an_installed_module(self, tmp_path):
        """A course made from this template holds a copy of `rlcourse/`: a plugin named in it is
        the installed engine's class, never the copy's (which here would raise on import)."""
        folder = write_config(
            tmp_path, 'c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"')
        (folder / "rlcourse").mkdir()
        (folder / "rlcourse" / "__init__.py").write_text("raise ImportError('the course copy was imported')\n")
        assert type(LatePolicy(folder).plugin) is PerHourPenalty

    def test_a_plugin_class_that_does_not_exist_is_a_clear_error(self, tmp_path):
        with pytest.raises(LatePolicyError, match="could not be loaded"):
            LatePolicy(write_config(tmp_path, 'c.AssignLatePenalties.plugin_class = "nowhere.Plugin"'))


@pytest.fixture
def gradebook(tmp_path, ps1):
    from nbgrader.api import Gradebook

    class_dir = ClassDirectory(tmp_path)
    ensure_assignment_in_gradebook(class_dir.db_url, ps1)
    with Gradebook(class_dir.db_url) as book:
        book.update_or_create_assignment("ps1", duedate=DUE)
    return class_dir


def report_scoring(ps1, points: float) -> Report:
    return Report("ps1", ps1.notebook, [ItemResult("policy_loss.x", 16.0, points, points == 16.0,
                                                   cell="test_policy_loss")])


class TestRecordInGradebook:
    def test_the_penalty_lands_where_nbgrader_export_reads_it(self, gradebook, ps1, tmp_path):
        policy = LatePolicy(write_config(tmp_path / "cfg", 'c.LateSubmissionPlugin.penalty_method = "zero"'))
        timing = record_in_gradebook(gradebook.db_url, ps1, "alan", report_scoring(ps1, 12.0),
                                     timestamp=DUE + datetime.timedelta(minutes=5), policy=policy)
        assert (timing.raw_score, timing.penalty, timing.score, timing.seconds_late) == (12.0, 12.0, 0.0, 300.0)

    def test_rerecording_never_counts_the_penalty_twice(self, gradebook, ps1, tmp_path):
        policy = LatePolicy(write_config(
            tmp_path / "cfg", 'c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"'))
        late = DUE + datetime.timedelta(hours=2, minutes=1)
        for _ in range(3):
            timing = record_in_gradebook(gradebook.db_url, ps1, "alan", report_scoring(ps1, 10.0),
                                         timestamp=late, policy=policy)
        assert (timing.raw_score, timing.penalty) == (10.0, 3.0)

    def test_an_extension_and_a_missing_due_date_mean_no_penalty(self, gradebook, ps1, tmp_path):
        from nbgrader.api import Gradebook

        policy = LatePolicy(write_config(tmp_path / "cfg", 'c.LateSubmissionPlugin.penalty_method = "zero"'))
        late = DUE + datetime.timedelta(hours=5)
        record_in_gradebook(gradebook.db_url, ps1, "alan", report_scoring(ps1, 10.0), timestamp=late, policy=policy)
        with Gradebook(gradebook.db_url) as book:
            book.grant_extension("ps1", "alan", days=1)
        timing = record_in_gradebook(gradebook.db_url, ps1, "alan", None, timestamp=late, policy=policy)
        assert (timing.raw_score, timing.penalty, timing.late) == (10.0, 0.0, False)
        assert timing.deadline == DUE + datetime.timedelta(days=1)
        with Gradebook(gradebook.db_url) as book:
            book.grant_extension("ps1", "alan")
            book.update_or_create_assignment("ps1", duedate=None)
        timing = record_in_gradebook(gradebook.db_url, ps1, "alan", None, timestamp=late, policy=policy)
        assert (timing.penalty, timing.deadline) == (0.0, None)
        assert "no due date" in timing.describe()

    def test_a_plugin_failure_leaves_the_students_grades_as_they_were(self, gradebook, ps1, tmp_path):
        from nbgrader.api import Gradebook

        policy = LatePolicy(write_config(tmp_path / "cfg"))
        late = DUE + datetime.timedelta(hours=1)
        record_in_gradebook(gradebook.db_url, ps1, "alan", report_scoring(ps1, 10.0), timestamp=late, policy=policy)

        def broken(student, score, seconds):
            raise ValueError("no policy for " + student)

        policy.plugin.late_submission_penalty = broken
        with pytest.raises(LatePolicyError, match="no policy for alan"):
            record_in_gradebook(gradebook.db_url, ps1, "alan", report_scoring(ps1, 16.0),
                                timestamp=late + datetime.timedelta(hours=1), policy=policy)
        with Gradebook(gradebook.db_url) as book:
            submission = book.find_submission("ps1", "alan")
            assert (submission.score, submission.timestamp) == (10.0, late)
            assert timing_of(submission).penalty == 0.0


def test_a_raising_plugin_stops_autograde_before_any_grade_is_written(tmp_path):
    """The real CLI: the plugin's message, exit status 2, no submission in the gradebook."""
    import os
    import shutil
    import subprocess
    import sys

    from nbgrader.api import Gradebook

    root = Path(__file__).resolve().parents[2]
    folder = write_config(tmp_path, "import sys, os; sys.path.insert(0, os.path.dirname(__file__))",
                          'c.AssignLatePenalties.plugin_class = "strictpolicy.Strict"')
    (folder / "strictpolicy.py").write_text(
        "from nbgrader.plugins import LateSubmissionPlugin\n"
        "class Strict(LateSubmissionPlugin):\n"
        "    def late_submission_penalty(self, student_id, score, seconds):\n"
        "        raise KeyError('late_policy.toml has no entry for ps1')\n")
    (folder / "submitted" / "ada" / "ps1").mkdir(parents=True)
    shutil.copy(root / "demo" / "submitted" / "ada" / "ps1" / "ps1.ipynb", folder / "submitted" / "ada" / "ps1")
    bin_dir = Path(sys.executable).parent
    done = subprocess.run([str(bin_dir / "rlcourse"), "autograde", "ps1", "--course-dir", str(folder)],
                          cwd=root, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}"))
    assert done.returncode == 2
    assert "strictpolicy.Strict" in done.stderr and "late_policy.toml has no entry for ps1" in done.stderr
    if (folder / "gradebook.db").exists():
        with Gradebook(ClassDirectory(folder).db_url) as book:
            assert [student.id for student in book.students] == []
    assert not (folder / "autograded").exists()


def _an_older_release(ps1, folder: Path):
    """ps1 as it was before a test cell was added: the release without its last graded cell (as
    much of an Assignment as the gradebook reads)."""
    import types

    import nbformat

    notebook = nbformat.read(ps1.release_notebook, as_version=4)
    graded = [cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("grade")
              and cell.cell_type == "code"]
    notebook.cells.remove(graded[-1])
    path = folder / "older" / "ps1.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(notebook, path)
    older = types.SimpleNamespace(name=ps1.name, notebook=ps1.notebook, release_notebook=path)
    return older, graded[-1].metadata.nbgrader["grade_id"]


class TestAChangedRelease:
    def test_without_submissions_the_gradebook_takes_the_new_cells(self, tmp_path, ps1):
        from nbgrader.api import Gradebook

        older, added = _an_older_release(ps1, tmp_path)
        class_dir = ClassDirectory(tmp_path)
        ensure_assignment_in_gradebook(class_dir.db_url, older)
        ensure_assignment_in_gradebook(class_dir.db_url, ps1)
        with Gradebook(class_dir.db_url) as book:
            assert added in {cell.name for cell in book.find_notebook("ps1", "ps1").grade_cells}

    def test_with_submissions_it_is_refused_by_name_not_recorded_into_the_old_cells(self, tmp_path, ps1):
        from rlcourse.record.gradebook import GradebookOutOfDate

        older, added = _an_older_release(ps1, tmp_path)
        class_dir = ClassDirectory(tmp_path)
        ensure_assignment_in_gradebook(class_dir.db_url, older)
        record_in_gradebook(class_dir.db_url, older, "alan", report_scoring(ps1, 16.0))
        with pytest.raises(GradebookOutOfDate, match=f"test cells added since: {added}"):
            ensure_assignment_in_gradebook(class_dir.db_url, ps1)
