"""How a student hides a copied notebook, for testing the similarity report against it.

`disguise_code` rewrites one cell the way a copier would, without changing what it computes:
every local variable of every function (and every name a top-level statement assigns) gets
another name, docstrings and comments are replaced, the layout changes (ast.unparse's own),
and top-level definitions come in another order. Names a grader or a later cell calls
(functions, parameters) keep theirs, so the disguised notebook still earns its grade.
`disguise_notebook` applies it to every answer cell and may swap one cell for another student's
answer. The tests, the benchmark and the demo's copier use it; seeded, so always the same copy.
"""
from __future__ import annotations

import ast
import builtins
import copy
import random
from pathlib import Path

import nbformat

from rlcourse.course.release import Release, grade_id_of

WORDS = ("acc", "buf", "tmp", "val", "res", "out", "cur", "item", "part", "data", "arr", "nxt")


def _assigned(nodes) -> set[str]:
    """Plain names bound by assignments, loops and comprehensions among these nodes."""
    names = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                names.add(child.id)
    return names


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping):
        self.mapping = mapping

    def visit_Name(self, node):
        if node.id in self.mapping:
            node.id = self.mapping[node.id]
        return node


def _docstring(body, text) -> None:
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None),
                                                             ast.Constant) \
            and isinstance(body[0].value.value, str):
        body[0].value.value = text


def disguise_code(source: str, rng: random.Random, *, rename_top_level: bool = True) -> str:
    """The cell rewritten as a copier would; the source unchanged if it is not plain Python."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} | set(dir(builtins))

    def fresh(name):
        while True:
            candidate = f"{rng.choice(WORDS)}_{rng.randrange(100)}"
            if candidate not in taken:
                taken.add(candidate)
                return candidate

    for function in [node for node in ast.walk(tree)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        parameters = {arg.arg for arg in ast.walk(function) if isinstance(arg, ast.arg)}
        mapping = {name: fresh(name) for name in sorted(_assigned(function.body) - parameters)}
        for statement in function.body:
            _Renamer(mapping).visit(statement)
        _docstring(function.body, rng.choice(("Computes it.", "see lecture", "My solution.")))
    definitions = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    if rename_top_level:
        top = [node for node in tree.body if not isinstance(node, (ast.FunctionDef, ast.ClassDef))]
        mapping = {name: fresh(name) for name in sorted(_assigned(top))}
        _Renamer(mapping).visit(tree)
    if len(definitions) > 1 and all(node in tree.body[:len(definitions)] for node in definitions):
        tree.body[:len(definitions)] = definitions[::-1]
    lines = ast.unparse(tree).splitlines()
    comment = rng.choice(("# done", "# works now", "# checked against the plot", "# ok"))
    return "\n".join([comment, *lines, ""])


def disguise_notebook(notebook: nbformat.NotebookNode, seed: int, *, answer_ids,
                      swap: tuple[str, str] | None = None) -> nbformat.NotebookNode:
    """A copy of `notebook` with every answer cell (grade_id in `answer_ids`) disguised, and
    one cell replaced by another answer (`swap` = (grade_id, source)) if given."""
    rng = random.Random(seed)
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        grade_id = grade_id_of(cell)
        if grade_id not in answer_ids:
            continue
        if swap and grade_id == swap[0]:
            cell.source = swap[1]
        elif cell.cell_type == "code":
            # Exercise cells answer with top-level names the visible tests read: keep those.
            cell.source = disguise_code(cell.source, rng, rename_top_level=False)
        else:
            cell.source = "My answer: " + cell.source.replace(". ", ".\n\n")
    return notebook


def disguised_submission(content: bytes, seed: int, release: Path) -> bytes:
    """A built notebook's bytes, disguised (every answer cell of the release's)."""
    answer_ids = Release.read(release).answer_ids
    notebook = disguise_notebook(nbformat.reads(content.decode("utf-8"), as_version=4), seed,
                                 answer_ids=answer_ids)
    return nbformat.writes(notebook).encode("utf-8") + b"\n"
