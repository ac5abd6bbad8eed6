"""The command line, driven as a user would drive it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlcourse.course.bank import build_submission, load_entries, reference_student

ROOT = Path(__file__).resolve().parents[1]
RLCOURSE = str(Path(sys.executable).with_name("rlcourse"))
ITEM_KEYS = {"id", "score", "max_score", "passed", "message", "diagnosis"}


def rlcourse(*args, check=True):
    return subprocess.run([RLCOURSE, *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          check=check, timeout=600)


@pytest.fixture(scope="module")
def reference_notebook(ps1, tmp_path_factory):
    entry = next(e for e in load_entries(ROOT / "tests" / "bank" / "ps1") if e.name == "reference")
    path = tmp_path_factory.mktemp("cli") / "ps1.ipynb"
    path.write_bytes(build_submission(entry, reference_student(ps1.source_notebook, ps1.release_notebook)))
    return path


@pytest.mark.slow
def test_grade_json_prints_exactly_one_object_with_the_contract_keys(reference_notebook):
    result = rlcourse("grade", "ps1", reference_notebook, "--json", "--student", "ada")
    report = json.loads(result.stdout)
    assert {"assignment", "score", "max_score", "items", "errors"} <= set(report)
    assert report["assignment"] == "ps1" and report["errors"] == []
    # every hidden item passed: the total is the gradebook's basis, the written answers pending
    assert report["score"] == report["auto_score"] == sum(item["max_score"] for item in report["items"])
    assert report["max_score"] == report["auto_max_score"] + sum(w["max_score"] for w in report["written"])
    assert report["pending"] == sum(w["max_score"] for w in report["written"]) > 0
    assert {w["state"] for w in report["written"]} == {"awaiting"}
    for item in report["items"]:
        assert ITEM_KEYS <= set(item) and item["passed"] and item["diagnosis"] is None


@pytest.mark.slow
@pytest.mark.parametrize("content", [b'{"cells": [', b"", b"\x89PNG\r\n"])
def test_a_broken_notebook_gets_a_reason_and_zeros_not_a_traceback(tmp_path, content):
    path = tmp_path / "ps1.ipynb"
    path.write_bytes(content)
    result = rlcourse("grade", "ps1", path, "--json")
    report = json.loads(result.stdout)
    assert report["score"] == 0 and report["max_score"] > 0 and report["errors"]
    assert all(item["diagnosis"] == "unreadable_notebook" for item in report["items"])
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_readable_report_names_items_and_diagnoses(tmp_path):
    path = tmp_path / "ps1.ipynb"
    path.write_text("not a notebook")
    result = rlcourse("grade", "ps1", path)
    assert "policy_loss.ppo_value" in result.stdout and "unreadable_notebook" in result.stdout


@pytest.mark.parametrize("argv, environ, expected", [
    (["--student", "ada"], {"JUPYTERHUB_USER": "tom"}, ["ada", "ada"]),
    (["--student", "ada", "--student", "bob"], {}, ["ada", "bob"]),
    ([], {"JUPYTERHUB_USER": "tom", "RLCOURSE_STUDENT": "bea"}, ["tom", "tom"]),
    ([], {"RLCOURSE_STUDENT": "bea"}, ["bea", "bea"]),
    ([], {}, [None, None]),
])
def test_grade_knows_whose_notebooks_it_grades(ps1, monkeypatch, capsys, argv, environ, expected):
    from rlcourse.cli import _graded_as, build_parser

    for variable in ("JUPYTERHUB_USER", "RLCOURSE_STUDENT"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in environ.items():
        monkeypatch.setenv(variable, value)
    options = build_parser().parse_args(["grade", "ps1", "a.ipynb", "b.ipynb", *argv])
    assert _graded_as(ps1, options) == expected
    said = capsys.readouterr().err
    assert ("grading with the defaults" in said) == (expected[0] is None)
    assert ("from $" in said) == (not argv and bool(environ))


def test_grade_refuses_a_student_count_that_matches_neither_one_nor_each_notebook(ps1):
    from rlcourse.cli import _graded_as, build_parser
    from rlcourse.course.directory import CourseError

    options = build_parser().parse_args(["grade", "ps1", "a", "b", "c", "--student", "x", "--student", "y"])
    with pytest.raises(CourseError, match="--student given 2 times for 3 notebooks"):
        _graded_as(ps1, options)


def test_an_unknown_assignment_is_a_clear_error():
    result = rlcourse("grade", "ps9", "x.ipynb", check=False)
    assert result.returncode == 2 and "no assignment 'ps9'" in result.stderr
