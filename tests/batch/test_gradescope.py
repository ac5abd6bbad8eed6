"""rlcourse.batch.gradescope: the autograder zip, finding the upload, and results.json under the policy.

Fast tests here build the zip and results by hand; tests/batch/test_gradescope_autograder.py runs the
zip inside a simulated /autograder (slow).
"""
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rlcourse.batch.gradescope import (HIDDEN_OWNER, MAX_UPLOAD_BYTES, UploadProblem, after_deadline, build_autograder,
                                 find_notebook, results_json, run, uploader)
from rlcourse.course.visibility import FeedbackPolicy
from rlcourse.grading.grade import Grade, Written
from rlcourse.grading.report import ItemResult, Report

ROOT = Path(__file__).resolve().parents[2]


def make_report(errors=()):
    items = [ItemResult("returns_to_go.random_batches", 2.0, 2.0, True, "", None, "reward-to-go"),
             ItemResult("policy_loss.ppo_value", 3.0, 0.0, False,
                        "policy_loss gave -1.24, the clipped term without the min.", "clip_without_min",
                        "clipped loss value")]
    return Report("ps1", "ps1.ipynb", items, errors=list(errors), sha256="ab" * 32, isolation="rlimits",
                  confinement={"landlock": 7, "pids_cgroup": False})


def graded(errors=(), written=()) -> Grade:
    return Grade(make_report(errors), tuple(written))


# --- the zip ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def autograder_zip(ps1, tmp_path_factory):
    return build_autograder(ps1, out=tmp_path_factory.mktemp("zip"))


class TestBuildAutograder:
    def test_setup_and_run_autograder_are_executable_at_the_root(self, autograder_zip):
        with zipfile.ZipFile(autograder_zip) as archive:
            modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
        assert modes["graders/ps1/test_policy_loss.py"] & 0o777 == 0o600
        assert modes["release/ps1/ps1.ipynb"] & 0o777 == 0o644

    def test_it_holds_the_engine_and_this_assignment_only(self, autograder_zip):
        names = set(zipfile.ZipFile(autograder_zip).namelist())
        assert {"nbgrader_config.py", "constraints.txt", "pyproject.toml", "rlcourse/batch/gradescope.py",
                "rlcourse/worker/server.py", "rlcourse/batch/gradescope_files/run_autograder",
                "graders/ps1/assignment.toml", "solutions/ps1/exact.py", "source/ps1/ps1.ipynb",
                "release/ps1/ps1.ipynb"} <= names
        assert not [name for name in names if "ps2" in name or "ps3" in name]
        assert not [name for name in names if "__pycache__" in name or ".rlcourse-cache" in name
                    or name.startswith(("demo/", "tests/", "submitted/", "autograded/"))]

    def test_the_hidden_files_are_stored_for_their_owner_alone(self, autograder_zip):
        """The graders, the oracle and solutions and the instructor's notebook: 0600 in the zip
        (setup.sh makes them root's: TestLockHiddenFiles); nothing else is."""
        with zipfile.ZipFile(autograder_zip) as archive:
            modes = {info.filename: (info.external_attr >> 16) & 0o777 for info in archive.infolist()}
        hidden = {name for name in modes if name.split("/")[0] in ("graders", "solutions", "source")}
        assert {"solutions/ps1/exact.py", "source/ps1/ps1.ipynb", "graders/ps1/assignment.toml"} <= hidden
        assert {modes[name] for name in hidden} == {0o600}
        assert {modes[name] for name in set(modes) - hidden} == {0o644, 0o755}

    @pytest.mark.hostile("gradescope-zip-instructor-paths")
    def test_no_path_or_setting_of_the_instructors_machine_ships(self, tmp_path):
        """The course's nbgrader_config.py may name the instructor's own paths (an exchange, a
        plugin folder): the zip has a neutral one instead, and no file in it names the course's
        folder."""
        from course_copy import copy_course
        from rlcourse.course.directory import Course

        course = copy_course(tmp_path / "home" / "prof" / "rl-course-2026")
        for name in ("pyproject.toml", "constraints.txt"):
            (course / name).write_bytes((ROOT / name).read_bytes())
        config = course / "nbgrader_config.py"
        config.write_text(config.read_text() + '\nc.Exchange.root = "/home/prof/private/exchange"\n'
                          'c.CourseDirectory.root = "/home/prof/rl-course-2026"\n')
        zip_path = build_autograder(Course(course).assignment("ps1"), out=tmp_path / "zip")
        with zipfile.ZipFile(zip_path) as archive:
            texts = {name: archive.read(name).decode(errors="replace") for name in archive.namelist()}
        shipped = texts["nbgrader_config.py"]
        assert "c = get_config()" in shipped and "/home/prof" not in shipped
        assert "rlcourse gradescope ps1" in shipped  # says where it came from
        assert not [name for name, text in texts.items()
                    if "/home/prof" in text or str(course) in text or str(tmp_path) in text]

    def test_setup_locks_the_hidden_files_before_anything_is_graded(self, autograder_zip):
        with zipfile.ZipFile(autograder_zip) as archive:
            lines = archive.read("setup.sh").decode().splitlines()
        lock = next(i for i, line in enumerate(lines) if "rlcourse.batch.gradescope lock" in line)
        warm = next(i for i, line in enumerate(lines) if "rlcourse.batch.gradescope warm" in line)
        assert lock < warm

    def test_the_scripts_name_the_assignment(self, autograder_zip):
        with zipfile.ZipFile(autograder_zip) as archive:
            for script in ("setup.sh", "run_autograder"):
                text = archive.read(script).decode()
                assert '"ps1"' in text and "{{" not in text

    def test_the_same_course_gives_the_same_bytes(self, ps1, autograder_zip, tmp_path):
        assert build_autograder(ps1, out=tmp_path).read_bytes() == autograder_zip.read_bytes()

    def test_the_scripts_pass_shellcheck(self, autograder_zip, tmp_path):
        """shellcheck is installed by .ci/run and `make install` (Debian's package)."""
        with zipfile.ZipFile(autograder_zip) as archive:
            archive.extract("setup.sh", tmp_path)
            archive.extract("run_autograder", tmp_path)
        result = subprocess.run(["shellcheck", "--shell=bash", str(tmp_path / "setup.sh"),
                                 str(tmp_path / "run_autograder")], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout


class TestLockHiddenFiles:
    def test_hidden_folders_become_roots_alone_and_links_are_not_followed(self, autograder_zip, tmp_path):
        """What setup.sh runs (`python -m rlcourse.batch.gradescope lock`) on the unpacked zip:
        owned by a uid that is neither a worker's (0 or nobody) nor anyone's, 0700/0600."""
        source = tmp_path / "source"
        with zipfile.ZipFile(autograder_zip) as archive:
            archive.extractall(source)
        outside = tmp_path / "outside.txt"
        outside.write_text("not the course's\n")
        outside.chmod(0o644)
        (source / "solutions" / "ps1" / "link").symlink_to(outside)
        subprocess.run([sys.executable, "-m", "rlcourse.batch.gradescope", "lock", "ps1", "--course",
                        str(source)], check=True, capture_output=True, timeout=120)
        for kind in ("graders", "solutions", "source"):
            for path in [source / kind, *(source / kind).rglob("*")]:
                if path.is_symlink():
                    continue
                info = path.lstat()
                assert stat.S_IMODE(info.st_mode) == (0o700 if path.is_dir() else 0o600), path
                if os.geteuid() == 0:
                    assert (info.st_uid, info.st_gid) == (HIDDEN_OWNER, HIDDEN_OWNER) != (0, 0)
        assert stat.S_IMODE(outside.stat().st_mode) == 0o644
        assert stat.S_IMODE((source / "release" / "ps1").stat().st_mode) & 0o005 == 0o005
        assert stat.S_IMODE((source / "rlcourse").stat().st_mode) & 0o005 == 0o005


# --- finding the upload -----------------------------------------------------------------------------
def touch(path: Path, data=b"{}"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


class TestFindNotebook:
    def test_a_notebook_at_any_depth_is_found(self, tmp_path):
        notebook = touch(tmp_path / "Archive" / "ps1" / "ps1.ipynb")
        touch(tmp_path / "Archive" / "notes.txt")
        assert find_notebook(tmp_path) == notebook

    def test_checkpoints_hidden_files_and_macos_forks_are_not_the_submission(self, tmp_path):
        notebook = touch(tmp_path / "ps1.ipynb")
        touch(tmp_path / ".ipynb_checkpoints" / "ps1-checkpoint.ipynb")
        touch(tmp_path / "__MACOSX" / "._ps1.ipynb")
        touch(tmp_path / "._ps1.ipynb")
        assert find_notebook(tmp_path) == notebook

    def test_no_notebook_lists_what_was_uploaded(self, tmp_path):
        touch(tmp_path / "answers.py")
        with pytest.raises(UploadProblem, match=r"no notebook \(.ipynb\).*answers.py"):
            find_notebook(tmp_path)

    def test_an_empty_upload_says_so(self, tmp_path):
        with pytest.raises(UploadProblem, match="empty"):
            find_notebook(tmp_path)

    def test_two_notebooks_are_named(self, tmp_path):
        touch(tmp_path / "ps1.ipynb")
        touch(tmp_path / "old" / "ps1 copy.ipynb")
        with pytest.raises(UploadProblem, match=r"2 notebooks \(old/ps1 copy.ipynb, ps1.ipynb\)"):
            find_notebook(tmp_path)

    def test_a_zip_asks_for_the_notebook_itself(self, tmp_path):
        touch(tmp_path / "ps1.zip", b"PK\x03\x04")
        with pytest.raises(UploadProblem, match="only the archive ps1.zip"):
            find_notebook(tmp_path)

    @pytest.mark.hostile("gradescope-upload-link")
    def test_a_link_is_refused_not_followed(self, tmp_path, ps1):
        (tmp_path / "ps1.ipynb").symlink_to(ps1.source_notebook)
        with pytest.raises(UploadProblem, match="link"):
            find_notebook(tmp_path)

    @pytest.mark.hostile("gradescope-upload-linked-folder")
    def test_a_linked_folder_is_not_searched(self, tmp_path, ps1):
        (tmp_path / "elsewhere").symlink_to(ps1.source_notebook.parent)
        with pytest.raises(UploadProblem, match="no notebook"):
            find_notebook(tmp_path)

    @pytest.mark.hostile("gradescope-upload-too-large")
    def test_a_notebook_too_large_is_refused_with_what_to_do(self, tmp_path):
        with open(tmp_path / "ps1.ipynb", "wb") as stream:
            stream.truncate(MAX_UPLOAD_BYTES + 1)
        with pytest.raises(UploadProblem, match="Clear All Outputs"):
            find_notebook(tmp_path)


# --- submission_metadata.json --------------------------------------------------------------------------
def metadata(created, due, late=None):
    return {"created_at": created, "assignment": {"due_date": due, "late_due_date": late}}


class TestAfterDeadline:
    def test_before_and_after_the_due_date_with_time_zones(self):
        due = "2026-12-10T23:00:00.000000-08:00"  # 07:00 UTC on the 11th
        assert not after_deadline(metadata("2026-12-11T06:59:59+00:00", due))
        assert after_deadline(metadata("2026-12-11T07:00:00Z", due))

    def test_a_late_due_date_is_the_deadline_when_set(self):
        due, late = "2026-12-10T23:00:00-08:00", "2026-12-12T23:00:00-08:00"
        assert not after_deadline(metadata("2026-12-11T12:00:00-08:00", due, late))
        assert after_deadline(metadata("2026-12-13T00:00:00-08:00", due, late))

    @pytest.mark.parametrize("data", [None, [], {}, {"created_at": "yesterday"},
                                      metadata("2026-12-11T00:00:00Z", None),
                                      {"created_at": "2026-12-11T00:00:00Z", "assignment": "x"}])
    def test_unknown_is_before_so_gradescope_decides_by_its_clock(self, data):
        assert after_deadline(data) is False


class TestUploader:
    """Gradescope's documented user fields are email, id and name; `sid` (the roster's Student ID)
    is present when the roster has one."""
    ADA = {"email": "ada.l@example.edu", "id": 1234, "name": "Ada L", "sid": "ada"}

    def test_the_roster_id_first_then_the_email(self):
        assert uploader({"users": [self.ADA]}) == "ada"
        assert uploader({"users": [dict(self.ADA, sid=None)]}) == "ada.l@example.edu"
        assert uploader({"users": [dict(self.ADA, sid="  ")]}) == "ada.l@example.edu"

    def test_the_fields_are_the_courses_choice(self):
        assert uploader({"users": [self.ADA]}, ("email_user",)) == "ada.l"
        assert uploader({"users": [self.ADA]}, ("id",)) == "1234"
        assert uploader({"users": [{"email": "x@y"}]}, ("sid", "id")) is None

    def test_a_group_upload_is_its_first_members(self):
        assert uploader({"users": [self.ADA, dict(self.ADA, sid="alan")]}) == "ada"

    @pytest.mark.parametrize("data", [None, {}, {"users": []}, {"users": "ada"}, {"users": ["ada"]},
                                      {"users": [{"sid": True}]}, {"users": [{"sid": ["ada"]}]}])
    def test_no_usable_id_is_none(self, data):
        assert uploader(data) is None


# --- results.json ------------------------------------------------------------------------------------
def by_name(results):
    return {test["name"]: test for test in results["tests"]}


class TestResultsJson:
    def test_full_policy_shows_every_item_with_its_diagnosis(self):
        results = results_json(graded(), policy=FeedbackPolicy(), late=False, seconds=4.4)
        assert results["score"] == 2.0 and results["visibility"] == "visible"
        assert results["execution_time"] == 4 and results["stdout_visibility"] == "hidden"
        first, second = results["tests"]
        assert (first["number"], second["number"]) == ("1", "2")
        assert second["name"] == "policy_loss.ppo_value: clipped loss value"
        assert (second["score"], second["max_score"], second["status"]) == (0.0, 3.0, "failed")
        assert second["tags"] == ["clip_without_min"] and "without the min" in second["output"]
        assert "Diagnosis: clip_without_min" in second["output"]
        assert first["output"] == "Passed." and first["tags"] == []
        assert {test["visibility"] for test in results["tests"]} == {"visible"}

    def test_extra_data_records_the_isolation_in_force(self):
        results = results_json(graded(), policy=FeedbackPolicy(), late=False, seconds=1,
                               isolation_reason="resource limits only: no user namespaces")
        extra = results["extra_data"]
        assert extra["isolation"] == "rlimits" and "user namespaces" in extra["isolation_reason"]
        assert extra["confinement"] == {"landlock": 7, "pids_cgroup": False}

    def test_score_before_the_due_date_keeps_items_until_after_it(self):
        policy = FeedbackPolicy(before_due="score", after_due="full")
        results = results_json(graded(errors=["cell 3 raised"]), policy=policy, late=False, seconds=1)
        assert results["visibility"] == "visible"
        assert {test["visibility"] for test in results["tests"]} == {"after_due_date"}
        assert "output" not in results  # the notes wait with the messages
        assert by_name(results)["Notes on your notebook"]["output"] == "- cell 3 raised"

    def test_an_upload_after_the_deadline_sees_the_after_due_view_at_once(self):
        policy = FeedbackPolicy(before_due="score", after_due="full")
        results = results_json(graded(errors=["cell 3 raised"]), policy=policy, late=True, seconds=1)
        assert {test["visibility"] for test in results["tests"]} == {"visible"}
        assert "cell 3 raised" in results["output"]

    def test_items_before_the_due_date_split_what_went_wrong_into_its_own_test(self):
        policy = FeedbackPolicy(before_due="items", after_due="full")
        tests = by_name(results_json(graded(), policy=policy, late=False, seconds=1))
        item = tests["policy_loss.ppo_value: clipped loss value"]
        detail = tests["policy_loss.ppo_value: clipped loss value (what went wrong)"]
        assert item["visibility"] == "visible" and "output" not in item and "tags" not in item
        assert (item["score"], item["max_score"]) == (0.0, 3.0)
        assert detail["visibility"] == "after_due_date" and detail["number"] == "2.1"
        assert (detail["score"], detail["max_score"]) == (0.0, 0.0)
        assert detail["tags"] == ["clip_without_min"] and "without the min" in detail["output"]
        assert len(tests) == 3  # a passed item needs no second test

    def test_a_policy_that_never_shows_anything_leaves_the_total_to_staff(self):
        policy = FeedbackPolicy(before_due="none", after_due="none")
        results = results_json(graded(errors=["cell 3 raised"]), policy=policy, late=True, seconds=1)
        assert results["visibility"] == "after_published"
        assert {test["visibility"] for test in results["tests"]} == {"hidden"}
        assert "output" not in results

    def test_the_reason_an_upload_cannot_be_graded_is_always_shown(self):
        policy = FeedbackPolicy(before_due="none", after_due="score")
        results = results_json(graded(), policy=policy, late=False, seconds=1,
                               upload_problem="the upload holds 2 notebooks")
        assert results["output"] == "This upload could not be graded: the upload holds 2 notebooks"

    def test_it_is_plain_json(self):
        json.dumps(results_json(graded(), policy=FeedbackPolicy(), late=False, seconds=1))

    def test_a_written_answer_is_a_test_so_the_total_is_the_gradebooks(self):
        results = results_json(graded(written=[Written("explain_clipping", 2.0)]), policy=FeedbackPolicy(),
                               late=False, seconds=1)
        written = by_name(results)["explain_clipping: written answer"]
        assert (written["score"], written["max_score"]) == (0.0, 2.0) and "Awaiting a TA" in written["output"]
        assert sum(test["max_score"] for test in results["tests"]) == results["extra_data"]["max_score"] == 7.0
        assert results["extra_data"]["pending"] == 2.0 and "await a TA" in results["output"]

    def test_a_prediction_and_its_total_wait_for_the_due_date_and_a_fix_too(self):
        grade = graded()
        grade.report.items.append(ItemResult("predictions.kl", 1.0, 0.0, False, "you predicted 'same'.",
                                             "prediction_clip_not_the_limit", "the KL", kind="prediction"))
        grade.report.items[1].fix = "take jnp.minimum(ratio * A, clipped * A)"
        tests = by_name(results_json(grade, policy=FeedbackPolicy(), late=False, seconds=1))
        assert tests["predictions.kl: the KL"]["visibility"] == "after_due_date"
        item = tests["policy_loss.ppo_value: clipped loss value"]
        assert item["visibility"] == "visible" and "jnp.minimum" not in item["output"]
        assert tests["policy_loss.ppo_value: clipped loss value (how to fix it)"]["visibility"] == "after_due_date"
        results = results_json(grade, policy=FeedbackPolicy(), late=False, seconds=1)
        assert results["visibility"] == "after_due_date"  # the total counts the prediction
        late = by_name(results_json(grade, policy=FeedbackPolicy(), late=True, seconds=1))
        assert "jnp.minimum" in late["policy_loss.ppo_value: clipped loss value"]["output"]


def test_run_writes_a_zero_with_a_reason_when_the_autograder_itself_is_broken(tmp_path, capsys):
    """No course in source/: the student still gets a results.json, and staff the traceback."""
    (tmp_path / "submission").mkdir()
    results = run("ps1", autograder=tmp_path)
    written = json.loads((tmp_path / "results" / "results.json").read_text())
    assert written == results and written["score"] == 0.0
    assert "could not grade this upload" in written["output"]
    assert "Traceback" in capsys.readouterr().err


def test_run_autograder_writes_results_even_when_python_cannot_start(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extract("run_autograder", tmp_path)
    script = tmp_path / "run_autograder"
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    environment = dict(os.environ, AUTOGRADER_DIR=str(tmp_path), RLCOURSE_PYTHON=str(tmp_path / "nope"))
    subprocess.run([str(script)], env=environment, check=True, capture_output=True, timeout=60)
    written = json.loads((tmp_path / "results" / "results.json").read_text())
    assert written["score"] == 0.0 and "could not start" in written["output"]
