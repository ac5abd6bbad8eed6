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


class TestAnswerHash:
    def test_spacing_and_case_are_not_a_change_but_words_are(self):
        from rlcourse.record.marks import answer_hash

        answer = "The min removes the incentive.\nClipping is not a trust region."
        assert answer_hash(answer) == answer_hash("  the MIN removes   the incentive. clipping is not a trust region.\n")
        assert answer_hash(answer) != answer_hash(answer.replace("not ", ""))

    def test_the_placeholder_and_a_missing_answer_are_the_empty_answer(self):
        from rlcourse.record.marks import answer_hash

        assert answer_hash("YOUR ANSWER HERE", "YOUR ANSWER HERE") == answer_hash(None) == answer_hash("  \n")
        assert answer_hash("YOUR ANSWER HERE") != answer_hash("")  # only the release's placeholder is nothing


class TestMarkState:
    def test_a_mark_is_pending_until_marked_and_again_once_stale(self):
        from rlcourse.record.marks import Mark

        unmarked, current = Mark("q", None, 2.0, None, ""), Mark("q", 0.0, 2.0, (), "")
        stale = Mark("q", 0.0, 2.0, (), "", stale=True)
        assert [(m.marked, m.stale, m.pending) for m in (unmarked, current, stale)] == [
            (False, False, True), (True, False, False), (True, True, True)]
        assert stale.to_json()["stale"] is True and stale.to_json()["pending"] is True


def grade(name, score, flagged):
    """What MarkBinding.bind reads and sets of an nbgrader Grade."""
    from types import SimpleNamespace

    return SimpleNamespace(cell=SimpleNamespace(name=name), manual_score=score, needs_manual_grade=flagged)


class TestMarkBinding:
    """Which answer a mark was made on, across recordings (A, B: answer hashes)."""

    @pytest.mark.parametrize("recorded, marked_on, flagged, now, stale, remembered", [
        ({"q": "A"}, {}, False, "A", False, {}),                  # unchanged re-record
        ({"q": "A"}, {}, False, "B", True, {"q": "A"}),           # the marked answer changed
        ({"q": "B"}, {"q": "A"}, True, "B", True, {"q": "A"}),    # still changed: stays flagged
        ({"q": "B"}, {"q": "A"}, True, "A", False, {}),           # back to the marked answer
        ({"q": "B"}, {"q": "A"}, False, "B", False, {}),          # re-marked (flag cleared) on B
        ({"q": "A"}, {}, True, "A", True, {}),                    # flagged by another tool: kept
        (None, {}, False, "B", False, {}),                        # no record: taken as made on this one
    ])
    def test_a_mark_is_flagged_when_the_answer_it_was_made_on_changes(self, recorded, marked_on, flagged, now,
                                                                      stale, remembered):
        from rlcourse.record.marks import MarkBinding

        binding = MarkBinding("key", {"q": now}, recorded, dict(marked_on))
        marked = grade("q", 1.0, flagged)
        assert binding.bind([marked, grade("code_cell", None, False)]) == {"q": stale}
        assert marked.needs_manual_grade is stale and marked.manual_score == 1.0
        assert binding.to_json() == {"key": "key", "answers": {"q": now}, "marked_on": remembered}

    def test_an_unmarked_answer_is_left_to_autograde_and_forgets_an_old_binding(self):
        from rlcourse.record.marks import MarkBinding

        binding = MarkBinding("key", {"q": "B"}, {"q": "A"}, {"q": "A"})
        unmarked = grade("q", None, True)
        assert binding.bind([unmarked]) == {} and unmarked.needs_manual_grade is True
        assert binding.marked_on == {}
