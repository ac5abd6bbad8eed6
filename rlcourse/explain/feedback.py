"""A student's feedback page: one self-contained HTML file per graded notebook.

The page shows only what the student may see: the report's fields (scores, messages, diagnosis
tags), the documented summary and fix of each tag, the student's own TODO cells, and figures
drawn from the report's artifacts. The only course file it loads is the assignment's own
`graders/<assignment>/feedback.py`, which draws those figures from the report's plain data; it
never reads the hidden tests or the solutions, so nothing of them can reach the page. The page is
the template templates/feedback.html (rlcourse.explain.pages): every string from the report or
the submission is HTML-escaped by Jinja2, and a Content-Security-Policy forbids scripts and any
resource but inline styles and data-URI images, so even a mistake in escaping could not run code
or fetch anything.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path

from rlcourse.course.files import write_atomic
from rlcourse.explain.pages import points as fmt_points

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_CELL_CHARS = 20_000
"""A TODO cell longer than this is cut on the page (the notebook itself is the full record)."""


def render_feedback(grade, *, student: str, submission_cells, todo_ids: set[str],
                    diagnoses: dict, figures: list[tuple[str, bytes]], assignment_title: str = "",
                    policy=None, level: str | None = None, deadline=None, now=None,
                    due_passed: bool = True, regrades: dict | None = None) -> str:
    """The feedback page for one graded notebook, as a self-contained HTML string.

    `grade` is the grade of record (rlcourse.grading.grade.Grade: the report's items, the written
    answers with their marks and states, the late penalty); the page shows it only through
    `student_view`, with the assignment's feedback `policy`, at an explicit `level` or at the
    level the policy gives at `now` for the student's `deadline`. `submission_cells` are the
    student's code cells (rlcourse.course.submission.CodeCell); only those whose `grade_id` is in
    `todo_ids` are shown. `diagnoses` maps tag -> Diagnosis; `figures` are (title, PNG bytes).
    `regrades`: the service's regrade requests of this grade and their forms (the page written
    to disk has none).
    """
    from rlcourse.course.visibility import shows
    from rlcourse.explain.pages import render
    from rlcourse.grading.grade import student_view

    view = student_view(grade, policy=policy, level=level, deadline=deadline, now=now,
                        due_passed=due_passed)
    percent = 100.0 * view.score / view.max_score if view.score is not None and view.max_score else 0.0
    withheld = {"none": "Your results are not available yet.",
                "score": "Only your total is shown for now; the items will follow.",
                "items": "Each item's points are shown for now; what went wrong in each will follow."}
    return render("feedback.html", report=view, student=student, assignment_title=assignment_title,
                  score=view.score, penalty=view.penalty, percent=percent,
                  bar=max(0.0, min(percent, 100.0)), timing=view.timing,
                  timing_rows=_timing_rows(view.timing, show_points=shows(view.level, "score")),
                  withheld=withheld.get(view.level, ""), show_items=shows(view.level, "items"),
                  show_full=shows(view.level, "full"),
                  cards=_cards(view, diagnoses) if shows(view.level, "full") else [],
                  figures=_figures(figures) if shows(view.level, "full") else [],
                  code=_code(view, submission_cells, todo_ids), max_cell_chars=MAX_CELL_CHARS,
                  anchor=_anchor, written=[dict(vars(answer), anchor=_written_anchor(answer.grade_id),
                                                pending=answer.pending) for answer in view.written],
                  marks_digest=marks_digest(grade.written, grade.overrides), regrades=regrades)


def write_feedback(path: Path, html_text: str) -> Path:
    """Write the page atomically: a reader sees the old page or the new one, never a partial one."""
    return write_atomic(path, html_text.encode("utf-8"))


# --- helpers the batch command uses --------------------------------------------------------------
def todo_cell_ids(release_notebook: Path) -> set[str]:
    """grade_ids of the cells a student writes (nbgrader solution cells) in the released notebook."""
    from rlcourse.course.release import Release

    return Release.read(release_notebook).todo_ids


def figure_png(figure, *, dpi: int = 110) -> bytes:
    """A matplotlib Figure as PNG bytes (Agg, no pyplot state)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if figure.canvas is None or not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    # zlib's fastest level: a ps1 page's two figures take 0.09 core-seconds less to encode (of
    # about 0.7 to draw and encode), for PNGs a tenth larger; every page of a batch draws them.
    figure.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"compress_level": 1})
    return buffer.getvalue()


FIGURES_KEPT = 4
"""Figure sets a `keep_in` folder holds (the latest, by use): a student's latest upload before
and after the due date, and one or two earlier uploads they look back at."""


def assignment_figures(assignment, report, *, log=None, sealed=frozenset(),
                       keep_in: Path | None = None) -> list[tuple[str, bytes]]:
    """PNG figures from `graders/<assignment>/feedback.py`'s `figures(report.artifacts)`.

    `sealed` are the ids of the items the page holds back (`sealed_item_ids`); a `figures` that
    takes them leaves out what would answer those items before the due date (ps2's right clipped
    surrogate answers its concept checks). A figure that cannot be drawn is left out (logged),
    never an error: the page is still useful without it.

    `keep_in`, a folder of the staff's side of the class (the student's autograded folder for
    the assignment), keeps the figures drawn, by what they were drawn from: drawing costs 0.3 to
    0.5 s a page, and the same figures were drawn twice for every web submission (the nbgrader
    page its grading writes, then the service's page when the student opens it) and again at
    every later view. The key covers everything the PNGs depend on: the report's artifacts, the
    sealed items, the assignment's grader and solution folders and the engine's drawing helpers
    (their bytes), and matplotlib's version; a set that cannot be read is drawn again."""
    from rlcourse.course.solutions import assignment_feedback

    if not report.artifacts:
        return []
    key = _figures_key(assignment, report.artifacts, frozenset(sealed)) if keep_in is not None else None
    if key is not None:
        kept = _kept_figures(Path(keep_in) / f"{key}.json")
        if kept is not None:
            return kept
    try:
        module = assignment_feedback(assignment)
        drawn = _drawn(module, report.artifacts, frozenset(sealed)) if module and hasattr(module, "figures") else []
    except Exception as error:  # noqa: BLE001 - a grader's drawing bug must not stop a batch
        if log:
            log(f"feedback figures not drawn: {type(error).__name__}: {error}")
        return []
    pngs, complete = [], True
    for title, figure in drawn:
        try:
            pngs.append((str(title), figure_png(figure)))
        except Exception as error:  # noqa: BLE001
            complete = False
            if log:
                log(f"feedback figure {title!r} not drawn: {type(error).__name__}: {error}")
    if key is not None and complete:
        _keep_figures(Path(keep_in), key, pngs)
    return pngs


def _figures_key(assignment, artifacts: dict, sealed: frozenset) -> str | None:
    import hashlib
    import json

    import matplotlib

    from rlcourse.course.files import digest_files, files_under
    from rlcourse.grading import figures as helpers

    digest = hashlib.sha256()
    try:
        digest.update(json.dumps([artifacts, sorted(sealed)], sort_keys=True).encode())
        # feedback.py draws with the engine's helpers, and may read the grader folder's files
        # (ps1's reference curves) and the oracle (solutions/<name>/): all of them count.
        for folder in (assignment.grader_dir, assignment.course.root / "solutions" / assignment.name):
            digest_files(digest, files_under(folder), relative_to=folder)
        digest.update(Path(helpers.__file__).read_bytes())
    except (TypeError, ValueError, OSError):
        return None  # artifacts that are not plain JSON (or a folder that cannot be read): drawn
    digest.update(matplotlib.__version__.encode())
    return digest.hexdigest()


def _kept_figures(path: Path) -> list[tuple[str, bytes]] | None:
    import json

    try:
        kept = json.loads(path.read_text())
        figures = [(str(title), base64.b64decode(data, validate=True)) for title, data in kept]
    except (OSError, ValueError, TypeError):
        return None
    if not all(png.startswith(PNG_SIGNATURE) for _, png in figures):
        return None
    try:
        path.touch()  # the latest by use is kept longest
    except OSError:
        pass
    return figures


def _keep_figures(folder: Path, key: str, figures: list[tuple[str, bytes]]) -> None:
    """Store a drawn set (never the grading's failure if it cannot), keeping FIGURES_KEPT sets."""
    import json

    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{key}.json", json.dumps(
            [[title, base64.b64encode(png).decode("ascii")] for title, png in figures]))
        kept = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime_ns, reverse=True)
        for old in kept[FIGURES_KEPT:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def sealed_item_ids(grade, **when) -> frozenset[str]:
    """The ids of the items `student_view(grade, **when)` holds back until the due date."""
    from rlcourse.grading.grade import student_view

    return frozenset(item.id for item in student_view(grade, **when).items if item.sealed)


def _drawn(module, artifacts: dict, sealed: frozenset) -> list:
    """module.figures(artifacts), told what is sealed if it asks (ps1's `figures` does not)."""
    import inspect

    if "sealed" in inspect.signature(module.figures).parameters:
        return module.figures(artifacts, sealed=sealed)
    return module.figures(artifacts)


# --- what the page shows -------------------------------------------------------------------------
def _timing_rows(timing, *, show_points: bool) -> list[tuple[str, str]]:
    """When the notebook was submitted against the student's deadline, and what lateness cost."""
    if timing is None:
        return []
    from rlcourse.course.lateness import format_duration, iso

    rows = [("Submitted", iso(timing.timestamp) or "time unknown")]
    if timing.deadline is not None:
        due = iso(timing.deadline)
        if timing.extension:
            due += f" (with an extension of {format_duration(timing.extension.total_seconds())})"
        rows.append(("Due", due))
        rows.append(("Late", format_duration(timing.seconds_late) if timing.late else "no, on time"))
    if show_points and timing.late:
        rows.append(("Late penalty", f"{fmt_points(timing.penalty)} points"))
    return rows


def _cards(report, diagnoses: dict) -> list[dict]:
    """One card per failed item; a tag is explained on its first card, the next ones point there
    (a tag often fails several items of one function)."""
    cards = []
    explained: dict[str, dict] = {}  # tag -> the card that explains it
    for item in report.failed():
        card = {"item": item, "anchor": _anchor(item.id), "diagnosis": None, "explained_at": None}
        diagnosis = diagnoses.get(item.diagnosis) if item.diagnosis else None
        if diagnosis is not None and item.diagnosis in explained:
            first = explained[item.diagnosis]["item"]
            card.update(explained_at=_anchor(first.id), explained_title=first.title or first.id)
        elif diagnosis is not None:
            explained[item.diagnosis] = card
            card["diagnosis"] = diagnosis
        cards.append(card)
    return cards


def _figures(figures) -> list[tuple[str, str]]:
    """(title, base64 PNG) of each figure that is PNG bytes: nothing else can be smuggled into
    a data URI."""
    return [(title, base64.b64encode(bytes(png)).decode("ascii")) for title, png in figures or []
            if isinstance(png, (bytes, bytearray)) and bytes(png).startswith(PNG_SIGNATURE)]


def _code(report, submission_cells, todo_ids) -> list[dict]:
    """The student's TODO cells, each with the points of the test cell that grades it."""
    blocks = []
    for cell in [cell for cell in submission_cells or [] if cell.grade_id in (todo_ids or ())]:
        # a sealed item's points wait for the due date here too
        related = [item for item in report.items if item.cell == f"test_{cell.grade_id}" and not item.sealed]
        blocks.append({"cell": cell, "source": cell.source[:MAX_CELL_CHARS],
                       "cut": len(cell.source) > MAX_CELL_CHARS,
                       "got": sum(item.score for item in related),
                       "out_of": sum(item.max_score for item in related) if related else None})
    return blocks


def marks_digest(written, overrides=()) -> str:
    """A short digest of the written answers' marks a page shows (rlcourse.grading.grade.Written)
    and of the staff's overrides of autograded cells (Override): the page carries it, so a run
    that finds the gradebook's marks changed (a TA marked or overrode a score in formgrader, an
    answer now needs re-marking) knows to draw the page again. Without overrides the digest is
    the written answers' alone, as pages drawn before overrides were shown carry it."""
    import hashlib
    import json

    payload = [[answer.grade_id, answer.score, answer.state, answer.comment,
                [[criterion.number, criterion.met] for criterion in answer.criteria]]
               for answer in written]
    if overrides:
        payload.append([[override.cell, override.graded, override.recorded, override.comment]
                        for override in overrides])
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


# --- text ----------------------------------------------------------------------------------------


def _anchor(item_id: str) -> str:
    return "item-" + re.sub(r"[^A-Za-z0-9_.-]", "-", str(item_id))


def _written_anchor(grade_id: str) -> str:
    return "written-" + _anchor(grade_id).removeprefix("item-")

