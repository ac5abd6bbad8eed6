"""The similarity report: disguised copies are flagged, independent correct solutions are not,
only student-written code counts, the --json contract, and the page as a browser shows it."""
import itertools
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.report.disguise import disguise_notebook
from rlcourse.report.similarity import (DEFAULT_THRESHOLD, Release, boilerplate_hashes, compare_class,
                                 independent_solutions, student_code, write_json,
                                 write_similarity_report)

ROOT = Path(__file__).resolve().parents[2]
RLCOURSE = str(Path(sys.executable).with_name("rlcourse"))
ASSIGNMENTS = ("ps1", "ps2", "ps3")
HOSTILE = "</pre><script>alert(1)</script><img src=x onerror=alert(2)>"


# --- building classes ----------------------------------------------------------------------------
def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def hand_in(class_dir: Path, assignment, student: str, notebook) -> None:
    path = class_dir / "submitted" / student / assignment.name / assignment.notebook
    path.parent.mkdir(parents=True, exist_ok=True)
    data = notebook if isinstance(notebook, bytes) else (nbformat.writes(notebook) + "\n").encode()
    path.write_bytes(data)


def bank_notebooks(assignment) -> dict:
    """Every bank entry that is a notebook, built as the bank builds it (on the reference)."""
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    return {entry.name: nbformat.reads(build_submission(entry, base).decode(), as_version=4)
            for entry in load_entries(ROOT / "tests" / "bank" / assignment.name)
            if entry.raw is None}


def disguised_copy(notebook, assignment, seed: int):
    """Names, docstrings, comments and layout changed, definitions and two answer cells
    reordered, and one code answer swapped for an independent correct solution of it: one of
    at most a third of the notebook's written code (a copy with its larger half rewritten is
    half a copy, which the threshold does not claim to flag)."""
    release = Release.read(assignment.release_notebook)
    versions = independent_solutions(assignment)
    answers = {grade_id(cell): cell.source for cell in notebook.cells}
    written = {cell: len(release.written(cell, answers.get(cell, ""))) for cell in release.answers}
    swappable = [cell for cell, sources in versions.items()
                 if release.answers[cell][0] == "code" and len(sources) > 1
                 and written[cell] <= sum(written.values()) / 3]
    swapped = swappable[seed % len(swappable)]
    other = next(source for source in versions[swapped].values() if source != answers[swapped])
    copy = disguise_notebook(notebook, seed, answer_ids=set(release.answers),
                             swap=(swapped, other))
    positions = [index for index, cell in enumerate(copy.cells)
                 if grade_id(cell) in release.answers and cell.cell_type == "code"]
    first, last = positions[0], positions[-1]
    copy.cells[first], copy.cells[last] = copy.cells[last], copy.cells[first]
    return copy


def score(comparison, a: str, b: str) -> float:
    return next(value for one, other, value, _ in comparison.pairs() if {one, other} == {a, b})


# --- copies are flagged --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_disguised_copies_of_bank_entries_are_flagged(course, tmp_path, name):
    """Each bank notebook and its disguised copy (renamed, reordered, comments and whitespace
    changed, one function swapped): the pair is flagged. (Not necessarily the copy's closest
    match: the bank's notebooks are the reference with small edits, so nearly copies already.)"""
    assignment = course.assignment(name)
    originals = bank_notebooks(assignment)
    for seed, (entry, notebook) in enumerate(originals.items()):
        hand_in(tmp_path, assignment, entry, notebook)
        hand_in(tmp_path, assignment, f"copy-of-{entry}", disguised_copy(notebook, assignment, seed))
    comparison = compare_class(assignment, ClassDirectory(tmp_path))
    assert len(comparison.students) == 2 * len(originals)
    for entry in originals:
        copied = score(comparison, entry, f"copy-of-{entry}")
        assert copied >= DEFAULT_THRESHOLD, f"{name}: the disguised copy of {entry} scores {copied}"


def test_a_disguised_copy_differs_from_its_original_in_every_answer(course):
    """The disguise is real: no code answer of the copy is its original's text."""
    assignment = course.assignment("ps1")
    original = bank_notebooks(assignment)["correct_scan_and_loops"]
    copy = disguised_copy(original, assignment, 0)
    before = {grade_id(cell): cell.source for cell in original.cells}
    release = Release.read(assignment.release_notebook)
    for cell in copy.cells:
        if grade_id(cell) in release.answers and cell.cell_type == "code":
            assert cell.source != before[grade_id(cell)], grade_id(cell)


# --- independent solutions are not ---------------------------------------------------------------
def independent_students(assignment):
    """The reference, and each correct bank entry's own cells on the release (the cells it did
    not write left as released): the course's independent correct solutions, as students."""
    release = nbformat.read(assignment.release_notebook, as_version=4)
    students = {"reference": reference_student(assignment.source_notebook,
                                               assignment.release_notebook)}
    for entry in load_entries(ROOT / "tests" / "bank" / assignment.name):
        if entry.correct and entry.cells and not entry.edits and entry.raw is None:
            students[entry.name] = nbformat.reads(build_submission(entry, release).decode(),
                                                  as_version=4)
    return students


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_independent_correct_solutions_are_not_flagged_even_uncalibrated(course, tmp_path, name):
    """Calibration: with nothing but the release removed (none of what the solutions share),
    no pair of independent correct solutions reaches the threshold, nor with the bank's
    calibration, which does remove what they share."""
    assignment = course.assignment(name)
    students = independent_students(assignment)
    assert len(students) >= 3
    for student, notebook in students.items():
        hand_in(tmp_path, assignment, student, notebook)
    release = Release.read(assignment.release_notebook)
    release_only = boilerplate_hashes(assignment, release, leave_out=set(students))
    strict = compare_class(assignment, ClassDirectory(tmp_path), boilerplate=release_only)
    calibrated = compare_class(assignment, ClassDirectory(tmp_path))
    assert len(strict.scores) == len(students) * (len(students) - 1) // 2
    assert strict.flagged == 0 and calibrated.flagged == 0, list(strict.pairs())[:3]
    assert sum(calibrated.shared) < sum(strict.shared)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_no_answer_is_flagged_for_what_its_independent_solutions_share(course, tmp_path, name):
    """Cell by cell: two students who each wrote only one answer, in two different correct
    ways, are never flagged, calibrated on the bank with the two of them left out."""
    assignment = course.assignment(name)
    release = Release.read(assignment.release_notebook)
    base = nbformat.read(assignment.release_notebook, as_version=4)
    checked = 0
    for cell, sources in independent_solutions(assignment).items():
        for (a, first), (b, second) in itertools.combinations(sources.items(), 2):
            folder = tmp_path / f"{cell}-{a}-{b}"
            for student, source in ((a, first), (b, second)):
                notebook = nbformat.from_dict(json.loads(json.dumps(base)))
                next(c for c in notebook.cells if grade_id(c) == cell).source = source
                hand_in(folder, assignment, student, notebook)
            held_out = boilerplate_hashes(assignment, release, leave_out={a, b})
            comparison = compare_class(assignment, ClassDirectory(folder), boilerplate=held_out)
            assert comparison.flagged == 0, (cell, a, b, list(comparison.pairs()))
            checked += 1
    assert checked >= 3


SHARED_OPENING = """\
    {a} = jax.lax.stop_gradient(returns_to_go(records['reward']))
    {o} = jax.lax.stop_gradient(records['old_logp'])
    {n} = log_probability(theta, records['observation'], records['action'])
    {r} = jnp.exp({n} - {o})
"""


def test_what_correct_solutions_share_does_not_count(course, tmp_path, ps1):
    """Two students whose policy_loss has only the opening that two of the bank's independent
    solutions (CleanRL's form and the jnp.where form) also share, under other names: flagged
    without the calibration, not with it (the ratio line, which no two of them write alike,
    still counts)."""
    base = nbformat.read(ps1.release_notebook, as_version=4)
    names = {"kim": dict(a="adv", o="old", n="new", r="ratio"),
             "lee": dict(a="advantages", o="logp_old", n="logp", r="rho")}
    for student, words in names.items():
        notebook = nbformat.from_dict(json.loads(json.dumps(base)))
        cell = next(c for c in notebook.cells if grade_id(c) == "policy_loss")
        stub = "    # YOUR CODE HERE\n    raise NotImplementedError()"
        assert cell.source.count(stub) == 1
        cell.source = cell.source.replace(stub, SHARED_OPENING.format(**words))
        hand_in(tmp_path, ps1, student, notebook)
    release = Release.read(ps1.release_notebook)
    uncalibrated = boilerplate_hashes(ps1, release, leave_out={"reference", "correct_cleanrl_form",
                                                               "correct_where_forms",
                                                               "correct_scan_and_loops"})
    before = compare_class(ps1, ClassDirectory(tmp_path), boilerplate=uncalibrated)
    after = compare_class(ps1, ClassDirectory(tmp_path))
    assert before.flagged == 1
    assert after.flagged == 0 and after.shared[0] < before.shared[0] / 2


# --- only what students wrote --------------------------------------------------------------------
def test_only_student_written_lines_are_compared(ps1, tmp_path):
    """The released signature, docstring and stub lines, given set-up lines, locked cells and
    test cells are gone; a line the student wrote and a cell the student added stay."""
    notebook = nbformat.read(ps1.release_notebook, as_version=4)
    release = Release.read(ps1.release_notebook)
    for cell in notebook.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if grade_id(cell) == "returns_to_go":
            cell.source = cell.source.replace("raise NotImplementedError()",
                                              "return jnp.cumsum(rewards[::-1], 0)[::-1]")
        elif grade_id(cell) == "exercise_frozen_reference":
            cell.source += "\nold = b['old_logp']"
        elif cell.cell_type == "code" and not meta.get("solution"):
            cell.source += "\nsecret_helper = 42  # edited a locked cell"
    notebook.cells.append(nbformat.v4.new_code_cell("def my_helper(x):\n    return x + 1"))
    hand_in(tmp_path, ps1, "sam", notebook)
    code = student_code("sam", tmp_path / "submitted/sam/ps1/ps1.ipynb", release)
    written = {section.label: section.text for section in code.sections}
    assert written["returns_to_go"] == "    return jnp.cumsum(rewards[::-1], 0)[::-1]"
    assert written["exercise_frozen_reference"] == "old = b['old_logp']"
    assert "def my_helper(x):\n    return x + 1" in written.values()
    assert "secret_helper" not in "".join(written.values())
    assert len(written) == 3


def test_untouched_releases_are_never_alike(ps1, tmp_path):
    """Students who handed in the release as it is wrote nothing: they score 0."""
    for student in ("una", "vic"):
        hand_in(tmp_path, ps1, student, nbformat.read(ps1.release_notebook, as_version=4))
    comparison = compare_class(ps1, ClassDirectory(tmp_path))
    assert comparison.scores.tolist() == [0.0]
    assert all(not prints.hashes for prints in comparison.fingerprints)


def test_odd_cells_neither_crash_nor_count(ps1, tmp_path):
    """Cells that are not objects, nbgrader metadata that is a list or an id that is a list are
    skipped; a markdown answer given as a list of lines is read."""
    notebook = json.loads(ps1.release_notebook.read_text())
    notebook["cells"] += [5, {"cell_type": "markdown", "metadata": {"nbgrader": [1]}, "source": "x"},
                          {"cell_type": "markdown", "metadata": {"nbgrader": {"grade_id": ["x"]}},
                           "source": "x"},
                          {"cell_type": "markdown", "source": ["Because ", "the  MIN."],
                           "metadata": {"nbgrader": {"grade_id": "explain_clipping"}}}]
    path = tmp_path / "odd.ipynb"
    path.write_text(json.dumps(notebook))
    code = student_code("odd", path, Release.read(ps1.release_notebook))
    assert [(section.kind, section.text) for section in code.sections] == \
        [("prose", "because the min.")]


def test_unreadable_and_unsafe_submissions_are_listed_not_compared(ps1, tmp_path):
    hand_in(tmp_path, ps1, "ada", nbformat.read(ps1.release_notebook, as_version=4))
    hand_in(tmp_path, ps1, "edsger", b"not a notebook")
    hand_in(tmp_path, ps1, "bad name", nbformat.read(ps1.release_notebook, as_version=4))
    comparison, page = write_similarity_report(ps1, ClassDirectory(tmp_path))
    assert comparison.students == ["ada"] and len(comparison.scores) == 0
    assert set(comparison.not_compared) == {"edsger", "bad name"}
    assert "not valid JSON" in comparison.not_compared["edsger"]
    assert "edsger" in page.read_text()


# --- the command line ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def copied_class(course, tmp_path_factory):
    """A small class: four bank notebooks, a disguised copy of one, and a hostile answer."""
    ps1 = course.assignment("ps1")
    folder = tmp_path_factory.mktemp("class")
    notebooks = bank_notebooks(ps1)
    for student, entry in (("ada", "reference"), ("grace", "correct_cleanrl_form"),
                           ("alan", "buggy_clip_without_min"), ("ken", "correct_scan_and_loops")):
        hand_in(folder, ps1, student, notebooks[entry])
    copy = disguised_copy(notebooks["correct_cleanrl_form"], ps1, 3)
    next(c for c in copy.cells if grade_id(c) == "exercise_horizon").source += f"\n# {HOSTILE}"
    hand_in(folder, ps1, "linus", copy)
    return folder


def run(*args, folder):
    return subprocess.run([RLCOURSE, "similarity", "ps1", "--course-dir", str(folder), *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_json_lists_every_pair_highest_first(copied_class):
    result = run("--json", folder=copied_class)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"assignment", "rlcourse_version", "threshold", "pairs", "borrowed_parameters"}
    assert data["borrowed_parameters"] == []  # no notebook of this class shows its outputs
    assert data["assignment"] == "ps1" and data["threshold"] == DEFAULT_THRESHOLD
    students = {"ada", "grace", "alan", "ken", "linus"}
    pairs = data["pairs"]
    assert len(pairs) == 10
    assert {frozenset(pair["students"]) for pair in pairs} == \
        {frozenset(pair) for pair in itertools.combinations(students, 2)}
    for pair in pairs:
        assert set(pair) == {"students", "similarity", "flagged"}
        assert 0 <= pair["similarity"] <= 1
        assert pair["flagged"] == (pair["similarity"] >= data["threshold"])
    assert [pair["similarity"] for pair in pairs] == sorted((p["similarity"] for p in pairs),
                                                            reverse=True)
    assert any(set(pair["students"]) == {"grace", "linus"} and pair["flagged"] for pair in pairs)

    strict = json.loads(run("--json", "--threshold", "1", folder=copied_class).stdout)
    assert strict["threshold"] == 1
    assert all(pair["flagged"] == (pair["similarity"] == 1) for pair in strict["pairs"])
    assert run("--threshold", "1.5", folder=copied_class).returncode == 2


def test_the_same_class_gets_the_same_scores_in_every_process(copied_class):
    """Python salts `hash` per interpreter; copydetect's k-grams were str hashes, so each run kept
    other fingerprints and scores moved (a pair near the threshold flagged on one run only)."""
    import os

    outputs = set()
    for seed in ("1", "2", "97"):
        result = subprocess.run([RLCOURSE, "similarity", "ps1", "--course-dir", str(copied_class),
                                 "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT,
                                env=dict(os.environ, PYTHONHASHSEED=seed))
        assert result.returncode == 0, result.stderr
        outputs.add(json.dumps(json.loads(result.stdout)["pairs"]))
    assert len(outputs) == 1


def test_ignore_reference_leaves_only_the_copy(copied_class):
    """All four bank notebooks are built on the reference; when the class had it, only the
    copy is flagged."""
    data = json.loads(run("--json", "--ignore-reference", folder=copied_class).stdout)
    flagged = [set(pair["students"]) for pair in data["pairs"] if pair["flagged"]]
    assert flagged == [{"grace", "linus"}]


def test_a_notebook_run_with_someone_elses_parameters_is_flagged(ps1, tmp_path):
    """linus hands in grace's notebook with its outputs: its parameter cell printed grace's
    values. ada's shows her own, ken's ran without an id (the defaults): neither is flagged."""
    from rlcourse.course.variants import with_parameter_output

    reference = nbformat.writes(nbformat.read(ps1.source_notebook, as_version=4)).encode()
    for student, ran_as in (("ada", "ada"), ("grace", "grace"), ("linus", "grace"), ("ken", "")):
        content = with_parameter_output(reference, ps1.name, ps1.variants, ran_as)
        hand_in(tmp_path, ps1, student, nbformat.reads(content.decode(), as_version=4))
    comparison, page = write_similarity_report(ps1, ClassDirectory(tmp_path))
    assert comparison.borrowed == [{"student": "linus", "shown_for": "grace",
                                    "shown": ps1.parameters("grace"), "own": ps1.parameters("linus")}]
    html = page.read_text()
    assert html.count('<tr class="borrowed">') == 1 and "graded with someone else&#39;s parameters" in html
    stream = __import__("io").StringIO()
    write_json(comparison, stream)
    entry, = json.loads(stream.getvalue())["borrowed_parameters"]
    assert entry["student"] == "linus" and entry["shown_for"] == "grace" and entry["flagged"]
    assert entry["reason"] == "graded with someone else's parameters"


# --- the page ------------------------------------------------------------------------------------
@pytest.mark.browser
def test_similarity_page_renders_in_headless_chromium(copied_class, tmp_path, chromium):
    """As a TA sees it: the flagged pair side by side with marked passages, the histogram of
    all ten pairs, no script from the hostile answer, and a screenshot that is not blank."""
    assert run("--ignore-reference", folder=copied_class).returncode == 0
    page = copied_class / "reports" / "ps1" / "similarity.html"
    dom = chromium("--dump-dom", page.as_uri()).stdout
    assert "<title>ps1 similarity (staff only)</title>" in dom
    assert '<strong id="flagged-count">1</strong>' in dom
    assert dom.count('<section class="pair"') == 1
    assert "<h3>1. grace and linus:" in dom
    assert dom.count("<mark>") >= 5
    assert dom.count('<div class="bar') == 20
    assert sum(int(count) for count in
               __import__("re").findall(r'title="[0-9.]+–[0-9.]+: (\d+) pairs"', dom)) == 10
    assert "<script" not in dom.lower() and "&lt;script&gt;" in dom

    screenshot = tmp_path / "similarity.png"
    chromium(f"--screenshot={screenshot}", "--window-size=1200,1600", page.as_uri())
    from PIL import Image  # matplotlib's own dependency

    with Image.open(screenshot) as image:
        assert image.size == (1200, 1600)
        colours = image.convert("RGB").getcolors(maxcolors=1_000_000)
    assert len(colours) > 50, "the screenshot is blank or nearly one colour"
    assert max(colours)[0] / (1200 * 1600) < 0.9, "the page did not render"


@pytest.mark.parametrize("code, answers_only", [
    ('KL_PREDICTION = {"no clip": "much larger"}\n', True),
    ("CONCEPT_A: str = 'b'  # a comment\nCONCEPT_B = 0.02\n", True),
    ("x = [1, 2]\ny = x\n", False),                      # a name, not a literal
    ("def f():\n    return 1\n", False),
    ("CONCEPT_A = 'b'\nprint(CONCEPT_A)\n", False),
    ("", False),
    ("KL = {'a': \n", False),                            # not Python
])
def test_a_cell_of_literal_answers_is_not_compared(code, answers_only):
    """Every student who chose right writes a prediction's or a concept check's answers alike:
    with eight predictions, ps2's other-form entry and the reference scored 0.42 on that cell."""
    from rlcourse.report.similarity import only_literal_answers

    assert only_literal_answers(code) is answers_only
