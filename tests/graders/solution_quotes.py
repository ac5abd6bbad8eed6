"""Whether a text a student reads before the due date quotes the solution.

Before the due date feedback names the misconception, the inputs, what the code gave and how to
see it, never the remedy as code to copy (issue 28, item 3): the remedy is a Failure's `fix`,
shown after the due date. tests/graders/test_fix_lines.py checks every text a grader module
holds with this, tests/graders/test_bank.py every message the bank's entries get.

The solution is the code the student is to write: the code lines of the reference solution
(`solutions/<name>/reference.py`) and of the source notebook's solution regions, comments and
docstrings left out, less what the released notebook already shows (its given code is the
student's already). A text quotes it if, with whitespace removed and quotes made alike, it holds

* a solution line, or the expression a solution line assigns or returns, of at least
  MIN_LENGTH characters (`jax.lax.stop_gradient(records["old_logp"])`); or
* an assignment, written as statements are (`name = ...`), to names a solution region assigns,
  one of them at least three letters long (`out = tanh(x @ W1 + b1) @ W2 + b2`: the solution's
  `out` is written another way, but the text is its line all the same).

Prose that explains a definition in the notebook's notation ("the ratio is exp(logp_new -
logp_old)") passes: the rule holds the line against code to copy, which is what a student could
paste without understanding; the audit of every text did the rest by judgement.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import io
import re
import textwrap
import tokenize
from pathlib import Path

import nbformat

from rlcourse.course.directory import Course
from rlcourse.course.release import SOLUTION_REGION, Release

MIN_LENGTH = 20
"""Shorter ones (`running = 0.0`, `cells = jnp.arange(3)`, `b["old_logp"]`) are phrases any
text about the function may hold, and hand little over."""

ASSIGNMENT = re.compile(r"(?<![\w.])(?P<targets>\w+(?:\s*,\s*\w+)*)\s*=\s(?!=)")
"""An assignment statement as code is written (`a, b = ...`, spaces around the `=`): a keyword
argument (`seed=11`), a comparison (`==`) or an attribute (`config.eps = 0.2`) is none."""
ASSIGNED_OR_RETURNED = re.compile(r"^(?:return\s+(?P<returned>.+)|[\w\s.,\[\]\"']+?[-+*/@]?=(?!=)\s*(?P<value>.+))$")
"""A code line that returns an expression or assigns one (to names, subscripts or attributes)."""


def normalised(text: str) -> str:
    """`text` without whitespace and with one kind of quote, so that spacing and quoting do not
    hide a quotation."""
    return re.sub(r"\s+", "", text).replace("'", '"')


def code_lines(source: str) -> list[str]:
    """The lines of Python `source` that hold code: comments cut off, docstrings (and any other
    bare string statement) and blank lines left out. Source that does not parse keeps every line
    that is not a comment."""
    source = textwrap.dedent(source)
    lines = source.splitlines()
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError):
        return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    prose = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            prose.update(range(node.lineno, node.end_lineno + 1))
    for token in reversed(tokens):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            lines[row - 1] = lines[row - 1][:column]
    return [line.strip() for number, line in enumerate(lines, start=1)
            if number not in prose and line.strip()]


def assigned_names(source: str) -> set[str]:
    """The names `source` assigns (`x = ...`, `a, b = ...`, `x += ...`) at any depth; not those
    an assignment only indexes (`grad[rows, actions] -= 1`)."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()

    def names_of(target) -> set[str]:
        if isinstance(target, ast.Name):
            return {target.id}
        if isinstance(target, (ast.Tuple, ast.List)):
            return set().union(*map(names_of, target.elts))
        return names_of(target.value) if isinstance(target, ast.Starred) else set()

    found = set()
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign)
                   else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        for target in targets:
            found |= names_of(target)
    return found


def pieces(line: str) -> list[str]:
    """A code line and, if it assigns or returns, the expression it assigns or returns."""
    found = [line]
    match = ASSIGNED_OR_RETURNED.match(line)
    if match:
        found.append(match.group("returned") or match.group("value"))
    return found


@dataclasses.dataclass(frozen=True)
class Solution:
    """What of one assignment's solution no text before the due date may quote."""

    fragments: frozenset[str]
    """Solution lines, and the expressions they assign or return, normalised, each at least
    MIN_LENGTH long and none shown anywhere in the release."""
    names: frozenset[str]
    """The names the solution regions assign."""

    def quotes(self, text: str) -> list[str]:
        """What of the solution `text` quotes: each fragment it holds, and `a, b = ...` for each
        assignment to solution names (every target one, one of them at least three letters
        long; empty if it quotes nothing)."""
        flat = normalised(text)
        found = sorted(fragment for fragment in self.fragments if fragment in flat)
        for match in ASSIGNMENT.finditer(text):
            words = re.split(r"\s*,\s*", match.group("targets"))
            # the longest run of solution names just before the `=` ("with these, out = ...")
            targets = next((words[start:] for start in range(len(words))
                            if set(words[start:]) <= self.names), [])
            if targets and max(map(len, targets)) >= 3:
                found.append(f"{', '.join(targets)} = ...")
        return found


@functools.cache
def solution_of(course_root: Path, name: str) -> Solution:
    """The solution of assignment `name` of the course at `course_root` (read once)."""
    assignment = Course(Path(course_root)).assignment(name)
    shown = normalised("\n".join(Release.read(assignment.release_notebook).lines))

    regions = [region for cell in nbformat.read(assignment.source_notebook, as_version=4).cells
               if cell.cell_type == "code" for region in SOLUTION_REGION.findall(cell.source)]
    reference = Path(course_root) / "solutions" / name / "reference.py"
    lines = [line for region in regions for line in code_lines(region)]
    if reference.is_file():
        lines += code_lines(reference.read_text())
    fragments = {normalised(piece) for line in lines for piece in pieces(line)}
    fragments = {fragment for fragment in fragments if len(fragment) >= MIN_LENGTH and fragment not in shown}
    names = {found for region in regions for found in assigned_names(region)}
    return Solution(frozenset(fragments), frozenset(names))
