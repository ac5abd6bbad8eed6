"""nbgrader settings for the rlcourse course directory (this folder)."""
import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "rlcourse"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# The stub students see in place of each solution region: the function keeps its signature and
# docstring, and calling it says plainly that it is not written yet.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# Hidden tests live in graders/, never in the notebook; refuse to release a notebook that has any.
c.ClearHiddenTests.enforce_metadata = True
# formgrader draws each submission with nbconvert's HTMLExporter on a page of the TA's Jupyter
# server, where scripts may run. rlcourse writes the autograded notebook it opens with every
# student markdown cell sanitised (rlcourse.explain.sanitize); these two settings are the second
# layer, in formgrader's own exporter: bleach escapes the HTML of every markdown and raw cell
# (SanitizeHTML: nbgrader's formgrade template draws markdown without sanitize_html) and of
# every output (sanitize_html). A CSP header cannot be the layer here: formgrader's pages need
# inline scripts, and an inline event handler is one.
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.preprocessors = ["nbconvert.preprocessors.sanitize.SanitizeHTML"]
