"""A TA's mark stays bound to the answer it marked: when `autograde` records a submission whose
written answer changed, the mark is flagged for re-marking in nbgrader's gradebook (score and
comment kept), and only a re-mark clears it. Recorded through the real `autograde` and
gradebook, with reports made in advance (tests/marking.py): no student code runs."""
import json

import pytest
from marking import (FIRST_ANSWER, QUESTION, REWRITTEN, copy_class, csv_rows, formgrader_mark, held,
                     make_course, mark_by_hand, mark_of, new_class, record, submit)

COMMENT = "Rubric criteria met: none (of 2)\n\nNeither half: say what the min does."


@pytest.fixture(scope="module")
def marked(tmp_path_factory):
    """ada and bob both wrote FIRST_ANSWER and were autograded; a TA marked bob 0."""
    folder = tmp_path_factory.mktemp("stale")
    assignment = make_course(folder)
    class_dir = new_class(folder / "class", {"ada": FIRST_ANSWER, "bob": FIRST_ANSWER})
    record(assignment, class_dir)
    mark_by_hand(assignment, class_dir, "bob", "none", "Neither half: say what the min does.", folder=folder)
    return assignment, class_dir


@pytest.fixture
def course(marked, tmp_path):
    assignment, class_dir = marked
    return assignment, copy_class(class_dir, tmp_path / "class")


def test_a_rewritten_marked_answer_is_flagged_for_re_marking_and_keeps_its_score_and_comment(course):
    from nbgrader.api import Gradebook

    from rlcourse.report.rubric_sheet import write_marking_sheet

    assignment, class_dir = course
    assert held(class_dir, "bob") == (0.0, False, COMMENT)
    submit(class_dir, "bob", REWRITTEN)
    assert record(assignment, class_dir) == {"ada": "unchanged", "bob": "graded"}
    assert held(class_dir, "bob") == (0.0, True, COMMENT)  # nbgrader's own flag; nothing dropped
    mark = mark_of(assignment, class_dir, "bob")
    assert (mark.score, mark.comment, mark.stale, mark.pending) == (0.0, "Neither half: say what the min does.",
                                                                    True, True)
    with Gradebook(class_dir.db_url) as gradebook:  # formgrader lists bob's ps1 as needing grading
        assert gradebook.find_submission_notebook("ps1", "ps1", "bob").needs_manual_grade
    # The TA's sheet says so, with the old score; its CSV row does not carry the old criteria.
    files = write_marking_sheet(assignment, class_dir)
    page = files.html.read_text()
    assert ('data-student="bob" data-state="re-marking">bob <span class="staff">(re-marking: answer changed '
            'since it was marked (was 0/2))</span>') in page
    bob = next(row for row in csv_rows(files.csv) if (row["student"], row["question"]) == ("bob", QUESTION))
    assert bob["state"] == "re-marking: answer changed since it was marked (was 0/2)"
    assert bob["criteria"] == bob["comment"] == ""


def test_a_whitespace_or_case_only_edit_is_not_a_change(course):
    assignment, class_dir = course
    submit(class_dir, "bob", "  clipping BOUNDS the ratio,\n\nso the policy\tcannot move far.  \n")
    assert record(assignment, class_dir)["bob"] == "graded"  # new bytes, graded again...
    assert held(class_dir, "bob") == (0.0, False, COMMENT)   # ...but the marked answer is the same
    assert not mark_of(assignment, class_dir, "bob").pending


def test_an_unchanged_re_record_flags_nothing_and_keeps_a_flag(course):
    assignment, class_dir = course
    for _ in range(2):
        assert record(assignment, class_dir) == {"ada": "unchanged", "bob": "unchanged"}
        assert held(class_dir, "bob") == (0.0, False, COMMENT)
    submit(class_dir, "bob", REWRITTEN)
    record(assignment, class_dir)
    for _ in range(2):  # re-recorded as it is (a late policy update would do this too)
        assert record(assignment, class_dir) == {"ada": "unchanged", "bob": "unchanged"}
        assert held(class_dir, "bob") == (0.0, True, COMMENT)


def test_a_formgrader_mark_is_bound_to_the_answer_recorded_when_it_was_made(course):
    """formgrader shows the autograded notebook: a mark entered there is of the answer recorded
    then, and goes stale when that answer changes, though rlcourse never saw it made."""
    assignment, class_dir = course
    formgrader_mark(class_dir, "ada", 2.0, "Both halves.")
    record(assignment, class_dir)  # "late policy updated": the ledger's timing holds the new score
    assert held(class_dir, "ada") == (2.0, False, "Both halves.")
    submit(class_dir, "ada", REWRITTEN)
    record(assignment, class_dir)
    assert held(class_dir, "ada") == (2.0, True, "Both halves.")
    assert mark_of(assignment, class_dir, "ada").stale


def test_a_formgrader_re_mark_clears_the_flag(course):
    assignment, class_dir = course
    submit(class_dir, "bob", REWRITTEN)
    record(assignment, class_dir)
    formgrader_mark(class_dir, "bob", 1.0, "Better: the min, yes.")
    assert held(class_dir, "bob") == (1.0, False, "Better: the min, yes.")
    assert not mark_of(assignment, class_dir, "bob").pending
    record(assignment, class_dir)  # and it stays current, bound to the new answer
    assert not mark_of(assignment, class_dir, "bob").stale
    submit(class_dir, "bob", FIRST_ANSWER)  # back to the answer the 0 was for: the 1 is not for it
    record(assignment, class_dir)
    assert held(class_dir, "bob")[:2] == (1.0, True)


def test_going_back_to_the_marked_answer_makes_the_mark_current_again(course):
    assignment, class_dir = course
    submit(class_dir, "bob", REWRITTEN)
    record(assignment, class_dir)
    submit(class_dir, "bob", FIRST_ANSWER.upper())
    assert record(assignment, class_dir)["bob"] == "graded"
    assert held(class_dir, "bob") == (0.0, False, COMMENT)


def test_an_unreadable_resubmission_flags_the_mark(course):
    """The notebook recorded now has no answer at all: the 0 was for one that no longer counts."""
    assignment, class_dir = course
    (class_dir.submitted / "bob" / "ps1" / "ps1.ipynb").write_text("not json")
    record(assignment, class_dir)
    assert held(class_dir, "bob")[:2] == (0.0, True)


def test_a_ledger_from_before_answers_were_kept_binds_marks_through_the_autograded_notebook(course):
    """A class graded before rlcourse kept the answers' hashes: the autograded notebook is the
    submission last recorded, so a mark made then is still bound to its answer."""
    assignment, class_dir = course
    ledger = class_dir.autograded / "bob" / "ps1" / "rlcourse-report.json"
    entry = json.loads(ledger.read_text())
    del entry["written_answers"]
    ledger.write_text(json.dumps(entry))
    submit(class_dir, "bob", REWRITTEN)
    record(assignment, class_dir)
    assert held(class_dir, "bob")[:2] == (0.0, True)
    assert "written_answers" in json.loads(ledger.read_text())

