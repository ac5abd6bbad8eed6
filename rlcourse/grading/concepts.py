"""Concept checks: a multiple-choice letter or a number, each wrong answer named by what it reveals.

A concept check is graded from the text of its cell (rlcourse.grading.predictions), so its answer
is what the student wrote, not what some code computed. Every wrong option of a multiple choice
carries the documented misconception it reveals; a number is right within its stated tolerance of
the exact value, and a wrong number that matches a known mistaken computation names that mistake,
any other wrong number is "wrong_value". Graders of every assignment declare their questions with
`Choice` and `Number`, grade them with `grade_concept`, and make one item per question with
`concept_items`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from rlcourse.grading.predictions import answer_from_cell_text
from rlcourse.grading.rubric import Failure, item


@dataclass(frozen=True)
class Choice:
    """A multiple-choice question: the right option, and per wrong option (tag, what it reveals)."""
    name: str
    answer: str
    wrong: dict[str, tuple[str, str]]
    why: str = ""  # shown with any wrong answer: the reasoning that leads to the right one

    @property
    def options(self) -> list[str]:
        return sorted({self.answer, *self.wrong})


@dataclass(frozen=True)
class Number:
    """A numeric question: the exact value, the tolerance the notebook states, and known mistakes
    as (value they give, tag, what it reveals)."""
    name: str
    answer: float
    tolerance: float
    wrong: tuple[tuple[float, str, str], ...] = field(default_factory=tuple)
    why: str = ""


def grade_answer(question: Choice | Number, given) -> None:
    """Passes if `given` is the right answer; raises the Failure naming what a wrong one reveals."""
    if isinstance(question, Choice):
        if not isinstance(given, str) or given.strip().lower() not in question.options:
            raise Failure("bad_output", did=f"{question.name} is {given!r}",
                          should="set it to one of the letters " + ", ".join(map(repr, question.options)))
        chosen = given.strip().lower()
        if chosen != question.answer:
            tag, reveals = question.wrong[chosen]
            raise Failure(tag, did=f"you chose {chosen!r} for {question.name}", should=reveals,
                          see=question.why)
        return
    if isinstance(given, bool) or not isinstance(given, (int, float)) or not math.isfinite(given):
        raise Failure("bad_output", did=f"{question.name} is {given!r}",
                      should="set it to a number, written out (for example 0.25)")
    if abs(given - question.answer) <= question.tolerance:
        return
    for value, tag, reveals in question.wrong:
        if abs(given - value) <= question.tolerance:
            raise Failure(tag, did=f"{question.name} is {given:g}", should=reveals, see=question.why)
    raise Failure("wrong_value", did=f"{question.name} is {given:g}, which is not right "
                                     f"(answers within {question.tolerance:g} of the exact value count)",
                  should="work it through again from the definitions", see=question.why)


def grade_concept(student, cell: str, question: Choice | Number) -> None:
    """Reads the question's variable from the text of the cells up to `cell` and grades it."""
    grade_answer(question, answer_from_cell_text(student, cell, question.name))


def concept_items(titles: dict[str, str], make_test, *, points: float, cell: str) -> dict:
    """One scored item per question, for a graders module's globals(): `test_<name>` (the
    variable's name without `CONCEPT_`, in lower case) titled "concept check: <title>", whose body
    is `make_test(name)`, a function of the fixtures it needs."""
    return {"test_" + name.removeprefix("CONCEPT_").lower():
            item(points, cell=cell, title=f"concept check: {title}", kind="concept")(make_test(name))
            for name, title in titles.items()}
