"""Which students' code is too alike: `rlcourse similarity ASSIGNMENT`.

Only what a student wrote is compared. From each submission we keep the solution cells' code
and the written answers (nbgrader's solution cells, code and markdown), minus every line of the
released cell they replace (the signature, the docstring, `# YOUR CODE HERE`, given set-up
lines), plus any code cell the student added, minus lines found anywhere in the release. Locked
and test cells are dropped. Shared scaffolding therefore never counts, and neither do cells that
only set names to literals (the answers to predictions and concept checks, which every student
who chose right writes alike).

That text is fingerprinted by copydetect (the winnowing algorithm of MOSS: Schleimer, Wilkerson
and Aiken, SIGMOD 2003): Pygments tokenises it, every name becomes one symbol and comments and
whitespace vanish, so renamed variables, rewritten comments and reformatting change nothing, and
a fingerprint is a set, so reordered functions change nothing either.

Fingerprints that any two of the course's independent correct solutions share (the bank's
reference and its `correct_*` entries that write cells from scratch) are removed as
boilerplate, with the release's own text: the usual `stop_gradient(returns_to_go(...))`
opening of policy_loss is not evidence. The score of a pair is the share of the smaller
submission's fingerprints that the other one also has (how much of one is found in the other),
with a floor on the size (MIN_FINGERPRINTS) so that a three-line `returns_to_go` alone never
makes a pair. Every pair is scored at once with a sparse product of the fingerprint matrix
(two million pairs in seconds; tokenising the submissions is nearly all the time); copydetect's
own comparison then marks the matched passages of the pairs shown on the page.

The page, `reports/<assignment>/similarity.html`, names students: reports/ is for staff only.

Over 300 lines on purpose: what counts as a student's own code, its fingerprints, the pairs'
scores and the page are four short sections of one calibrated method, kept in order here.
"""
from __future__ import annotations

import dataclasses
import difflib
import io
import json
import math
import os
from pathlib import Path
from typing import TextIO

import numpy as np
from nbgrader.utils import is_solution

from rlcourse import engine_version
from rlcourse.course import release as released
from rlcourse.course.class_directory import ClassDirectory, find_submissions
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic
from rlcourse.course.submission import NotebookProblem, load_submission
from rlcourse.course.variants import borrowed_parameters

NOISE = 20
"""copydetect's k: the shortest run of tokenised code (in characters, a name being one) that can
match. 20 is about one short statement: `V=V.V(V[::-1],0)`."""
GUARANTEE = 24
"""Every matching run at least this long is found (winnowing window = GUARANTEE - NOISE + 1)."""
MIN_FINGERPRINTS = 12
"""A submission with fewer fingerprints than this is scored as if it had this many, so that a
student who wrote one short line is not "entirely contained" in everybody who wrote it too."""
DEFAULT_THRESHOLD = 0.4
"""Pairs at or above this score are flagged. Calibrated on the bank (tests/report/test_similarity.py,
figures in docs/instructors/similarity.md): the independent correct solutions of ps1-ps3 score at
most 0.21 against each other even when nothing they share is removed (0.08 once it is; two ports
of one CleanRL file, one solution, 0.32), and disguised copies (names, comments, layout and order
changed, one function swapped for another correct solution) at least 0.87 against their
original. The same class gets the same scores on every run and machine (`kgram_hashes`)."""
SHOWN_PAIRS = 50
"""Flagged pairs shown side by side on the page (the next ones are listed; all are in --json)."""
LISTED_PAIRS = 1000
HISTOGRAM_BINS = 20
BORROWED = "graded with someone else's parameters"
"""What the report says of a notebook whose parameter cell printed another student's values."""


# --- what a student wrote ------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Section:
    label: str
    """The cell's grade_id, or "cell N" for a cell the student added."""
    kind: str
    """"code" or "prose" (a markdown answer cell)."""
    text: str


@dataclasses.dataclass(frozen=True)
class Release:
    """The released notebook, as far as telling scaffolding from a student's work needs."""

    answers: dict
    """grade_id -> (cell_type, released source) of every solution cell."""
    lines: frozenset
    """Every stripped, non-blank line of the release's cells."""

    @classmethod
    def read(cls, path: Path) -> "Release":
        release = released.Release.read(path)
        answers = {cell.grade_id: (cell.cell_type, cell.source) for cell in release.cells
                   if cell.solution and cell.grade_id}
        return cls(answers, frozenset(line.strip() for line in release.lines if line.strip()))

    def written(self, grade_id: str | None, source: str) -> str:
        """The lines of `source` a student wrote: not in the released cell it answers (or, for a
        cell without an answer id, not anywhere in the release)."""
        if grade_id in self.answers:
            given = self.answers[grade_id][1].splitlines()
            mine = source.splitlines()
            kept = []
            matcher = difflib.SequenceMatcher(None, given, mine, autojunk=False)
            for tag, _, _, start, end in matcher.get_opcodes():
                if tag in ("insert", "replace"):
                    kept += mine[start:end]
        else:
            kept = [line for line in source.splitlines() if line.strip() not in self.lines]
        return "\n".join(kept).strip("\n")


@dataclasses.dataclass(frozen=True)
class StudentCode:
    student: str
    sections: tuple[Section, ...]

    def document(self, kind: str) -> str:
        """All sections of one kind, each under a comment naming its cell (comments are not
        fingerprinted, so the headers never match)."""
        parts = [section for section in self.sections if section.kind == kind and section.text]
        if kind == "code":
            return "".join(f"# ── {section.label}\n{section.text}\n\n" for section in parts)
        return "".join(f"{section.text}\n\n" for section in parts)


def only_literal_answers(code: str) -> bool:
    """A cell that only sets names to literals (`KL_PREDICTION = {...}`, `CONCEPT_X = "b"`): the
    answer to a prediction or a concept check, chosen from the options the notebook gives, which
    every student who chose right writes alike. It is no evidence of copying, so it is not
    compared (a cell with no statement at all is empty, not an answer)."""
    import ast

    try:
        statements = ast.parse(code).body
    except (SyntaxError, ValueError):
        return False
    for statement in statements:
        if isinstance(statement, ast.Assign):
            value = statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            value = statement.value
        else:
            return False
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
    return bool(statements)


def _text(source) -> str:
    return "".join(str(part) for part in source) if isinstance(source, list) else str(source)


def student_code(student: str, path: Path, release: Release) -> StudentCode:
    """What this student wrote; raises NotebookProblem for a file that is not a notebook."""
    submission = load_submission(path)
    sections = []
    for cell in submission.cells:
        if cell.grade_id in release.answers or cell.grade_id is None:
            label = cell.grade_id or f"cell {cell.index + 1}"
            written = release.written(cell.grade_id, cell.source)
            if not only_literal_answers(written):
                sections.append(Section(label, "code", written))
    # Markdown answers: load_submission has checked the file is a readable version 4 notebook
    # (or raised); an older one has no nbgrader markdown answers worth the upgrade here.
    notebook = json.loads(Path(path).read_bytes())
    for cell in notebook.get("cells", []) if notebook.get("nbformat") == 4 else []:
        grade_id = released.grade_id_of(cell)
        if grade_id in release.answers and cell.get("cell_type") == "markdown":
            text = " ".join(release.written(grade_id, _text(cell.get("source", ""))).lower().split())
            sections.append(Section(grade_id, "prose", text))
    return StudentCode(student, tuple(section for section in sections if section.text))


# --- fingerprints --------------------------------------------------------------------------------
@dataclasses.dataclass
class Fingerprints:
    code: StudentCode
    hashes: set
    """The fingerprints of every section, each taken alone (so no fingerprint spans two cells),
    less the boilerplate: what the scores count."""

    @property
    def student(self) -> str:
        return self.code.student


def kgram_hashes(text: str, k: int = NOISE) -> np.ndarray:
    """The int64 hash of every k-character run of `text`, the same in every process and on
    every machine. copydetect hashes k-grams with Python's `hash`, which is salted per
    interpreter: winnowing then keeps different fingerprints on each run, so a pair's score
    moved by about 0.01 from run to run and a pair near the threshold could be flagged on one
    run and not the next. This is a polynomial hash of the code points (no collisions within
    k characters to engineer: the known attacks on hashing modulo 2^64 need thousands) mixed by
    SplitMix64's finaliser, so that the low bits winnowing compares are well spread."""
    points = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    count = len(points) - k + 1
    if count <= 0:
        return np.zeros(0, dtype=np.int64)
    value = np.zeros(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for offset in range(k):
            value = value * np.uint64(0x100000001B3) + points[offset:offset + count]
        value ^= value >> np.uint64(30)
        value *= np.uint64(0xBF58476D1CE4E5B9)
        value ^= value >> np.uint64(27)
        value *= np.uint64(0x94D049BB133111EB)
        value ^= value >> np.uint64(31)
    return value.view(np.int64)


def _winnowed(text: str) -> tuple[set, dict]:
    """copydetect's winnowing of `text` (window GUARANTEE - NOISE + 1) over `kgram_hashes`:
    the fingerprints, and where each one starts."""
    from copydetect.utils import winnow

    hashes, where = winnow(kgram_hashes(text), GUARANTEE - NOISE + 1, remove_duplicates=False)
    starts: dict = {}
    for value, index in zip(hashes.tolist(), where.tolist()):
        starts.setdefault(value, []).append(index)
    return set(starts), starts


def _fingerprint(text: str, kind: str, name: str):
    """copydetect's CodeFingerprint (its filter, and what its highlighting reads), with the
    fingerprints taken again over `kgram_hashes`, so they are the ones the scores count."""
    from copydetect import CodeFingerprint
    from copydetect.utils import get_token_coverage

    options = {"language": "python"} if kind == "code" else {"filter": False}
    prints = CodeFingerprint(name, NOISE, GUARANTEE - NOISE + 1, fp=io.StringIO(text), **options)
    prints.hashes, prints.hash_idx = _winnowed(prints.filtered_code)
    prints.token_coverage = get_token_coverage(prints.hash_idx, NOISE, len(prints.filtered_code))
    return prints


def section_hashes(section: Section, *, every_kgram: bool = False) -> set:
    """The winnowed fingerprints of one section (copydetect's filter and winnowing, without
    the bookkeeping CodeFingerprint adds for highlighting), or the hashes of all its k-grams
    (for boilerplate, so that whichever of them winnowing picks in a student's text is caught)."""
    from copydetect.utils import filter_code

    text = section.text
    if section.kind == "code":
        text, _ = filter_code(text, "section.py", "python")
    if every_kgram:
        return set(kgram_hashes(text).tolist())
    return _winnowed(text)[0]


def _section_hashes_of(sections: list[Section]) -> list[set]:
    return [section_hashes(section) for section in sections]


def fingerprint_all(codes: list[StudentCode], boilerplate=frozenset(), *,
                    processes: int | None = None) -> list[Fingerprints]:
    """Every student's fingerprints, less the boilerplate ones (removed here rather than by
    copydetect's own option, whose set operation assumes a document never repeats one).

    Tokenising is nearly all the time, so each distinct section is tokenised once, and a large
    class is split across forked processes."""
    unique = list(dict.fromkeys(section for code in codes for section in code.sections))
    processes = processes or (min(os.cpu_count() or 1, 8) if len(unique) > 2000 else 1)
    if processes > 1:
        import multiprocessing

        chunks = [unique[start::processes] for start in range(processes)]
        with multiprocessing.get_context("fork").Pool(processes) as pool:
            results = pool.map(_section_hashes_of, chunks)
        known = {section: hashes for chunk, hashed in zip(chunks, results)
                 for section, hashes in zip(chunk, hashed)}
    else:
        known = dict(zip(unique, _section_hashes_of(unique)))
    prints = []
    for code in codes:
        hashes = set().union(*(known[section] for section in code.sections))
        prints.append(Fingerprints(code, hashes - boilerplate))
    return prints


def fingerprint(code: StudentCode, boilerplate=frozenset()) -> Fingerprints:
    return fingerprint_all([code], boilerplate)[0]


def shown_fingerprints(code: StudentCode, boilerplate=frozenset()) -> tuple:
    """copydetect.CodeFingerprint of all code sections together and of the written answers,
    less the boilerplate: what the page highlights."""
    shown = (_fingerprint(code.document("code"), "code", f"{code.student}.py"),
             _fingerprint(code.document("prose"), "prose", f"{code.student}.txt"))
    for prints in shown:
        prints.hashes = prints.hashes - boilerplate
        prints.hash_idx = {value: where for value, where in prints.hash_idx.items()
                           if value not in boilerplate}
    return shown


def independent_solutions(assignment: Assignment) -> dict[str, dict[str, str]]:
    """grade_id -> {bank entry: answer}, the distinct answers of the course's independent correct solutions: the
    reference's, and each correct bank entry's cells written from scratch (`CELLS`; an entry's
    `EDITS` are small changes to the reference, so not independent of it), once per public source
    that entries port (`FOLLOWS`)."""
    from rlcourse.course.bank import load_entries, reference_student

    bank = assignment.course.root / "tests" / "bank" / assignment.name
    if not bank.is_dir():
        return {}
    reference = reference_student(assignment.source_notebook, assignment.release_notebook)
    versions: dict[str, dict[str, str]] = {}
    for cell in reference.cells:
        if is_solution(cell):
            versions[released.grade_id_of(cell)] = {"reference": cell.source}
    families: dict[str, set[str]] = {}  # a public source -> the cells an entry porting it gave
    for entry in load_entries(bank):
        if entry.correct and entry.raw is None:
            ported = families.setdefault(entry.follows, set()) if entry.follows else set()
            for grade_id, source in entry.cells.items():
                if grade_id in ported:
                    continue  # two ports of one source are one solution, not two
                if grade_id in versions and source not in versions[grade_id].values():
                    versions[grade_id][entry.name] = source
                    ported.add(grade_id)
    return versions


def boilerplate_hashes(assignment: Assignment, release: Release, *, leave_out=(),
                       ignore_reference: bool = False) -> set:
    """Fingerprints that prove nothing: the release's own answer cells, and whatever two
    independent correct solutions of one cell have in common (less the bank entries named in
    `leave_out`: the tests calibrate on some solutions and check on others). With
    `ignore_reference`, all of the reference's answers too: for a class that had the reference
    solution (the demo class, built from it; a course that published last year's)."""
    common = set()
    for grade_id, (cell_type, source) in release.answers.items():
        kind = "code" if cell_type == "code" else "prose"
        common |= section_hashes(Section(grade_id, kind, source), every_kgram=True)
    for grade_id, sources in independent_solutions(assignment).items():
        kind = "code" if release.answers.get(grade_id, ("code",))[0] == "code" else "prose"
        seen: set = set()
        for name, source in sources.items():
            if name in leave_out:
                continue
            text = release.written(grade_id, source)
            if kind == "prose":
                text = " ".join(text.lower().split())
            mine = section_hashes(Section(grade_id, kind, text), every_kgram=True)
            common |= mine if (ignore_reference and name == "reference") else mine & seen
            seen |= mine
    return common


# --- every pair ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Comparison:
    assignment: str
    threshold: float
    students: list[str]
    fingerprints: list[Fingerprints]
    first: np.ndarray
    """Index (into students) of the first student of each pair, pairs sorted highest first."""
    second: np.ndarray
    scores: np.ndarray
    shared: np.ndarray
    """Fingerprints the two submissions have in common, per pair."""
    not_compared: dict
    """student -> why their submission could not be read."""
    boilerplate: set
    ignore_reference: bool = False
    borrowed: list = dataclasses.field(default_factory=list)
    """Submissions whose parameter cell shows someone else's values (course.variants)."""

    @property
    def flagged(self) -> int:
        return int(np.count_nonzero(self.scores >= self.threshold))

    def pairs(self):
        """(student a, student b, score, flagged) for every pair, highest score first."""
        for i, j, score in zip(self.first.tolist(), self.second.tolist(), self.scores.tolist()):
            yield self.students[i], self.students[j], score, score >= self.threshold


def score_pairs(fingerprints: list[Fingerprints]):
    """(first, second, score, shared) of every pair i < j, sorted by score, highest first."""
    from scipy import sparse

    columns: dict = {}
    rows, cols = [], []
    for row, prints in enumerate(fingerprints):
        for value in prints.hashes:
            rows.append(row)
            cols.append(columns.setdefault(value, len(columns)))
    count = len(fingerprints)
    matrix = sparse.csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)),
                               shape=(count, max(len(columns), 1)))
    shared_all = (matrix @ matrix.T).toarray()
    sizes = np.diagonal(shared_all).astype(np.float64)
    first, second = np.triu_indices(count, k=1)
    shared = shared_all[first, second]
    smaller = np.maximum(np.minimum(sizes[first], sizes[second]), MIN_FINGERPRINTS)
    scores = np.round(shared / smaller, 4)
    order = np.argsort(-scores, kind="stable")  # ties stay in (first, second) order
    return first[order], second[order], scores[order], shared[order]


def compare_class(assignment: Assignment, class_dir: ClassDirectory,
                  threshold: float = DEFAULT_THRESHOLD, *, boilerplate: set | None = None,
                  ignore_reference: bool = False) -> Comparison:
    """Score every pair of readable submissions of this assignment in the class directory."""
    release = Release.read(assignment.release_notebook)
    if boilerplate is None:
        boilerplate = boilerplate_hashes(assignment, release, ignore_reference=ignore_reference)
    codes, not_compared, borrowed = [], {}, []
    for found in find_submissions(class_dir, assignment):
        if found.problem:
            not_compared[found.student] = found.problem
            continue
        try:
            code = student_code(found.student, found.path, release)
        except NotebookProblem as problem:
            not_compared[found.student] = str(problem)
            continue
        codes.append(code)
        evidence = borrowed_parameters(assignment.name, assignment.variants, found.student, found.path)
        if evidence:
            borrowed.append(evidence)
    prints = fingerprint_all(codes, boilerplate)
    first, second, scores, shared = score_pairs(prints)
    return Comparison(assignment.name, threshold, [code.student for code in codes], prints, first,
                      second, scores, shared, not_compared, boilerplate, ignore_reference, borrowed)


def write_json(comparison: Comparison, stream: TextIO) -> None:
    """One JSON object: every compared pair, highest first (written in blocks as it goes: a
    class of 2,000 has two million pairs)."""
    stream.write('{"assignment": %s, "rlcourse_version": %s, "threshold": %s, "pairs": ['
                 % (json.dumps(comparison.assignment), json.dumps(engine_version()),
                    json.dumps(comparison.threshold)))
    names = [json.dumps(student) for student in comparison.students]
    scores = comparison.scores.tolist()
    first, second = comparison.first.tolist(), comparison.second.tolist()
    for start in range(0, len(scores), 100_000):
        stream.write(("," if start else "") + ",".join(
            '\n{"students": [%s, %s], "similarity": %r, "flagged": %s}'
            % (names[i], names[j], score, "true" if score >= comparison.threshold else "false")
            for i, j, score in zip(first[start:start + 100_000], second[start:start + 100_000],
                                   scores[start:start + 100_000])))
    stream.write('],\n"borrowed_parameters": %s}\n' % json.dumps(
        [dict(entry, flagged=True, reason=BORROWED) for entry in comparison.borrowed]))


# --- the page ------------------------------------------------------------------------------------
def _highlighted(one, other) -> tuple:
    """Both documents with the passages they share marked: copydetect's HTML (escaped by it)
    where there is a shared passage, else the plain text, which the template escapes."""
    from copydetect.detector import compare_files
    from copydetect.utils import highlight_overlap
    from markupsafe import Markup

    _, _, (slices_one, slices_other) = compare_files(one, other)
    marked = []
    for prints, slices in ((one, slices_one), (other, slices_other)):
        if len(slices) and slices.shape[-1]:
            html, _ = highlight_overlap(prints.raw_code, slices, "<mark>", "</mark>",
                                        escape_html=True)
            marked.append(Markup(html))
        else:
            marked.append(prints.raw_code)
    return tuple(marked)


def histogram(scores: np.ndarray, threshold: float) -> list[dict]:
    """Bars of the score distribution; heights on a log scale so a handful of high pairs is
    still visible next to two million low ones."""
    counts, edges = np.histogram(scores, bins=HISTOGRAM_BINS, range=(0.0, 1.0))
    top = math.log10(max(int(counts.max(initial=0)), 1) + 1)
    return [{"low": float(low), "high": float(high), "count": int(count),
             "height": round(100 * math.log10(int(count) + 1) / top, 1) if top else 0.0,
             "above": low >= threshold - 1e-9}
            for low, high, count in zip(edges[:-1], edges[1:], counts)]


def render_page(comparison: Comparison, shown: int = SHOWN_PAIRS) -> str:
    from rlcourse.explain.pages import render

    flagged = []
    shown_prints: dict = {}

    def prints_of(index):
        if index not in shown_prints:
            shown_prints[index] = shown_fingerprints(comparison.fingerprints[index].code,
                                                     comparison.boilerplate)
        return shown_prints[index]

    for rank, (a, b, score, is_flagged) in enumerate(comparison.pairs()):
        if not is_flagged or rank >= LISTED_PAIRS:
            break
        pair = {"rank": rank + 1, "students": (a, b), "score": score,
                "shared": int(comparison.shared[rank])}
        if rank < shown:
            one, other = prints_of(comparison.first[rank]), prints_of(comparison.second[rank])
            pair["code"] = _highlighted(one[0], other[0])
            if one[1].raw_code or other[1].raw_code:
                pair["prose"] = _highlighted(one[1], other[1])
        flagged.append(pair)
    scores = comparison.scores
    return render(
        "similarity.html", assignment=comparison.assignment, threshold=comparison.threshold,
        students=len(comparison.students), pair_count=len(scores), flagged=flagged, shown=shown,
        flagged_count=comparison.flagged,
        histogram=histogram(scores, comparison.threshold),
        median=float(np.median(scores)) if len(scores) else 0.0,
        p99=float(np.quantile(scores, 0.99)) if len(scores) else 0.0,
        not_compared=sorted(comparison.not_compared.items()),
        noise=NOISE, guarantee=GUARANTEE, ignore_reference=comparison.ignore_reference,
        borrowed=comparison.borrowed, borrowed_reason=BORROWED)


def write_similarity_report(assignment: Assignment, class_dir: ClassDirectory,
                            threshold: float = DEFAULT_THRESHOLD, *, ignore_reference: bool = False
                            ) -> tuple[Comparison, Path]:
    comparison = compare_class(assignment, class_dir, threshold, ignore_reference=ignore_reference)
    path = class_dir.reports / assignment.name / "similarity.html"
    return comparison, write_atomic(path, render_page(comparison))
