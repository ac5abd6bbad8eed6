"""Answers read from what a student wrote, not from what their code computed.

A prediction is graded from the text of the cells above the experiment it predicts: the value must
be a literal written there, so nothing the experiment prints (or any later cell) can change it,
and grading never has to run the experiment. A concept check's answer is read the same way from
its own cell: a multiple-choice letter or a number is data, so reading it statically needs no
worker and cannot be talked into another value by code. Graders of every assignment use these.
"""
from __future__ import annotations

import ast

from rlcourse.grading.rubric import Failure

_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)
_EVAL_ERRORS = (ValueError, TypeError, SyntaxError, MemoryError, RecursionError)


def last_assignment(sources, name: str) -> ast.expr | None:
    """The expression of the last top-level `name = ...` (or `name: T = ...`) in `sources`, in
    order; None if no source assigns it. Sources that are not Python are skipped."""
    found = None
    for source in sources:
        try:
            tree = ast.parse(source)
        except _PARSE_ERRORS:  # not Python (a magic, a half-written cell): it predicts nothing
            continue
        for statement in tree.body:
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets = [statement.target]
            else:
                continue
            if any(isinstance(target, ast.Name) and target.id == name for target in targets):
                found = statement.value
    return found


def _literal(expression: ast.expr | None, name: str, where: str, should: str):
    if expression is None:
        raise Failure("missing_name", did=f"no cell {where} assigns {name}",
                      should=f"set {name} {should}")
    try:
        return ast.literal_eval(expression)
    except _EVAL_ERRORS:
        raise Failure("bad_output", did=f"{name} is computed, not written out",
                      should=f"write {name} as a literal (a string, a number, or a dict or list of "
                             "them): an answer is what you expect, so it cannot come from code") from None


def _sources(student, cell: str, *, inclusive: bool) -> list[str]:
    cells = student.submission.cells
    stop = next((c.index for c in cells if c.grade_id == cell), None)
    return [c.source for c in cells
            if stop is None or c.index < stop or (inclusive and c.index == stop)]


def prediction_from_cell_text(student, before: str, name: str):
    """The literal value of the last `name = <literal>` in the code cells above the cell whose
    grade id is `before` (the experiment), read from their text. A Failure ("missing_name" or
    "bad_output") if none assigns it or the value is not a literal."""
    return _literal(last_assignment(_sources(student, before, inclusive=False), name), name,
                    "above the experiment", "in the prediction cell, before you run the experiment")


def answer_from_cell_text(student, cell: str, name: str):
    """The literal value of the last `name = <literal>` in the code cells up to and including the
    cell whose grade id is `cell`, read from their text (a concept check's answer)."""
    return _literal(last_assignment(_sources(student, cell, inclusive=True), name), name,
                    "up to the question", "in the question's cell")
