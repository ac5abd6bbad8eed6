"""Reading submissions: usable notebooks give their code cells; unusable ones give a reason."""
import json
import subprocess
import sys

import nbformat
import pytest

from rlcourse.course.submission import NotebookProblem, load_submission


def notebook_with(*cells):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = list(cells)
    return notebook


def code(source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = dict(schema_version=3, **nbgrader)
    return cell


def write(tmp_path, notebook, name="ps1.ipynb"):
    path = tmp_path / name
    nbformat.write(notebook, path)
    return path


class TestUsableNotebooks:
    def test_code_cells_are_listed_in_order_without_visible_tests(self, tmp_path):
        path = write(tmp_path, notebook_with(
            code("a = 1", grade_id="given", grade=False, solution=False, locked=True),
            nbformat.v4.new_markdown_cell("text"),
            code("def f(): pass", grade_id="f", grade=False, solution=True, locked=False),
            code("assert f() is None", grade_id="test_f", grade=True, solution=False, locked=True, points=1),
            code("print('extra cell a student added')")))
        submission = load_submission(path)
        assert [(c.index, c.grade_id) for c in submission.cells] == [(0, "given"), (2, "f"), (4, None)]

    def test_lost_cells_are_a_warning_not_a_failure(self, tmp_path):
        path = write(tmp_path, notebook_with(code("x = 1")))
        submission = load_submission(path, expected_ids={"policy_loss", "exact_return"})
        assert "exact_return, policy_loss" in submission.warnings[-1]
        assert len(submission.cells) == 1

    def test_another_kernel_name_is_still_graded(self, tmp_path):
        notebook = notebook_with(code("x = 1"))
        notebook.metadata["kernelspec"] = {"name": "my-env", "display_name": "Mine", "language": "python"}
        assert len(load_submission(write(tmp_path, notebook)).cells) == 1

    def test_an_old_format_notebook_is_converted(self, tmp_path):
        v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
            {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": [], "metadata": {}}]}]}
        path = tmp_path / "old.ipynb"
        path.write_text(json.dumps(v3))
        assert [cell.source for cell in load_submission(path).cells] == ["x = 1"]

    def test_malformed_cell_metadata_is_run_as_a_plain_cell(self, tmp_path):
        notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            {"cell_type": "code", "source": ["y = ", "2"], "metadata": "edited", "outputs": []}]}
        path = tmp_path / "odd.ipynb"
        path.write_text(json.dumps(notebook))
        submission = load_submission(path)
        assert submission.cells[0].source == "y = 2" and "malformed metadata" in submission.warnings[0]

    def test_the_hash_identifies_the_exact_bytes(self, tmp_path):
        first = load_submission(write(tmp_path, notebook_with(code("x = 1")), "a.ipynb"))
        second = load_submission(write(tmp_path, notebook_with(code("x = 2")), "b.ipynb"))
        assert first.sha256 != second.sha256 and len(first.sha256) == 64


class TestUnusableFiles:
    @pytest.mark.parametrize("content, reason", [
        (b"", "empty"),
        (b'{"cells": [', "not valid JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"[1, 2, 3]", "not a Jupyter notebook"),
        (json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}}).encode(), "it has no list of cells"),
    ])
    def test_reason_is_given(self, tmp_path, content, reason):
        path = tmp_path / "ps1.ipynb"
        path.write_bytes(content)
        with pytest.raises(NotebookProblem, match=reason):
            load_submission(path)

    def test_a_directory_is_not_a_notebook(self, tmp_path):
        with pytest.raises(NotebookProblem, match="not a regular file"):
            load_submission(tmp_path)


class TestStructureIsBoundedBeforeParsing:
    """A notebook far under the size cap can still cost gigabytes to parse: refuse it first."""

    def raw(self, tmp_path, text):
        path = tmp_path / "ps1.ipynb"
        path.write_text(text)
        return path

    def test_millions_of_empty_dicts_in_metadata_are_refused(self, tmp_path):
        dicts = ",".join(["{}"] * 2_000_000)
        path = self.raw(tmp_path, '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": ['
                        '{"cell_type": "code", "source": "x = 1", "outputs": [], '
                        f'"metadata": {{"junk": [{dicts}]}}}}]}}')
        with pytest.raises(NotebookProblem, match="JSON objects and arrays"):
            load_submission(path)

    def test_brackets_inside_strings_do_not_count(self, tmp_path):
        source = "x = '" + "{[" * 150_000 + "'"
        submission = load_submission(write(tmp_path, notebook_with(code(source))))
        assert submission.cells[0].source == source

    def test_deep_nesting_is_refused(self, tmp_path):
        cell = code("x = 1")
        cell.metadata["deep"] = json.loads('{"a": ' * 80 + "1" + "}" * 80)
        with pytest.raises(NotebookProblem, match="deeper than"):
            load_submission(write(tmp_path, notebook_with(cell)))

    def test_huge_cell_metadata_and_too_many_cells_are_refused(self, tmp_path):
        cell = code("x = 1")
        cell.metadata["blob"] = "z" * (2 << 20)
        with pytest.raises(NotebookProblem, match="metadata is larger"):
            load_submission(write(tmp_path, notebook_with(cell)))
        with pytest.raises(NotebookProblem, match="cells, more than"):
            load_submission(write(tmp_path, notebook_with(*[code("") for _ in range(5001)])))


def test_reading_a_notebook_builds_no_iri_grammar():
    """nbformat validates with jsonschema, whose releases from 4.24 on import rfc3987-syntax and
    build its IRI grammar at import: 3 s of CPU in every process that reads a notebook (each
    rlcourse and nbgrader command). constraints.txt pins jsonschema 4.23.0, which does not."""
    done = subprocess.run([sys.executable, "-c", "import sys, nbformat\n"
                           "nbformat.validate(nbformat.v4.new_notebook())\n"
                           "print(sorted(name for name in sys.modules if name.startswith(('rfc3987', 'lark'))))"],
                          capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]"
