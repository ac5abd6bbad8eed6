"""A student's feedback page: one self-contained HTML file per graded notebook.

The page shows only what the student may see: the report's fields (scores, messages, diagnosis
tags), the documented summary and fix of each tag, the student's own TODO cells, and figures
drawn from the report's artifacts. The only course file it loads is the assignment's own
`graders/<assignment>/feedback.py`, which draws those figures from plain data; it never reads the
hidden tests or the solutions, so nothing of them can reach the page. Every string from the
report or the submission is HTML-escaped, and a Content-Security-Policy forbids scripts and any
resource but inline styles and data-URI images, so even a mistake in escaping could not run code
or fetch anything.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from rlcourse.course.files import write_atomic

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_CELL_CHARS = 20_000
"""A TODO cell longer than this is cut on the page (the notebook itself is the full record)."""
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

STYLE = """
:root { --ink: #1a202c; --muted: #5a6473; --line: #e2e8f0; --paper: #ffffff; --wash: #f7f8fa;
        --pass: #1c6b3c; --pass-bg: #e3f4e9; --fail: #a12a2a; --fail-bg: #fbe6e6;
        --warn: #7a4b00; --warn-bg: #fff4d6; --accent: #2b6cb0; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--wash); color: var(--ink);
       font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
             "Noto Sans", sans-serif; }
main { max-width: 60rem; margin: 0 auto; padding: 2rem 1.25rem 4rem; }
header.page { background: var(--paper); border: 1px solid var(--line); border-radius: 10px;
              padding: 1.5rem 1.75rem; display: flex; flex-wrap: wrap; gap: 1.5rem;
              align-items: center; justify-content: space-between; }
h1 { font-size: 1.6rem; margin: 0 0 .25rem; }
h2 { font-size: 1.25rem; margin: 2.25rem 0 .75rem; padding-bottom: .3rem;
     border-bottom: 2px solid var(--line); }
h3 { font-size: 1.05rem; margin: 0 0 .5rem; }
.meta { color: var(--muted); margin: 0; }
.score { text-align: right; min-width: 12rem; }
.score .total { font-size: 2.2rem; font-weight: 700; line-height: 1.1; }
.score .total small { font-size: 1.1rem; color: var(--muted); font-weight: 600; }
.bar { height: .6rem; background: var(--line); border-radius: 99px; overflow: hidden;
       margin-top: .5rem; }
.bar span { display: block; height: 100%; background: var(--accent); }
table { width: 100%; border-collapse: collapse; background: var(--paper);
        border: 1px solid var(--line); border-radius: 10px; overflow: hidden; font-size: .95rem; }
th, td { text-align: left; padding: .55rem .75rem; border-bottom: 1px solid var(--line);
         vertical-align: top; }
th { background: var(--wash); font-weight: 600; color: var(--muted); font-size: .85rem;
     text-transform: uppercase; letter-spacing: .03em; }
tr:last-child td { border-bottom: none; }
tr.failed td { background: #fffafa; }
a { color: var(--accent); }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas,
                   "Liberation Mono", monospace; font-size: .88em; }
td .mono { color: var(--muted); }
.badge { display: inline-block; padding: .1rem .55rem; border-radius: 99px; font-weight: 600;
         font-size: .85rem; white-space: nowrap; border: 1px solid transparent; }
.badge.pass { color: var(--pass); background: var(--pass-bg); border-color: #b5dfc4; }
.badge.fail { color: var(--fail); background: var(--fail-bg); border-color: #f0b9b9; }
.tag { display: inline-block; padding: .05rem .45rem; border-radius: 4px; background: #edf2f7;
       font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .82rem; }
.card { background: var(--paper); border: 1px solid var(--line); border-left: 5px solid var(--fail);
        border-radius: 8px; padding: 1rem 1.25rem; margin: 0 0 1rem; }
.card .points { color: var(--muted); font-weight: 400; }
.message { white-space: pre-wrap; overflow-wrap: anywhere; margin: .25rem 0 .75rem; }
dl.diagnosis { margin: 0; padding: .75rem 1rem; background: var(--wash); border-radius: 6px; }
dl.diagnosis dt { font-weight: 600; font-size: .85rem; color: var(--muted); }
dl.diagnosis dd { margin: 0 0 .5rem; }
dl.diagnosis dd:last-child { margin-bottom: 0; }
.notice { background: var(--warn-bg); color: var(--warn); border: 1px solid #f3d58a;
          border-radius: 8px; padding: .75rem 1rem; }
.notice ul { margin: .25rem 0 0; padding-left: 1.25rem; }
.notice li { white-space: pre-wrap; overflow-wrap: anywhere; }
.allpass { background: var(--pass-bg); color: var(--pass); border-radius: 8px; padding: .75rem 1rem; }
figure { margin: 0 0 1.5rem; background: var(--paper); border: 1px solid var(--line);
         border-radius: 8px; padding: 1rem; }
figure img { display: block; max-width: 100%; height: auto; margin: 0 auto; }
figcaption { color: var(--muted); margin-top: .5rem; text-align: center; }
.code-head { display: flex; justify-content: space-between; align-items: baseline; gap: 1rem;
             margin: 1.25rem 0 .35rem; }
pre { background: #1e2430; color: #e6e9ef; padding: 1rem 1.1rem; border-radius: 8px;
      overflow-x: auto; line-height: 1.45; margin: 0; tab-size: 4; }
.empty { color: var(--muted); font-style: italic; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
"""


def render_feedback(report, *, student: str, submission_cells, todo_ids: set[str],
                    diagnoses: dict, figures: list[tuple[str, bytes]],
                    assignment_title: str = "", timing=None, level: str = "full") -> str:
    """The feedback page for one graded notebook, as a self-contained HTML string.

    `submission_cells` are the student's code cells (`rlcourse.course.submission.CodeCell`); only those
    whose `grade_id` is in `todo_ids` are shown. `diagnoses` maps tag → `Diagnosis`; `figures`
    are `(title, PNG bytes)`. `level` is how much the student may see (rlcourse.course.visibility:
    none, score, items, full); the page shows the report only through `student_view`.
    `timing` (rlcourse.course.lateness.Timing) adds when it was submitted and any late penalty.
    """
    from rlcourse.course.visibility import shows, student_view

    report = student_view(report, level=level)
    title = f"{report.assignment} feedback for {student}"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="robots" content="noindex">',
        f"<title>{escape(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head><body><main>",
        _header(report, student, assignment_title, timing),
        _lateness(timing, show_points=shows(level, "score")),
        _withheld(level),
        _errors(report.errors),
        _items_table(report) if shows(level, "items") else "",
        _failures(report, diagnoses) if shows(level, "full") else "",
        _figures(figures) if shows(level, "full") else "",
        _code(report, submission_cells, todo_ids) if shows(level, "items") else "",
        _footer(report),
        "</main></body></html>",
    ]
    return "\n".join(part for part in parts if part) + "\n"


def write_feedback(path: Path, html_text: str) -> Path:
    """Write the page atomically: a reader sees the old page or the new one, never a partial one."""
    return write_atomic(path, html_text.encode("utf-8"))


# --- helpers the batch command uses --------------------------------------------------------------
def todo_cell_ids(release_notebook: Path) -> set[str]:
    """grade_ids of the cells a student writes (nbgrader solution cells) in the released notebook."""
    import json

    notebook = json.loads(Path(release_notebook).read_text(encoding="utf-8"))
    ids = set()
    for cell in notebook.get("cells", []):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and meta.get("solution") and meta.get("grade_id"):
            ids.add(meta["grade_id"])
    return ids


def figure_png(figure, *, dpi: int = 110) -> bytes:
    """A matplotlib Figure as PNG bytes (Agg, no pyplot state)."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if figure.canvas is None or not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def assignment_figures(assignment, report, *, log=None) -> list[tuple[str, bytes]]:
    """PNG figures from `graders/<assignment>/feedback.py`'s `figures(report.artifacts)`.

    A figure that cannot be drawn is left out (logged), never an error: the page is still useful
    without it."""
    from rlcourse.course.solutions import assignment_feedback

    if not report.artifacts:
        return []
    try:
        module = assignment_feedback(assignment)
        drawn = module.figures(report.artifacts) if module and hasattr(module, "figures") else []
    except Exception as error:  # noqa: BLE001 - a grader's drawing bug must not stop a batch
        if log:
            log(f"feedback figures not drawn: {type(error).__name__}: {error}")
        return []
    pngs = []
    for title, figure in drawn:
        try:
            pngs.append((str(title), figure_png(figure)))
        except Exception as error:  # noqa: BLE001
            if log:
                log(f"feedback figure {title!r} not drawn: {type(error).__name__}: {error}")
    return pngs


# --- sections ------------------------------------------------------------------------------------
def _header(report, student: str, assignment_title: str, timing=None) -> str:
    subtitle = f'<p class="meta">{escape(assignment_title)}</p>' if assignment_title else ""
    head = ('<header class="page"><div>'
            f"<h1>Feedback: {escape(report.assignment)}</h1>{subtitle}"
            f'<p class="meta">Student <strong id="student">{escape(student)}</strong>'
            f" · notebook <span class=\"mono\">{escape(report.notebook)}</span></p>")
    if report.items:
        passed = sum(1 for item in report.items if item.passed)
        head += f'<p class="meta">{passed} of {len(report.items)} items passed</p>'
    head += "</div>"
    if report.score is None:
        return head + "</header>"
    score, max_score = report.score, report.max_score
    penalty = timing.penalty if timing is not None else 0.0
    if penalty:
        score = max(0.0, score - penalty)
    percent = 100.0 * score / max_score if max_score else 0.0
    after = (f'<div class="meta">after a late penalty of {fmt_points(penalty)}</div>' if penalty else "")
    return (head +
            f'<div class="score" aria-label="total score"><div class="total" id="score">'
            f"{fmt_points(score)} <small>/ {fmt_points(max_score)}</small></div>{after}"
            f'<div class="meta">{percent:.0f}%</div>'
            f'<div class="bar" role="img" aria-label="{percent:.0f} percent">'
            f'<span style="width:{max(0.0, min(percent, 100.0)):.1f}%"></span></div></div>'
            "</header>")


def _lateness(timing, *, show_points: bool) -> str:
    """When the notebook was submitted against the student's deadline, and what lateness cost."""
    if timing is None:
        return ""
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
    body = "".join(f"<dt>{escape(name)}</dt><dd>{escape(value)}</dd>" for name, value in rows)
    note = f'<p class="meta">{escape(timing.warning)}</p>' if timing.warning else ""
    return (f'<section id="submission" class="{"late" if timing.late else "on-time"}">'
            f'<dl class="diagnosis">{body}</dl>{note}</section>')


def _withheld(level: str) -> str:
    said = {"none": "Your results are not available yet.",
            "score": "Only your total is shown for now; the items will follow.",
            "items": "Each item's points are shown for now; what went wrong in each will follow."}
    if level not in said:
        return ""
    return f'<p class="empty" id="withheld">{escape(said[level])}</p>'


def _errors(errors) -> str:
    if not errors:
        return ""
    rows = "".join(f"<li>{escape(error)}</li>" for error in errors)
    return ('<h2 id="notebook-problems">Problems running your notebook</h2>'
            f'<div class="notice" role="note"><strong>The grader reported:</strong><ul>{rows}</ul>'
            "</div>")


def _items_table(report) -> str:
    rows = []
    for item in report.items:
        status = ('<span class="badge pass">✓ Passed</span>' if item.passed
                  else '<span class="badge fail">✗ Failed</span>')
        tag = f'<span class="tag">{escape(item.diagnosis)}</span>' if item.diagnosis else ""
        name = escape(item.title or item.id)
        if not item.passed:
            name = f'<a href="#{_anchor(item.id)}">{name}</a>'
        rows.append(
            f'<tr class="item {"passed" if item.passed else "failed"}" data-item="{escape(item.id)}">'
            f'<td>{name}<br><span class="mono">{escape(item.id)}</span></td>'
            f'<td class="num">{fmt_points(item.score)} / {fmt_points(item.max_score)}</td>'
            f"<td>{status}</td><td>{tag}</td></tr>")
    return ('<h2 id="items">Items</h2><table id="items-table"><thead><tr><th>Item</th>'
            '<th>Points</th><th>Result</th><th>Diagnosis</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>")


def _failures(report, diagnoses: dict) -> str:
    failed = report.failed()
    if not failed:
        return ('<h2 id="failures">What went wrong</h2>'
                '<p class="allpass">✓ Every item passed.</p>')
    cards = []
    explained: dict[str, str] = {}  # tag -> anchor of the card that explains it
    for item in failed:
        diagnosis = diagnoses.get(item.diagnosis) if item.diagnosis else None
        explanation = ""
        if item.diagnosis:
            explanation = (f'<dl class="diagnosis"><dt>Diagnosis</dt>'
                           f'<dd><span class="tag">{escape(item.diagnosis)}</span></dd>')
            if diagnosis is not None and item.diagnosis in explained:
                # Said once is enough: a tag often fails several items of one function.
                explanation += (f'<dd>Explained above, under <a href="#{explained[item.diagnosis]}">'
                                f"{escape(_item_title(failed, explained[item.diagnosis]))}</a>.</dd>")
            elif diagnosis is not None:
                explained[item.diagnosis] = _anchor(item.id)
                explanation += (f"<dt>What this means</dt><dd>{escape(diagnosis.summary)}</dd>"
                                f"<dt>How to fix it</dt><dd>{escape(diagnosis.fix)}</dd>")
            explanation += "</dl>"
        message = item.message or "No further detail was recorded for this item."
        cards.append(
            f'<section class="card" id="{_anchor(item.id)}">'
            f'<h3>✗ {escape(item.title or item.id)} <span class="points">'
            f"({fmt_points(item.score)} / {fmt_points(item.max_score)} points)</span></h3>"
            f'<p class="message">{escape(message)}</p>{explanation}</section>')
    return '<h2 id="failures">What went wrong</h2>' + "".join(cards)


def _figures(figures) -> str:
    blocks = []
    for title, png in figures or []:
        if not isinstance(png, (bytes, bytearray)) or not bytes(png).startswith(PNG_SIGNATURE):
            continue  # only PNG bytes become data URIs: nothing else can be smuggled in
        data = base64.b64encode(bytes(png)).decode("ascii")
        blocks.append(f'<figure><img src="data:image/png;base64,{data}" alt="{escape(title)}">'
                      f"<figcaption>{escape(title)}</figcaption></figure>")
    if not blocks:
        return ""
    return '<h2 id="figures">Your code, plotted</h2>' + "".join(blocks)


def _code(report, submission_cells, todo_ids) -> str:
    cells = [cell for cell in submission_cells or [] if cell.grade_id in (todo_ids or ())]
    if not cells:
        return ('<h2 id="code">Your code</h2>'
                '<p class="empty">None of the cells you were asked to write was found in '
                "this notebook.</p>")
    blocks = []
    for cell in cells:
        related = [item for item in report.items if item.cell == f"test_{cell.grade_id}"]
        summary = ""
        if related:
            got = sum(item.score for item in related)
            out_of = sum(item.max_score for item in related)
            summary = f'<span class="meta">{fmt_points(got)} / {fmt_points(out_of)} points</span>'
        source = cell.source
        cut = ""
        if len(source) > MAX_CELL_CHARS:
            source = source[:MAX_CELL_CHARS]
            cut = f'<p class="empty">… cut after {MAX_CELL_CHARS} characters.</p>'
        blocks.append(
            f'<div class="code-head"><h3><span class="mono">{escape(cell.grade_id)}</span>'
            f' <span class="meta">(cell {cell.index + 1})</span></h3>{summary}</div>'
            f'<pre class="student-code"><code>{escape(source) or " "}</code></pre>{cut}')
    return '<h2 id="code">Your code</h2>' + "".join(blocks)


def _footer(report) -> str:
    if not report.items and report.score is None:
        return ""
    digest = f" · SHA-256 {escape(report.sha256[:16])}…" if report.sha256 else ""
    return (f'<footer>Graded by hidden tests: this page shows your results and your own code '
            f"only.{digest}</footer>")


# --- text ----------------------------------------------------------------------------------------
def escape(value) -> str:
    """HTML-escape any value, dropping what HTML cannot carry (NUL and other control
    characters) and lone surrogates (a notebook's JSON may contain them), so the page always
    encodes as UTF-8."""
    text = "" if value is None else str(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return html.escape(_CONTROL.sub("\ufffd", text), quote=True)


def fmt_points(value: float) -> str:
    value = float(value)
    return f"{value:g}" if value == round(value, 6) else f"{value:.2f}"


def _item_title(items, anchor: str) -> str:
    return next((item.title or item.id for item in items if _anchor(item.id) == anchor), "")


def _anchor(item_id: str) -> str:
    return "item-" + re.sub(r"[^A-Za-z0-9_.-]", "-", str(item_id))

