"""The engine's failures are never a student's score: a submission whose worker cannot be started,
or whose graders fail, is left ungraded (NotGraded), with the reason, rather than given
worker_crashed or grader_error zeros. The reason is for the staff: a grader's failure is named
by the file and line it was raised at, with the exception's type and message."""
import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.directory import Course
from rlcourse.grading.pipeline import Grader, NotGraded


class TemplateThatCannotStart:
    """A launcher whose every launch fails, as when the fork template cannot import its framework."""

    isolation = "rlimits"
    confinement = {}

    def __init__(self, options):
        self.options = options
        self.launches = 0

    def launch(self):
        self.launches += 1
        raise RuntimeError("the worker template could not start")

    def restart(self):
        pass

    def close(self):
        pass


def test_a_worker_that_cannot_start_leaves_the_submission_ungraded(course):
    ps3 = course.assignment("ps3")
    with Grader(ps3, warm_cache=False) as grader:
        working, broken = grader._launcher, TemplateThatCannotStart(grader._launcher.options)
        grader._launcher = broken
        try:
            with pytest.raises(NotGraded, match="no worker could be started .*template could not start"):
                grader.grade(ps3.source_notebook)
        finally:
            grader._launcher = working
    assert broken.launches >= 2  # restarted once before the failure was the engine's


# --- a grader's own failure: named by file and line, with the exception's type and message ------
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
INDEX_ERROR = "IndexError: index 1 is out of bounds for axis 0 with size 1"


NAMES = itertools.count(1)


@pytest.fixture
def hw(tmp_path):
    """A course of one assignment as `rlcourse new hwN --framework numpy` writes it (numpy:
    grading it takes about a second, no compilation cache to warm). Each test's has a name of
    its own: pytest keeps a grader module it imported under its path in the course
    (`graders.hw1.test_add_one`), so a second course's would not be imported in this process."""
    from rlcourse.course.scaffold import new_assignment

    folder, name = tmp_path / "course", f"hw{next(NAMES)}"
    (folder / "graders").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    new_assignment(Course(folder), name, framework="numpy")
    return Course(folder).assignment(name)


def break_grader(assignment, line: str) -> int:
    """Put `line` into the scaffold's grader after it draws its input; returns its line number."""
    path = assignment.grader_dir / "test_add_one.py"
    anchor = "        x = rng.normal(size=size)\n"
    text = path.read_text()
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, anchor + f"        {line}\n"))
    return text[:text.index(anchor)].count("\n") + 2


@pytest.mark.slow
def test_a_grader_that_raises_is_named_by_file_line_type_and_message(hw):
    """The reason says where in the course's graders the exception was raised (not pytest's
    runner), its type and its message; the staff's log gets the traceback from that frame."""
    line = break_grader(hw, "x[size]")
    logged = []
    with Grader(hw, warm_cache=False, log=logged.append) as grader:
        with pytest.raises(NotGraded) as raised:
            grader.grade(hw.source_notebook)
    assert str(raised.value) == (f"the graders failed: graders/{hw.name}/test_add_one.py:{line} in "
                                 f"test_random_arrays: {INDEX_ERROR}")
    problem, = raised.value.problems
    assert problem.item == "add_one.random_arrays"
    assert "x[size]" in problem.traceback and "_pytest" not in problem.traceback
    assert problem.traceback.rstrip().endswith(INDEX_ERROR)
    assert any(problem.traceback.rstrip() in message for message in logged), logged


@pytest.mark.slow
def test_a_grader_that_raises_on_the_students_data_costs_the_item_not_the_grading(hw):
    """Issue 29, finding 7: the same exception inside `on_student_data` (the grader computing
    with the student's value) is the student's data breaking the computation: the item is lost
    as bad_output, the rest is graded, and the staff's log gets the traceback."""
    break_grader(hw, "with on_student_data('add_one\\'s result'):\n"
                     "            x[as_array(student.call('add_one', x), what='add_one').astype(int) + size]")
    grader_file = hw.grader_dir / "test_add_one.py"
    grader_file.write_text(grader_file.read_text().replace(
        "from rlcourse.grading.rubric import Evidence, as_array, item",
        "from rlcourse.grading.rubric import Evidence, as_array, item, on_student_data"))
    logged = []
    with Grader(hw, warm_cache=False, log=logged.append) as grader:
        report = grader.grade(hw.source_notebook)
    item, = report.items
    assert (item.passed, item.diagnosis) == (False, "bad_output")
    assert "could not use add_one's result" in item.message and "IndexError" in item.message
    assert any("add_one.random_arrays lost (bad_output)" in message and "IndexError" in message
               for message in logged), logged


@pytest.mark.slow
def test_a_grader_module_that_does_not_import_is_named_by_file_and_line(hw):
    """Collection errors too: each module's own error, not pytest's CollectError text."""
    (hw.grader_dir / "test_imports.py").write_text('"""Imports a module that is not there."""\nimport numpyy\n')
    (hw.grader_dir / "test_typo.py").write_text('"""Does not parse."""\ndef test_x(:\n    pass\n')
    (hw.grader_dir / "test_table.py").write_text(
        '"""Fails at import."""\nimport numpy as np\n\nLAST = np.zeros(3)[3]\n')
    with Grader(hw, warm_cache=False, log=lambda message: None) as grader:
        with pytest.raises(NotGraded) as raised:
            grader.grade(hw.source_notebook)
    assert str(raised.value) == (
        "the hidden graders could not be collected (3 problems): "
        f"graders/{hw.name}/test_imports.py:2 in <module>: ModuleNotFoundError: No module named 'numpyy'; "
        f"graders/{hw.name}/test_table.py:4 in <module>: IndexError: index 3 is out of bounds for axis 0 with size 3; "
        f"graders/{hw.name}/test_typo.py:2: SyntaxError: invalid syntax")


@pytest.mark.slow
def test_an_undocumented_tag_names_the_line_that_raised_it(hw):
    line = break_grader(hw, 'raise Failure("off_by_two", did="it was off", should="be on")')
    grader_file = hw.grader_dir / "test_add_one.py"
    grader_file.write_text(grader_file.read_text().replace(
        "from rlcourse.grading.rubric import Evidence, as_array, item",
        "from rlcourse.grading.rubric import Evidence, Failure, as_array, item"))
    with Grader(hw, warm_cache=False, log=lambda message: None) as grader:
        with pytest.raises(NotGraded) as raised:
            grader.grade(hw.source_notebook)
    assert str(raised.value) == (f"the graders failed: graders/{hw.name}/test_add_one.py:{line} in "
                                 "test_random_arrays: raised the undocumented tag 'off_by_two'; "
                                 "document it in diagnoses.toml or raise a documented one")


def test_the_place_named_is_the_innermost_in_the_courses_own_code(tmp_path):
    """Not a library's frame (numpy's reshape), not the engine's: the grader's or the oracle's
    line, whichever is innermost; and a long message is cut, on one line."""
    from rlcourse.course.solutions import load_course_module
    from rlcourse.grading.plugin import describe_error, exception_text

    (tmp_path / "graders" / "hw1").mkdir(parents=True)
    (tmp_path / "solutions" / "hw1").mkdir(parents=True)
    (tmp_path / "solutions" / "hw1" / "exact.py").write_text(
        "import numpy as np\n\n\ndef table():\n    return np.zeros(2)[5]\n")
    (tmp_path / "graders" / "hw1" / "test_x.py").write_text(
        "import numpy as np\n\n\ndef test_reshape():\n    np.reshape(np.zeros(3), (2, 2))\n\n\n"
        "def test_table(exact):\n    exact.table()\n")
    grader = load_course_module(tmp_path / "graders" / "hw1" / "test_x.py", "i28_graders_test_x")
    exact = load_course_module(tmp_path / "solutions" / "hw1" / "exact.py", "i28_solutions_exact")
    for call, where, error in [
            (grader.test_reshape, "graders/hw1/test_x.py:5 in test_reshape",
             "ValueError: cannot reshape array of size 3 into shape (2,2)"),
            (lambda: grader.test_table(exact), "solutions/hw1/exact.py:5 in table",
             "IndexError: index 5 is out of bounds for axis 0 with size 2")]:
        with pytest.raises(Exception) as raised:
            call()
        described = describe_error(raised.value, root=tmp_path)
        assert (described.where, described.error) == (where, error)
        assert "test_not_graded.py" not in described.traceback  # from the course's first frame
    long = exception_text(ValueError("an array:\n" + "0.5 " * 1000))
    assert long.startswith("ValueError: an array: 0.5 0.5") and len(long) < 320 and "\n" not in long


def rlcourse(course: Path, *args, columns: int = 200):
    environment = {key: value for key, value in os.environ.items() if key != "RLCOURSE_ROOT"}
    environment.update(PATH=f"{BIN}:{environment.get('PATH', '')}", COLUMNS=str(columns))
    return subprocess.run([str(BIN / "rlcourse"), *map(str, args)], cwd=course, capture_output=True,
                          text=True, timeout=600, env=environment)


def summary_cell(stdout: str, student: str) -> str:
    """The last column of `student`'s row in the summary table, its folded lines joined."""
    rows, current = {}, None
    for line in stdout.splitlines():
        if not line.startswith("│"):
            current = None
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        current = cells[0] or current
        rows.setdefault(current, []).append(cells[-1])
    return " ".join(part for part in rows.get(student, []) if part)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2], ids=["in-process", "two-processes"])
def test_autograde_shows_the_reason_in_its_log_and_its_summary(hw, tmp_path, workers):
    """`not graded this run: <student>: <reason>` and the summary's `not graded: <reason>`, in
    this process (InProcess) and from grading processes (LocalPool) alike; nothing recorded."""
    from rlcourse.course.bank import reference_student

    line = break_grader(hw, "x[size]")
    reason = f"the graders failed: graders/{hw.name}/test_add_one.py:{line} in test_random_arrays: {INDEX_ERROR}"
    notebook = nbformat.writes(reference_student(hw.source_notebook, hw.release_notebook))
    for student in ("ada", "alan"):
        folder = tmp_path / "class" / "submitted" / student / hw.name
        folder.mkdir(parents=True)
        (folder / hw.notebook).write_text(notebook)
    done = rlcourse(hw.course.root, "autograde", hw.name, "--course-dir", tmp_path / "class",
                    "--workers", workers, "--no-similarity")
    assert done.returncode == 1 and "2 not graded" in done.stdout, done.stdout + done.stderr
    for student in ("ada", "alan"):
        assert f"not graded this run: {student}: {reason}\n" in done.stderr, done.stderr
        assert summary_cell(done.stdout, student) == " ".join(f"not graded: {reason}".split()), done.stdout
    assert not (tmp_path / "class" / "autograded").exists()
