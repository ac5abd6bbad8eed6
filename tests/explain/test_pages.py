"""Pages from templates: every value escaped by Jinja2, the one style sheet inlined."""
from markupsafe import Markup

from rlcourse.explain.pages import environment, printable


def test_every_template_escapes_what_it_prints():
    env = environment()
    for name in env.list_templates(extensions=["html"]):
        assert env.get_template(name).environment.autoescape is True, name
    page = env.from_string("<p>{{ text }}</p>").render(text="<script>alert(1)</script>")
    assert page == "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>"


def test_printable_drops_what_html_cannot_carry_but_keeps_markup():
    assert printable("a\x00b\x1bc\td\n") == "a\ufffdb\ufffdc\td\n"
    assert printable("x\ud800") == "x\\ud800"
    assert printable(None) == ""
    safe = Markup("<b>ours</b>")
    assert printable(safe) is safe


def test_each_page_inlines_the_one_style_sheet(tmp_path):
    from rlcourse.report.class_report import write_class_report
    from rlcourse.explain.feedback import render_feedback
    from rlcourse.grading.grade import Grade
    from rlcourse.grading.report import ItemResult, Report

    grade = Grade(Report("ps1", "ps1.ipynb", [ItemResult("a::b", 1, 1, True)]))
    sheet = environment().loader.get_source(environment(), "pages.css")[0]
    feedback = render_feedback(grade, student="s", submission_cells=[], todo_ids=set(),
                               diagnoses={}, figures=[])
    summary = write_class_report(tmp_path, assignment="ps1", grades={"s": grade},
                                 diagnoses={})["summary.html"].read_text()
    for page in (feedback, summary):
        assert page.count(f"<style>{sheet}</style>") == 1
        assert "<link" not in page and "<script" not in page
