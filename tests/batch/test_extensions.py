"""`rlcourse extension`: an extension in nbgrader's gradebook at any time, before the student has a
submission there (where nbgrader's own `grant_extension` raises MissingEntry) or after grading."""
import datetime
import warnings

import pytest

from rlcourse.batch.extensions import grant_extension
from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import CourseError
from rlcourse.record.gradebook import open_gradebook, record_in_gradebook

DAY = datetime.timedelta(days=1)


def test_an_extension_before_anything_is_in_the_gradebook_is_there_when_the_student_is_graded(ps1, tmp_path):
    class_dir = ClassDirectory(tmp_path)
    granted = grant_extension(ps1, "dave", class_dir=class_dir, days=2)
    assert (granted.extension, granted.duedate, granted.deadline) == (2 * DAY, None, None)
    with open_gradebook(class_dir.db_url) as gradebook:
        gradebook.update_or_create_assignment("ps1", duedate=datetime.datetime(2026, 3, 2, 17))
    timing = record_in_gradebook(class_dir.db_url, ps1, "dave", None)  # what autograde does
    assert timing.extension == 2 * DAY and timing.deadline == datetime.datetime(2026, 3, 4, 17)
    again = grant_extension(ps1, "dave", class_dir=class_dir, hours=1)  # replaces, never adds
    assert again.extension == datetime.timedelta(hours=1)
    assert again.describe() == ("dave: ps1 has an extension of 1 h: due 2026-03-02 18:00:00 UTC "
                                "(the class's due date is 2026-03-02 17:00:00 UTC)")
    assert grant_extension(ps1, "dave", class_dir=class_dir, remove=True).extension is None


def test_nbgraders_own_way_before_the_cells_leaves_a_submission_that_cannot_be_graded(ps1, tmp_path):
    """Why rlcourse writes the assignment's cells first: a submission row made before them has
    no notebook, and recording the student's grades then fails."""
    from nbgrader.api import MissingEntry

    class_dir = ClassDirectory(tmp_path)
    with open_gradebook(class_dir.db_url) as gradebook, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gradebook.update_or_create_assignment("ps1")
        gradebook.update_or_create_student("dave")
        with pytest.raises(MissingEntry):
            gradebook.grant_extension("ps1", "dave", days=2)  # no submission row yet
        gradebook.update_or_create_submission("ps1", "dave")
        gradebook.grant_extension("ps1", "dave", days=2)
    with pytest.raises(MissingEntry, match="No such submitted notebook"):
        record_in_gradebook(class_dir.db_url, ps1, "dave", None)


@pytest.mark.parametrize("lengths", [{}, {"days": 1, "remove": True}], ids=["nothing", "both"])
def test_a_length_or_remove_is_required_not_both(ps1, tmp_path, lengths):
    """nbgrader's call with no length removes the extension; here that takes --remove."""
    with pytest.raises(CourseError, match="give the extension's length"):
        grant_extension(ps1, "dave", class_dir=ClassDirectory(tmp_path), **lengths)
    assert not (tmp_path / "gradebook.db").exists()
