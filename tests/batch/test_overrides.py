"""`rlcourse override` (rlcourse.batch.overrides): a TA's score for an autograded cell keeps the
automatic one beside it in the gradebook; the staff's class report shows both side by side with
who and why; the student's feedback page says the score was changed by staff, with the
comment; the audit log has the change and its comment. Reports made in advance
(tests/marking.py): no student code runs."""
import shutil

import pytest
from marking import ScoredReports, make_course, new_class

from rlcourse.course.config import CourseError
from rlcourse.course.directory import Course
from rlcourse.grading.grade import Override
from rlcourse.record.audit import AuditLog, os_user

CELL = ScoredReports.CELL
WHY = "Your loop is right: the grader missed the vectorised form."


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from rlcourse.batch.autograde import autograde

    folder = tmp_path_factory.mktemp("override")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {"ada": "An answer.", "alan": "Another."})
    autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports({"ada": 1.0, "alan": 0.5}),
              log=lambda message: None)
    return assignment, class_dir


@pytest.fixture
def klass(graded, tmp_path):
    from marking import copy_class

    assignment, class_dir = graded
    course = shutil.copytree(assignment.course.root, tmp_path / "course")
    return Course(course).assignment("ps1"), copy_class(class_dir, tmp_path / "class")


def grade_of(assignment, class_dir, student):
    from rlcourse.record.grades import class_grades

    return class_grades(class_dir, assignment)[student]


def test_the_original_is_kept_beside_the_override_and_both_are_shown(klass):
    from nbgrader.api import Gradebook

    from rlcourse.batch.overrides import override_score
    from rlcourse.report.class_outputs import write_class_outputs

    assignment, class_dir = klass
    page = override_score(assignment, "ada", CELL, 2.0, class_dir=class_dir, comment=WHY)
    with Gradebook(class_dir.db_url) as gradebook:
        grade = gradebook.find_grade(CELL, "ps1", "ps1", "ada")
        assert (grade.auto_score, grade.manual_score, grade.score) == (1.0, 2.0, 2.0)
    ada = grade_of(assignment, class_dir, "ada")
    assert ada.overrides == (Override(CELL, 1.0, 2.0, WHY, os_user()),) and ada.score == 2.0
    shown = page.read_text()
    assert "the score was changed by staff" in shown and WHY in shown
    assert "Graded automatically: 1; changed to 2" in shown
    assert os_user() not in shown.split('id="changed-by-staff"')[1].split("</section>")[0]  # who is the staff's
    report = (class_dir.reports / "ps1" / "summary.html")
    write_class_outputs(assignment, class_dir)
    row = report.read_text().split('id="overrides-table"')[1].split("</tr>")[1]
    assert 'class="num original">1<' in row and 'class="num recorded">2<' in row and WHY in row
    with AuditLog(class_dir.root) as log:
        [entry] = [e for e in log.entries("ps1", student="ada") if e.cause.kind == "override"]
    assert (entry.item, entry.old, entry.new, entry.cause.detail["comment"]) == (CELL, 1.0, 2.0, WHY)


def test_an_override_outlives_the_next_autograde_and_can_be_removed(klass):
    from rlcourse.batch.autograde import autograde
    from rlcourse.batch.overrides import override_score

    assignment, class_dir = klass
    override_score(assignment, "alan", CELL, 1.5, class_dir=class_dir, comment=WHY)
    autograde(assignment, class_dir=class_dir, progress=False, force=True,
              grading=ScoredReports({"ada": 1.0, "alan": 0.5}), log=lambda message: None)
    assert grade_of(assignment, class_dir, "alan").score == 1.5
    page = override_score(assignment, "alan", CELL, None, class_dir=class_dir)
    alan = grade_of(assignment, class_dir, "alan")
    assert (alan.overrides, alan.score) == ((), 0.5) and "changed by staff" not in page.read_text()


def test_a_formgrader_override_is_on_the_page_after_the_next_run_without_a_comment(klass):
    from nbgrader.api import Gradebook

    from rlcourse.batch.autograde import autograde

    assignment, class_dir = klass
    with Gradebook(class_dir.db_url) as gradebook:
        gradebook.find_grade(CELL, "ps1", "ps1", "ada").manual_score = 1.5
        gradebook.db.commit()
    autograde(assignment, class_dir=class_dir, progress=False, grading=ScoredReports({"ada": 1.0, "alan": 0.5}),
              log=lambda message: None)
    page = (class_dir.feedback / "ada" / "ps1" / "ps1.html").read_text()
    assert "Graded automatically: 1; changed to 1.5" in page and "Staff comment" not in page


def test_a_written_answer_or_an_out_of_range_score_is_refused(klass):
    from rlcourse.batch.overrides import override_score

    assignment, class_dir = klass
    with pytest.raises(CourseError, match="written answer"):
        override_score(assignment, "ada", "explain_clipping", 1.0, class_dir=class_dir)
    with pytest.raises(CourseError, match="out of range"):
        override_score(assignment, "ada", CELL, 2.5, class_dir=class_dir)
