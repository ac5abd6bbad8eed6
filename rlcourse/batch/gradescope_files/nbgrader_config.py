"""nbgrader settings of this Gradescope autograder, written by `rlcourse gradescope {{ assignment }}`.

This file marks the folder as the course directory (rlcourse.course.directory) and sets nothing
else: Gradescope keeps its own due dates, extensions and late penalties, and nothing here runs
nbgrader. The course's own nbgrader_config.py is not shipped, so no path, exchange or plugin of
the instructor's machine reaches the image.
"""
c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file
