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
