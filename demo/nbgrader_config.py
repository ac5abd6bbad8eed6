"""The demo class: an nbgrader course directory of its own, graded with the main course's
assignments (`make demo` runs `rlcourse autograde` on it). Try `nbgrader export` here."""
import os

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "rlcourse-demo"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
# The demo's late policy (rlcourse.course.lateness.PerHourPenalty, nbgrader's LateSubmissionPlugin
# interface): 10% of the score per started hour late, at most half of it.
c.AssignLatePenalties.plugin_class = "rlcourse.course.lateness.PerHourPenalty"
c.PerHourPenalty.fraction_per_hour = 0.1
c.PerHourPenalty.max_fraction = 0.5
