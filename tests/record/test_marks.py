"""The TA's marks as the gradebook keeps them: the criteria line of the comment, written and read
back, and a mark formgrader made without one."""
import pytest

from rlcourse.record.marks import comment_text, parse_comment


@pytest.mark.parametrize("met, comment", [((1, 3), "Good on the min.\nSecond line."), ((), ""), ((2,), "")])
def test_the_criteria_line_reads_back_as_written(met, comment):
    text = comment_text(met, 4, comment)
    assert text.startswith(f"Rubric criteria met: {', '.join(map(str, met)) or 'none'} (of 4)")
    assert parse_comment(text) == (tuple(met), comment)


def test_criteria_are_sorted_and_counted_once():
    assert parse_comment(comment_text([3, 1, 3], 3)) == ((1, 3), "")


@pytest.mark.parametrize("stored", [None, "", "Nice work, see the min.", "I think Rubric criteria met: 1 is wrong"])
def test_a_comment_without_the_line_says_nothing_of_criteria(stored):
    """formgrader's own comments (or none) keep their text, and their criteria are unknown."""
    assert parse_comment(stored) == (None, (stored or "").strip())
