"""Per-student variants: `[variants]` is checked like the rest of assignment.toml, each student's
values are a deterministic function of the salt and the id, and the notebook's parameter cell
computes exactly what the graders use."""
import contextlib
import io
import json

import pytest

from rlcourse.course.config import AssignmentConfig, CourseError
from rlcourse.course.variants import (PARAMETER_CELL, STUDENT_VARIABLES, Variants, parameter_cell,
                                      printed_parameters, student_from_environment)

WHERE = "graders/ps9/assignment.toml"
TABLE = {"salt": "s", "parameters": {"clip": {"values": [0.1, 0.2, 0.3], "default": 0.2},
                                     "seed": {"range": [1, 99], "default": 11}}}
IDS = [f"student{n:03d}" for n in range(200)] + ["ada", "o'brien", "ünïcode", "a b"]


def read(variants):
    return AssignmentConfig.from_table({"notebook": "ps9.ipynb", "framework": "numpy",
                                        "variants": variants}, where=WHERE)


def run_cell(source: str) -> tuple[dict, str]:
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(source, namespace)  # noqa: S102 - the course's own generated cell
    return namespace["PARAMS"], printed.getvalue()


class TestConfig:
    def test_no_table_means_variants_off(self):
        config = AssignmentConfig.from_table({"notebook": "ps9.ipynb", "framework": "numpy"}, where=WHERE)
        assert not config.variants.enabled and config.variants.for_student("ps9", "ada") == {}

    def test_a_table_is_read_with_its_values_and_range(self):
        variants = read(TABLE).variants
        assert variants.enabled and variants.defaults == {"clip": 0.2, "seed": 11}
        assert variants.parameters[1].choices == tuple(range(1, 100))

    @pytest.mark.parametrize("change, message", [
        ({"sallt": "x"}, "unknown key 'sallt' (allowed: enabled, salt, parameters)"),
        ({"salt": ""}, "salt = ''; it must be a non-empty string"),
        ({"enabled": "yes"}, "enabled = 'yes'; it must be true or false"),
        ({"parameters": {}}, "parameters must be a table with at least one parameter"),
        ({"parameters": {"clip": {"values": [0.1], "default": 0.2}}},
         "parameters.clip: default = 0.2; it must be one of the allowed values"),
        ({"parameters": {"clip": {"values": [0.1, 0.1], "default": 0.1}}}, "distinct numbers"),
        ({"parameters": {"clip": {"values": ["a"], "default": "a"}}}, "values = ['a']"),
        ({"parameters": {"seed": {"range": [5, 1], "default": 3}}}, "range = [5, 1]; it must be"),
        ({"parameters": {"seed": {"range": [1.5, 3], "default": 2}}}, "two whole numbers"),
        ({"parameters": {"seed": {"range": [1, 3], "values": [1], "default": 1}}},
         "give exactly one of values"),
        ({"parameters": {"seed": {"range": [1, 3]}}}, "default is missing"),
        ({"parameters": {"seed": {"range": [1, 3], "default": 1, "step": 2}}}, "unknown key 'step'"),
        ({"parameters": {"not a name": {"range": [1, 3], "default": 1}}}, "is not a Python name"),
        ({"parameters": {"seed": 3}}, "parameters.seed: must be a table"),
    ])
    def test_each_mistake_names_the_file_the_key_and_what_is_allowed(self, change, message):
        with pytest.raises(CourseError) as raised:
            read({**TABLE, **change})
        assert str(raised.value).startswith(f"{WHERE} [variants]")
        assert message in str(raised.value)

    def test_variants_must_be_a_table(self):
        with pytest.raises(CourseError, match=r"\[variants\]: variants must be a table"):
            read(3)


class TestDerivation:
    def test_values_are_deterministic_allowed_and_spread(self):
        variants = read(TABLE).variants
        first = [variants.for_student("ps9", student) for student in IDS]
        assert first == [read(TABLE).variants.for_student("ps9", student) for student in IDS]
        assert all(v["clip"] in (0.1, 0.2, 0.3) and 1 <= v["seed"] <= 99 for v in first)
        assert {v["clip"] for v in first} == {0.1, 0.2, 0.3}
        assert len({v["seed"] for v in first}) > 60

    def test_the_salt_and_the_assignment_change_the_values(self):
        variants = read(TABLE).variants
        other = read({**TABLE, "salt": "t"}).variants
        mine = [variants.for_student("ps9", s) for s in IDS]
        assert mine != [other.for_student("ps9", s) for s in IDS]
        assert mine != [variants.for_student("ps8", s) for s in IDS]

    def test_switched_off_or_without_an_id_everyone_gets_the_defaults(self):
        off = read({**TABLE, "enabled": False}).variants
        assert {json.dumps(off.for_student("ps9", s)) for s in IDS} == {json.dumps(off.defaults)}
        assert read(TABLE).variants.for_student("ps9", None) == off.defaults


class TestParameterCell:
    def test_the_released_cell_computes_what_the_graders_use(self, monkeypatch):
        variants = read(TABLE).variants
        for student in IDS[:40] + IDS[-4:]:
            monkeypatch.setenv("JUPYTERHUB_USER", student)
            params, printed = run_cell(parameter_cell("ps9", variants))
            assert params == variants.for_student("ps9", student)
            assert printed_parameters(printed) == (student, params)

    def test_the_graded_cell_ignores_the_environment(self, monkeypatch):
        variants = read(TABLE).variants
        monkeypatch.setenv("JUPYTERHUB_USER", "someone-else")
        params, _ = run_cell(parameter_cell("ps9", variants, student="ada"))
        assert params == variants.for_student("ps9", "ada")

    def test_without_an_id_the_cell_says_it_shows_the_defaults(self, monkeypatch):
        monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
        monkeypatch.delenv("RLCOURSE_STUDENT", raising=False)
        params, printed = run_cell(parameter_cell("ps9", read(TABLE).variants))
        assert params == {"clip": 0.2, "seed": 11} and "default values, not yours" in printed

    @pytest.mark.parametrize("environ", [{}, {"RLCOURSE_STUDENT": "bea"}, {"JUPYTERHUB_USER": "ada"},
                                         {"JUPYTERHUB_USER": "ada", "RLCOURSE_STUDENT": "bea"},
                                         {"JUPYTERHUB_USER": "", "RLCOURSE_STUDENT": "bea"}])
    def test_rlcourse_grade_finds_the_id_where_the_released_cell_finds_it(self, monkeypatch, environ):
        for variable in STUDENT_VARIABLES:
            monkeypatch.delenv(variable, raising=False)
        for variable, value in environ.items():
            monkeypatch.setenv(variable, value)
        _, printed = run_cell(parameter_cell("ps9", read(TABLE).variants))
        found = student_from_environment()
        assert printed_parameters(printed)[0] == (found[0] if found else "")
        assert found is None or environ[found[1]] == found[0]

    def test_a_switched_off_cell_gives_the_defaults_for_an_id(self):
        off = read({**TABLE, "enabled": False}).variants
        assert run_cell(parameter_cell("ps9", off, student="ada"))[0] == off.defaults

    def test_ps1s_source_and_release_hold_the_cell_assignment_toml_describes(self, course):
        import nbformat

        assignment = course.assignment("ps1")
        expected = parameter_cell("ps1", assignment.variants)
        for path in (assignment.source_notebook, assignment.release_notebook):
            cells = [cell for cell in nbformat.read(path, as_version=4).cells
                     if cell.metadata.get("nbgrader", {}).get("grade_id") == PARAMETER_CELL]
            assert [cell.source for cell in cells] == [expected.rstrip("\n")], path
            assert cells[0].metadata.nbgrader["locked"]


def test_printed_parameters_ignores_other_text():
    assert printed_parameters("hello\nYour parameters (student 'x'): {'a': 1}\n") == ("x", {"a": 1})
    assert printed_parameters("nothing here") is None
    assert printed_parameters("Your parameters (student 'x'): {broken") is None


def test_variants_model_default_is_off():
    assert Variants().for_student("ps1", "ada") == {}
