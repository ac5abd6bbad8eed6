"""No grader hands a student the solution's code before the due date (issue 28, item 3).

A Failure's message (what the code did, what it should do, how to see it) is shown before the due
date; the remedy, often a line to copy, is its `fix`, shown after. These tests read every text a
grader module can put into a message, statically (every string literal but docstrings and `fix=`
arguments), and check that none quotes the assignment's solution (tests/graders/solution_quotes.py
says what that means) and that the redactor, which every report passes through, blanks no part of
a message or a fix. They cost a second and cover every text, reached by a bank entry or not;
tests/graders/test_bank.py checks the messages the bank's entries really get, values filled in.
"""
import ast
from pathlib import Path

import pytest

from rlcourse.course.directory import Course
from rlcourse.grading.redact import Redactor
from solution_quotes import normalised, solution_of

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)
ENGINE_MODULES = [ROOT / "rlcourse" / "grading" / f"{module}.py" for module in ("rubric", "concepts", "predictions")]
"""The engine's modules that write messages for every assignment's graders."""
GAP = "\x00"
"""Stands for an f-string's formatted value: a quotation cannot run across a value."""


class _Texts(ast.NodeVisitor):
    """The string literals of a module a message can be made of (`found`), and those of its
    remedies (`fixes`), with their lines."""

    def __init__(self):
        self.found: list[tuple[int, str]] = []
        self.fixes: list[tuple[int, str]] = []

    def _fix(self, node):
        remedy = _Texts()
        remedy.visit(node)
        self.fixes += remedy.found

    def visit_Expr(self, node):
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):  # a docstring
            self.generic_visit(node)

    def visit_keyword(self, node):
        if node.arg == "fix":  # the remedy, shown only after the due date
            self._fix(node.value)
        else:
            self.generic_visit(node)

    def visit_Assign(self, node):
        if any(isinstance(target, ast.Name) and target.id.startswith("FIX") for target in node.targets):
            self._fix(node.value)
        else:
            self.generic_visit(node)

    def visit_JoinedStr(self, node):
        self.found.append((node.lineno, "".join(part.value if isinstance(part, ast.Constant) else GAP
                                                for part in node.values)))

    def visit_Constant(self, node):
        if isinstance(node.value, str):
            self.found.append((node.lineno, node.value))


def _read(path: Path) -> _Texts:
    texts = _Texts()
    texts.visit(ast.parse(path.read_text(), filename=str(path)))
    return texts


def message_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal in the module at `path` that can reach a message:
    not a docstring, not a `fix=` argument, not the value of a name starting with FIX; an
    f-string's literal parts joined by GAP."""
    return _read(path).found


def fix_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the string literals of every `fix=` argument (and FIX name) in the module."""
    return _read(path).fixes


def grader_modules(name: str) -> list[Path]:
    """`name`'s grader modules and the engine's message writers."""
    return sorted((ROOT / "graders" / name).glob("*.py")) + ENGINE_MODULES


def quotations(name: str) -> dict[str, list[str]]:
    """`file:line` -> what of `name`'s solution the text there quotes, for every grader module of
    `name` and the engine's message writers."""
    solution = solution_of(ROOT, name)
    return {f"{path.relative_to(ROOT)}:{line}": quoted for path in grader_modules(name)
            for line, text in message_texts(path) if (quoted := solution.quotes(text))}


@pytest.mark.parametrize("name", COURSE.assignment_names())
def test_no_grader_text_quotes_the_solution(name):
    """Every literal a message of `name`'s graders can hold is free of the solution's code."""
    assert quotations(name) == {}


@pytest.mark.parametrize("name", COURSE.assignment_names())
def test_the_redactor_leaves_every_message_and_fix_whole(name):
    """Messages and fixes reach the student through the redactor that keeps the solution's and
    the graders' lines out of every report (rlcourse.grading.redact): a text holding one of those
    lines whole would read "[hidden]" where it matters ("just before [hidden]" for
    `optimizer.step()`), and a fix would be blanked when it is finally shown, so each says its
    point in other words."""
    redact = Redactor.for_assignment(COURSE.assignment(name))
    blanked = {f"{path.relative_to(ROOT)}:{line}": redact(text) for path in grader_modules(name)
               for line, text in message_texts(path) + fix_texts(path) if redact(text) != text}
    assert blanked == {}


class TestWhatCountsAsAQuotation:
    def test_a_solution_expression_in_a_sentence_is_one(self):
        quoted = solution_of(ROOT, "ps1").quotes("use jax.lax.stop_gradient(records['old_logp']) in policy_loss.")
        assert quoted == [normalised('jax.lax.stop_gradient(records["old_logp"])')]

    def test_an_assignment_to_a_solution_name_is_one_however_it_is_written(self):
        """ps3's reference computes `out` in three lines; the one-line form is its line all the same."""
        assert solution_of(ROOT, "ps3").quotes("out = tanh(x @ W1 + b1) @ W2 + b2, with shape [batch, n_out].") \
            == ["out = ..."]

    @pytest.mark.parametrize("name, text", [
        ("ps3", "print(softmax(x).sum(axis=-1)) for an x of shape [3, 4]: every entry should be 1."),
        ("ps2", "the ratio is exp(logp_new - logp_old); compute the loss of a batch of two by hand."),
        ("ps1", "at theta == theta_old every ratio is 1, so both objectives have the same slope."),
        ("ps1", "train from your own seed, PARAMS['seed'] = 11"),
    ])
    def test_a_way_to_see_or_a_definition_is_not(self, name, text):
        assert solution_of(ROOT, name).quotes(text) == []

    def test_given_code_the_release_shows_is_not(self):
        """train(...)'s loop is in the reference and in the release: quoting it gives nothing away."""
        assert solution_of(ROOT, "ps1").quotes("key, sample_key = jax.random.split(key)") == []


class TestWhichTextsAreRead:
    def test_docstrings_and_fixes_are_left_out_and_f_strings_keep_their_gaps(self, tmp_path):
        module = tmp_path / "test_example.py"
        module.write_text('"""A docstring: sampled = -jax.grad(policy_loss)(z, batch, \'reinforce\')."""\n'
                          'FIX_LOOP = "loop over range(0, B, M)"\n'
                          'def test_x(eps):\n'
                          '    """Its docstring."""\n'
                          '    raise Failure("tag", did=f"gave {eps} here", should="be 1",\n'
                          '                  see="print it", fix="write x = 1")\n')
        assert message_texts(module) == [(5, "tag"), (5, f"gave {GAP} here"), (5, "be 1"), (6, "print it")]
        assert fix_texts(module) == [(2, "loop over range(0, B, M)"), (6, "write x = 1")]
