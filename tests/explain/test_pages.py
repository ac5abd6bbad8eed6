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


# --- the Content-Security-Policy of every page (issue 29: similarity.html had none) --------------
def csp_of(page: str) -> list[str]:
    """The content of every Content-Security-Policy meta tag in the page's <head>."""
    import html.parser

    found, head = [], page.split("</head>", 1)[0]

    class Metas(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "content-security-policy":
                found.append(attrs.get("content"))

    Metas().feed(head)
    return found


def test_every_page_template_draws_the_csp_meta():
    """Does every template of a whole page (one that opens <html>, or extends one) draw the
    pages' CSP in its head, itself or through the template it extends?"""
    import re

    env = environment()
    source = {name: env.loader.get_source(env, name)[0] for name in env.list_templates(extensions=["html"])}
    meta = '<meta http-equiv="Content-Security-Policy" content="{{ csp }}">'

    def has_csp(name: str) -> bool:
        extends = re.search(r'{%-?\s*extends\s+"([^"]+)"', source[name])
        if extends:
            return has_csp(extends.group(1))
        return meta in source[name].split("</head>", 1)[0]

    pages = [name for name in source if "<html" in source[name] or "{% extends" in source[name]]
    assert {"feedback.html", "class_report.html", "rubric.html", "similarity.html", "web_home.html"} <= set(pages)
    assert [name for name in pages if not has_csp(name)] == []


def test_every_page_rlcourse_writes_carries_the_csp(tmp_path):
    """The pages as rlcourse writes them: a feedback page, the class report, the rubric sheet,
    the similarity report and the service's pages each carry the CSP meta (no script, nothing
    fetched)."""
    from marking import make_course, new_class, record

    from rlcourse.explain.feedback import render_feedback
    from rlcourse.explain.pages import CSP, render
    from rlcourse.grading.grade import Grade
    from rlcourse.grading.report import ItemResult, Report
    from rlcourse.report.class_report import write_class_report
    from rlcourse.report.rubric_sheet import write_marking_sheet
    from rlcourse.report.similarity import write_similarity_report

    grade = Grade(Report("ps1", "ps1.ipynb", [ItemResult("a::b", 1, 1, True)]))
    assignment = make_course(tmp_path)
    class_dir = new_class(tmp_path / "class", {"ada": "Clipping bounds the ratio.", "grace": "<b>Bold</b>"})
    record(assignment, class_dir)
    pages = {
        "feedback": render_feedback(grade, student="s", submission_cells=[], todo_ids=set(), diagnoses={},
                                    figures=[]),
        "class report": write_class_report(tmp_path / "report", assignment="ps1", grades={"s": grade},
                                           diagnoses={})["summary.html"].read_text(),
        "rubric sheet": write_marking_sheet(assignment, class_dir).html.read_text(),
        "similarity": write_similarity_report(assignment, class_dir)[1].read_text(),
        "service": render("web_error.html", base="", status=404, title="Not found", message="no such page",
                          signed_in=False),
    }
    for name, page in pages.items():
        assert csp_of(page) == [CSP], name
