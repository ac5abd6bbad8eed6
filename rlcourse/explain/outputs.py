"""The files a graded submission leaves for people: the autograded notebook and the feedback page.

Both are rebuilt from a report (the ledger's), never by grading again. Neither contains hidden
grader source or solutions: the autograded notebook is the student's own notebook with the
released test cells put back, each showing the results of the hidden items it stands for; the
feedback page shows the report, the student's own code and figures drawn from the report's data.
"""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.directory import Assignment
from rlcourse.grading.report import Report


def write_autograded_notebook(path: Path, *, submitted: Path, assignment: Assignment, report: Report) -> None:
    """The submission with nbgrader's test cells restored from the release (as nbgrader's own
    OverwriteCells does), each with the hidden items' results as its output, so formgrader shows
    every item under the cell whose points it adds up to."""
    import nbformat

    from rlcourse.course.files import write_atomic

    from rlcourse.course.release import Release, grade_id_of
    from rlcourse.course.submission import NotebookProblem, check_structure

    try:
        check_structure(Path(submitted).read_text(encoding="utf-8"))  # before nbformat parses it
        notebook = nbformat.read(submitted, as_version=4)
    except (Exception, NotebookProblem):  # noqa: BLE001 - an unreadable submission has no autograded notebook
        return
    release = Release.read(assignment.release_notebook)
    notebook = clear_untrusted(notebook, release.notebook())
    by_cell: dict[str, list] = {}
    for item in report.items:
        by_cell.setdefault(item.cell, []).append(item)
    for index, cell in enumerate(notebook.cells):
        grade_id = grade_id_of(cell)
        original = release.cell(grade_id) if grade_id else None
        if original is None or not original.visible_test:
            continue  # not a test cell (a manually graded answer's text stays the student's)
        restored = release.released_cell(grade_id)
        if restored.cell_type == "code":
            restored.outputs = [nbformat.v4.new_output(
                "stream", name="stdout", text=_cell_summary(by_cell.get(grade_id, [])))]
            restored.execution_count = None
        notebook.cells[index] = restored
    write_atomic(path, nbformat.writes(notebook))


def clear_untrusted(notebook, release):
    """The student's notebook as staff may open it in formgrader: every output and execution
    count cleared (nbgrader's own ClearOutput, as its autograde does), so no student JavaScript,
    HTML or forged "[PASS]" output is shown or run in the staff's browser; every cell's metadata
    cleared but its `nbgrader` entry (nbconvert's ClearMetadataPreprocessor, which nbgrader's
    generate_assignment uses too), and the notebook's metadata replaced by the release's
    kernelspec and language (as nbgrader's OverwriteKernelspec does): no widget state, no
    "trusted" signature, no forged kernel. Then what formgrader draws as the student wrote it:
    each markdown cell the release does not hold word for word, and each raw cell, through
    rlcourse.explain.sanitize (bleach, then the drawing checked; issue 29), and each cell's
    `nbgrader` entry the release's own (as nbgrader's OverwriteCells restores it), since
    formgrader prints a grade_id into the page unescaped."""
    from nbconvert.preprocessors import ClearMetadataPreprocessor
    from nbgrader.preprocessors import ClearOutput

    notebook, _ = ClearOutput().preprocess(notebook, {})
    clear = ClearMetadataPreprocessor(preserve_cell_metadata_mask={"nbgrader"},
                                      clear_notebook_metadata=True, preserve_nb_metadata_mask=set())
    for cell in notebook.cells:  # it clears code cells only: markdown and raw cells too
        if cell.cell_type != "code":
            cell.metadata = {key: value for key, value in cell.get("metadata", {}).items() if key == "nbgrader"}
            cell.pop("attachments", None) if cell.cell_type == "raw" else None
    notebook, _ = clear.preprocess(notebook, {})
    notebook.metadata = {key: release.metadata[key] for key in ("kernelspec", "language_info")
                         if key in release.metadata}
    _release_nbgrader_metadata(notebook, release)
    _sanitize_text_cells(notebook, release)
    _valid_cell_ids(notebook)
    return notebook


def _release_nbgrader_metadata(notebook, release) -> None:
    """Each cell's `nbgrader` entry the release's for the first cell of each of its grade_ids
    (the one rlcourse grades and formgrader marks), none for any other: a student's own
    metadata never reaches the staff's page."""
    import copy

    from rlcourse.course.release import grade_id_of

    released = {grade_id_of(cell): cell for cell in release.cells if grade_id_of(cell)}
    seen = set()
    for cell in notebook.cells:
        grade_id = grade_id_of(cell)
        cell.metadata.pop("nbgrader", None)
        if grade_id in released and grade_id not in seen:
            seen.add(grade_id)
            cell.metadata["nbgrader"] = copy.deepcopy(released[grade_id].metadata["nbgrader"])


def _sanitize_text_cells(notebook, release) -> None:
    from rlcourse.explain.sanitize import escape_html, staff_markdown

    instructors = {cell.source for cell in release.cells if cell.cell_type == "markdown"}
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and not (cell.source in instructors and not cell.get("attachments")):
            cell.source, attachments = staff_markdown(cell.source, cell.get("attachments"))
            cell.pop("attachments", None)
            if attachments:
                cell["attachments"] = attachments
        elif cell.cell_type == "raw":
            cell.source = escape_html(cell.source)


def _valid_cell_ids(notebook) -> None:
    """Cell ids as nbformat's schema has them (1 to 64 of letters, digits, - and _), unique:
    any other is replaced by a fresh one."""
    import re
    import uuid

    seen = set()
    for cell in notebook.cells:
        if "id" not in cell:
            continue
        if not (isinstance(cell.id, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cell.id)) or cell.id in seen:
            cell.id = uuid.uuid4().hex[:8]
        seen.add(cell.id)


def _cell_summary(items) -> str:
    if not items:
        return "No hidden items grade this cell.\n"
    lines = ["Hidden graders (rlcourse):"]
    for item in items:
        mark = "PASS" if item.passed else "FAIL"
        lines.append(f"  [{mark}] {item.id}: {item.score:g}/{item.max_score:g}"
                     + (f"  ({item.diagnosis})" if item.diagnosis else ""))
        if not item.passed:
            lines.append(f"         {item.message}")
            if item.fix:
                lines.append(f"         To fix it: {item.fix}")
    return "\n".join(lines) + "\n"


def write_feedback_page(path: Path, *, student: str, assignment: Assignment, grade,
                        submitted: Path | None, level: str = "full", due_passed: bool = True,
                        figures_in: Path | None = None) -> None:
    """The page for `grade` (rlcourse.grading.grade.Grade, the grade of record) at `level`, on
    the side of the student's deadline `due_passed` says (what `nbgrader release_feedback` hands
    out); its figures kept in, and taken from, `figures_in` (`assignment_figures`' `keep_in`)."""
    from rlcourse.course.diagnoses import load_diagnoses
    from rlcourse.explain.feedback import (assignment_figures, render_feedback, sealed_item_ids,
                                           todo_cell_ids, write_feedback)
    from rlcourse.course.submission import NotebookProblem, load_submission

    cells = []
    if submitted is not None:
        try:
            cells = list(load_submission(submitted).cells)
        except NotebookProblem:
            cells = []
    html = render_feedback(grade, student=student, submission_cells=cells,
                           todo_ids=todo_cell_ids(assignment.release_notebook),
                           diagnoses=load_diagnoses(assignment.grader_dir),
                           figures=assignment_figures(assignment, grade.report, sealed=sealed_item_ids(
                               grade, policy=assignment.feedback, level=level, due_passed=due_passed),
                               keep_in=figures_in)
                           if level == "full" else [],
                           assignment_title=assignment.title, policy=assignment.feedback, level=level,
                           due_passed=due_passed)
    write_feedback(path, html)
