"""No markup of a student's reaches a TA's browser through formgrader (issue 29, finding 1): the
autograded notebook rlcourse writes, drawn by nbgrader's own formgrade exporter exactly as
formgrader draws it (and without the course's nbgrader_config.py: rlcourse's layer alone), has
no script, no event handler, no link or image a script could hide in, no metadata of the
student's; and the TA still reads what the student wrote."""
import functools
import html.parser
import json
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.directory import Course
from rlcourse.explain.outputs import write_autograded_notebook
from rlcourse.explain.sanitize import SHOWN_AS_TEXT, staff_markdown
from rlcourse.grading.report import Report

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "demo" / "submitted" / "alan" / "ps1" / "ps1.ipynb"
QUESTION = "explain_clipping"
HOSTILE_ANSWERS = {
    "img_onerror": '<img src=x onerror="fetch(\'/api/contents/x\',{method:\'PUT\'})">',
    "svg_onload": "<svg onload=alert(1)><script>alert(2)</script></svg>",
    "details_ontoggle": "<details open ontoggle=alert(1)>clipping</details>",
    "iframe_srcdoc": '<iframe srcdoc="<script>parent.alert(1)</script>"></iframe>',
    "javascript_link": "Clipping [bounds the ratio](javascript:alert(document.cookie)).",
    "mixed_case_link": "[x](JaVaScRiPt:alert(1))",
    "entity_link": "[x](java&#x73;cript:alert(1))",
    "reference_link": "[r]: javascript:alert(2)\n\nSee [the ratio][r].",
    "autolink": "<javascript:alert(1)>",
    "data_link": "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "javascript_image": "![ratio](javascript:alert(1))",
    "tracking_image": "![ratio](https://attacker.example/ta-opened.png)",
    "relative_image": "![logout](/logout)",
    "html_link": '<a href="javascript:alert(1)">the ratio</a>',
    "comment_trick": "<!--> <img src=x onerror=alert(1)> -->",
    "math_breakout": "$$\n</div><img src=x onerror=alert(3)>\n$$",
    "style_overlay": '<div style="position:fixed;top:0;left:0;width:100%;height:100%">Full credit</div>',
    "form_button": '<form action="/api/contents/x" method="post"><button>Full credit</button></form>',
    "missing_attachment": "![sketch](attachment:missing.png)",
}
HOSTILE_CASES = {
    "formgrader-html-event-handlers": ["img_onerror", "svg_onload", "details_ontoggle", "iframe_srcdoc"],
    "formgrader-markdown-script-links": ["javascript_link", "mixed_case_link", "entity_link", "reference_link",
                                         "autolink", "data_link", "html_link"],
    "formgrader-images-the-ta-fetches": ["javascript_image", "tracking_image", "relative_image"],
    "formgrader-parser-differentials": ["comment_trick", "math_breakout"],
    "formgrader-fake-controls": ["style_overlay", "form_button"],
    "formgrader-missing-attachment": ["missing_attachment"],
}
"""The hostile bank's cases (pytest.mark.hostile) these answers stand for: one attack each."""
assert sorted(sum(HOSTILE_CASES.values(), [])) == sorted(HOSTILE_ANSWERS)
SAFE_LINK = ("http://", "https://", "mailto:", "#")


def hostile_notebook(answer: str, *, attachments=None) -> nbformat.NotebookNode:
    notebook = nbformat.read(BASE, as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == QUESTION:
            cell.source = answer
            if attachments:
                cell["attachments"] = attachments
    return notebook


def autograded(tmp_path, notebook) -> Path:
    assignment = Course.find(ROOT).assignment("ps1")
    submitted = tmp_path / "submitted.ipynb"
    nbformat.write(notebook, submitted)
    out = tmp_path / "autograded.ipynb"
    write_autograded_notebook(out, submitted=submitted, assignment=assignment, report=Report("ps1", "ps1.ipynb", []))
    return out


def formgrader_html(path: Path) -> str:
    """The page formgrader's SubmissionHandler writes for `path`: nbconvert's HTMLExporter with
    nbgrader's formgrade template (FormgradeExtension.build_extra_config), no other setting."""
    resources = {"assignment_id": "ps1", "notebook_id": "ps1", "submission_id": "1", "index": 0, "total": 1,
                 "base_url": "", "student": "mallory", "last_name": None, "first_name": None,
                 "notebook_path": "autograded/mallory/ps1/ps1.ipynb"}
    return formgrade_exporter().from_filename(str(path), resources=resources)[0]


@functools.cache
def formgrade_exporter():
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    return HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])


def notebook_part(page: str) -> str:
    """The notebook in formgrader's page (formgrader's own scripts and links come before)."""
    return page.split('id="notebook-container"', 1)[1]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """What `dangers` finds in the page of alan's own notebook: formgrader's own markup (its
    score inputs have a style), which a hostile answer must add nothing to."""
    return Counter(dangers(notebook_part(formgrader_html(autograded(tmp_path_factory.mktemp("alan"),
                                                                    nbformat.read(BASE, as_version=4))))))


def added_dangers(path: Path, baseline: Counter) -> list[str]:
    return sorted((Counter(dangers(notebook_part(formgrader_html(path)))) - baseline).elements())


class Markup(html.parser.HTMLParser):
    """Every element and attribute of a page, as (tag, {attribute: value})."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.elements = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, {name: value or "" for name, value in attrs}))

    handle_startendtag = handle_starttag


def dangers(page_part: str) -> list[str]:
    found = []
    for tag, attrs in Markup(page_part).elements:
        if tag in ("script", "iframe", "svg", "object", "embed", "form", "details", "base", "meta", "link",
                   "style", "math"):
            found.append(f"<{tag}>")
        for name, value in attrs.items():
            if name.startswith("on") or name in ("srcdoc", "formaction", "style"):
                found.append(f"<{tag} {name}>")
            if name == "href" and not value.lower().startswith(SAFE_LINK):
                found.append(f"<{tag} href={value[:30]}>")
            if name == "src" and not value.startswith(("data:image/png;", "data:image/jpeg;", "data:image/gif;")):
                found.append(f"<{tag} src={value[:30]}>")
    return found


@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.hostile(name))
                                  for name, cases in HOSTILE_CASES.items() for case in cases])
def test_no_student_markup_survives_into_formgrader_s_page(tmp_path, case, baseline):
    """Is every hostile written answer drawn by formgrader's own exporter free of scripts,
    handlers, forms and unsafe links or images, and still readable by the TA?"""
    answer = HOSTILE_ANSWERS[case]
    path = autograded(tmp_path, hostile_notebook(answer))
    assert added_dangers(path, baseline) == []
    part = notebook_part(formgrader_html(path))
    assert "onerror" not in answer or "onerror" in page_text(part), "the TA cannot read the answer"


def page_text(part: str) -> str:
    """The text a reader sees in `part` (entities decoded, markup left out)."""
    texts = []
    parser = html.parser.HTMLParser(convert_charrefs=True)
    parser.handle_data = texts.append
    parser.feed(part)
    return "".join(texts)


@pytest.mark.hostile("formgrader-forged-nbgrader-metadata")
def test_a_student_s_nbgrader_metadata_never_reaches_the_page(tmp_path, baseline):
    """A forged grade_id (formgrader prints it into an attribute unescaped) and a cell posing
    as a graded one are the release's, or lose their nbgrader entry."""
    notebook = hostile_notebook("An honest answer.")
    forged = 'explain_clipping"><img src=x onerror=alert(1)><b x="'
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == QUESTION:
            cell.metadata["nbgrader"]["points"] = 100
    notebook.cells.append(nbformat.v4.new_markdown_cell("An extra cell.", metadata={
        "nbgrader": {"grade": True, "solution": True, "grade_id": forged, "points": 5, "schema_version": 3}}))
    notebook.cells.append(nbformat.v4.new_markdown_cell("A copy.", metadata={
        "nbgrader": {"grade": True, "solution": True, "grade_id": QUESTION, "points": 5, "schema_version": 3}}))
    notebook.cells[-1]["id"] = '"><img src=x onerror=alert(2)>'
    path = autograded(tmp_path, notebook)
    written = nbformat.read(path, as_version=4)
    release = nbformat.read(Course.find(ROOT).assignment("ps1").release_notebook, as_version=4)
    released = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in release.cells
                if "nbgrader" in c.metadata}
    graded = [c.metadata["nbgrader"] for c in written.cells if "nbgrader" in c.metadata]
    assert graded == [released[entry["grade_id"]] for entry in graded]
    assert [entry["grade_id"] for entry in graded].count(QUESTION) == 1
    assert all(c.get("id", "x").replace("-", "").replace("_", "").isalnum() for c in written.cells)
    assert added_dangers(path, baseline) == []


def test_an_ordinary_answer_is_kept_as_written(tmp_path):
    """Markdown, math, a table, code and a web link are drawn as before: nothing is escaped."""
    answer = ("# Clipping\n\nThe *min* takes the pessimistic term: $r_t(\\theta) \\hat A_t$.\n\n"
              "| ratio | clipped |\n|:-|-:|\n| 1.5 | 1.2 |\n\n```python\nratio = new / old\n```\n\n"
              "See [the paper](https://arxiv.org/abs/1707.06347).")
    path = autograded(tmp_path, hostile_notebook(answer))
    cell = next(c for c in nbformat.read(path, as_version=4).cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == QUESTION)
    assert cell.source == answer


def test_html_is_escaped_and_shown_not_drawn():
    source, _ = staff_markdown('Bounded <img src=x onerror="alert(1)"> ratio', None)
    assert source == 'Bounded &lt;img src=x onerror="alert(1)"&gt; ratio'


def test_an_unsafe_link_turns_the_answer_into_text():
    source, attachments = staff_markdown("[x](javascript:alert(1))\n```\ncode\n```", {"a.png": {"image/png": "AA=="}})
    assert source.startswith(SHOWN_AS_TEXT) and "````text\n[x](javascript:alert(1))" in source
    assert attachments == {}


def test_only_raster_attachments_are_kept():
    attachments = {"a.png": {"image/png": "iVBORw0KGgo=", "image/svg+xml": "<svg onload=alert(1)/>"},
                   "b.svg": {"image/svg+xml": "<svg onload=alert(1)/>"}, "c.html": {"text/html": "<script>"}}
    source, kept = staff_markdown("![sketch](attachment:a.png)", attachments)
    assert source == "![sketch](attachment:a.png)" and kept == {"a.png": {"image/png": "iVBORw0KGgo="}}


@pytest.mark.hostile("formgrader-svg-attachment")
def test_an_svg_attachment_is_not_drawn(tmp_path, baseline):
    svg = {"image/svg+xml": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"}
    path = autograded(tmp_path, hostile_notebook("![sketch](attachment:s.svg)", attachments={"s.svg": svg}))
    text = json.dumps(nbformat.read(path, as_version=4).cells)
    assert "image/svg+xml" not in text
    assert added_dangers(path, baseline) == []
