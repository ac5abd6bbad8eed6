"""`rlcourse check`: each authoring mistake that once became students' grades is found before
anyone is graded, with one line naming the file and what to change; and `autograde` on a course
with such a mistake writes nothing."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from course_copy import copy_course

from rlcourse.course.directory import Course

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEMO = ROOT / "demo" / "submitted"


def rlcourse(course: Path, *args):
    """The real command line, run inside `course` (which it finds as the working directory)."""
    environment = {key: value for key, value in os.environ.items() if key != "RLCOURSE_ROOT"}
    environment["PATH"] = f"{BIN}:{environment.get('PATH', '')}"
    return subprocess.run([str(BIN / "rlcourse"), *map(str, args)], cwd=course, capture_output=True,
                          text=True, timeout=600, env=environment)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} should occur once in {path}"
    path.write_text(text.replace(old, new))


def misnamed_item_cell(course):
    edit(course / "graders/ps1/test_returns_to_go.py", 'cell="test_returns_to_go"',
         'cell="test_return_to_go"')


def add_a_point(path: Path, grade_id: str = "test_returns_to_go") -> None:
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        meta = cell["metadata"].get("nbgrader", {})
        if meta.get("grade_id") == grade_id:
            meta["points"] += 1
    path.write_text(json.dumps(notebook, indent=1))


def wrong_points_total(course):
    """The release's points edited (by hand, or left from an older source): the release is the
    file to make again, not the source, whose points equal the items'."""
    add_a_point(course / "release/ps1/ps1.ipynb")


def source_points_edited(course):
    """The source's points edited, the release not made again: the source is the file to fix
    (its points no longer equal the items'), not the release that still agrees with them."""
    add_a_point(course / "source/ps1/ps1.ipynb")


def release_lacks_a_cell(course):
    """A release older than the source (a test cell added since): the release is stale; the
    graders' item naming that cell is right."""
    path = course / "release/ps1/ps1.ipynb"
    notebook = json.loads(path.read_text())
    notebook["cells"] = [cell for cell in notebook["cells"]
                         if cell["metadata"].get("nbgrader", {}).get("grade_id") != "test_returns_to_go"]
    path.write_text(json.dumps(notebook, indent=1))


def undocumented_tag(course):
    path = course / "graders/ps1/diagnoses.toml"
    text = path.read_text()
    start = text.index("[training_not_improving]")
    end = text.find("\n[", start + 1)
    path.write_text(text[:start] + (text[end + 1:] if end != -1 else ""))


def misspelt_key(course):
    edit(course / "graders/ps1/assignment.toml", "memory_bytes =", "memory_byte =")


def unknown_framework(course):
    edit(course / "graders/ps1/assignment.toml", 'framework = "jax"', 'framework = "numpi"')


def wrong_notebook_name(course):
    edit(course / "graders/ps1/assignment.toml", 'notebook = "ps1.ipynb"', 'notebook = "ps9.ipynb"')


def stale_parameter_cell(course):
    edit(course / "graders/ps1/assignment.toml", 'salt = "rlcourse-ps1-2026"', 'salt = "changed"')


def feedback_item_misspelt(course):
    """[feedback.items] opening an item that does not exist (a typo): the item it meant would
    stay sealed, and nobody would know why."""
    spec = course / "graders/ps1/assignment.toml"
    spec.write_text(spec.read_text() + '\n[feedback.items]\n"exercises.horizon_chnage" = "visible"\n')


MAKE_RELEASE = "run `make release` (nbgrader generate_assignment ps1) and commit it"
MISTAKES = {  # what breaks the copy, and what the one line must say
    misnamed_item_cell: ("graders/ps1/test_returns_to_go.py", "names cell 'test_return_to_go'"),
    wrong_points_total: ("rlcourse check: release/ps1/ps1.ipynb: ",
                         "is not what nbgrader makes of source/ps1/ps1.ipynb (test cell "
                         "test_returns_to_go: 3 points in the release, 2 in the source); an edit "
                         f"made in the release belongs in the source; then {MAKE_RELEASE}"),
    source_points_edited: ("rlcourse check: source/ps1/ps1.ipynb: ",
                           "cell test_returns_to_go has points = 3 but its items "
                           "(graders/ps1/test_returns_to_go.py) total 2; make them equal, then run "
                           "`make release`"),
    release_lacks_a_cell: ("rlcourse check: release/ps1/ps1.ipynb: ",
                           "is not what nbgrader makes of source/ps1/ps1.ipynb (lacks "
                           f"test_returns_to_go); an edit made in the release belongs in the source; then {MAKE_RELEASE}"),
    undocumented_tag: ("graders/ps1/diagnoses.toml", "tag 'training_not_improving'"),
    feedback_item_misspelt: ("graders/ps1/assignment.toml",
                             "[feedback.items] names 'exercises.horizon_chnage', which is no item of the graders"),
    misspelt_key: ("assignment.toml [limits]", "unknown limit 'memory_byte'"),
    unknown_framework: ("assignment.toml", "framework = 'numpi'; it must be one of jax, numpy, torch"),
    wrong_notebook_name: ("assignment.toml", "notebook = 'ps9.ipynb' is not in"),
    # the cell is written in the source (the release is made from it)
    stale_parameter_cell: ("rlcourse check: source/ps1/ps1.ipynb: ",
                           "cell given_parameters does not derive the values [variants] of "
                           f"assignment.toml declares; write it again with rlcourse.course.variants."
                           f"parameter_cell, then {MAKE_RELEASE}"),
}


@pytest.fixture(params=list(MISTAKES), ids=lambda mistake: mistake.__name__)
def broken_course(request, tmp_path):
    course = copy_course(tmp_path / "course")
    request.param(course)
    return course, MISTAKES[request.param]


def test_check_finds_the_mistake_with_one_clear_line(broken_course):
    """Does `rlcourse check ps1` fail with one line naming the file and what is wrong?"""
    course, (where, what) = broken_course
    done = rlcourse(course, "check", "ps1")
    assert done.returncode != 0
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("rlcourse check: warning:")]  # a missing rubric only warns
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert where in lines[0] and what in lines[0], lines[0]


def test_autograde_on_a_broken_course_writes_no_grade(broken_course, tmp_path):
    """Does the run stop before the gradebook, the ledger or any page is written?"""
    course, (where, what) = broken_course
    class_dir = tmp_path / "class"
    (class_dir / "submitted" / "alan" / "ps1").mkdir(parents=True)
    shutil.copy(DEMO / "alan" / "ps1" / "ps1.ipynb", class_dir / "submitted" / "alan" / "ps1")
    done = rlcourse(course, "autograde", "ps1", "--course-dir", class_dir, "--workers", "1")
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(r"rlcourse: [^\n]+\n", done.stderr) and what in done.stderr, done.stderr
    assert sorted(path.name for path in class_dir.iterdir()) == ["submitted"]


def test_a_valid_copy_passes_the_quick_checks(tmp_path):
    """The copies above fail for their one mistake, not for being copies."""
    course = copy_course(tmp_path / "course")
    done = rlcourse(course, "check", "ps1", "--quick")
    assert done.returncode == 0 and done.stdout == "ps1: ok\n", done.stderr


@pytest.mark.slow
@pytest.mark.nbgrader
@pytest.mark.parametrize("name", Course(ROOT).assignment_names())
def test_every_assignment_passes_every_check(name):
    """Release as nbgrader makes it, items on real cells with matching points, documented and
    banked tags, a loading oracle, and a reference with full marks."""
    done = rlcourse(ROOT, "check", name)
    assert done.returncode == 0 and done.stdout == f"{name}: ok\n", done.stderr


@pytest.mark.slow
@pytest.mark.nbgrader
def test_a_grader_that_raises_leaves_the_submission_ungraded_and_its_fix_regrades(tmp_path):
    """A grader bug is never a student's zero: nothing is recorded and the exit status says so;
    fixing the grader (or the configuration) regrades the class without --force."""
    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.record.ledger import read_ledger
    from rlcourse.course.bank import build_submission, load_entries, reference_student

    # ps2 (PyTorch, about 3 core-seconds a grading) rather than ps1 (13, its JAX programs
    # compiled afresh): a raising grader and its fix are the same mechanics on either.
    course = copy_course(tmp_path / "course", "ps2")
    ps2 = Course(course).assignment("ps2")
    entry = next(e for e in load_entries(ROOT / "tests" / "bank" / "ps2") if e.name == "reference")
    class_dir = tmp_path / "class"
    (class_dir / "submitted" / "ada" / "ps2").mkdir(parents=True)
    (class_dir / "submitted" / "ada" / "ps2" / "ps2.ipynb").write_bytes(
        build_submission(entry, reference_student(ps2.source_notebook, ps2.release_notebook)))
    grader = course / "graders" / "ps2" / "test_gae.py"
    original = grader.read_text()
    first_item = original.index("\n    ", original.index("@item("))
    grader.write_text(original[:first_item] + "\n    raise RuntimeError('a bug in the grader')" +
                      original[first_item:])

    def autograde():
        return rlcourse(course, "autograde", "ps2", "--course-dir", class_dir, "--workers", "1",
                        "--no-similarity")

    broken = autograde()
    assert broken.returncode == 1 and "1 not graded" in broken.stdout, broken.stdout + broken.stderr
    assert "a bug in the grader" in broken.stderr
    assert read_ledger(ClassDirectory(class_dir), ps2, "ada") is None
    assert not (class_dir / "feedback" / "ada").exists()

    grader.write_text(original)
    fixed = autograde()
    assert fixed.returncode == 0 and "1 graded" in fixed.stdout, fixed.stdout + fixed.stderr
    report = read_ledger(ClassDirectory(class_dir), ps2, "ada")["report"]
    assert report["score"] == report["max_score"] > 0

    spec = course / "graders" / "ps2" / "assignment.toml"
    spec.write_text(spec.read_text() + "\n# a changed configuration regrades too\n")
    again = autograde()
    assert again.returncode == 0 and "1 graded" in again.stdout, again.stdout + again.stderr
    assert "unchanged" in autograde().stdout


def test_a_tag_only_a_bug_model_names_must_be_documented_too(tmp_path):
    """`Evidence` raises the tags of `Models`' bugs: the full check reads them from misconceptions.py."""
    from rlcourse.batch.check import model_tag_problems

    course = copy_course(tmp_path / "course")
    assert model_tag_problems(Course(course).assignment("ps1")) == []
    path = course / "graders/ps1/diagnoses.toml"
    text = path.read_text()
    start = text.index("[clip_without_min]")
    path.write_text(text[:start] + text[text.index("\n[", start + 1) + 1:])
    problems = model_tag_problems(Course(course).assignment("ps1"))
    assert len(problems) == 1 and problems[0].startswith("graders/ps1/diagnoses.toml: tag 'clip_without_min'")


def test_the_bank_minimums_grow_with_the_assignment_and_say_what_to_add(tmp_path):
    """One correct rewrite per TODO and one buggy entry per documented tag: removing the only
    correct entry that rewrites `exact_return` another way, and the only entry showing
    `dp_wrong_start_distribution`, gives one line each naming the cell or tag to add."""
    from rlcourse.batch.check import bank_problems
    from rlcourse.course.bank import load_entries

    course = copy_course(tmp_path / "course")
    shutil.copytree(ROOT / "tests" / "bank" / "ps1", course / "tests" / "bank" / "ps1",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert bank_problems(Course(course).assignment("ps1")) == []
    bank = course / "tests" / "bank" / "ps1"
    for entry in load_entries(bank):
        if entry.correct and entry.name != "reference" and (
                "exact_return" in entry.cells or "exact_return" in entry.edits):
            entry.path.unlink()
        if set(entry.loses.values()) == {"dp_wrong_start_distribution"}:
            entry.path.unlink()
    problems = bank_problems(Course(course).assignment("ps1"))
    assert len(problems) == 2, problems
    assert "no correct entry writes solution cell 'exact_return' another way" in problems[0]
    assert "no entry loses an item with tag 'dp_wrong_start_distribution'" in problems[1]
    assert all(line.startswith("tests/bank/ps1/: ") for line in problems), problems


def set_clipping_answer(course: Path, hidden: str) -> None:
    """explain_clipping's hidden region in the copy's source notebook becomes `hidden`."""
    import nbformat

    path = course / "source/ps1/ps1.ipynb"
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "explain_clipping")
    cell.source = f"### BEGIN SOLUTION\n{hidden}\n### END SOLUTION"
    nbformat.write(notebook, path)


def test_a_manual_answer_without_a_rubric_only_warns(tmp_path):
    """The TA still has the model answer, and grading never reads a rubric: check passes, and
    says on one line what to add."""
    course = copy_course(tmp_path / "course")
    set_clipping_answer(course, "No: clipping is not a trust region.")
    done = rlcourse(course, "check", "ps1", "--quick")
    assert done.returncode == 0 and done.stdout == "ps1: ok\n", done.stderr
    assert done.stderr == ("rlcourse check: warning: source/ps1/ps1.ipynb: manually graded cell "
                           "explain_clipping has no rubric; add `**Rubric** (2 points):` and "
                           "`* POINTS: criterion` lines after the model answer, inside its solution region\n")


def test_a_rubric_that_does_not_add_up_is_a_problem_of_check_but_not_of_grading(tmp_path, monkeypatch):
    """One line naming the notebook, the cell and both totals (`rlcourse check` prints each
    problem of `check` as it is); preflight, which grading runs, does not ask. The other quick
    checks are stubbed out here: the test above runs them for real."""
    from rlcourse.batch import check as checks
    from rlcourse.batch.check import check, preflight, rubric_findings

    course = copy_course(tmp_path / "course")
    set_clipping_answer(course, "Model.\n\n**Rubric** (2 points):\n* 1: names the min;\n* 0.5: not a trust region.")
    problem = ("source/ps1/ps1.ipynb: manually graded cell explain_clipping: its rubric's criteria add "
               "up to 1.5 points but the cell is worth 2; make them equal")
    assert rubric_findings(Course(course).assignment("ps1")) == ([problem], [])
    monkeypatch.setattr(checks, "quick_problems", lambda assignment: [])
    warned = []
    assert check(Course(course).assignment("ps1"), full=False, warn=warned.append) == [problem] and not warned
    preflight(Course(course).assignment("ps1"))  # grading goes on: marks are the TA's business
    set_clipping_answer(course, "Model.\n\n**Rubric** (2 points):\n* 1: names the min;\n* 1: not a trust region.")
    assert rubric_findings(Course(course).assignment("ps1")) == ([], [])


def test_a_missing_release_notebook_is_the_release_to_make_not_assignment_toml(tmp_path):
    """A release folder without the notebook the source has (a release older than a renamed or
    new notebook): assignment.toml names the notebook rightly; the release is made again."""
    course = copy_course(tmp_path / "course")
    (course / "release/ps1/ps1.ipynb").unlink()
    done = rlcourse(course, "check", "ps1", "--quick")
    assert done.returncode == 1 and done.stdout == "ps1: 1 problem(s)\n", done.stderr
    assert done.stderr == ("rlcourse check: release/ps1/ps1.ipynb: missing, though source/ps1/ps1.ipynb "
                           f"has it (the release is older than the source); {MAKE_RELEASE}\n")


@pytest.mark.nbgrader
def test_a_release_whose_text_is_not_the_sources_names_the_cell_and_the_command(tmp_path):
    """The full check makes the release again with nbgrader: a cell whose text differs is named
    by its index and grade id, the release is the file, `make release` the command."""
    import nbformat

    from rlcourse.batch.check import release_problems

    course = copy_course(tmp_path / "course")
    assert release_problems(Course(course).assignment("ps1")) == []
    path = course / "source/ps1/ps1.ipynb"
    notebook = nbformat.read(path, as_version=4)
    index, cell = next((index, cell) for index, cell in enumerate(notebook.cells)
                       if cell.metadata.get("nbgrader", {}).get("grade_id") == "given_environment")
    cell.source += "\n# a comment added to the source since the release was made"
    nbformat.write(notebook, path)
    assert release_problems(Course(course).assignment("ps1")) == [
        f"release/ps1/ps1.ipynb: is not nbgrader's output for source/ps1/ps1.ipynb (cell {index} "
        "(given_environment) differs in its text); an edit made in the release belongs in the "
        f"source; then {MAKE_RELEASE}"]


def test_a_bank_entry_naming_no_item_is_reported_with_its_file_and_the_items(tmp_path):
    """LOSES maps item ids to tags: an id that is no item of the assignment (a misspelling, a
    renamed test) names the entry's file and the ids there are; a tag diagnoses.toml does not
    document, and an EDITS cell the release does not have, are named the same way."""
    from rlcourse.batch.check import bank_problems, collect_items

    course = copy_course(tmp_path / "course")
    bank = course / "tests" / "bank" / "ps1"
    shutil.copytree(ROOT / "tests" / "bank" / "ps1", bank, ignore=shutil.ignore_patterns("__pycache__"))
    ps1 = Course(course).assignment("ps1")
    assert bank_problems(ps1) == []
    entry = bank / "buggy_clip_without_min.py"
    edit(entry, '"policy_loss.ppo_value": "clip_without_min"',
         '"policy_loss.ppo_values": "clip_without_minimum"')
    items = ", ".join(name for name, *_ in collect_items(ps1).items)
    assert bank_problems(Course(course).assignment("ps1")) == [
        "tests/bank/ps1/buggy_clip_without_min.py: LOSES names 'policy_loss.ppo_values', "
        f"no item of ps1; its items are {items}",
        "tests/bank/ps1/buggy_clip_without_min.py: LOSES expects the tag(s) 'clip_without_minimum', "
        "which graders/ps1/diagnoses.toml does not document"]
    edit(entry, '"policy_loss.ppo_values": "clip_without_minimum"', '"policy_loss.ppo_value": "clip_without_min"')
    edit(entry, 'EDITS = {"policy_loss"', 'EDITS = {"policy_losses"')
    assert bank_problems(Course(course).assignment("ps1")) == [
        "tests/bank/ps1/buggy_clip_without_min.py: bank entry buggy_clip_without_min: no cell "
        "'policy_losses' in the notebook"]


def scaffolded(folder: Path, name: str = "hw1") -> Path:
    """A course of one assignment as `rlcourse new NAME --framework numpy` writes it."""
    from rlcourse.course.scaffold import new_assignment

    (folder / "graders").mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", folder)
    new_assignment(Course(folder), name, framework="numpy")
    return folder


def check_lines(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("rlcourse check: ")]


@pytest.mark.slow
@pytest.mark.nbgrader
def test_a_reference_that_does_not_get_full_marks_says_which_item_and_why(tmp_path):
    """Not only "the source notebook itself fails add_one.random_arrays": a grader's exception
    by its file and line, type and message; an item the source loses, with the grader file,
    the diagnosis and the message the grader gave."""
    course = scaffolded(tmp_path / "course")
    grader = course / "graders/hw1/test_add_one.py"
    original = grader.read_text()
    edit(grader, "        x = rng.normal(size=size)\n", "        x = rng.normal(size=size)\n        x[size]\n")
    line = original[:original.index("x = rng.normal(size=size)")].count("\n") + 2
    done = rlcourse(course, "check", "hw1")
    assert done.returncode == 1 and done.stdout == "hw1: 1 problem(s)\n", done.stderr
    assert check_lines(done) == [
        f"rlcourse check: graders/hw1/test_add_one.py:{line} in test_random_arrays: IndexError: index 1 "
        "is out of bounds for axis 0 with size 1 (item add_one.random_arrays, grading the reference "
        "solution source/hw1/hw1.ipynb); fix the grader"], done.stderr

    grader.write_text(original)
    edit(course / "solutions/hw1/exact.py", "dtype=np.float64) + 1", "dtype=np.float64) + 2")
    done = rlcourse(course, "check", "hw1")
    lines = check_lines(done)
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    prefix = ("rlcourse check: source/hw1/hw1.ipynb: the reference solution loses add_one.random_arrays "
              "(graders/hw1/test_add_one.py; fix the source or the grader): returned_input: ")
    assert lines[0].startswith(prefix), lines[0]
    assert lines[0][len(prefix):].startswith("add_one on 1 values gave ["), lines[0]  # the grader's message
