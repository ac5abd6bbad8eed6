"""assignment.toml is read into a checked, frozen model: every mistake is a CourseError that
names the file, the key and what is allowed, never a TypeError from deep in the engine."""
import attrs
import pytest

from rlcourse.course.config import AssignmentConfig, CourseError, read_limits
from rlcourse.course.directory import Course

VALID = {"notebook": "ps9.ipynb", "framework": "numpy"}


def read(**changes):
    return AssignmentConfig.from_table({**VALID, **changes}, where="graders/ps9/assignment.toml")


class TestAssignmentConfig:
    def test_a_minimal_file_gets_the_defaults(self):
        config = read()
        assert (config.notebook, config.framework, config.skip_cells, config.fixed_limits) == \
            ("ps9.ipynb", "numpy", (), frozenset())

    def test_the_model_is_frozen(self):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            read().framework = "jax"

    @pytest.mark.parametrize("changes, message", [
        ({"framwork": "numpy"}, "unknown key 'framwork' (allowed: title, notebook, framework"),
        ({"framework": "numpi"}, "framework = 'numpi'; it must be one of jax, numpy, torch"),
        ({"framework": 3}, "framework = 3; it must be one of"),
        ({"notebook": "ps9.ipnyb"}, "notebook = 'ps9.ipnyb'; it must be a file name ending in .ipynb"),
        ({"title": ["a"]}, "title = ['a']; it must be a string"),
        ({"skip_cells": "plots"}, "skip_cells must be a list of grade_ids"),
        ({"limits": 5}, "limits must be a table"),
        ({"feedback": {"before": "full"}}, "[feedback]: unknown key(s) before"),
    ])
    def test_each_mistake_names_the_file_the_key_and_what_is_allowed(self, changes, message):
        with pytest.raises(CourseError) as raised:
            read(**changes)
        assert str(raised.value).startswith("graders/ps9/assignment.toml")
        assert message in str(raised.value)

    def test_gradescope_names_the_fields_that_hold_the_student_id(self):
        assert read().gradescope.student_id == ("sid", "email")
        assert read(gradescope={"student_id": ["email_user"]}).gradescope.student_id == ("email_user",)
        for table, message in [({"student_id": ["login"]}, "student_id = ['login']; it must be"),
                               ({"student_id": []}, "a non-empty list"),
                               ({"student": ["sid"]}, "unknown key 'student'"),
                               ("sid", "gradescope must be a table")]:
            with pytest.raises(CourseError, match=message.replace("[", r"\[").replace("]", r"\]")):
                read(gradescope=table)

    def test_a_required_key_that_is_missing_is_named(self):
        with pytest.raises(CourseError, match="'framework' is missing"):
            AssignmentConfig.from_table({"notebook": "ps9.ipynb"}, where="x.toml")


class TestLimits:
    def test_limits_keep_their_types_and_are_remembered_as_set(self):
        config = read(limits={"memory_bytes": 1 << 30, "cell_seconds": 5})
        assert config.limits.memory_bytes == 1 << 30
        assert config.limits.cell_seconds == 5.0 and isinstance(config.limits.cell_seconds, float)
        assert config.fixed_limits == {"memory_bytes", "cell_seconds"}

    @pytest.mark.parametrize("table, message", [
        ({"memory_byte": 1}, "unknown limit 'memory_byte' (allowed: memory_bytes,"),
        ({"memory_bytes": "6G"}, "memory_bytes = '6G'; it must be a positive whole number"),
        ({"memory_bytes": 1.5}, "memory_bytes = 1.5; it must be a positive whole number"),
        ({"cell_seconds": True}, "cell_seconds = True; it must be a positive number of seconds"),
        ({"cell_seconds": -1}, "cell_seconds = -1; it must be a positive number of seconds"),
    ])
    def test_a_wrong_limit_is_refused(self, table, message):
        with pytest.raises(CourseError, match="^x \\[limits\\]: ") as raised:
            read_limits(table, where="x [limits]")
        assert message in str(raised.value)


class TestCourseAssignment:
    def test_a_notebook_that_is_not_in_the_release_is_refused(self, tmp_path):
        (tmp_path / "nbgrader_config.py").write_text("")
        (tmp_path / "graders" / "ps9").mkdir(parents=True)
        (tmp_path / "release" / "ps9").mkdir(parents=True)
        (tmp_path / "release" / "ps9" / "ps9.ipynb").write_text("{}")
        spec = tmp_path / "graders" / "ps9" / "assignment.toml"
        spec.write_text('notebook = "ps8.ipynb"\nframework = "numpy"\n')
        with pytest.raises(CourseError, match=r"notebook = 'ps8.ipynb' is not in .*\(it holds: ps9.ipynb\)"):
            Course(tmp_path).assignment("ps9")
        spec.write_text('notebook = "ps9.ipynb"\nframework = "numpy"\n')
        assert Course(tmp_path).assignment("ps9").notebook == "ps9.ipynb"

    def test_invalid_toml_is_a_course_error(self, tmp_path):
        (tmp_path / "nbgrader_config.py").write_text("")
        (tmp_path / "graders" / "ps9").mkdir(parents=True)
        (tmp_path / "graders" / "ps9" / "assignment.toml").write_text('notebook = "ps9.ipynb\n')
        with pytest.raises(CourseError, match="not valid TOML"):
            Course(tmp_path).assignment("ps9")
