"""The TA's marking sheet for the manually graded answers: `reports/<assignment>/rubric.html`
and the CSV a TA fills beside it.

For each manually graded question: what the students were asked, the model answer, the rubric
(rlcourse.course.rubrics), and every student's answer, grouped so that a TA reads each distinct
answer once: answers equal up to whitespace and case share one group (the same normalisation a
mark is bound by, rlcourse.record.marks.answer_hash), and the empty ones (left blank, or the
release's placeholder) share one at the end. Each student is shown with the state of their mark:
awaiting a TA, marked (score, criteria), re-marking (marked, but the answer changed since: the
old score is shown, and kept in the gradebook until a TA marks the new answer), or not
autograded yet (their submitted answer is not the one recorded: autograde it before marking).

The CSV has one row per student and question, in the sheet's order (identical answers on
adjacent rows, with their group number), pre-filled with the marks already in the gradebook,
each row's state, and the hash of the answer it shows; `rlcourse rubric import` reads it back,
and refuses a row whose answer has changed since. A TA edits these files, so none is ever
overwritten (`write_marking_csv`): `rubric-template.csv` is written when missing, and after that
each sheet whose rows differ from every unedited one is a new `rubric-marks-<UTC time>.csv`
beside it, named by the HTML sheet and printed by the command. An older such file that nobody
edited (its bytes are still those written, recorded in `.rubric-csv-written.json`) is removed
when a newer one replaces it, so the folder holds the TA's files and one fresh sheet.

The sheet holds the model answer and names students: it is written under reports/, which is
for staff only, and never beside the feedback pages.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import json
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory, find_submissions, student_id_problem
from rlcourse.course.directory import Assignment
from rlcourse.course.files import write_atomic, write_new
from rlcourse.course.rubrics import ManualQuestion, Rubrics, written_answers
from rlcourse.record.marks import Mark, answer_hash
from rlcourse.report.spreadsheet import csv_text

CSV_COLUMNS = ("student", "question", "group", "state", "criteria", "comment", "answer_hash")
"""`group` and `state` are for the TA's eye only; the import reads student, question, criteria,
comment and answer_hash."""
TEMPLATE = "rubric-template.csv"
FRESH = "rubric-marks-{stamp}.csv"
WRITTEN_RECORD = ".rubric-csv-written.json"
"""name -> SHA-256 of each marking CSV as rlcourse wrote it: a file whose bytes still match was
not edited, and may be removed once a newer sheet replaces it."""

AWAITING, MARKED, REMARKING, NOT_RECORDED = "awaiting", "marked", "re-marking", "not autograded"


@dataclasses.dataclass
class Group:
    number: int
    text: str
    """One student's answer as written (the group's first, in student order)."""
    students: list[str]
    empty: bool = False
    answer_hash: str = ""
    """What the group's students all wrote, as a mark is bound to it."""


@dataclasses.dataclass
class Question:
    question: ManualQuestion
    groups: list[Group]


@dataclasses.dataclass(frozen=True)
class Row:
    """One student's answer to one question, as the sheet shows it and its CSV lists it."""

    student: str
    grade_id: str
    group: str
    """The group's number, or "empty"."""
    answer_hash: str
    """The answer shown (the submitted one)."""
    state: str
    """AWAITING, MARKED, REMARKING or NOT_RECORDED."""
    mark: Mark | None = None

    @property
    def state_text(self) -> str:
        mark = self.mark
        if self.state == NOT_RECORDED:
            before = (f" (marked {mark.score:g}/{mark.max_score:g} on the answer autograded before)"
                      if mark is not None and mark.marked else "")
            return "not autograded yet: run rlcourse autograde before marking this answer" + before
        if self.state == REMARKING:
            return f"re-marking: answer changed since it was marked (was {mark.score:g}/{mark.max_score:g})"
        if self.state == MARKED:
            if mark.met is None:
                return f"marked {mark.score:g}/{mark.max_score:g} in formgrader (criteria not recorded)"
            return f"marked {mark.score:g}/{mark.max_score:g}"
        return "awaiting a TA"

    @property
    def prefilled(self) -> tuple[str, str]:
        """(criteria, comment) the CSV shows: a current mark's own, so that importing the file as
        it is changes nothing; blank for anything else, so that a stale mark's criteria are never
        carried onto the new answer."""
        mark = self.mark
        if self.state != MARKED:
            return "", ""
        criteria = "" if mark.met is None else (";".join(map(str, mark.met)) or "none")
        return criteria, mark.comment


def group_answers(answers: dict[str, str | None], placeholder: str = "") -> list[Group]:
    """Students grouped by their answer as a mark is bound to it (rlcourse.record.marks.
    answer_hash: the words, in lower case), largest group first, the empty ones last (None: no
    readable notebook, counted as empty)."""
    empty = answer_hash("")
    by_hash: dict[str, list[str]] = {}
    first: dict[str, str] = {}
    for student in sorted(answers):
        key = answer_hash(answers[student], placeholder)
        by_hash.setdefault(key, []).append(student)
        first.setdefault(key, answers[student] or "")
    ordered = sorted((key for key in by_hash if key != empty), key=lambda key: (-len(by_hash[key]), by_hash[key][0]))
    groups = [Group(number, first[key], by_hash[key], answer_hash=key)
              for number, key in enumerate(ordered, start=1)]
    if empty in by_hash:
        groups.append(Group(len(groups) + 1, "", by_hash[empty], empty=True, answer_hash=empty))
    return groups


def class_answers(assignment: Assignment, class_dir: ClassDirectory, grade_ids) -> dict[str, dict]:
    """student -> {grade_id: answer} of each submission (an unreadable notebook: {})."""
    from rlcourse.course.submission import NotebookProblem

    answers = {}
    for entry in find_submissions(class_dir, assignment):
        if student_id_problem(entry.student):
            continue
        try:
            answers[entry.student] = written_answers(entry.path, grade_ids) if entry.path else {}
        except NotebookProblem:
            answers[entry.student] = {}
    return answers


@dataclasses.dataclass
class Sheet:
    questions: list[Question]
    rows: list[Row]
    """In the sheet's order: by question, group, student."""

    def __post_init__(self):
        self._by_answer = {(row.student, row.grade_id): row for row in self.rows}

    def row(self, student: str, grade_id: str) -> Row | None:
        return self._by_answer.get((student, grade_id))

    @property
    def students(self) -> list[str]:
        return sorted({row.student for row in self.rows})


def rubric_sheet(assignment: Assignment, class_dir: ClassDirectory) -> Sheet:
    """The questions with their grouped answers, and each student's row: their answer's hash and
    the state of their mark (the gradebook's marks, the ledger's record of the answers recorded)."""
    from rlcourse.course.release import Release

    rubrics = Rubrics.of(assignment)
    release = Release.read_or_empty(assignment.release_notebook)
    answers = class_answers(assignment, class_dir, rubrics.ids)
    marks = _marks(assignment, class_dir, answers, rubrics.ids)
    recorded = _recorded(assignment, class_dir, answers)
    questions, rows = [], []
    for question in rubrics.questions:
        released = release.cell(question.grade_id)
        placeholder = released.source if released is not None else ""
        groups = group_answers({student: theirs.get(question.grade_id) for student, theirs in answers.items()},
                               placeholder)
        questions.append(Question(question, groups))
        for group in groups:
            for student in group.students:
                mark = marks.get(student, {}).get(question.grade_id)
                held = (recorded.get(student) or {}).get(question.grade_id)
                rows.append(Row(student, question.grade_id, "empty" if group.empty else str(group.number),
                                group.answer_hash, _state(mark, group.answer_hash, held), mark))
    return Sheet(questions, rows)


def _state(mark: Mark | None, shown: str, recorded: str | None) -> str:
    if recorded != shown:
        return NOT_RECORDED
    if mark is None or not mark.marked:
        return AWAITING
    return REMARKING if mark.stale else MARKED


def _marks(assignment: Assignment, class_dir: ClassDirectory, answers: dict, grade_ids) -> dict:
    from rlcourse.record.gradebook import open_gradebook
    from rlcourse.record.marks import read_marks

    if not Path(class_dir.db_url.removeprefix("sqlite:///")).is_file():
        return {}
    with open_gradebook(class_dir.db_url) as gradebook:
        return {student: read_marks(gradebook, assignment, student, grade_ids) for student in answers}


def _recorded(assignment: Assignment, class_dir: ClassDirectory, answers: dict) -> dict:
    """student -> grade_id -> answer_hash of the answers the gradebook holds (None: none)."""
    from rlcourse.record.ledger import recorded_answers

    return {student: recorded_answers(class_dir, assignment, student) for student in answers}


def marking_csv(sheet: Sheet) -> str:
    """One row per student and question, in the sheet's order, pre-filled with current marks;
    every text cell through rlcourse.report.spreadsheet (`rlcourse rubric import` reads it back)."""
    rows = []
    for row in sheet.rows:
        criteria, comment = row.prefilled
        rows.append([row.student, row.grade_id, row.group, row.state_text, criteria, comment, row.answer_hash])
    return csv_text(CSV_COLUMNS, rows, lineterminator="\n")


def write_marking_csv(folder: Path, content: str) -> Path:
    """The freshest marking CSV with `content`, never overwriting a file: `rubric-template.csv`
    when it is missing; else an unedited file already holding `content`; else a new
    `rubric-marks-<UTC time>.csv`, after which the older files rlcourse wrote and nobody edited
    are removed (the template never is)."""
    data = content.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    written = _read_record(folder)
    unedited = {name for name, held in written.items() if _digest(folder / name) == held}
    if not (folder / TEMPLATE).exists():
        path = write_new(folder / TEMPLATE, data)
    else:
        same = sorted(name for name in unedited if written[name] == digest)
        if same:
            return folder / same[-1]
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
        path = write_new(folder / FRESH.format(stamp=stamp), data)
        for name in unedited - {TEMPLATE}:
            with contextlib.suppress(FileNotFoundError):
                (folder / name).unlink()
    kept = {name: held for name, held in written.items() if (folder / name).exists()}
    write_atomic(folder / WRITTEN_RECORD, json.dumps({**kept, path.name: digest}, indent=1, sort_keys=True))
    return path


def _read_record(folder: Path) -> dict[str, str]:
    try:
        record = json.loads((folder / WRITTEN_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return {name: held for name, held in record.items()
            if isinstance(held, str) and name == Path(name).name} if isinstance(record, dict) else {}


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclasses.dataclass(frozen=True)
class SheetFiles:
    html: Path
    """reports/<assignment>/rubric.html"""
    csv: Path
    """The freshest marking CSV, pre-filled (`write_marking_csv`)."""


def write_marking_sheet(assignment: Assignment, class_dir: ClassDirectory) -> SheetFiles | None:
    """reports/<assignment>/rubric.html and the freshest marking CSV; None when the assignment
    has no manually graded answer or no source notebook to take the rubrics from."""
    from rlcourse.explain.pages import render

    if not Path(assignment.source_notebook).is_file():
        return None
    sheet = rubric_sheet(assignment, class_dir)
    if not sheet.questions:
        return None
    folder = class_dir.reports / assignment.name
    table = write_marking_csv(folder, marking_csv(sheet))
    html = render("rubric.html", assignment=assignment.name, questions=sheet.questions, sheet=sheet,
                  students=sheet.students, csv_name=table.name, template_name=TEMPLATE,
                  anchor=lambda grade_id: f"question-{grade_id}")
    return SheetFiles(write_atomic(folder / "rubric.html", html.encode("utf-8")), table)


def write_rubric_sheet(assignment: Assignment, class_dir: ClassDirectory) -> Path | None:
    """The HTML sheet's path after `write_marking_sheet` (None: no sheet)."""
    files = write_marking_sheet(assignment, class_dir)
    return files.html if files is not None else None
